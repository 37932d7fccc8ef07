package bridge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/labbridge/bridge/realtime"
)

// scriptTrigger fires at scripted simulated times: a wait returns every
// event due by the time it is called, or advances the timer to the next one
// if it comes before the deadline, or times out at the deadline.
type scriptTrigger struct {
	tm     *simTimer
	events []int64
}

func (s *scriptTrigger) WaitUntil(deadline int64) (uint64, int64, error) {
	var n uint64
	var at int64
	for len(s.events) > 0 && s.events[0] <= max(s.tm.t, deadline) {
		if n > 0 && s.events[0] > s.tm.t {
			break
		}
		at = s.events[0]
		s.tm.t = max(s.tm.t, at)
		s.events = s.events[1:]
		n++
	}
	if n == 0 {
		s.tm.t = max(s.tm.t, deadline)
	}
	return n, at, nil
}

// A triggered loop ticks on each event, merges events that came during a long
// tick (counted as overruns), and keeps ticking at the period when events
// stop, counting those ticks as missed.
func TestLoopTriggered(t *testing.T) {
	const p = testPeriod
	tm := &simTimer{}
	events := []int64{p, 2 * p, 3 * p, 3*p + p/4, 4 * p, 10 * p, 11 * p}
	tr := &scriptTrigger{tm: tm, events: events}
	obs := newRecObserver(16)
	l := newLoop(LoopConfig{Period: time.Duration(p), CPU: -1, Trigger: tr}, tm, obs, nil)
	var got []TickInfo
	work := map[uint64]int64{1: p + p/2} // tick 1 runs long: events at 3p and 3.25p merge
	st := loopState{next: p + p/2}
	for range 10 {
		if err := l.step(&st, func(ti *TickInfo) {
			got = append(got, *ti)
			tm.t += work[ti.N]
		}); err != nil {
			t.Fatal(err)
		}
	}
	type want struct {
		deadline int64
		skipped  int
		missed   bool
	}
	wants := []want{
		{p, 0, false},
		{2 * p, 0, false},
		{3*p + p/4, 1, false}, // 3p and 3.25p came during tick 1
		{4 * p, 0, false},
		{4*p + 3*p/2, 0, true}, // no event by 5.5p: fallback tick
		{5*p + 3*p/2, 0, true}, // then at the period
		{6*p + 3*p/2, 0, true},
		{7*p + 3*p/2, 0, true},
		{8*p + 3*p/2, 0, true},
		{10 * p, 0, false}, // events are back
	}
	for i, w := range wants {
		g := got[i]
		if g.Deadline != w.deadline || g.Skipped != w.skipped || g.Missed != w.missed || g.N != uint64(i) {
			t.Errorf("tick %d: deadline %d skipped %d missed %v, want %d %d %v", i, g.Deadline, g.Skipped, g.Missed, w.deadline, w.skipped, w.missed)
		}
		if g.Next != g.Deadline+p {
			t.Errorf("tick %d: next %d, want deadline + period", i, g.Next)
		}
	}
	if l.Missed() != 5 || l.Overruns() != 1 {
		t.Errorf("missed %d overruns %d, want 5 and 1", l.Missed(), l.Overruns())
	}
}

// On a real eventfd, a triggered loop ticks once per signal and allocates
// nothing per iteration.
func TestLoopTriggeredEvent(t *testing.T) {
	c := realtime.NewClock()
	ev, err := realtime.NewEvent(c)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	l, err := NewLoop(LoopConfig{Period: 10 * time.Millisecond, CPU: -1, Trigger: ev}, c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := loopState{next: c.Now() + int64(time.Second)}
	if n := testing.AllocsPerRun(100, func() {
		_ = ev.Signal(c.Now())
		if err := l.step(&st, nopTick); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per triggered iteration, want 0", n)
	}
	if l.Missed() != 0 {
		t.Fatalf("missed %d with an event every iteration", l.Missed())
	}

	ctx, cancel := context.WithCancel(context.Background())
	l2, err := NewLoop(LoopConfig{Period: 5 * time.Millisecond, CPU: -1, Trigger: ev}, c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ticks := make(chan TickInfo, 64)
	done := make(chan error, 1)
	go func() {
		done <- l2.Serve(ctx, func(ti *TickInfo) {
			select {
			case ticks <- *ti:
			default:
			}
		})
	}()
	// Each event makes one tick that is not missed. A busy machine may run
	// missed ticks (no event in time) in between: those are skipped, not
	// counted against the loop.
	for range 5 {
		time.Sleep(2 * time.Millisecond)
		_ = ev.Signal(c.Now())
		patience := time.After(time.Minute)
	wait:
		for {
			select {
			case ti := <-ticks:
				if !ti.Missed {
					break wait
				}
			case <-patience:
				t.Fatal("no triggered tick after an event")
			}
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestLoopTriggerRejectsSpin(t *testing.T) {
	c := realtime.NewClock()
	ev, err := realtime.NewEvent(c)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	_, err = NewLoop(LoopConfig{Period: time.Second, Spin: time.Millisecond, CPU: -1, Trigger: ev}, c, nil, nil)
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("spin with a trigger: %v, want ErrConfig", err)
	}
}
