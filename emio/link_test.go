package emio_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// holdExchanger answers every tick with the same command, as a partner would.
type holdExchanger struct{ u []float64 }

func (h holdExchanger) Exchange(_, command []float64, _ int64) simulink.Status {
	copy(command, h.u)
	return simulink.OKNoDelay
}
func (holdExchanger) Synced() bool { return true }

// The U2D2 is unplugged and plugged back while the loop runs, through the
// real serial path on a pseudo-terminal: the link goes degraded, the loop
// keeps ticking, and the supervisor reopens the servos by itself.
func TestUnplugDuringRunningLoop(t *testing.T) {
	sb, link, ctx := servePTY(t, dxlsim.DefaultBusConfig())
	m, err := emio.New(emio.Config{
		IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Fast: true,
		Bus:  dynamixel.BusConfig{Baud: 1000000, Margin: 20 * time.Millisecond},
		Open: func() (dynamixel.Port, error) { return dynamixel.OpenSerial(link, 1000000) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	lim := []bridge.Limit{{Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "emio", Loop: bridge.LoopConfig{Period: 10 * time.Millisecond, CPU: -1}, Limits: lim},
		m, holdExchanger{u: []float64{0.3, 0.3, 0.3, 0.3}}, realtime.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Backoff: bridge.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Factor: 2}, Seed: 1})
	sup.AddLink(l, nil)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sup.Serve(sctx) }()

	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (state %v)", what, l.State())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("running with commands applied", func() bool { return l.State() == bridge.Running && l.Applied() > 5 })
	sb.Unplug()
	wait("degraded", func() bool { return l.State() == bridge.Degraded })
	t0 := l.Ticks()
	wait("ticks while unplugged", func() bool { return l.Ticks() > t0+20 })
	sb.Plug()
	wait("recovered", func() bool { return l.State() == bridge.Running })
	a0 := l.Applied()
	wait("commands after recovery", func() bool { return l.Applied() > a0+5 })
	// The open rejoined the command at rejoin speed; the reopen of servos
	// still holding went on with it.
	wait("the command reached after recovery", func() bool { return atGoals(t, sb, []float64{0.3, 0.3, 0.3, 0.3}) })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// servePTY serves simulated servos on a pseudo-terminal until the test
// ends, and returns their bus, the terminal's path and a context that ends
// with the test.
func servePTY(t *testing.T, bc dxlsim.BusConfig) (*dxlsim.Bus, string, context.Context) {
	t.Helper()
	sb, err := dxlsim.NewBus(bc)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "u2d2")
	pt, err := dxlsim.NewPTY(sb, link)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { pt.Serve(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return sb, link, ctx
}

// runLink runs m under a supervisor as link "emio" at period, its partner
// commanding u every tick, until the test ends; wait polls a condition
// with a generous deadline.
func runLink(t *testing.T, m *emio.Motors, period time.Duration, u []float64) (*bridge.Link, *bridge.Supervisor, func(string, func() bool)) {
	t.Helper()
	lim := []bridge.Limit{{Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "emio", Loop: bridge.LoopConfig{Period: period, CPU: -1}, Limits: lim},
		m, holdExchanger{u: u}, realtime.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Backoff: bridge.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Factor: 2},
		PollLatched: 20 * time.Millisecond, Seed: 1})
	sup.AddLink(l, nil)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (state %v, device %v)", what, l.State(), l.DeviceErr())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return l, sup, wait
}

// atGoals reports whether every servo's goal is the command's.
func atGoals(t *testing.T, sb *dxlsim.Bus, u []float64) bool {
	for i, s := range sb.Servos() {
		if s.Value(dynamixel.ItemGoalPosition) != pulse(t, u[i]) {
			return false
		}
	}
	return true
}

// openSimulated opens the Emio's four servos on a simulated bus, in
// position mode, ticking at period; they close after the test's supervisor
// has stopped (cleanups run last first).
func openSimulated(t *testing.T, period time.Duration) (*dxlsim.Bus, *emio.Motors) {
	t.Helper()
	sb, err := dxlsim.NewBus(dxlsim.DefaultBusConfig())
	if err != nil {
		t.Fatal(err)
	}
	m, err := emio.New(emio.Config{
		IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Fast: true, Link: "emio", Period: period,
		Bus:  dynamixel.BusConfig{Baud: 1000000, LatencyTimer: time.Millisecond, Margin: 20 * time.Millisecond},
		Open: func() (dynamixel.Port, error) { return dxlsim.NewPipe(sb), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return sb, m
}

// The servos' power goes while the link runs and its partner commands a
// position far from where they sag; when the power is back the supervisor
// reopens them, and the goals the servos receive never step more than
// rejoin speed × period (plus a pulse of rounding) in one write, from the
// first open to the command reached again after the power cycle.
func TestPowerCycleDuringRunningLink(t *testing.T) {
	const period = 10 * time.Millisecond
	sb, m := openSimulated(t, period)
	u := []float64{0.5, 1.0, -1.0, 0}
	l, _, wait := runLink(t, m, period, u)
	wait("the command reached", func() bool { return l.State() == bridge.Running && !m.Rejoining() && atGoals(t, sb, u) })

	if err := sb.PowerOff(); err != nil {
		t.Fatal(err)
	}
	wait("degraded", func() bool { return l.State() == bridge.Degraded })
	// Limp, servos 1 and 2 sag back to the middle: 1 rad (57°) from their
	// goals.
	for _, id := range []byte{1, 2} {
		if err := sb.Servo(id).SetValue(dynamixel.ItemPresentPosition, dynamixel.PulseCenter); err != nil {
			t.Fatal(err)
		}
	}
	before := sb.Servo(1).Received().GoalWrites
	if err := sb.PowerOn(); err != nil {
		t.Fatal(err)
	}
	wait("running again", func() bool { return l.State() == bridge.Running })
	wait("the command reached again", func() bool { return !m.Rejoining() && atGoals(t, sb, u) })
	checkSteps(t, sb, maxStep(emio.DefaultRejoinSpeed, period))
	// 1 rad at 1 rad/s and 100 Hz: 100 goal writes at least, however the
	// ticks fell.
	if n := sb.Servo(1).Received().GoalWrites - before; n < 100 {
		t.Errorf("servo 1 rejoined in %d goal writes, want 100 at least", n)
	}
}

// A servo overloads while the link runs: the link stays degraded and
// latched, the supervisor's reopens write nothing (no torque on, no
// reboot, no goal) while the other servos hold their goal; the person's
// resume reboots the servo, which holds where it stands and rejoins.
func TestOverloadDuringRunningLink(t *testing.T) {
	const period = 10 * time.Millisecond
	sb, m := openSimulated(t, period)
	u := []float64{0.3, -0.3, 0.2, -0.2}
	l, sup, wait := runLink(t, m, period, u)
	wait("the command reached", func() bool { return l.State() == bridge.Running && !m.Rejoining() && atGoals(t, sb, u) })

	if err := sb.ForceHardwareError(1, dynamixel.HWOverload); err != nil {
		t.Fatal(err)
	}
	wait("latched", func() bool { return l.State() == bridge.Degraded && l.Latched() })
	before := snap(sb)
	// The latched reopens read the servos: let a good few of them pass.
	p0 := sb.Stats().Packets
	wait("latched reopens", func() bool { return sb.Stats().Packets > p0+40 })
	if !l.Latched() || l.State() != bridge.Degraded {
		t.Fatalf("state %v, latched %v", l.State(), l.Latched())
	}
	untouched(t, sb, before, 1)
	if err := sup.Health(); err == nil || !strings.Contains(err.Error(), "servo 1: overload") {
		t.Errorf("health %v, want the overload of servo 1", err)
	}
	if err := l.DeviceErr(); err == nil || !strings.Contains(err.Error(), "remove the load, then run `bridge resume emio`, which reboots it") {
		t.Errorf("device error %v, want what to do", err)
	}

	if err := sup.Resume("emio"); err != nil {
		t.Fatal(err)
	}
	wait("running after the resume", func() bool { return l.State() == bridge.Running })
	wait("the command reached again", func() bool { return !m.Rejoining() && atGoals(t, sb, u) })
	if r := sb.Servo(1).Received(); r.Reboots != 1 {
		t.Errorf("servo 1 rebooted %d times, want once", r.Reboots)
	}
	if sb.Servo(1).Value(dynamixel.ItemTorqueEnable) != 1 {
		t.Error("servo 1 not holding after the resume")
	}
	for _, i := range []int{0, 2, 3} {
		if s := sb.Servos()[i]; s.Releases() != 0 || s.Received().Reboots != 0 {
			t.Errorf("servo %d released or rebooted", s.ID())
		}
	}
	checkSteps(t, sb, maxStep(emio.DefaultRejoinSpeed, period))
}
