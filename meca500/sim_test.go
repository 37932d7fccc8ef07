package meca500_test

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/meca500"
	"github.com/labbridge/bridge/meca500/mecasim"
	"github.com/labbridge/bridge/plant"
)

// countingListener counts the connections the robot accepts.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// simRig is a simulated robot served on loopback and an arm connected to
// it. starts records what the robot received that starts or moves it,
// from the moment watch is set.
type simRig struct {
	robot  *mecasim.Robot
	arm    *meca500.Arm
	ln     *countingListener
	closed atomic.Bool // the test closed the listener: Serve fails
	watch  atomic.Bool
	mu     sync.Mutex
	starts []string
}

func (r *simRig) started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.starts...)
}

func newSimRig(t *testing.T, edit func(*meca500.Config)) *simRig {
	t.Helper()
	rig := &simRig{}
	robot, err := mecasim.New(mecasim.Config{MonitoringInterval: 10 * time.Millisecond, OnCommand: func(name string, args []float64) {
		if !rig.watch.Load() {
			return
		}
		switch n := strings.ToLower(name); {
		case n == "activaterobot", n == "home", n == "reseterror", n == "resumemotion",
			strings.HasPrefix(n, "move") && !allZero(args):
			rig.mu.Lock()
			rig.starts = append(rig.starts, name)
			rig.mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := mecasim.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP port: %v", err)
	}
	rig.robot, rig.ln = robot, &countingListener{Listener: ln}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- robot.Serve(ctx, rig.ln) }()
	cfg := testConfig(ln.Addr().String())
	cfg.Link = "meca500"
	cfg.ConnectTimeout = 300 * time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	arm, err := meca500.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rig.arm = arm
	t.Cleanup(func() {
		arm.Close()
		cancel()
		if err := <-done; err != nil && !rig.closed.Load() {
			t.Errorf("Serve: %v", err)
		}
		ln.Close()
	})
	if err := arm.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rig
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// stream commands joint 1 at w °/s until the robot's joint 1 has moved.
func (r *simRig) stream(t *testing.T, w float64) {
	t.Helper()
	q0 := r.robot.Joints()[0]
	base, sent := r.robot.Status().MotionCommands, 0
	m := make([]float64, r.arm.MeasureLen())
	testutil.WaitFor(t, "the robot moving on our commands", func() bool {
		if err := r.arm.Measure(m); err != nil {
			t.Fatalf("measure: %v", err)
		}
		if err := r.arm.Command([]float64{w, 0, 0, 0, 0, 0}); err != nil {
			t.Fatalf("command: %v", err)
		}
		sent++
		return math.Abs(r.robot.Joints()[0]-q0) > 0.2
	})
	// Every command sent has reached the robot.
	testutil.WaitFor(t, "the commands at the robot", func() bool { return r.robot.Status().MotionCommands >= base+sent })
}

// still reports whether the robot's joints stay put for a while (several
// velocity timeouts): a robot that moves is seen moving.
func (r *simRig) stillFor(d time.Duration) bool {
	q := r.robot.Joints()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if r.robot.Status().Moving {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r.robot.Joints() == q
}

// latchedErr polls the arm's Reopen until its error contains want, and
// returns it; each failed attempt is one a supervisor would make.
func (r *simRig) reopenUntil(t *testing.T, want string) *meca500.StoppedError {
	t.Helper()
	var last error
	var stopped *meca500.StoppedError
	testutil.WaitFor(t, "a reopen saying "+want, func() bool {
		last = r.arm.Reopen(context.Background())
		return errors.As(last, &stopped) && errors.Is(last, plant.ErrStopLatched) && strings.Contains(last.Error(), want)
	})
	return stopped
}

// The whole stop sequence on the simulated robot, for an emergency stop, a
// protective stop and a motion error: the stop degrades the link; its
// release and its reset at the power supply start nothing (the robot is
// never activated, homed, reset or moved, seen from the robot); a resume
// while the stop holds is refused and spent; a resume after the reset
// activates, homes and streams again.
func TestStopStaysStopped(t *testing.T) {
	for _, tc := range []struct {
		name           string
		press, release func(*mecasim.Robot)
		engaged        string // the message while it holds
		released       string // after its release
		reset          string // after its reset
	}{
		{"emergency stop", func(r *mecasim.Robot) { r.EStop(true) }, func(r *mecasim.Robot) { r.EStop(false) },
			"emergency stop engaged: release it and reset it at the power supply, then run `bridge resume meca500` or POST /links/meca500/resume",
			"emergency stop released but not reset: reset it at the power supply",
			"the emergency stop is reset; the arm waits for a person: run `bridge resume meca500`"},
		{"protective stop", func(r *mecasim.Robot) { r.PStop1(true) }, func(r *mecasim.Robot) { r.PStop1(false) },
			"protective stop PStop1 engaged: release it and reset it at the power supply",
			"protective stop PStop1 released but not reset",
			"the protective stop PStop1 is reset; the arm waits for a person"},
		{"motion error", func(r *mecasim.Robot) { r.MotionError() }, nil,
			"the robot reports error 3005 (Motion error.): see what stopped the arm and clear its way, then run `bridge resume meca500`", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newSimRig(t, nil)
			rig.stream(t, 20)
			rig.watch.Store(true)
			tc.press(rig.robot)
			m := make([]float64, rig.arm.MeasureLen())
			testutil.WaitFor(t, "Measure failing", func() bool { return errors.Is(rig.arm.Measure(m), plant.ErrStopLatched) })
			if err := rig.arm.StopMotion(context.Background()); err != nil {
				t.Errorf("stop motion of a reachable robot: %v", err)
			}
			e := rig.reopenUntil(t, tc.engaged)
			t.Logf("the user reads: %v", e)
			if tc.release != nil {
				if !e.Engaged {
					t.Errorf("%v: not engaged", e)
				}
				// A resume while the stop holds is refused, and spent.
				rig.arm.Resume()
				if err := rig.arm.Reopen(context.Background()); !errors.Is(err, plant.ErrStopLatched) || !strings.Contains(err.Error(), "resume refused") {
					t.Errorf("resume while engaged: %v", err)
				}
				tc.release(rig.robot)
				rig.reopenUntil(t, tc.released)
				rig.robot.ResetPowerSupply()
				rig.reopenUntil(t, tc.reset)
			}
			// What a supervisor polling once a second would do, faster.
			for range 5 {
				if err := rig.arm.Reopen(context.Background()); !errors.Is(err, plant.ErrStopLatched) {
					t.Fatalf("reopen after the reset: %v", err)
				}
			}
			if !rig.stillFor(300 * time.Millisecond) {
				t.Error("the robot moved after its stop")
			}
			if s := rig.robot.Status(); s.Activated && tc.release != nil || tc.release == nil && !s.Error {
				t.Errorf("robot %+v: restarted without a person", s)
			}
			if got := rig.started(); len(got) > 0 {
				t.Errorf("the robot received %v without a person's resume", got)
			}
			if n := rig.ln.n.Load(); n != 1 {
				t.Errorf("%d connections: a latched reopen keeps the live one", n)
			}
			// A person resumes.
			rig.arm.Resume()
			if err := rig.arm.Reopen(context.Background()); err != nil {
				t.Fatalf("reopen after resume: %v", err)
			}
			if s := rig.robot.Status(); !s.Activated || !s.Homed || s.Paused || s.Error {
				t.Fatalf("robot after resume %+v", s)
			}
			rig.stream(t, -20)
		})
	}
}

// restart_after_stop = true: once the stop is reset, the arm restarts by
// itself, and not before.
func TestRestartAfterStop(t *testing.T) {
	rig := newSimRig(t, func(c *meca500.Config) { c.RestartAfterStop = true })
	rig.stream(t, 20)
	rig.robot.EStop(true)
	rig.reopenUntil(t, "emergency stop engaged")
	rig.robot.EStop(false)
	rig.reopenUntil(t, "released but not reset")
	if rig.robot.Status().Activated {
		t.Fatal("activated before the reset")
	}
	rig.robot.ResetPowerSupply()
	testutil.WaitFor(t, "the restart", func() bool { return rig.arm.Reopen(context.Background()) == nil })
	rig.stream(t, 20)
}

// A partner silent for three watchdog periods: the first idle tick sends
// zero velocity and the idle ticks keep the connection (no watchdog
// expiry, no reconnection), and commands move the arm again after. A
// bridge that hangs (no tick at all) lets the watchdog drop the
// connection, the watchdog's time after the last refresh on the robot's
// clock.
func TestIdleKeepsTheConnection(t *testing.T) {
	// Long enough that no stall of a loaded machine expires it between two
	// idle ticks: that the ticks keep it is what is shown.
	const watchdog = time.Second
	rig := newSimRig(t, func(c *meca500.Config) { c.Watchdog = watchdog })
	rig.stream(t, 20)
	m := make([]float64, rig.arm.MeasureLen())
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for silent := time.Now(); time.Since(silent) < 3*watchdog; {
		<-tick.C
		if err := rig.arm.Measure(m); err != nil {
			t.Fatalf("measure while idle: %v", err)
		}
		if err := rig.arm.Idle(); err != nil {
			t.Fatalf("idle: %v", err)
		}
	}
	testutil.WaitFor(t, "the arm still", func() bool { return !rig.robot.Status().Moving })
	s := rig.robot.Status()
	if s.WatchdogExpiries != 0 || !s.Connected || !s.Watchdog || rig.ln.n.Load() != 1 {
		t.Fatalf("after idle ticks: %+v, %d connections: want connected, watchdog armed, never expired", s, rig.ln.n.Load())
	}
	// Each tick, streamed or idle, ends with one ConnectionWatchdog, which
	// numbers the ticks the robot received: the last velocity command is
	// zero and came the tick after the last streamed one.
	if v := rig.robot.Velocities(); len(v) != 2 || v[0].V[0] != 20 || v[1].V != ([6]float64{}) || v[1].Watchdogs != v[0].Watchdogs+1 {
		t.Errorf("velocity commands %+v: want 20 °/s, then zero in the next tick", v)
	}
	rig.stream(t, -20)
	// The bridge hangs: nothing refreshes the watchdog. (The last tick's
	// refresh may still be on its way when stream returns, so the count is
	// not compared: the expiry's time below shows no refresh came later.)
	testutil.WaitFor(t, "the watchdog to drop the connection", func() bool { return rig.robot.Status().WatchdogExpiries == 1 })
	s = rig.robot.Status()
	if s.Moving || s.Connected || !s.Paused {
		t.Errorf("after the watchdog: %+v", s)
	}
	// On the robot's clock, to the microsecond ConnectionWatchdog's six
	// decimals carry: the expiry came the watchdog after the last refresh
	// (so none came after it), and the simulator did not act on it early.
	e, _ := rig.robot.LastWatchdogExpiry()
	if d := e.Expired - e.Refreshed; d < watchdog-time.Microsecond || d > watchdog+time.Microsecond || e.Noticed < e.Expired {
		t.Errorf("watchdog expiry %+v: %v after the last refresh on the robot's clock, want %v", e, d, watchdog)
	}
}

// While the link is down, Age keeps the measurement's freshness fields
// moving: the connection lost (paused, still, 3086, the age growing), an
// emergency stop (3070), a motion error (3005). The measurement while
// running carries error 0, and the robot's code on the tick that finds it
// in error.
func TestAgeWhileDown(t *testing.T) {
	rig := newSimRig(t, nil)
	rig.stream(t, 20)
	m := make([]float64, rig.arm.MeasureLen())
	const status, code, age = 6, 13, 14 // no pose
	if err := rig.arm.Measure(m); err != nil || m[code] != 0 || m[status] != 1 || m[status+4] != 0 {
		t.Fatalf("running: %v %v", m, err)
	}
	rig.robot.DropClient()
	testutil.WaitFor(t, "Measure failing", func() bool { return rig.arm.Measure(m) != nil })
	rig.arm.Age(m)
	first := m[age]
	if m[status+4] != 1 || m[status+6] != 1 || m[code] != 3086 || m[status] != 1 {
		t.Errorf("disconnected: %v: want activated as last known, paused, still, error 3086", m[status:])
	}
	testutil.WaitFor(t, "the age growing", func() bool { rig.arm.Age(m); return m[age] > first+0.05 })

	if err := rig.arm.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	rig.stream(t, 20)
	rig.robot.EStop(true)
	testutil.WaitFor(t, "Measure failing", func() bool { return rig.arm.Measure(m) != nil })
	testutil.WaitFor(t, "E-stop in the aged measurement", func() bool {
		rig.arm.Age(m)
		return m[code] == 3070 && m[status] == 0 && m[status+4] == 1
	})
	rig.robot.EStop(false)
	rig.robot.ResetPowerSupply()
	rig.reopenUntil(t, "is reset")
	rig.arm.Age(m)
	if m[code] != 3070 {
		t.Errorf("after the reset, waiting for a person: error %v, want the stop that holds the link (3070)", m[code])
	}
	rig.arm.Resume()
	if err := rig.arm.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	rig.stream(t, 20)
	rig.robot.MotionError()
	testutil.WaitFor(t, "the error in the aged measurement", func() bool {
		rig.arm.Age(m)
		return m[code] == 3005 && m[status+3] == 1
	})
}

// StopMotion stops a streaming robot at once and turns its watchdog off; a
// robot it cannot reach was stopped by its own velocity timeout.
func TestStopMotion(t *testing.T) {
	rig := newSimRig(t, nil)
	rig.stream(t, 20)
	rig.arm.Command([]float64{20, 0, 0, 0, 0, 0})
	if err := rig.arm.StopMotion(context.Background()); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the robot still, watchdog off", func() bool { s := rig.robot.Status(); return !s.Moving && !s.Watchdog })
	rig.robot.DropClient()
	m := make([]float64, rig.arm.MeasureLen())
	testutil.WaitFor(t, "Measure failing", func() bool { return rig.arm.Measure(m) != nil })
	// Its velocity timeout has stopped it: nothing the bridge no longer
	// sends can move it.
	if err := rig.arm.StopMotion(context.Background()); err != nil {
		t.Errorf("stop motion of a lost robot with a velocity timeout: %v, want nil", err)
	}
	if rig.robot.Status().Moving {
		t.Error("the lost robot still moves")
	}
}

// Health tells an unreachable robot from a reachable one that is stopped.
func TestHealthSaysWhich(t *testing.T) {
	rig := newSimRig(t, nil)
	rig.stream(t, 20)
	if err := rig.arm.Health(); err != nil {
		t.Fatalf("running: %v", err)
	}
	rig.robot.MotionError()
	// A machine loaded past the silence timeout may lose the link (seen
	// once under -race beside other race runs); reconnected, the bridge
	// reads the robot in error with a code reported before it connected.
	known := func(err error) bool { return strings.Contains(err.Error(), "error 3005") }
	again := func(err error) bool { return strings.Contains(err.Error(), "reported before the bridge connected") }
	testutil.WaitFor(t, "the error", func() bool {
		err := rig.arm.Health()
		if err != nil && strings.Contains(err.Error(), "unreachable") {
			rig.arm.Reopen(context.Background()) // as the supervisor does
			return false
		}
		return err != nil && (known(err) || again(err))
	})
	err := rig.arm.Health()
	if strings.Contains(err.Error(), "unreachable") || !errors.Is(err, plant.ErrStopLatched) {
		t.Errorf("in error: %v", err)
	}
	if on, detail := rig.arm.Stopped(); !on || known(err) && !strings.Contains(detail, "3005") {
		t.Errorf("stopped: %v %q", on, detail)
	}
	if again(err) {
		t.Logf("the link was lost and found again: %v", err)
	}
	rig.closed.Store(true)
	rig.ln.Close()
	rig.robot.DropClient()
	testutil.WaitFor(t, "unreachable", func() bool {
		rig.arm.Reopen(context.Background())
		err := rig.arm.Health()
		return err != nil && strings.Contains(err.Error(), "unreachable")
	})
	t.Logf("the user reads: %v", rig.arm.Health())
}

// warnCounter counts warnings that contain a text.
type warnCounter struct {
	text string
	n    *atomic.Int32
}

func (w warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w warnCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, w.text) {
		w.n.Add(1)
	}
	return nil
}
func (w warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w warnCounter) WithGroup(string) slog.Handler      { return w }

// A burst of buffer-full refusals is counted and logged once, at WARN.
func TestBufferFullLoggedOnce(t *testing.T) {
	var warns atomic.Int32
	rig := newSimRig(t, func(c *meca500.Config) {
		c.Logger = slog.New(warnCounter{"motion queue is full", &warns})
	})
	rig.stream(t, 20)
	rig.robot.BufferFull(5)
	for range 5 {
		if err := rig.arm.Command([]float64{10, 0, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WaitFor(t, "five refusals counted", func() bool { return rig.arm.BufferFulls() == 5 })
	if n := warns.Load(); n != 1 {
		t.Errorf("%d warnings for one burst, want 1", n)
	}
	if rig.robot.Status().BufferFull != 5 {
		t.Errorf("robot %+v", rig.robot.Status())
	}
}
