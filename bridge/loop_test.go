package bridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/realtime"
)

// simTimer is simulated time: sleeping jumps to the deadline, and a tick
// "works" by advancing the time, so lateness and overruns are exact.
type simTimer struct {
	t      int64
	sleeps []int64 // deadlines passed to sleepUntil, if recording
}

func (s *simTimer) now() int64 { return s.t }

func (s *simTimer) sleepUntil(d int64) error {
	if s.sleeps != nil && len(s.sleeps) < cap(s.sleeps) {
		s.sleeps = append(s.sleeps, d)
	}
	s.t = max(s.t, d)
	return nil
}

func (s *simTimer) spinUntil(d int64) { s.t = max(s.t, d) }

// recObserver records what the loop reports, into preallocated slices.
type recObserver struct {
	lateness, work []int64
	overruns       []int
}

func newRecObserver(n int) *recObserver {
	return &recObserver{lateness: make([]int64, 0, n), work: make([]int64, 0, n), overruns: make([]int, 0, n)}
}

func (r *recObserver) ObserveTick(l, w int64) {
	if len(r.lateness) < cap(r.lateness) {
		r.lateness = append(r.lateness, l)
		r.work = append(r.work, w)
	}
}

func (r *recObserver) ObserveOverrun(k int) {
	if len(r.overruns) < cap(r.overruns) {
		r.overruns = append(r.overruns, k)
	}
}

// stopAfter returns a tick wrapper that runs f, and at tick last cancels ctx
// and waits until the loop has seen it, so exactly last+1 ticks run.
func stopAfter(l *Loop, last uint64, cancel context.CancelFunc, f func(*TickInfo)) func(*TickInfo) {
	return func(ti *TickInfo) {
		f(ti)
		if ti.N == last {
			cancel()
			for !l.stop.Load() {
				runtime.Gosched()
			}
		}
	}
}

const testPeriod = int64(time.Millisecond)

// A tick that works for a given time makes the loop skip whole periods, never
// burst; the counts follow from the arithmetic alone.
func TestLoopOverrunSkipsWholePeriods(t *testing.T) {
	for _, tc := range []struct {
		name        string
		work        int64 // simulated work of tick 2
		wantSkipped int
	}{
		{"none", 0, 0},
		{"half period", testPeriod / 2, 0},
		{"just under a period", testPeriod - 1, 0},
		{"exactly one period", testPeriod, 1},
		{"1.5 periods", testPeriod * 3 / 2, 1},
		{"3.5 periods", testPeriod * 7 / 2, 3},
		{"10 periods", testPeriod * 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ticks = 6
			sim := &simTimer{t: 1e9}
			obs := newRecObserver(ticks)
			l := newLoop(LoopConfig{Period: time.Duration(testPeriod), CPU: -1}, sim, obs, nil)
			infos := make([]TickInfo, 0, ticks)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) {
				infos = append(infos, *ti)
				if ti.N == 2 {
					sim.t += tc.work
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) != ticks || l.Ticks() != ticks {
				t.Fatalf("ran %d ticks, Ticks() = %d, want %d", len(infos), l.Ticks(), ticks)
			}
			for k, ti := range infos {
				want := 0
				if k == 3 {
					want = tc.wantSkipped
				}
				if ti.N != uint64(k) || ti.Skipped != want {
					t.Errorf("tick %d: N %d Skipped %d, want N %d Skipped %d", k, ti.N, ti.Skipped, k, want)
				}
				if ti.Wake != ti.Deadline || ti.Next != ti.Deadline+testPeriod {
					t.Errorf("tick %d: %+v: want Wake = Deadline and Next = Deadline + period", k, ti)
				}
				if k > 0 && ti.Deadline-infos[k-1].Deadline != testPeriod*int64(1+ti.Skipped) {
					t.Errorf("tick %d: deadline step %d, want %d", k, ti.Deadline-infos[k-1].Deadline, testPeriod*int64(1+ti.Skipped))
				}
			}
			if got := l.Overruns(); got != uint64(tc.wantSkipped) {
				t.Errorf("Overruns() = %d, want %d", got, tc.wantSkipped)
			}
			wantObs := []int{}
			if tc.wantSkipped > 0 {
				wantObs = []int{tc.wantSkipped}
			}
			if !equalInts(obs.overruns, wantObs) {
				t.Errorf("ObserveOverrun calls %v, want %v", obs.overruns, wantObs)
			}
			if obs.work[2] != tc.work || obs.lateness[2] != 0 {
				t.Errorf("tick 2 observed lateness %d work %d, want 0 and %d", obs.lateness[2], obs.work[2], tc.work)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Sleep-then-spin sleeps to deadline − Spin, then spins to the deadline.
func TestLoopSpinSleepsEarly(t *testing.T) {
	const ticks, spin = 4, int64(200 * time.Microsecond)
	sim := &simTimer{t: 1e9, sleeps: make([]int64, 0, ticks)}
	l := newLoop(LoopConfig{Period: time.Duration(testPeriod), Spin: time.Duration(spin), CPU: -1}, sim, nil, nil)
	deadlines := make([]int64, 0, ticks)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) {
		deadlines = append(deadlines, ti.Deadline)
		if ti.Wake != ti.Deadline {
			t.Errorf("tick %d woke at %d, want the deadline %d", ti.N, ti.Wake, ti.Deadline)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	for k, d := range deadlines {
		if sim.sleeps[k] != d-spin {
			t.Errorf("tick %d: slept until %d, want %d", k, sim.sleeps[k], d-spin)
		}
	}
}

// On the real clock: N counts by one, the deadline grid is exact, and
// cancelling stops the loop with a nil error.
func TestLoopRealClock(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  LoopConfig
	}{
		{"sleep", LoopConfig{Period: 500 * time.Microsecond, CPU: -1}},
		{"spin", LoopConfig{Period: 500 * time.Microsecond, Spin: 100 * time.Microsecond, CPU: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ticks = 50
			obs := newRecObserver(ticks)
			l, err := NewLoop(tc.cfg, realtime.NewClock(), obs, nil)
			if err != nil {
				t.Fatal(err)
			}
			infos := make([]TickInfo, 0, ticks)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err = l.Serve(ctx, stopAfter(l, ticks-1, cancel, func(ti *TickInfo) { infos = append(infos, *ti) }))
			if err != nil {
				t.Fatalf("Serve after cancel = %v, want nil", err)
			}
			period := int64(tc.cfg.Period)
			var skipped uint64
			for k, ti := range infos {
				if ti.N != uint64(k) || ti.Next != ti.Deadline+period {
					t.Errorf("tick %d: %+v", k, ti)
				}
				if k > 0 && ti.Deadline-infos[k-1].Deadline != period*int64(1+ti.Skipped) {
					t.Errorf("tick %d: deadline step %d with %d skipped", k, ti.Deadline-infos[k-1].Deadline, ti.Skipped)
				}
				// Spinning reads the same clock as the wake time, so it can
				// never report an early wake.
				if tc.cfg.Spin > 0 && ti.Wake < ti.Deadline {
					t.Errorf("tick %d woke %d ns early", k, ti.Deadline-ti.Wake)
				}
				skipped += uint64(ti.Skipped)
			}
			if l.Ticks() != ticks || len(obs.lateness) != ticks {
				t.Errorf("Ticks() = %d, observed %d, want %d", l.Ticks(), len(obs.lateness), ticks)
			}
			// The overruns after the last tick are not reported in any TickInfo.
			if l.Overruns() < skipped {
				t.Errorf("Overruns() = %d < %d skipped in TickInfo", l.Overruns(), skipped)
			}
		})
	}
}

func TestLoopCancelledBeforeServe(t *testing.T) {
	l, err := NewLoop(LoopConfig{Period: time.Millisecond, CPU: -1}, realtime.NewClock(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Serve(ctx, func(*TickInfo) {}); err != nil {
		t.Fatalf("Serve(cancelled) = %v, want nil", err)
	}
	if n := l.Ticks(); n > 1 {
		t.Fatalf("ran %d ticks after cancellation, want at most the one in progress", n)
	}
}

func TestLoopPanic(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		value any
		is    error
	}{
		{"string", "kaput", ErrTickPanic},
		{"error", boom, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLoop(LoopConfig{Period: time.Duration(testPeriod), CPU: -1}, &simTimer{}, nil, nil)
			err := l.Serve(context.Background(), func(ti *TickInfo) {
				if ti.N == 3 {
					panic(tc.value)
				}
			})
			var pe *TickPanicError
			if !errors.Is(err, ErrTickPanic) || !errors.Is(err, tc.is) || !errors.As(err, &pe) {
				t.Fatalf("Serve = %v, want a TickPanicError wrapping ErrTickPanic and %v", err, tc.is)
			}
			if pe.Tick != 3 || pe.Value != tc.value || len(pe.Stack) == 0 {
				t.Errorf("TickPanicError{Tick %d, Value %v, %d B stack}, want tick 3, %v", pe.Tick, pe.Value, len(pe.Stack), tc.value)
			}
			if !strings.HasPrefix(err.Error(), "bridge: tick 3 panicked") {
				t.Errorf("message %q", err)
			}
			if l.Ticks() != 3 {
				t.Errorf("Ticks() = %d, want 3 completed", l.Ticks())
			}
		})
	}
}

func TestLoopServeTwice(t *testing.T) {
	l, err := NewLoop(LoopConfig{Period: time.Millisecond, CPU: -1}, realtime.NewClock(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() { done <- l.Serve(ctx, func(*TickInfo) { once.Do(func() { close(started) }) }) }()
	<-started
	if err := l.Serve(context.Background(), func(*TickInfo) {}); !errors.Is(err, ErrLoopServing) {
		t.Errorf("second Serve = %v, want ErrLoopServing", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first Serve = %v, want nil", err)
	}
	// A stopped loop can serve again.
	ctx2, cancel2 := context.WithCancel(context.Background())
	before := l.Ticks()
	err = l.Serve(ctx2, stopAfter(l, 0, cancel2, func(*TickInfo) {}))
	cancel2()
	if err != nil || l.Ticks() != before+1 {
		t.Fatalf("Serve again = %v with %d ticks, want nil and 1 tick", err, l.Ticks()-before)
	}
}

// Set-up steps that cannot be applied are logged once, and the loop runs.
func TestLoopSetupWarningLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	// No machine running this has CPU 1023 (the last index a CPU set holds).
	l, err := NewLoop(LoopConfig{Period: 200 * time.Microsecond, CPU: 1023}, realtime.NewClock(), nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := l.Serve(ctx, stopAfter(l, 19, cancel, func(*TickInfo) {})); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "CPU affinity 1023"); n != 1 || l.Ticks() != 20 {
		t.Fatalf("warning logged %d times over %d ticks, want once over 20:\n%s", n, l.Ticks(), logs.String())
	}
	var se *realtime.SetupError
	if w := l.SetupWarnings(); len(w) != 1 || !errors.As(w[0], &se) || se.Setting != "CPU affinity 1023" {
		t.Fatalf("SetupWarnings() = %v, want the CPU affinity warning", w)
	}
}

func TestLoopConfigValidate(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		cfg   LoopConfig
		field string // "" = valid
	}{
		{LoopConfig{Period: ms, CPU: -1}, ""},
		{LoopConfig{Period: ms, Priority: 80, CPU: 1, Spin: 200 * time.Microsecond, LockMemory: true}, ""},
		{LoopConfig{Period: 0, CPU: -1}, "period 0s"},
		{LoopConfig{Period: -ms, CPU: -1}, "period -1ms"},
		{LoopConfig{Period: ms, Priority: -1, CPU: -1}, "priority -1"},
		{LoopConfig{Period: ms, Priority: 100, CPU: -1}, "priority 100"},
		{LoopConfig{Period: ms, CPU: -2}, "cpu -2"},
		{LoopConfig{Period: ms, CPU: 4096}, "cpu 4096"},
		{LoopConfig{Period: ms, CPU: -1, Spin: -1}, "spin -1ns"},
		{LoopConfig{Period: ms, CPU: -1, Spin: ms}, "spin 1ms"},
		{LoopConfig{Period: ms, Priority: 80, CPU: -1, Budget: 100 * time.Microsecond}, ""},
		{LoopConfig{Period: ms, Priority: 80, CPU: -1, Budget: -1}, "budget -1ns"},
		{LoopConfig{Period: ms, Priority: 80, CPU: -1, Budget: 2 * ms}, "budget 2ms"},
		{LoopConfig{Period: ms, Priority: 80, CPU: 1, Budget: 100 * time.Microsecond}, "budget 100µs"},
		{LoopConfig{Period: ms, CPU: -1, Budget: 100 * time.Microsecond}, "budget 100µs"},
		{LoopConfig{Period: ms, CPU: -1, GuardAfter: 200 * time.Microsecond}, ""},
		{LoopConfig{Period: ms, CPU: -1, GuardAfter: 50 * time.Microsecond}, "guard threshold 50µs"},
		{LoopConfig{Period: ms, CPU: -1, GuardAfter: 2 * time.Second}, "guard threshold 2s"},
	} {
		_, err := NewLoop(tc.cfg, realtime.NewClock(), nil, nil)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v, want valid", tc.cfg, err)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "bridge: loop "+tc.field) || !strings.Contains(err.Error(), "want") {
			t.Errorf("%+v: %v, want ErrConfig naming %q and the allowed range", tc.cfg, err, tc.field)
		}
	}
	if _, err := NewLoop(LoopConfig{Period: ms, CPU: -1}, nil, nil, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("nil clock: %v, want ErrConfig", err)
	}
	l, _ := NewLoop(LoopConfig{Period: ms, CPU: -1}, realtime.NewClock(), nil, nil)
	if err := l.Serve(context.Background(), nil); !errors.Is(err, ErrConfig) {
		t.Errorf("nil tick: %v, want ErrConfig", err)
	}
	if l.Period() != ms {
		t.Errorf("Period() = %v", l.Period())
	}
}

func nopTick(*TickInfo) {}

// One iteration on the real clock (sleep, spin, tick, observe, overrun path)
// allocates nothing.
func TestLoopStepAllocs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		period time.Duration
		spin   time.Duration
	}{
		{"sleep", 50 * time.Microsecond, 0},
		{"spin", 50 * time.Microsecond, 10 * time.Microsecond},
		{"overrun", time.Nanosecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := realtime.NewClock()
			l, err := NewLoop(LoopConfig{Period: tc.period, Spin: tc.spin, CPU: -1}, c, newRecObserver(0), nil)
			if err != nil {
				t.Fatal(err)
			}
			st := loopState{next: c.Now() + int64(tc.period)}
			if n := testing.AllocsPerRun(200, func() {
				if err := l.step(&st, nopTick); err != nil {
					t.Fatal(err)
				}
			}); n != 0 {
				t.Fatalf("%v allocations per iteration, want 0", n)
			}
		})
	}
}

// The whole running loop, between two points in its life, allocates nothing:
// the process's malloc count does not move across 200 ticks. The count is
// process-wide, so a goroutine left by another test can allocate inside the
// window; a loop that allocated would do so in every attempt, so one clean
// attempt out of five proves the loop clean.
func TestLoopServeAllocs(t *testing.T) {
	const first, last = 10, 210
	best := uint64(1 << 63)
	for attempt := 0; attempt < 5 && best != 0; attempt++ {
		l, err := NewLoop(LoopConfig{Period: 100 * time.Microsecond, CPU: -1}, realtime.NewClock(), newRecObserver(0), nil)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		ctx, cancel := context.WithCancel(context.Background())
		err = l.Serve(ctx, stopAfter(l, last, cancel, func(ti *TickInfo) {
			switch ti.N {
			case first:
				runtime.ReadMemStats(&before)
			case last:
				runtime.ReadMemStats(&after)
			}
		}))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		best = min(best, after.Mallocs-before.Mallocs)
	}
	if best != 0 {
		t.Fatalf("%d allocations over %d ticks in the best of 5 runs, want 0", best, last-first)
	}
}

func BenchmarkLoopStep(b *testing.B) {
	b.Run("simulated", func(b *testing.B) {
		// Bookkeeping only: no system calls.
		l := newLoop(LoopConfig{Period: time.Millisecond, CPU: -1}, &simTimer{}, nil, nil)
		var st loopState
		b.ReportAllocs()
		for b.Loop() {
			_ = l.step(&st, nopTick)
		}
	})
	b.Run("clock", func(b *testing.B) {
		// Real clock reads, deadlines always due: the loop's own overhead
		// per tick, without the sleep.
		c := realtime.NewClock()
		l, _ := NewLoop(LoopConfig{Period: time.Nanosecond, CPU: -1}, c, nil, nil)
		st := loopState{next: c.Now()}
		b.ReportAllocs()
		for b.Loop() {
			_ = l.step(&st, nopTick)
		}
	})
}

func ExampleLoop() {
	l, err := NewLoop(LoopConfig{Period: time.Millisecond, CPU: -1}, realtime.NewClock(), nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var n uint64
	err = l.Serve(ctx, func(ti *TickInfo) {
		// Runs on the loop thread every millisecond: no allocation here.
		n = ti.N + 1
		if n == 5 {
			cancel()
		}
	})
	fmt.Println(err, n >= 5)
	// Output: <nil> true
}

// A SCHED_FIFO loop whose tick runs on past its guard's threshold is
// demoted by the spin guard (here a busy tick stands in for a loop
// spinning in the runtime: both run without reaching the loop's code), and
// the loop's next step restores SCHED_FIFO at its priority.
func TestLoopSpinGuard(t *testing.T) {
	g := testutil.SpinGuard(t)
	l, err := NewLoop(LoopConfig{Period: 10 * time.Millisecond, Priority: 20, CPU: -1, Guard: g, GuardAfter: time.Millisecond},
		realtime.NewClock(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var policies [3]uint32
	var fifo bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = l.Serve(ctx, func(ti *TickInfo) {
		attr, aerr := unix.SchedGetAttr(0, 0)
		if aerr != nil {
			t.Error(aerr)
		}
		if ti.N == 0 {
			fifo = attr.Policy == unix.SCHED_FIFO
			if !fifo {
				cancel() // no SCHED_FIFO here: nothing for the guard to watch
				return
			}
			// Busy, as a spin is, until demoted; a loaded machine makes
			// this slow, not wrong.
			for l.SpinBreaks() == 0 {
			}
		}
		if ti.N < uint64(len(policies)) {
			policies[ti.N] = attr.Policy
		}
		if ti.N == uint64(len(policies))-1 {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !fifo {
		t.Skip("the loop got no SCHED_FIFO (run as root or with LimitRTPRIO)")
	}
	want := [3]uint32{unix.SCHED_FIFO, unix.SCHED_FIFO, unix.SCHED_FIFO}
	if policies != want {
		t.Errorf("policy at the start of ticks 0..2 = %v, want SCHED_FIFO (%d) each: the step after a break restores it", policies, unix.SCHED_FIFO)
	}
	if n := l.SpinBreaks(); n != 1 {
		t.Errorf("SpinBreaks = %d after the loop served, want 1", n)
	}
}
