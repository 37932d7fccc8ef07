package bridge

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/latency"
	"github.com/labbridge/bridge/realtime"
)

// leadRecorder is a LoopObserver that records the send gate too.
type leadRecorder struct {
	*recObserver
	leads, ages []int64
	overran     int
}

func (r *leadRecorder) ObserveLead(lead, age int64, overran bool) {
	if len(r.leads) < cap(r.leads) {
		r.leads = append(r.leads, lead)
		r.ages = append(r.ages, age)
	}
	if overran {
		r.overran++
	}
}

// A tick that measures for 300 µs and then gates: the first tick, on the
// initial lead of a quarter of the period, sends late; from the second the
// lead covers the slowest tick measured, and once learnMin ticks are
// measured it is their quantile; every datagram after the first leaves at
// its deadline exactly. The counts follow from the arithmetic of simulated
// time.
func TestLoopGateLearnsTheLead(t *testing.T) {
	const ticks, work = 40, int64(300 * time.Microsecond)
	sim := &simTimer{t: 1e9}
	obs := &leadRecorder{recObserver: newRecObserver(ticks), leads: make([]int64, 0, ticks), ages: make([]int64, 0, ticks)}
	l := newLoop(LoopConfig{Period: time.Duration(testPeriod), CPU: -1, AutoLead: true}, sim, obs, nil)
	if got := l.Lead(); got != 250*time.Microsecond {
		t.Fatalf("initial lead %v, want a quarter of the period", got)
	}
	var infos []TickInfo
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) {
		sim.t += work
		if sent := ti.Gate(); sent != sim.t {
			t.Errorf("tick %d: Gate returned %d, the clock says %d", ti.N, sent, sim.t)
		}
		infos = append(infos, *ti)
	}))
	if err != nil {
		t.Fatal(err)
	}
	// 300 µs lies in the bucket [294 912, 327 680) ns; the guard is 20 µs.
	wantLead := int64(327680) + leadGuard
	if got := int64(l.Lead()); got != wantLead {
		t.Fatalf("learned lead %d ns, want %d", got, wantLead)
	}
	if got := l.LeadOverruns(); got != 1 {
		t.Errorf("%d ticks sent late, want the first only", got)
	}
	for k, ti := range infos {
		late := ti.sent - ti.Deadline
		switch {
		case k == 0:
			if want := work - testPeriod/4; late != want {
				t.Errorf("tick 0 sent %d ns late, want %d on the initial lead", late, want)
			}
			continue
		case k < learnMin:
			if late != 0 || ti.Wake != ti.Deadline-(work+leadGuard) {
				t.Errorf("tick %d: sent %d ns late, woke %d ns before the deadline; want 0 and the slowest tick's %d", k, late, ti.Deadline-ti.Wake, work+leadGuard)
			}
			continue
		}
		if late != 0 || ti.Wake != ti.Deadline-wantLead {
			t.Errorf("tick %d: sent %d ns late, woke %d ns before the deadline; want 0 and %d", k, late, ti.Deadline-ti.Wake, wantLead)
		}
		if obs.lateness[k] != 0 {
			t.Errorf("tick %d: observed lateness %d, want the send's, 0", k, obs.lateness[k])
		}
		if ti.Next-ti.NextWake != wantLead {
			t.Errorf("tick %d: the next wake-up is %d ns before the next deadline, want %d", k, ti.Next-ti.NextWake, wantLead)
		}
	}
	if obs.overran != 1 || obs.ages[ticks-1] != wantLead {
		t.Errorf("observer: %d overruns, last age %d; want 1 and %d", obs.overran, obs.ages[ticks-1], wantLead)
	}
	for k := 1; k < ticks; k++ {
		if infos[k].Deadline-infos[k-1].Deadline != testPeriod {
			t.Fatalf("deadlines %d and %d are %d ns apart, want the period", k-1, k, infos[k].Deadline-infos[k-1].Deadline)
		}
	}
}

// The lead never exceeds half the period, however long measuring takes;
// the ticks that measure longer send late and are counted.
func TestLoopLeadCappedAtHalfPeriod(t *testing.T) {
	const ticks = 30
	sim := &simTimer{t: 1e9}
	l := newLoop(LoopConfig{Period: time.Duration(testPeriod), CPU: -1, AutoLead: true}, sim, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) {
		sim.t += testPeriod * 6 / 10
		ti.Gate()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(l.Lead()); got != testPeriod/2 {
		t.Fatalf("lead %d ns, want half the period %d", got, testPeriod/2)
	}
	if got := l.LeadOverruns(); got != ticks {
		t.Fatalf("%d late sends, want every tick's (%d)", got, ticks)
	}
}

// Lead 0 is the loop's old shape: the tick wakes at its deadline and Gate
// returns at once, so the datagram leaves when measured.
func TestLoopNoLeadSendsWhenMeasured(t *testing.T) {
	const ticks = 5
	sim := &simTimer{t: 1e9}
	obs := newRecObserver(ticks)
	l := newLoop(LoopConfig{Period: time.Duration(testPeriod), CPU: -1}, sim, obs, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) {
		if ti.Wake != ti.Deadline {
			t.Errorf("tick %d woke %d ns from its deadline", ti.N, ti.Wake-ti.Deadline)
		}
		sim.t += 123
		if sent := ti.Gate(); sent != ti.Deadline+123 {
			t.Errorf("tick %d: sent %d ns after the deadline, want 123", ti.N, sent-ti.Deadline)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if l.Lead() != 0 || l.LeadOverruns() != ticks {
		t.Fatalf("lead %v, late sends %d; want 0 and %d (every send after its deadline)", l.Lead(), l.LeadOverruns(), ticks)
	}
	for k, late := range obs.lateness {
		if late != 123 {
			t.Errorf("tick %d: lateness %d, want the send's 123", k, late)
		}
	}
}

// With a spin, Gate sleeps to the spin's start and spins the rest.
func TestLoopGateSpins(t *testing.T) {
	const ticks, spin, lead = 4, int64(50 * time.Microsecond), int64(200 * time.Microsecond)
	sim := &simTimer{t: 1e9, sleeps: make([]int64, 0, 2*ticks)}
	l := newLoop(LoopConfig{Period: time.Duration(testPeriod), CPU: -1, Lead: time.Duration(lead), Spin: time.Duration(spin)}, sim, nil, nil)
	var deadlines []int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) {
		deadlines = append(deadlines, ti.Deadline)
		sim.t += 10
		ti.Gate()
	}))
	if err != nil {
		t.Fatal(err)
	}
	for k, d := range deadlines {
		if w, g := sim.sleeps[2*k], sim.sleeps[2*k+1]; w != d-lead || g != d-spin {
			t.Errorf("tick %d: slept until %d then %d before the deadline, want %d then %d", k, d-w, d-g, lead, spin)
		}
	}
}

// stepPacer is a Pacer of irregular, known deadlines.
type stepPacer struct{ steps []int64 }

func (p *stepPacer) Next(prev, _ int64) int64 {
	d := p.steps[0]
	p.steps = append(p.steps[1:], d)
	return prev + d
}

// A Pacer places every deadline; a tick that overruns skips the pacer's
// deadlines already past, whole, and counts them.
func TestLoopPacer(t *testing.T) {
	const ticks = 8
	sim := &simTimer{t: 1e9}
	p := &stepPacer{steps: []int64{900_000, 1_100_000, 1_000_000}}
	l := newLoop(LoopConfig{Period: time.Duration(testPeriod), CPU: -1, Pacer: p}, sim, nil, nil)
	var deadlines []int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) {
		deadlines = append(deadlines, ti.Deadline)
		if ti.N == 3 {
			sim.t += 2_500_000 // past the next two deadlines
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	var gaps []int64
	for k := 1; k < len(deadlines); k++ {
		gaps = append(gaps, deadlines[k]-deadlines[k-1])
	}
	// First: 1e9 + 900 µs. Then 1.1, 1.0, 0.9 ms; after tick 3 the next
	// three (1.1 + 1.0 + 0.9 = 3.0 ms) are crossed, two of them skipped.
	want := []int64{1_100_000, 1_000_000, 900_000, 3_000_000, 1_100_000, 1_000_000, 900_000}
	if deadlines[0] != 1e9+900_000 || !slices.Equal(gaps, want) {
		t.Fatalf("first deadline %d, gaps %v; want %d and %v", deadlines[0], gaps, int64(1e9+900_000), want)
	}
	if l.Overruns() != 2 {
		t.Fatalf("%d overruns, want 2", l.Overruns())
	}
}

// The window's quantile is an upper bound within one bucket (1/8) of the
// true nearest-rank quantile, and an old outlier is forgotten after two
// windows.
func TestQuantileWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	w := newQuantileWindow(1000)
	vals := make([]int64, 0, 1000)
	for range 1000 {
		v := int64(r.ExpFloat64() * 200e3)
		vals = append(vals, v)
		w.add(v)
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		truth := vals[int(float64(len(vals))*q+0.999999)-1]
		got := w.quantile(q)
		if got < truth || (truth >= 1024 && float64(got) > float64(truth)*1.126) {
			t.Errorf("q%.3f: %d, true %d", q, got, truth)
		}
	}
	w.add(5e8) // one outlier
	if w.quantile(1) < 5e8 {
		t.Fatalf("the outlier is not the maximum")
	}
	for range 2000 {
		w.add(1000)
	}
	if got := w.quantile(1); got != 1024 {
		t.Fatalf("after two windows the maximum is %d, want the bucket of 1000 ns (1024)", got)
	}
	for v := int64(0); v < 1<<32; v = v*9/8 + 1 {
		b := windowBucket(v)
		top := b == windowBuckets-1 // everything from 2^30 ns up
		if (!top && v >= windowUpper(b)) || (b > 0 && v < windowUpper(b-1)) {
			t.Fatalf("%d ns in bucket %d of range [%d, %d)", v, b, windowUpper(b-1), windowUpper(b))
		}
	}
}

// cyclePacer places deadlines at a repeating cycle of gaps, without
// allocating.
type cyclePacer struct {
	gaps []int64
	i    int
}

func (p *cyclePacer) Next(prev, _ int64) int64 {
	p.i = (p.i + 1) % len(p.gaps)
	return prev + p.gaps[p.i]
}

// A step with the gate, the lead and the spin learned, on the grid or a
// pacer's deadlines, allocates nothing.
func TestLoopGateAllocs(t *testing.T) {
	for _, pacer := range []Pacer{nil, &cyclePacer{gaps: []int64{90_000, 110_000, 100_000}}} {
		c := realtime.NewClock()
		l, err := NewLoop(LoopConfig{Period: 100 * time.Microsecond, CPU: -1, AutoLead: true, AutoSpin: true, Pacer: pacer},
			c, &leadRecorder{recObserver: newRecObserver(0)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := loopState{next: c.Now() + int64(100*time.Microsecond)}
		gate := func(ti *TickInfo) { ti.Gate() }
		if n := testing.AllocsPerRun(500, func() {
			if err := l.step(&st, gate); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Fatalf("pacer %v: %v allocations per iteration, want 0", pacer, n)
		}
	}
}

func TestLoopLeadValidate(t *testing.T) {
	for _, c := range []LoopConfig{
		{Period: time.Millisecond, CPU: -1, Lead: -1},
		{Period: time.Millisecond, CPU: -1, Lead: 600 * time.Microsecond},
		{Period: time.Millisecond, CPU: -1, AutoLead: true, Trigger: nopTrigger{}},
		{Period: time.Millisecond, CPU: -1, Pacer: &stepPacer{steps: []int64{1}}, Trigger: nopTrigger{}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", c)
		}
	}
}

type nopTrigger struct{}

func (nopTrigger) WaitUntil(int64) (uint64, int64, error) { return 0, 0, nil }

// The lead's window is the module's one scale with windowSubBits, up to
// 2^windowTopExp, and one more bucket above; each bucket's upper bound is
// the next one's start, so the lead is never short.
func TestLeadWindowIsTheScale(t *testing.T) {
	if want := latency.BucketsBelow(windowTopExp, windowSubBits) + 1; windowBuckets != want {
		t.Errorf("windowBuckets %d, want %d", windowBuckets, want)
	}
	for b := range windowBuckets - 2 {
		if lo, _ := latency.BucketBounds(b+1, windowSubBits); windowUpper(b) != lo {
			t.Fatalf("bucket %d ends at %d, the next starts at %d", b, windowUpper(b), lo)
		}
	}
	for _, v := range []int64{0, 7, 1023, 1 << 20, 1<<windowTopExp - 1} {
		if b := windowBucket(v); windowUpper(b) <= v || windowUpper(b) > v+v/8+1 {
			t.Errorf("value %d: bucket %d answers %d, want above it by at most 1/8", v, b, windowUpper(b))
		}
	}
}
