package vrep_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// newScene makes a scene, opens it and runs its worker for the test.
func newScene(t *testing.T, cfg vrep.Config) *vrep.Scene {
	t.Helper()
	s, err := vrep.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	serve(t, s.Serve)
	return s
}

// tick is one tick of a link with a fresh command: Measure, Command, and
// a wait for the worker's exchange, so that a test knows what the scene
// has seen.
func tick(t *testing.T, s *vrep.Scene, meas, u []float64) {
	t.Helper()
	if err := s.Measure(meas); err != nil {
		t.Fatal(err)
	}
	n := s.Stats().Exchanges
	if u == nil {
		s.Idle()
	} else if err := s.Command(u); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the worker's exchange", func() bool { return s.Stats().Exchanges > n })
}

func TestSceneAZ(t *testing.T) {
	world, addr := startAZ(t, vrepsim.AZConfig{})
	obs := &counter{}
	// Simulink's order differs from the scene's: the mapping turns it.
	s := newScene(t, vrep.Config{Address: addr, Timeout: time.Second, Observer: obs,
		Measure: []string{vrep.RightAngle, vrep.SimTime}, Command: []string{vrep.RightSpeed, vrep.LeftSpeed}})
	lay := s.Layout()
	if s.MeasureLen() != 2 || s.CommandLen() != 2 || lay.Measure[0].Name != "angles" || lay.Measure[1].Name != "sim_time" || lay.Command[0].Name != "speeds" {
		t.Fatalf("layout %+v", lay)
	}
	if !s.Ready() {
		t.Fatal("not ready after Open's exchange")
	}
	meas := make([]float64, 2)
	for range 4 {
		tick(t, s, meas, []float64{-0.5, 1})
	}
	if err := s.Measure(meas); err != nil {
		t.Fatal(err)
	}
	snap := world.World().Snapshot()
	if snap.Speeds[0] != 1 || snap.Speeds[1] != -0.5 {
		t.Errorf("the scene's speeds %v, want [1 -0.5]", snap.Speeds)
	}
	// Open's exchange (speeds 0), then four at (1, -0.5): the fourth reply
	// carries time 0.2 and the right angle after three steps at -0.5.
	if math.Abs(meas[1]-0.2) > 1e-6 || math.Abs(meas[0]+0.075) > 1e-6 {
		t.Errorf("measurement %v, want [-0.075 0.2]", meas)
	}
	if obs.get(func(c *counter) int { return c.exchanges }) != 5 {
		t.Errorf("%d exchanges observed, want 5", obs.exchanges)
	}
}

// Velocities are held for VelTimeout without a fresh command, then zeroed.
func TestSceneDeadman(t *testing.T) {
	world, addr := startAZ(t, vrepsim.AZConfig{})
	clock := &fakeClock{}
	obs := &counter{}
	s := newScene(t, vrep.Config{Address: addr, Timeout: time.Second, VelTimeout: 100 * time.Millisecond, Now: clock.now, Observer: obs})
	meas := make([]float64, 3)
	tick(t, s, meas, []float64{2, 3})
	clock.add(100 * time.Millisecond)
	tick(t, s, meas, nil)
	if sp := world.World().Snapshot().Speeds; sp[0] != 2 || sp[1] != 3 {
		t.Errorf("within the timeout the speeds are %v, want held at [2 3]", sp)
	}
	clock.add(time.Millisecond)
	tick(t, s, meas, nil)
	tick(t, s, meas, nil)
	if sp := world.World().Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 {
		t.Errorf("past the timeout the speeds are %v, want 0", sp)
	}
	if obs.stops != 1 {
		t.Errorf("%d dead-man stops, want 1", obs.stops)
	}
	tick(t, s, meas, []float64{-1, 1})
	if sp := world.World().Snapshot().Speeds; sp[0] != -1 || sp[1] != 1 {
		t.Errorf("a fresh command after the stop: %v", sp)
	}
}

// A command is refused when not finite and clamped to the limits.
func TestSceneCommandChecks(t *testing.T) {
	world, addr := startAZ(t, vrepsim.AZConfig{})
	s := newScene(t, vrep.Config{Address: addr, Timeout: time.Second, Limits: [][2]float64{{-1, 1}, {-2, 2}}})
	meas := make([]float64, 3)
	if err := s.Command([]float64{math.NaN(), 0}); !errors.Is(err, vrep.ErrRange) {
		t.Errorf("NaN: %v", err)
	}
	if err := s.Command([]float64{1, 2, 3}); !errors.Is(err, vrep.ErrConfig) {
		t.Errorf("three values: %v", err)
	}
	tick(t, s, meas, []float64{5, -5})
	if sp := world.World().Snapshot().Speeds; sp[0] != 1 || sp[1] != -2 {
		t.Errorf("speeds %v, want clamped to [1 -2]", sp)
	}
	if _, err := vrep.New(vrep.Config{Limits: [][2]float64{{-1e39, 0}, {0, 1}}}); !errors.Is(err, vrep.ErrConfig) {
		t.Errorf("a limit beyond float32: %v", err)
	}
}

// A scene that fails MaxFailures times in a row fails the link; Reopen
// brings it back; fewer failures keep the last measurement.
func TestSceneFailures(t *testing.T) {
	world, addr := startAZ(t, vrepsim.AZConfig{})
	obs := &counter{}
	s := newScene(t, vrep.Config{Address: addr, Timeout: time.Second, MaxFailures: 2, Observer: obs})
	meas := make([]float64, 3)
	tick(t, s, meas, []float64{1, 1})
	world.Inject(vrepsim.CloseEarly, 1)
	s.Command([]float64{1, 1})
	testutil.WaitFor(t, "a failure", func() bool { return s.Stats().Failures == 1 })
	if err := s.Measure(meas); err != nil {
		t.Fatalf("one failure of two allowed: %v", err)
	}
	world.Inject(vrepsim.Short, 2)
	s.Command([]float64{1, 1})
	testutil.WaitFor(t, "a second failure", func() bool { return s.Stats().Failures == 2 })
	err := s.Measure(meas)
	var e *vrep.ExchangeError
	if !errors.As(err, &e) || e.Reason != vrep.ReasonShort {
		t.Fatalf("after two failures: %v", err)
	}
	// Reopen's exchange meets the second short reply, then the scene is
	// fine again.
	if err := s.Reopen(context.Background()); !errors.As(err, &e) {
		t.Fatalf("reopen against a short reply: %v", err)
	}
	if err := s.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Measure(meas); err != nil || obs.get(func(c *counter) int { return c.reconnects }) != 1 {
		t.Fatalf("after reopen: %v, %d reconnects", err, obs.reconnects)
	}
	if n := obs.get(func(c *counter) int { return c.failed[vrep.ReasonClosed] + c.failed[vrep.ReasonShort] }); n != 3 {
		t.Errorf("%d failures counted, want 3: %v", n, obs.failed)
	}
}

// Nothing listening: the device is absent and the message says what to do.
func TestSceneRefused(t *testing.T) {
	// Bound, never listening: refused, and no other program can take the
	// port while the test runs.
	addr, _ := testutil.ClosedTCPPort(t)
	s, err := vrep.New(vrep.Config{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Open(context.Background())
	if !errors.Is(err, plant.ErrAbsent) || !strings.Contains(err.Error(), "connection refused on "+addr+": is the simulation started?") {
		t.Fatalf("%v", err)
	}
	if err := s.Measure(make([]float64, 3)); err == nil {
		t.Error("a scene never reached measures")
	}
}

// A scene restarted mid-run is noticed by its time going back.
func TestSceneRestart(t *testing.T) {
	world, addr := startAZ(t, vrepsim.AZConfig{})
	obs := &counter{}
	s := newScene(t, vrep.Config{Address: addr, Timeout: time.Second, Observer: obs})
	meas := make([]float64, 3)
	for range 4 {
		tick(t, s, meas, []float64{1, 1})
	}
	s.Measure(meas)
	before := meas[0]
	world.Restart()
	tick(t, s, meas, []float64{1, 1})
	tick(t, s, meas, []float64{1, 1})
	if st := s.Stats(); st.Restarts != 1 || obs.get(func(c *counter) int { return c.restarts }) != 1 {
		t.Errorf("%d restarts, want 1", st.Restarts)
	}
	if s.Measure(meas); meas[0] >= before {
		t.Errorf("time after the restart %v, before it %v", meas[0], before)
	}
}

// A scene stopped and started again while the link was degraded is a
// restart too.
func TestSceneRestartWhileAway(t *testing.T) {
	world, addr := startAZ(t, vrepsim.AZConfig{})
	s := newScene(t, vrep.Config{Address: addr, Timeout: time.Second, MaxFailures: 1})
	meas := make([]float64, 3)
	for range 3 {
		tick(t, s, meas, []float64{1, 1})
	}
	world.Inject(vrepsim.Refuse, 1)
	s.Command([]float64{1, 1})
	testutil.WaitFor(t, "the failure", func() bool { return s.Measure(meas) != nil })
	world.Restart()
	if err := s.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Restarts != 1 {
		t.Errorf("%d restarts seen across the reopen, want 1", st.Restarts)
	}
}

// The loop thread's side allocates nothing.
func TestSceneAllocs(t *testing.T) {
	_, addr := startAZ(t, vrepsim.AZConfig{})
	s := newScene(t, vrep.Config{Address: addr, Timeout: time.Second, Observer: &counter{}})
	meas, u := make([]float64, 3), []float64{0.1, 0.2}
	if n := testing.AllocsPerRun(1000, func() {
		s.Measure(meas)
		s.Command(u)
		s.Idle()
	}); n != 0 {
		t.Errorf("%v allocations per tick, want 0", n)
	}
}

// The defaults validate for either protocol and mode at the rates a link
// runs, and have one range per command element.
func TestDefaultConfig(t *testing.T) {
	for _, p := range []vrep.Protocol{vrep.AZ, vrep.ZMQ} {
		for _, m := range []vrep.Mode{vrep.Velocity, vrep.Position} {
			if p == vrep.AZ && m == vrep.Position {
				continue
			}
			for _, period := range []time.Duration{0, time.Millisecond, 50 * time.Millisecond, time.Second} {
				c := vrep.DefaultConfig(p, m, period)
				if err := c.Validate(); err != nil {
					t.Errorf("%v %v at %v: %v", p, m, period, err)
				}
				if len(c.Limits) != vrep.Layout(c).CommandLen() {
					t.Errorf("%v %v: %d limits for %d command elements", p, m, len(c.Limits), vrep.Layout(c).CommandLen())
				}
			}
		}
	}
}

func TestSceneConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  vrep.Config
		want string
	}{
		{vrep.Config{Address: "nowhere"}, "address"},
		{vrep.Config{Measure: []string{"sim_time", "sim_time"}}, `measure[1] = "sim_time": want each element once`},
		{vrep.Config{Command: []string{"left_speed"}}, "want 2 of"},
		{vrep.Config{Command: []string{"left_speed", "up_speed"}}, `command[1] = "up_speed"`},
		{vrep.Config{Mode: vrep.Position}, "velocity"},
		{vrep.Config{Timeout: time.Nanosecond}, "timeout"},
		{vrep.Config{Protocol: vrep.ZMQ, Joints: []string{""}}, "joints[0]"},
		{vrep.Config{Protocol: vrep.ZMQ, Joints: []string{"/a", "/b", "/a"}}, `joints[2] = "/a": want an object path of the scene, once`},
		{vrep.Config{VelTimeout: 20 * time.Millisecond, Period: 50 * time.Millisecond}, "longer than the link's period 50ms"},
	} {
		_, err := vrep.New(c.cfg)
		if !errors.Is(err, vrep.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// The ZMQ backend in lock step: one sim.step per tick, the simulation's
// time is the ticks' count times its step.
func TestSceneZMQLockStep(t *testing.T) {
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{})
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 5 * time.Second, Stepping: true, Start: true})
	if scene.State() != vrepsim.StateRunning || scene.Stepping() != 1 {
		t.Fatalf("state %d, %d stepping clients: the backend should have started it in lock step", scene.State(), scene.Stepping())
	}
	meas := make([]float64, 3)
	const ticks = 20
	for range ticks {
		tick(t, s, meas, []float64{1, -0.5})
	}
	snap := scene.World().Snapshot()
	if snap.Steps != ticks {
		t.Errorf("%d steps after %d ticks", snap.Steps, ticks)
	}
	s.Measure(meas)
	if math.Abs(meas[0]-ticks*0.05) > 1e-9 || math.Abs(meas[1]-ticks*0.05) > 1e-9 || math.Abs(meas[2]+ticks*0.025) > 1e-9 {
		t.Errorf("measurement %v after %d steps of 50 ms at (1, -0.5)", meas, ticks)
	}
	if err := s.Halt(plant.HaltHold); err != nil {
		t.Fatal(err)
	}
	if sp := scene.World().Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 || scene.Stepping() != 0 || scene.State() != vrepsim.StateRunning {
		t.Errorf("after halt hold: speeds %v, %d stepping, state %d", sp, scene.Stepping(), scene.State())
	}
	if err := s.Halt(plant.HaltTorqueOff); err != nil || scene.State() != vrepsim.StateStopped {
		t.Errorf("halt torque_off: %v, state %d", err, scene.State())
	}
}

func TestSceneZMQPosition(t *testing.T) {
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{Running: true})
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 5 * time.Second, Stepping: true, Mode: vrep.Position,
		Joints: []string{"/MotorRight"}})
	if lay := s.Layout(); lay.Command[0].Name != "angles" || s.CommandLen() != 1 || s.MeasureLen() != 2 {
		t.Fatalf("layout %+v", lay)
	}
	meas := make([]float64, 2)
	for range 20 {
		tick(t, s, meas, []float64{0.5})
	}
	if q := scene.World().Snapshot().Angles; q[1] != 0.5 || q[0] != 0 {
		t.Errorf("angles %v, want the right joint at 0.5", q)
	}
	// In position mode a tick without a command holds the target.
	tick(t, s, meas, nil)
	if q := scene.World().Snapshot().Angles; q[1] != 0.5 {
		t.Errorf("held: %v", q)
	}
}

func TestSceneZMQNotRunning(t *testing.T) {
	_, addr := startZMQ(t, vrepsim.ZMQConfig{})
	s, err := vrep.New(vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Open(context.Background())
	if !errors.Is(err, vrep.ErrNotRunning) || !errors.Is(err, plant.ErrAbsent) || !strings.Contains(err.Error(), "press Play") {
		t.Fatalf("%v", err)
	}
}

func TestSceneZMQBadJoint(t *testing.T) {
	_, addr := startZMQ(t, vrepsim.ZMQConfig{Running: true})
	s, err := vrep.New(vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 5 * time.Second, Joints: []string{"/MotorLeft", "/Wheel"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Open(context.Background())
	var re *vrep.RemoteError
	if !errors.As(err, &re) || re.Func != "sim.getObject" || !strings.Contains(err.Error(), `joint "/Wheel"`) {
		t.Fatalf("%v", err)
	}
}

// A person stops and starts the simulation: CoppeliaSim forgets every
// client's stepping; the backend sees the time go back and steps it in
// lock with the link again.
func TestSceneZMQRestartKeepsLockStep(t *testing.T) {
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{})
	obs := &counter{}
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 5 * time.Second, Stepping: true, Start: true, Observer: obs})
	meas := make([]float64, 3)
	for range 5 {
		tick(t, s, meas, []float64{1, 1})
	}
	scene.Restart() // Stop, then Play
	if scene.Stepping() != 0 {
		t.Fatal("the simulated scene kept the stepping across a stop")
	}
	tick(t, s, meas, []float64{1, 1})
	if obs.get(func(c *counter) int { return c.restarts }) != 1 || scene.Stepping() != 1 {
		t.Fatalf("%d restarts seen, %d stepping clients", obs.restarts, scene.Stepping())
	}
	steps := scene.World().Snapshot().Steps
	for range 5 {
		tick(t, s, meas, []float64{1, 1})
	}
	if n := scene.World().Snapshot().Steps - steps; n != 5 {
		t.Errorf("%d steps for 5 ticks after the restart: not in lock step", n)
	}
}
