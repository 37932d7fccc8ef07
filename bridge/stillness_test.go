package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/plant"
	rt "github.com/labbridge/bridge/realtime"
)

// wheelPlant is a robot that keeps moving by itself (a plant.Stopper) and
// can latch a stop only a person ends (a plant.Resumer). speed is what the
// device last applied: the device side the tests read.
type wheelPlant struct {
	armPlant
	smu       sync.Mutex
	speed     float64
	reachable bool
	latched   bool // the device is in a stop a person must end
	resumed   bool // a person asked
	stops     int
	latchedN  int // reopens refused while latched
	failNext  bool
	events    []string
}

func (p *wheelPlant) Measure(dst []float64) error {
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.failNext {
		p.failNext = false
		return errors.New("wheels: the scene stopped answering")
	}
	return nil
}

func (p *wheelPlant) Command(u []float64) error {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.speed = u[0]
	return nil
}

func (p *wheelPlant) Halt(plant.HaltPolicy) error {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.speed = 0
	p.events = append(p.events, "halt")
	return nil
}

func (p *wheelPlant) StopMotion(context.Context) error {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.stops++
	p.events = append(p.events, "stop")
	if !p.reachable {
		return errors.New("wheels: the scene at 127.0.0.1:1 is unreachable; its last speeds may still be applied")
	}
	p.speed = 0
	return nil
}

func (p *wheelPlant) Reopen(context.Context) error {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.events = append(p.events, "reopen")
	if p.latched && !p.resumed {
		p.latchedN++
		return fmt.Errorf("wheels: emergency stop engaged: release it, then run `bridge resume wheels`: %w", plant.ErrStopLatched)
	}
	p.latched, p.resumed = false, false
	return nil
}

func (p *wheelPlant) Resume() {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.resumed = true
}

func (p *wheelPlant) get() (speed float64, stops, latchedN int, events []string) {
	p.smu.Lock()
	defer p.smu.Unlock()
	return p.speed, p.stops, p.latchedN, append([]string(nil), p.events...)
}

func wheelLink(t *testing.T, p *wheelPlant) *bridge.Link {
	t.Helper()
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "wheels", Loop: bridge.LoopConfig{Period: 2 * time.Millisecond, CPU: -1},
		Limits: []bridge.Limit{{Min: -10, Max: 10}}}, p, okExchanger{u: []float64{3}}, rt.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A velocity plant whose link goes degraded is stopped at once, before any
// reopen: the device's last applied speed is zero while the link applies
// nothing.
func TestDegradedStopsAVelocityPlant(t *testing.T) {
	p := &wheelPlant{armPlant: armPlant{n: 1}, reachable: true}
	l := wheelLink(t, p)
	sup := fastSupervisor(nil)
	sup.AddLink(l, nil)
	stop := serve(t, sup)
	defer stop()
	testutil.WaitFor(t, "a command applied", func() bool { s, _, _, _ := p.get(); return s == 3 })
	p.smu.Lock()
	p.failNext = true
	p.smu.Unlock()
	testutil.WaitFor(t, "running again", func() bool { _, _, _, ev := p.get(); return indexOf(ev, "reopen") >= 0 && l.State() == bridge.Running })
	_, _, _, ev := p.get()
	if i := indexOf(ev, "stop"); i < 0 || indexOf(ev, "reopen") < i {
		t.Fatalf("device events %v: want the stop before any reopen", ev)
	}
}

// What StopMotion could not reach is said by Health while the link is
// degraded, and the halt at stop tries once more and fails the stop.
func TestUnreachableStopIsSaid(t *testing.T) {
	p := &wheelPlant{armPlant: armPlant{n: 1}, latched: true}
	l := wheelLink(t, p)
	sup := fastSupervisor(nil)
	sup.AddLink(l, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	testutil.WaitFor(t, "a command applied", func() bool { s, _, _, _ := p.get(); return s == 3 })
	p.smu.Lock()
	p.failNext = true
	p.smu.Unlock()
	testutil.WaitFor(t, "health says it", func() bool {
		err := sup.Health()
		return err != nil && strings.Contains(err.Error(), "its last speeds may still be applied")
	})
	cancel()
	err := <-done
	if !errors.Is(err, bridge.ErrHalt) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("Serve: %v, want a halt error saying the scene is unreachable", err)
	}
	if _, n, _, _ := p.get(); n < 2 {
		t.Errorf("%d StopMotion calls, want one at degrade and one at the halt", n)
	}
}

// A stop only a person may end keeps the link degraded however long it
// lasts: the device is read (Reopen refused), never started, Health says
// what to do; Resume reopens it at once; a Resume while nothing is latched
// is refused and arms nothing.
func TestLatchedStopWaitsForAPerson(t *testing.T) {
	p := &wheelPlant{armPlant: armPlant{n: 1}, reachable: true}
	l := wheelLink(t, p)
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Backoff: bridge.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Factor: 2},
		PollLatched: 5 * time.Millisecond, Seed: 1})
	sup.AddLink(l, nil)
	stop := serve(t, sup)
	defer stop()
	testutil.WaitFor(t, "running", func() bool { return l.State() == bridge.Running })
	if err := sup.Resume("wheels"); !errors.Is(err, bridge.ErrNotLatched) {
		t.Fatalf("Resume of a running link: %v, want ErrNotLatched", err)
	}
	if err := sup.Resume("nope"); !errors.Is(err, bridge.ErrNoLink) {
		t.Fatalf("Resume of no link: %v, want ErrNoLink", err)
	}
	p.smu.Lock()
	p.latched, p.failNext = true, true
	p.smu.Unlock()
	testutil.WaitFor(t, "several refused reopens", func() bool { _, _, n, _ := p.get(); return n >= 5 })
	if l.State() != bridge.Degraded || !l.Latched() {
		t.Fatalf("state %v latched %v, want degraded and latched", l.State(), l.Latched())
	}
	if err := sup.Health(); err == nil || !strings.Contains(err.Error(), "bridge resume wheels") {
		t.Fatalf("health %v, want the person's action", err)
	}
	if s, _, _, _ := p.get(); s != 0 {
		t.Fatalf("speed %v while latched, want 0", s)
	}
	if err := sup.Resume("wheels"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "running after resume", func() bool { return l.State() == bridge.Running })
	if l.Latched() || sup.Health() != nil {
		t.Fatalf("latched %v health %v after resume", l.Latched(), sup.Health())
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// agingPlant's measurement carries its age: Age makes it grow while the
// device is down.
type agingPlant struct {
	armPlant
	ages atomic.Int64
	gone atomic.Bool // the cable is pulled: Measure fails
}

func (p *agingPlant) Measure(dst []float64) error {
	if p.gone.Load() {
		return errors.New("arm: cable pulled")
	}
	return p.armPlant.Measure(dst)
}

func (p *agingPlant) Age(dst []float64) { dst[1] = float64(p.ages.Add(1)) }

func (p *agingPlant) Reopen(context.Context) error { return errors.New("arm: still away") }

// While the device is down, the measurement sent again (and the copy the
// status view reads) has its freshness fields moved by the plant's Age.
func TestStaleMeasurementAges(t *testing.T) {
	p := &agingPlant{armPlant: armPlant{n: 1}}
	l := armLink(t, "arm", &p.armPlant, plant.HaltHold)
	l, err := bridge.NewLink(l.Config(), p, okExchanger{u: []float64{1}}, rt.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sup := fastSupervisor(nil)
	sup.AddLink(l, nil)
	stop := serve(t, sup)
	defer stop()
	testutil.WaitFor(t, "running", func() bool { return l.State() == bridge.Running })
	p.gone.Store(true)
	m := make([]float64, 2)
	testutil.WaitFor(t, "the age growing in the stale measurement", func() bool { l.Measurement(m); return m[1] > 3 })
	if l.Stale() == 0 {
		t.Error("no stale tick counted")
	}
}
