package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// armPlant is a robot arm: torque goes off at a torque-off halt and on at a
// reopen, and a command while it is limp is the defect being guarded
// against. It can panic in one tick, and stall in Measure.
type armPlant struct {
	mu       sync.Mutex
	n        int // command length
	limp     bool
	calls    []string
	panicAt  int // Measure call number that panics; 0 = never
	measures int
	absent   int // Reopen fails with plant.ErrAbsent this many times first
	reopens  int
	stall    chan struct{} // when set, Measure blocks on it
	stalled  atomic.Bool   // a Measure is blocked on stall
	unplug   atomic.Bool   // Measure fails: the adapter was pulled
}

func (p *armPlant) MeasureLen() int { return 2 }
func (p *armPlant) CommandLen() int { return p.n }

func (p *armPlant) Measure(dst []float64) error {
	if p.unplug.Load() {
		return errors.New("arm: unplugged")
	}
	p.mu.Lock()
	stall := p.stall
	p.measures++
	if p.measures == p.panicAt {
		p.mu.Unlock()
		panic("armPlant: a bug in a tick")
	}
	p.mu.Unlock()
	if stall != nil {
		p.stalled.Store(true)
		<-stall
	}
	return nil
}

func (p *armPlant) Command(u []float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limp {
		p.calls = append(p.calls, "command while limp")
	} else {
		p.calls = append(p.calls, "command")
	}
	return nil
}

func (p *armPlant) Halt(h plant.HaltPolicy) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, "halt "+h.String())
	if h == plant.HaltTorqueOff {
		p.limp = true
	}
	return nil
}

func (p *armPlant) Reopen(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reopens++
	if p.absent > 0 {
		p.absent--
		return fmt.Errorf("arm: adapter unplugged: %w", plant.ErrAbsent)
	}
	p.limp = false
	p.calls = append(p.calls, "reopen")
	return nil
}

func (p *armPlant) snapshot() (calls []string, limp bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...), p.limp
}

// okExchanger answers every tick with the same command.
type okExchanger struct{ u []float64 }

func (e okExchanger) Exchange(_, cmd []float64, _ int64) simulink.Status {
	copy(cmd, e.u)
	return simulink.OKNoDelay
}
func (okExchanger) Synced() bool { return true }

func armLink(t *testing.T, name string, p *armPlant, halt plant.HaltPolicy) *bridge.Link {
	t.Helper()
	lim := make([]bridge.Limit, p.n)
	u := make([]float64, p.n)
	for i := range lim {
		lim[i] = bridge.Limit{Min: -100, Max: 100}
		u[i] = float64(i) + 0.5
	}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: name, Halt: halt, Loop: bridge.LoopConfig{Period: 2 * time.Millisecond, CPU: -1}, Limits: lim},
		p, okExchanger{u: u}, realtime.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func fastSupervisor(logs io.Writer) *bridge.Supervisor {
	cfg := bridge.SupervisorConfig{Backoff: bridge.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Factor: 2}, Seed: 1}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	return bridge.NewSupervisor(cfg)
}

func serve(t *testing.T, sup *bridge.Supervisor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// Defect: with halt = "torque_off", a link restarted after a failed tick
// drove a released robot and reported it running. Now the restarted link
// starts degraded, the supervisor reopens the plant (torque back on), and
// only then do commands flow again.
func TestRestartAfterTorqueOffHaltReopensFirst(t *testing.T) {
	p := &armPlant{n: 4, panicAt: 20}
	l := armLink(t, "arm", p, plant.HaltTorqueOff)
	var mu sync.Mutex
	var states []string
	sup := fastSupervisor(nil)
	if err := sup.AddLink(l, stateRecorder(func(s string) { mu.Lock(); states = append(states, s); mu.Unlock() })); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, sup)
	testutil.WaitFor(t, "the reopen after the restart", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.reopens > 0 })
	a0 := l.Applied()
	testutil.WaitFor(t, "commands after the reopen", func() bool { return l.Applied() > a0+5 && l.State() == bridge.Running })
	stop()
	calls, _ := p.snapshot()
	joined := strings.Join(calls, ",")
	if strings.Contains(joined, "command while limp") {
		t.Fatalf("a command reached the released arm: %s", joined)
	}
	if i, j := strings.Index(joined, "halt torque_off"), strings.Index(joined, "reopen"); i < 0 || j < i {
		t.Fatalf("calls %s: want the halt, then a reopen before any later command", joined)
	}
	mu.Lock()
	defer mu.Unlock()
	// handshaking, running, stopped (the failed Serve), degraded (the
	// restart, released), running again, stopped.
	if got := strings.Join(states, " "); !strings.Contains(got, "running stopped degraded running") {
		t.Errorf("states %q, want the restart to go through degraded", got)
	}
}

type stateRecorder func(string)

func (r stateRecorder) SetState(s string) error { r(s); return nil }
func (r stateRecorder) DeviceRestart(string)    {}

// countingService fails at once, every time, with err.
type countingService struct {
	calls atomic.Int32
	err   error
}

func (c *countingService) Serve(context.Context) error { c.calls.Add(1); return c.err }

// Defect: a service that cannot run again was restarted for ever, logging
// "failed; restarting" every backoff period. A permanent failure is now
// logged once and not retried; an ordinary failure is retried, and its
// repeats do not flood the log.
func TestPermanentFailureNotRetried(t *testing.T) {
	// A file: safe to write from the supervisor's goroutines.
	logs, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	sup := fastSupervisor(logs)
	perm := &countingService{err: fmt.Errorf("metrics: server closed: %w", plant.ErrPermanent)}
	flaky := &countingService{err: errors.New("flaky: broke")}
	sup.Add("metrics", perm)
	sup.Add("flaky", flaky)
	stop := serve(t, sup)
	testutil.WaitFor(t, "a few restarts of the flaky service", func() bool { return flaky.calls.Load() >= 5 })
	stop()
	if n := perm.calls.Load(); n != 1 {
		t.Errorf("a permanent failure was served %d times, want once", n)
	}
	b, _ := os.ReadFile(logs.Name())
	out := string(b)
	if n := strings.Count(out, "will not be restarted"); n != 1 || !strings.Contains(out, "part=metrics") {
		t.Errorf("the permanent failure was logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "level=WARN msg=\"failed; restarting\" part=flaky"); n != 1 {
		t.Errorf("the same failure was logged at WARN %d times, want once a minute:\n%s", n, out)
	}
}

// depService records when it runs.
type depService struct {
	name string
	log  func(string)
}

func (d depService) Serve(ctx context.Context) error {
	d.log("start " + d.name)
	<-ctx.Done()
	d.log("stop " + d.name)
	return nil
}

// A link's dependencies start before its loop ticks and stop only after
// its halt; process-wide services stop after every link.
func TestDependenciesStartBeforeAndStopAfterTheLink(t *testing.T) {
	var mu sync.Mutex
	var events []string
	record := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	p := &recordingArm{armPlant: armPlant{n: 1}, record: record}
	l := armLink(t, "arm", &p.armPlant, plant.HaltHold)
	// The link's plant is p itself, so that its Measure and Halt are seen.
	l2, err := bridge.NewLink(l.Config(), p, okExchanger{u: []float64{1}}, realtime.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sup := fastSupervisor(nil)
	if err := sup.AddLink(l2, nil, bridge.Part{Name: "camera", Service: depService{"camera", record}}); err != nil {
		t.Fatal(err)
	}
	sup.Add("metrics", depService{"metrics", record})
	stop := serve(t, sup)
	testutil.WaitFor(t, "ticks", func() bool { return l2.Ticks() > 3 })
	stop()
	mu.Lock()
	defer mu.Unlock()
	at := func(s string) int {
		for i, e := range events {
			if e == s {
				return i
			}
		}
		t.Fatalf("no %q in %v", s, events)
		return -1
	}
	if !(at("start camera") < at("measure") && at("halt") < at("stop camera") && at("stop camera") < at("stop metrics")) {
		t.Errorf("order %v: want the camera started before the first tick, stopped after the halt, metrics last", events)
	}
}

type recordingArm struct {
	armPlant
	record func(string)
	once   sync.Once
}

func (p *recordingArm) Measure(dst []float64) error {
	p.once.Do(func() { p.record("measure") })
	return nil
}

func (p *recordingArm) Halt(h plant.HaltPolicy) error { p.record("halt"); return nil }

// Defect: the watchdog's progress was the sum of all links' ticks, so one
// live link hid a stalled one. Progress is now true only when every link
// ticked since the last call.
func TestProgressNeedsEveryLink(t *testing.T) {
	live := &armPlant{n: 1}
	stuck := &armPlant{n: 1}
	a, b := armLink(t, "live", live, plant.HaltHold), armLink(t, "stuck", stuck, plant.HaltHold)
	sup := fastSupervisor(nil)
	sup.AddLink(a, nil)
	sup.AddLink(b, nil)
	progress := sup.Progress()
	stop := serve(t, sup)
	defer stop()
	testutil.WaitFor(t, "both links ticking", func() bool { return sup.Ticking(5) })
	testutil.WaitFor(t, "progress of both", progress)
	release := make(chan struct{})
	stuck.mu.Lock()
	stuck.stall = release
	stuck.mu.Unlock()
	defer close(release)
	// Once the stuck link has blocked (its tick in flight when the stall
	// was set may still complete), progress stays false while the live
	// link keeps ticking.
	testutil.WaitFor(t, "the stuck link blocked", stuck.stalled.Load)
	progress() // may still see the stuck link's last tick
	a0 := a.Ticks()
	testutil.WaitFor(t, "the live link ticking", func() bool { return a.Ticks() > a0+5 })
	if progress() {
		t.Error("progress reported with one link stalled")
	}
}

// Defect: a plant of more than 16 commands was shown stale values past the
// 16th. Every command element is kept.
func TestCommandOfAnyLength(t *testing.T) {
	p := &armPlant{n: 40}
	l := armLink(t, "wide", p, plant.HaltHold)
	var ti bridge.TickInfo
	for range 3 {
		l.Tick(&ti)
	}
	got := make([]float64, 40)
	if !l.Command(got) {
		t.Fatal("no command applied")
	}
	for i, v := range got {
		if v != float64(i)+0.5 {
			t.Fatalf("command[%d] = %v, want %v", i, v, float64(i)+0.5)
		}
	}
	meas := make([]float64, 2)
	if !l.Measurement(meas) || math.IsNaN(meas[0]) {
		t.Errorf("measurement %v", meas)
	}
}

// Defect: after an unplug the supervisor backed off up to ≈ 12 s before
// noticing the adapter was back. An absent device is polled instead: with a
// backoff that would wait for hours after two failures, the replugged
// device is back within the poll interval.
func TestAbsentDeviceIsPolled(t *testing.T) {
	p := &armPlant{n: 1, absent: 5}
	l := armLink(t, "arm", p, plant.HaltHold)
	l.DeviceFailed(errors.New("arm: unplugged"))
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{
		Backoff: bridge.Backoff{Initial: 5 * time.Millisecond, Max: time.Hour, Factor: 1000}, PollAbsent: 5 * time.Millisecond, Seed: 1,
	})
	sup.AddLink(l, nil)
	stop := serve(t, sup)
	defer stop()
	testutil.WaitFor(t, "the device back", func() bool { return l.State() == bridge.Running })
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reopens != 6 {
		t.Errorf("%d reopen attempts, want 6 (5 absent, then back)", p.reopens)
	}
}

// A torque-off halt that cannot reach the unplugged device is the stop's
// outcome: Serve returns an error wrapping ErrHalt and ErrUnreached, so the
// process exits non-zero; a halt that was applied returns nil.
func TestHaltOutcomeAtStop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		halt    plant.HaltPolicy
		unplug  bool
		wantErr bool
	}{
		{"torque off applied", plant.HaltTorqueOff, false, false},
		{"hold on an unplugged device", plant.HaltHold, true, false},
		{"torque off on an unplugged device", plant.HaltTorqueOff, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &armPlant{n: 1, absent: 1 << 30}
			l := armLink(t, "arm", p, tc.halt)
			sup := bridge.NewSupervisor(bridge.SupervisorConfig{PollAbsent: 5 * time.Millisecond, Seed: 1})
			sup.AddLink(l, nil)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sup.Serve(ctx) }()
			testutil.WaitFor(t, "ticks", func() bool { return l.Ticks() > 2 })
			if tc.unplug {
				p.unplug.Store(true) // on the loop thread's next Measure
				testutil.WaitFor(t, "degraded", func() bool { return l.State() == bridge.Degraded })
			}
			cancel()
			err := <-done
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("Serve: %v", err)
				}
				return
			}
			var he *bridge.HaltError
			if !errors.Is(err, bridge.ErrHalt) || !errors.Is(err, bridge.ErrUnreached) || !errors.As(err, &he) || he.Link != "arm" {
				t.Fatalf("Serve: %v, want a *HaltError for link arm wrapping ErrUnreached", err)
			}
			if calls, _ := p.snapshot(); slices.Contains(calls, "halt torque_off") {
				t.Fatalf("calls %v: a halt was sent to an unplugged device", calls)
			}
		})
	}
}

// ailingPart is a part whose health is always err.
type ailingPart struct{ err error }

func (ailingPart) Serve(ctx context.Context) error { <-ctx.Done(); return nil }
func (p ailingPart) Health() error                 { return p.err }

// A stopped (or degraded) link's state and its first reason are one line
// of Health, not "is stopped" and then why; a further reason has a line
// of its own; a healthy link with a sick part says only the part's.
func TestHealthOneLinePerProblem(t *testing.T) {
	sup := fastSupervisor(nil)
	arm := armLink(t, "arm", &armPlant{n: 2}, plant.HaltHold)
	other := armLink(t, "other", &armPlant{n: 2}, plant.HaltHold)
	if err := sup.AddLink(arm, nil, bridge.Part{Name: "servos", Service: ailingPart{errors.New("the servos are not reachable")}},
		bridge.Part{Name: "camera", Service: ailingPart{errors.New("the camera delivers no frames")}}); err != nil {
		t.Fatal(err)
	}
	if err := sup.AddLink(other, nil); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, sup)
	testutil.WaitFor(t, "both links running", func() bool { return arm.State() == bridge.Running && other.State() == bridge.Running })
	if got, want := sup.Health().Error(), "link arm: the servos are not reachable\nlink arm: the camera delivers no frames"; got != want {
		t.Errorf("running:\n%s\nwant\n%s", got, want)
	}
	stop()
	want := "link arm is stopped: the servos are not reachable\nlink arm: the camera delivers no frames\nlink other is stopped"
	if got := sup.Health().Error(); got != want {
		t.Errorf("stopped:\n%s\nwant\n%s", got, want)
	}
}
