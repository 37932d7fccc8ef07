package loopbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/realtime"
)

// simTimer is simulated time: sleeping jumps to the deadline, ticks advance
// it by their work.
type simTimer struct{ t int64 }

func (s *simTimer) now() int64 { return s.t }

func (s *simTimer) sleepUntil(d int64) error {
	s.t = max(s.t, d)
	return nil
}

// tick is what a simTicker saw of one tick.
type tick struct {
	name string
	info bridge.TickInfo
}

type simTicker struct {
	name  string
	timer *simTimer
	work  func(n uint64) int64 // simulated time the tick takes
	log   *[]tick
}

func (s *simTicker) Tick(ti *bridge.TickInfo) {
	*s.log = append(*s.log, tick{s.name, *ti})
	if s.work != nil {
		s.timer.t += s.work(ti.N)
	}
}

// obsLog records what a scheduler tells an observer.
type obsLog struct {
	lateness, work []int64
	overruns       []int
}

func (o *obsLog) ObserveTick(l, w int64) {
	o.lateness, o.work = append(o.lateness, l), append(o.work, w)
}
func (o *obsLog) ObserveOverrun(k int) { o.overruns = append(o.overruns, k) }

// Ticks run earliest deadline first, equal deadlines in the order added,
// each on its own grid from its phase, with Next = NextWake = the next
// deadline.
func TestSchedulerOrder(t *testing.T) {
	tm := &simTimer{t: 1000}
	s := newScheduler(SchedulerConfig{CPU: -1}, tm)
	var log []tick
	add := func(name string, period, phase int64) {
		t.Helper()
		if err := s.Add(name, time.Duration(period), time.Duration(phase), &simTicker{name: name, timer: tm, log: &log}, nil); err != nil {
			t.Fatal(err)
		}
	}
	add("A", 10, 0)
	add("B", 10, 5)
	add("C", 4, 0)
	s.start(tm.now())
	for range 11 {
		if err := s.step(); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct {
		name     string
		deadline int64
		n        uint64
	}{
		{"C", 1004, 0}, {"C", 1008, 1}, {"A", 1010, 0}, {"C", 1012, 2}, {"B", 1015, 0}, {"C", 1016, 3},
		{"A", 1020, 1}, {"C", 1020, 4}, {"C", 1024, 5}, {"B", 1025, 1}, {"C", 1028, 6},
	}
	for i, w := range want {
		g := log[i]
		if g.name != w.name || g.info.Deadline != w.deadline || g.info.N != w.n {
			t.Fatalf("tick %d: %s N=%d at %d, want %s N=%d at %d", i, g.name, g.info.N, g.info.Deadline, w.name, w.n, w.deadline)
		}
		period := map[string]int64{"A": 10, "B": 10, "C": 4}[g.name]
		if g.info.Next != w.deadline+period || g.info.NextWake != g.info.Next || g.info.Wake != w.deadline || g.info.Skipped != 0 {
			t.Errorf("tick %d: %+v", i, g.info)
		}
		// A tick not run by a bridge.Loop sends at once.
		if got := g.info.Gate(); got != g.info.Wake {
			t.Errorf("tick %d: Gate %d, want the wake-up %d", i, got, g.info.Wake)
		}
	}
	if s.Ticks(2) != 7 || s.Overruns(2) != 0 {
		t.Errorf("C: %d ticks, %d overruns", s.Ticks(2), s.Overruns(2))
	}
}

// An overrun skips whole periods to the first deadline still ahead, with
// bridge.Loop's rule (a tick ending on the next deadline skips it), and the
// skip is counted once, on the link it happened to; a link delayed by
// another's long tick is late and skips too.
func TestSchedulerOverrun(t *testing.T) {
	tm := &simTimer{}
	s := newScheduler(SchedulerConfig{CPU: -1}, tm)
	var log []tick
	var obsA, obsB obsLog
	// A: tick 0 takes 25 (2.5 periods), tick 2 exactly one period.
	workA := func(n uint64) int64 { return map[uint64]int64{0: 25, 2: 10}[n] }
	if err := s.Add("A", 10, 0, &simTicker{name: "A", timer: tm, work: workA, log: &log}, &obsA); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("B", 10, 5, &simTicker{name: "B", timer: tm, log: &log}, &obsB); err != nil {
		t.Fatal(err)
	}
	s.start(0)
	for range 8 {
		if err := s.step(); err != nil {
			t.Fatal(err)
		}
	}
	want := []struct {
		name           string
		deadline, wake int64
		n              uint64
		skipped        int
		next, nextWake int64
	}{
		{"A", 10, 10, 0, 0, 20, 20}, // runs 10..35: 20 and 30 skipped
		{"B", 15, 35, 0, 0, 25, 25}, // delayed 20 by A: 25 passed, 35 is now: both skipped
		{"A", 40, 40, 1, 2, 50, 50},
		{"B", 45, 45, 1, 2, 55, 55},
		{"A", 50, 50, 2, 0, 60, 60}, // runs 50..60: ends on its next deadline, skips it
		{"B", 55, 60, 2, 0, 65, 65}, // delayed 5 by A, still before its next deadline
		{"B", 65, 65, 3, 0, 75, 75},
		{"A", 70, 70, 3, 1, 80, 80},
	}
	for i, w := range want {
		g := log[i]
		if g.name != w.name || g.info.Deadline != w.deadline || g.info.Wake != w.wake || g.info.N != w.n ||
			g.info.Skipped != w.skipped || g.info.Next != w.next || g.info.NextWake != w.nextWake {
			t.Errorf("tick %d: %s %+v, want %+v", i, g.name, g.info, w)
		}
	}
	if fmt.Sprint(obsA.overruns) != "[2 1]" || fmt.Sprint(obsB.overruns) != "[2]" {
		t.Errorf("overruns observed: A %v, B %v", obsA.overruns, obsB.overruns)
	}
	if fmt.Sprint(obsB.lateness) != "[20 0 5 0]" || fmt.Sprint(obsA.work) != "[25 0 10 0]" {
		t.Errorf("B lateness %v, A work %v", obsB.lateness, obsA.work)
	}
	if s.Overruns(0) != 3 || s.Overruns(1) != 2 || s.Ticks(0) != 4 || s.Ticks(1) != 4 {
		t.Errorf("counters: A %d/%d, B %d/%d", s.Ticks(0), s.Overruns(0), s.Ticks(1), s.Overruns(1))
	}
}

func TestSchedulerAdd(t *testing.T) {
	s, err := NewScheduler(SchedulerConfig{CPU: -1}, realtime.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	nop := &countTicker{}
	for _, c := range []struct {
		period, phase time.Duration
		t             Ticker
	}{{0, 0, nop}, {time.Millisecond, time.Millisecond, nop}, {time.Millisecond, -1, nop}, {time.Millisecond, 0, nil}} {
		if err := s.Add("x", c.period, c.phase, c.t, nil); !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "loopbench: ") {
			t.Errorf("Add(%v, %v): %v", c.period, c.phase, err)
		}
	}
	if err := s.Serve(context.Background()); !errors.Is(err, ErrConfig) {
		t.Errorf("Serve with nothing to run: %v", err)
	}
	if _, err := NewScheduler(SchedulerConfig{Priority: 100}, realtime.NewClock()); !errors.Is(err, ErrConfig) {
		t.Errorf("priority 100: %v", err)
	}
	if _, err := NewScheduler(SchedulerConfig{CPU: -1}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("nil clock: %v", err)
	}
}

type countTicker struct {
	n     atomic.Uint64
	panic bool
}

func (c *countTicker) Tick(*bridge.TickInfo) {
	if c.n.Add(1) == 3 && c.panic {
		panic("boom")
	}
}

// A real run on the real clock: both tickers tick, Serve returns nil once
// ctx is done, a second Serve or an Add meanwhile is refused.
func TestSchedulerServe(t *testing.T) {
	s, err := NewScheduler(SchedulerConfig{CPU: -1}, realtime.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	a, b := &countTicker{}, &countTicker{}
	if err := s.Add("a", time.Millisecond, 0, a, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("b", 2*time.Millisecond, 500*time.Microsecond, b, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for (a.n.Load() < 5 || b.n.Load() < 3) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := s.Serve(ctx); !errors.Is(err, ErrSchedulerServing) {
		t.Errorf("second Serve: %v", err)
	}
	if err := s.Add("c", time.Millisecond, 0, a, nil); !errors.Is(err, ErrSchedulerServing) {
		t.Errorf("Add while serving: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.n.Load() == 0 || b.n.Load() == 0 || s.Ticks(0) != a.n.Load() || s.Ticks(1) != b.n.Load() {
		t.Errorf("ticks: a %d (%d), b %d (%d)", a.n.Load(), s.Ticks(0), b.n.Load(), s.Ticks(1))
	}
}

func TestSchedulerPanic(t *testing.T) {
	s, err := NewScheduler(SchedulerConfig{CPU: -1}, realtime.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add("bad", time.Millisecond, 0, &countTicker{panic: true}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Serve(ctx); err == nil || !strings.Contains(err.Error(), `loopbench: scheduler: tick of "bad" panicked: boom`) {
		t.Errorf("Serve: %v", err)
	}
}

type nopTicker struct{}

func (nopTicker) Tick(*bridge.TickInfo) {}

// One step (sleep, tick, observe, reorder) allocates nothing.
func TestSchedulerStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s, err := NewScheduler(SchedulerConfig{CPU: -1}, realtime.NewClock())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		obs := NewLinkTiming(realtime.NewClock(), 100*time.Microsecond)
		obs.sendIsWake = true
		if err := s.Add(fmt.Sprint(i), 100*time.Microsecond, time.Duration(i)*25*time.Microsecond, nopTicker{}, obs); err != nil {
			t.Fatal(err)
		}
	}
	s.start(s.timer.now())
	if n := testing.AllocsPerRun(200, func() {
		if err := s.step(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a scheduler step allocates %v times", n)
	}
}
