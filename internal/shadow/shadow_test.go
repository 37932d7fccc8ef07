package shadow

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

type clock struct{ t int64 }

func (c *clock) Now() int64 { return c.t }

// stuck is a real plant one of whose motors no longer follows its goal.
type stuck struct {
	*sim.Motors
	motor int
	on    bool
	held  float64
}

func (s *stuck) Command(u []float64) error {
	if s.on {
		v := append([]float64(nil), u...)
		v[s.motor] = s.held
		return s.Motors.Command(v)
	}
	return s.Motors.Command(u)
}

// loop runs n ticks of 10 ms of real, as a link would, handing each to tw:
// the commands are a slow sine per motor.
func loop(t *testing.T, real *stuck, tw *Twin, from, n int) {
	t.Helper()
	meas := make([]float64, real.MeasureLen())
	u := make([]float64, real.CommandLen())
	for k := from; k < from+n; k++ {
		at := int64(k) * 10_000_000
		real.StepTo(at)
		if err := real.Measure(meas); err != nil {
			t.Fatal(err)
		}
		for i := range u {
			u[i] = 0.4 * math.Sin(float64(k)/40+float64(i))
		}
		tw.RecordTick(&bridge.TickRecord{State: bridge.Running, Deadline: at, Measurement: meas, Applied: u, Given: u, CommandApplied: true})
		if err := real.Command(u); err != nil {
			t.Fatal(err)
		}
		tw.drain()
	}
}

func newTwin(t *testing.T) (*stuck, *Twin) {
	t.Helper()
	cfg := sim.DefaultEmio()
	r, err := sim.NewMotors(cfg, &clock{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.NewMotors(cfg, &clock{t: 123})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := New(Config{Model: m, Layout: m.Layout(), Threshold: map[string]float64{"angles": 0.1}, Hold: 300 * time.Millisecond, Buffer: 8})
	if err != nil {
		t.Fatal(err)
	}
	return &stuck{Motors: r, motor: 1}, tw
}

// A model that is the plant follows it exactly: no divergence, no fault.
func TestTwinFollows(t *testing.T) {
	real, tw := newTwin(t)
	loop(t, real, tw, 0, 500)
	var s Snapshot
	tw.Snapshot(&s)
	if s.Ticks != 500 || s.Dropped != 0 || len(s.Faults) != 0 {
		t.Fatalf("ticks %d dropped %d faults %v", s.Ticks, s.Dropped, s.Faults)
	}
	for j, d := range s.MaxAbs {
		if d != 0 {
			t.Errorf("value %d diverged by %g", j, d)
		}
	}
}

// A motor that sticks diverges from the model: after the hold, a fault
// names it and its size; unstuck, the fault ends and the model is put back
// on the real state.
func TestTwinStuckServo(t *testing.T) {
	real, tw := newTwin(t)
	loop(t, real, tw, 0, 100)
	q, g := make([]float64, 4), make([]float64, 4)
	real.State(q, g)
	real.on, real.held = true, q[1]
	loop(t, real, tw, 100, 300)
	var s Snapshot
	tw.Snapshot(&s)
	if len(s.Faults) != 1 {
		t.Fatalf("faults %v, want one", s.Faults)
	}
	f := s.Faults[0]
	if f.Field != "angles" || f.Index != 2 || f.Unit != "rad" || f.Size <= 0.1 || f.Ended || f.For < 300*time.Millisecond {
		t.Errorf("fault %+v", f)
	}
	if !strings.HasPrefix(f.String(), "angles 2 diverges from the model by 0.") || !strings.Contains(f.String(), " rad (for ") {
		t.Errorf("fault says %q", f)
	}
	// Found within the hold of crossing the threshold: the first tick
	// past it plus 300 ms.
	detected := time.Duration(f.Since-100*10_000_000) + 300*time.Millisecond
	if detected > 2*time.Second {
		t.Errorf("detected %v after the servo stuck", detected)
	}
	t.Logf("stuck at tick 100, detected %v later: %s", detected, f)
	if open := tw.Open(nil); len(open) != 1 || open[0] != f.Message || open[0] != f.String() {
		t.Errorf("Open = %q, want the open fault's words %q", open, f.Message)
	}
	d := Snapshot{Faults: []Fault{{Field: "kept"}}}
	tw.Divergences(&d)
	if d.Ticks != s.Ticks || !slices.Equal(d.Divergence, s.Divergence) || !slices.Equal(d.MaxAbs, s.MaxAbs) || len(d.Faults) != 1 || d.Faults[0].Field != "kept" {
		t.Errorf("Divergences = %+v, want Snapshot's numbers %+v and the faults left alone", d, s)
	}
	real.on = false
	loop(t, real, tw, 400, 300)
	tw.Snapshot(&s)
	if len(s.Faults) != 1 || !s.Faults[0].Ended || !strings.Contains(s.Faults[0].String(), "diverged") {
		t.Fatalf("after the servo was freed: %v", s.Faults)
	}
	if open := tw.Open(nil); len(open) != 0 {
		t.Errorf("Open after the fault ended = %q", open)
	}
	for j, d := range s.Divergence {
		if math.Abs(d) > 1e-9 {
			t.Errorf("value %d still %g from the model after the resync", j, d)
		}
	}
}

// RecordTick is the loop's: it allocates nothing and, with the twin
// behind by its whole buffer, drops the tick rather than wait.
func TestRecordTickNeverWaits(t *testing.T) {
	real, tw := newTwin(t)
	meas := make([]float64, real.MeasureLen())
	r := &bridge.TickRecord{State: bridge.Running, Measurement: meas, Applied: make([]float64, 4), Given: make([]float64, 4), CommandApplied: true}
	if a := testing.AllocsPerRun(100, func() { r.Deadline += 10_000_000; tw.RecordTick(r) }); a != 0 {
		t.Errorf("RecordTick allocates %v times", a)
	}
	var s Snapshot
	tw.Snapshot(&s)
	if s.Dropped < 90 {
		t.Errorf("dropped %d of 101 ticks with an 8-tick buffer and no one serving", s.Dropped)
	}
	// Served, it catches up with what was kept.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tw.Serve(ctx) }()
	testutil.WaitFor(t, "the twin to run the kept ticks", func() bool { tw.Snapshot(&s); return s.Ticks == 8 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A configuration that cannot work is refused, naming what.
func TestNewRefuses(t *testing.T) {
	m, _ := sim.NewMotors(sim.DefaultEmio(), &clock{})
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Layout: m.Layout()}, "no model"},
		{Config{Model: m, Layout: m.Layout(), Threshold: map[string]float64{"wheels": 1}}, `"wheels", which the plant does not measure`},
		{Config{Model: m, Layout: m.Layout(), Threshold: map[string]float64{"angles": -1}}, "threshold of angles -1"},
		{Config{Model: m, Layout: m.Layout(), Hold: -time.Second}, "hold -1s"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

// A tick of a link that is not running (a handshake's zero payload, a
// device down's old measurement) is not compared with the model.
func TestTwinComparesOnlyWhileRunning(t *testing.T) {
	_, tw := newTwin(t)
	meas, u := make([]float64, 7), make([]float64, 4)
	for k, st := range []bridge.State{bridge.Handshaking, bridge.Degraded, bridge.Starting} {
		tw.RecordTick(&bridge.TickRecord{State: st, Deadline: int64(k) * 10_000_000, Measurement: meas, Given: u, CommandApplied: true})
	}
	tw.RecordTick(&bridge.TickRecord{State: bridge.Running, Stale: true, Deadline: 30_000_000, Measurement: meas, Given: u})
	tw.drain()
	var s Snapshot
	tw.Snapshot(&s)
	if s.Ticks != 0 || slices.ContainsFunc(s.MaxAbs, func(d float64) bool { return d != 0 }) {
		t.Errorf("compared %d ticks, largest divergence %v", s.Ticks, s.MaxAbs)
	}
}

// A resync (asked for, or after another value's fault ended) does not end
// a fault that goes on: a servo still jammed keeps its one open fault.
func TestTwinFaultOutlivesAResync(t *testing.T) {
	real, tw := newTwin(t)
	loop(t, real, tw, 0, 100)
	q, g := make([]float64, 4), make([]float64, 4)
	real.State(q, g)
	real.on, real.held = true, q[1]
	loop(t, real, tw, 100, 300)
	for k := range 5 {
		tw.Resync()
		loop(t, real, tw, 400+100*k, 100)
	}
	var s Snapshot
	tw.Snapshot(&s)
	if len(s.Faults) != 1 || s.Faults[0].Ended {
		t.Fatalf("faults %v, want the one servo's, open", s.Faults)
	}
}

// okExchanger answers every tick with a slowly moving command.
type okExchanger struct{ k float64 }

func (e *okExchanger) Exchange(_, cmd []float64, _ int64) simulink.Status {
	e.k++
	for i := range cmd {
		cmd[i] = 0.3 * math.Sin(e.k/20+float64(i))
	}
	return simulink.OK
}
func (e *okExchanger) Synced() bool { return true }

// The loop's tick allocates nothing with the twin beside it, the twin
// serving, as without one.
func TestTickWithTwinAllocatesNothing(t *testing.T) {
	real, tw := newTwin(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tw.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	lim := []bridge.Limit{{Min: -1, Max: 1}, {Min: -1, Max: 1}, {Min: -1, Max: 1}, {Min: -1, Max: 1}}
	for _, rec := range []bridge.TickRecorder{nil, tw} {
		l, err := bridge.NewLink(bridge.LinkConfig{Name: "x", Loop: bridge.LoopConfig{Period: 10 * time.Millisecond, CPU: -1}, Limits: lim, Recorder: rec},
			real.Motors, &okExchanger{}, realtime.NewClock(), nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ti bridge.TickInfo
		for range 5 {
			ti.Deadline += int64(10 * time.Millisecond)
			l.Tick(&ti)
		}
		if a := testing.AllocsPerRun(200, func() { ti.Deadline += int64(10 * time.Millisecond); l.Tick(&ti) }); a != 0 {
			t.Errorf("with recorder %T: a tick allocates %v times", rec, a)
		}
	}
	var s Snapshot
	testutil.WaitFor(t, "the twin to run the ticks", func() bool { tw.Snapshot(&s); return s.Ticks+s.Dropped >= 200 })
}

// following is a model that follows a jump of the real plant on the
// ticks of out (a step its own clock says it took).
type following struct {
	*sim.Motors
	tick int
	out  map[int]bool
}

func (f *following) StepTo(at int64) { f.tick = int(at / 10_000_000); f.Motors.StepTo(at) }
func (f *following) Follow(measured []float64) {
	if f.out[f.tick] {
		f.Sync(measured)
	}
}

// A plant that jumps (a step its own clock says it took: an exchange the
// model did not see) is no fault when the model follows the plant's clock.
// A model that cannot tell carries the jump as a fault.
func TestTwinFollowerRealigns(t *testing.T) {
	for _, tc := range []struct {
		follows bool
		faults  int
	}{{true, 0}, {false, 1}} {
		cfg := sim.DefaultEmio()
		cfg.TimeConstant = 10 * time.Second // slow: a jump stays past the hold
		r, _ := sim.NewMotors(cfg, &clock{})
		m, _ := sim.NewMotors(cfg, &clock{})
		var model Model = m
		if tc.follows {
			model = &following{Motors: m, out: map[int]bool{150: true}}
		}
		tw, err := New(Config{Model: model, Layout: m.Layout(), Threshold: map[string]float64{"angles": 0.1}, Hold: 300 * time.Millisecond, Buffer: 8})
		if err != nil {
			t.Fatal(err)
		}
		real := &stuck{Motors: r}
		loop(t, real, tw, 0, 150)
		// The real plant takes a step the model did not: its motor 1 is
		// 0.3 rad on (Sync is how a test moves it).
		y := make([]float64, r.MeasureLen())
		r.Measure(y)
		y[len(y)-4] += 0.3
		r.Sync(y)
		loop(t, real, tw, 150, 100)
		var s Snapshot
		tw.Snapshot(&s)
		if len(s.Faults) != tc.faults {
			t.Errorf("follows %v: faults %v, want %d", tc.follows, s.Faults, tc.faults)
		}
	}
}

// wheel is a joint that integrates its speed on the tick times it is told,
// at gain of it.
type wheel struct {
	q, v, gain float64
	at         int64
}

func (w *wheel) MeasureLen() int             { return 1 }
func (w *wheel) CommandLen() int             { return 1 }
func (w *wheel) Measure(d []float64) error   { d[0] = w.q; return nil }
func (w *wheel) Command(u []float64) error   { w.v = u[0]; return nil }
func (w *wheel) Halt(plant.HaltPolicy) error { w.v = 0; return nil }
func (w *wheel) Sync(m []float64) error      { w.q = m[0]; return nil }
func (w *wheel) Layout() plant.Layout {
	return plant.Layout{Measure: []plant.Field{{Name: "angles", Unit: "rad", Len: 1}}, Command: []plant.Field{{Name: "speeds", Unit: "rad/s", Len: 1}}}
}
func (w *wheel) StepTo(at int64) {
	if w.at != 0 {
		w.q += w.v * w.gain * float64(at-w.at) / 1e9
	}
	w.at = at
}

// A wheel that slipped for a while keeps what it lost: its fault ends
// once the divergence stops growing, for an integrating field; a wheel
// that still slips keeps its fault.
func TestTwinIntegratingFaultEnds(t *testing.T) {
	for _, tc := range []struct {
		slipFor int // ticks of 10 ms
		ended   bool
	}{{100, true}, {600, false}} {
		real, model := &wheel{gain: 1}, &wheel{gain: 1}
		tw, err := New(Config{Model: model, Layout: model.Layout(), Threshold: map[string]float64{"angles": 0.2}, Hold: 300 * time.Millisecond,
			Clear: time.Second, Integrating: []string{"angles"}, Buffer: 8})
		if err != nil {
			t.Fatal(err)
		}
		meas, u := []float64{0}, []float64{1}
		for k := 1; k <= 700; k++ {
			at := int64(k) * 10_000_000
			real.gain = 1
			if k > 50 && k <= 50+tc.slipFor {
				real.gain = 0.3
			}
			real.StepTo(at)
			real.Measure(meas)
			tw.RecordTick(&bridge.TickRecord{State: bridge.Running, Deadline: at, Measurement: meas, Given: u, CommandApplied: true})
			real.Command(u)
			tw.drain()
		}
		var s Snapshot
		tw.Snapshot(&s)
		if len(s.Faults) != 1 || s.Faults[0].Ended != tc.ended {
			t.Errorf("slipping for %d ticks: faults %v, want one, ended %v", tc.slipFor, s.Faults, tc.ended)
		}
	}
}

// While the real plant settles by itself (an Emio's servos rejoining
// their command), its ticks are not compared, and the model starts again
// from the real state after.
func TestTwinWaitsWhileSettling(t *testing.T) {
	real, tw := newTwin(t)
	settling := true
	tw.cfg.Settling = func() bool { return settling }
	// The real motor 2 is held away from its goal as a rejoin would.
	q, g := make([]float64, 4), make([]float64, 4)
	real.State(q, g)
	real.on, real.held = true, q[1]
	loop(t, real, tw, 0, 200)
	var s Snapshot
	tw.Snapshot(&s)
	if s.Ticks != 0 || len(s.Faults) != 0 {
		t.Fatalf("while settling: %d ticks compared, faults %v", s.Ticks, s.Faults)
	}
	settling, real.on = false, false
	loop(t, real, tw, 200, 200)
	tw.Snapshot(&s)
	if s.Ticks != 200 || len(s.Faults) != 0 {
		t.Errorf("after: %d ticks compared, faults %v", s.Ticks, s.Faults)
	}
}
