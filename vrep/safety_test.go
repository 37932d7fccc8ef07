package vrep_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// simScene is what the safety tests read of either simulated scene.
type simScene struct {
	world    *vrepsim.World
	inject   func(vrepsim.Fault, int)
	stepping func() int // stepping clients; -1 for AZ
	state    func() int
}

func startSim(t *testing.T, proto vrep.Protocol, delay time.Duration) (simScene, string) {
	t.Helper()
	if proto == vrep.AZ {
		sc, addr := startAZ(t, vrepsim.AZConfig{Delay: delay})
		return simScene{sc.World(), sc.Inject, func() int { return -1 }, func() int { return vrepsim.StateRunning }}, addr
	}
	sc, addr := startZMQ(t, vrepsim.ZMQConfig{Delay: delay})
	return simScene{sc.World(), sc.Inject, sc.Stepping, sc.State}, addr
}

// worker runs the scene's worker until stop is called, which waits for it.
func worker(s *vrep.Scene) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Serve(ctx) })
	return func() { cancel(); wg.Wait() }
}

// The halt is the last write: the worker is held in an exchange by a slow
// reply, a command is posted behind it, then Halt. Once the worker has
// stopped, the scene's last targets are the halt's zeros, and a lock step
// is released; posts after the halt are dropped.
func TestHaltIsLastWrite(t *testing.T) {
	for _, proto := range []vrep.Protocol{vrep.AZ, vrep.ZMQ} {
		for _, policy := range []plant.HaltPolicy{plant.HaltHold, plant.HaltTorqueOff} {
			t.Run(proto.String()+"/"+policy.String(), func(t *testing.T) {
				sim, addr := startSim(t, proto, 300*time.Millisecond)
				s, err := vrep.New(vrep.Config{Protocol: proto, Address: addr, Timeout: 10 * time.Second, Stepping: true, Start: true, VelTimeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if err := s.Open(context.Background()); err != nil {
					t.Fatal(err)
				}
				stop := worker(s)
				defer stop()
				meas := make([]float64, s.MeasureLen())
				tick(t, s, meas, []float64{0.5, 0.5})
				// The next exchange's reply is slow: the worker is held in
				// it once the scene has applied its first target.
				sim.inject(vrepsim.Delay, 1)
				if err := s.Command([]float64{1, -1}); err != nil {
					t.Fatal(err)
				}
				testutil.WaitFor(t, "the slow exchange under way", func() bool { return sim.world.Snapshot().Speeds[0] == 1 })
				if err := s.Command([]float64{2, -2}); err != nil { // posted before the halt
					t.Fatal(err)
				}
				if err := s.Halt(policy); err != nil {
					t.Fatal(err)
				}
				s.Command([]float64{3, -3}) // after the halt: dropped
				s.Idle()
				stop()
				if sp := sim.world.Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 {
					t.Errorf("the scene's targets after the halt: %v, want [0 0]", sp)
				}
				if n := sim.stepping(); n > 0 {
					t.Errorf("%d clients still step the simulation after the halt", n)
				}
				if proto == vrep.ZMQ && policy == plant.HaltTorqueOff && sim.state() != vrepsim.StateStopped {
					t.Errorf("torque_off left the simulation in state %d", sim.state())
				}
				if st := s.Stats(); st.Dropped < 2 {
					t.Errorf("%d posts dropped after the halt, want 2", st.Dropped)
				}
				if err := s.Measure(meas); !errors.Is(err, vrep.ErrHalted) {
					t.Errorf("Measure after the halt: %v, want ErrHalted until a reopen", err)
				}
			})
		}
	}
}

// failTicks posts commands until the scene has failed MaxFailures times in
// a row and Measure says so.
func failTicks(t *testing.T, s *vrep.Scene, u []float64) {
	t.Helper()
	meas := make([]float64, s.MeasureLen())
	testutil.WaitFor(t, "the link to see the device down", func() bool {
		s.Command(u)
		time.Sleep(time.Millisecond)
		return s.Measure(meas) != nil
	})
}

// A degraded ZMQ link: StopMotion zeroes the speeds and releases the lock
// step of the same client (no second one appears), so the simulation runs
// on at rest; Reopen puts it in lock step again, still one client.
func TestStopMotionZMQ(t *testing.T) {
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{})
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 10 * time.Second, Stepping: true, Start: true, MaxFailures: 2})
	meas := make([]float64, 3)
	for range 3 {
		tick(t, s, meas, []float64{1, 1})
	}
	// Replies that are not CBOR break the connection, twice in a row (the
	// second exchange's connection takes a fault of the queue too).
	scene.Inject(vrepsim.BadMagic, 3)
	failTicks(t, s, []float64{1, 1})
	if sp := scene.World().Snapshot().Speeds; sp[0] != 1 || scene.Stepping() != 1 {
		t.Fatalf("before StopMotion: speeds %v, %d stepping: the test shows nothing", sp, scene.Stepping())
	}
	if err := s.StopMotion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sp := scene.World().Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 || scene.Stepping() != 0 || scene.Clients() != 1 {
		t.Fatalf("after StopMotion: speeds %v, %d stepping, %d clients; want [0 0], 0, 1", sp, scene.Stepping(), scene.Clients())
	}
	steps := scene.World().Snapshot().Steps
	testutil.WaitFor(t, "the released simulation to run on", func() bool { return scene.World().Snapshot().Steps > steps+2 })
	if err := s.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if scene.Stepping() != 1 || scene.Clients() != 1 {
		t.Fatalf("after Reopen: %d stepping, %d clients; want 1, 1", scene.Stepping(), scene.Clients())
	}
	tick(t, s, meas, []float64{0.5, 0.5})
	s.Close()
	if scene.Clients() != 0 {
		t.Errorf("%d clients after Close: _*end*_ not sent", scene.Clients())
	}
}

// A scene that cannot be reached: StopMotion says what may still move.
func TestStopMotionUnreachable(t *testing.T) {
	for _, proto := range []vrep.Protocol{vrep.AZ, vrep.ZMQ} {
		t.Run(proto.String(), func(t *testing.T) {
			ln := listen(t)
			addr := ln.Addr().String()
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var world *vrepsim.World
			if proto == vrep.AZ {
				sc, _ := vrepsim.NewAZ(vrepsim.AZConfig{})
				world = sc.World()
				wg.Go(func() { sc.Serve(ctx, ln) })
			} else {
				sc, _ := vrepsim.NewZMQ(vrepsim.ZMQConfig{})
				world = sc.World()
				wg.Go(func() { sc.Serve(ctx, ln) })
			}
			s := newScene(t, vrep.Config{Protocol: proto, Address: addr, Timeout: 10 * time.Second, Stepping: true, Start: true})
			tick(t, s, make([]float64, s.MeasureLen()), []float64{1, 1})
			cancel()
			wg.Wait()
			err := s.StopMotion(context.Background())
			var ue *vrep.UnreachableError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "the scene at "+addr+" is unreachable; its last speeds may still be applied") {
				t.Fatalf("%v", err)
			}
			if sp := world.Snapshot().Speeds; sp[0] != 1 {
				t.Errorf("speeds %v: the scene was reached after all", sp)
			}
			if st := s.Stats(); st.StopErr == nil {
				t.Error("Stats.StopErr is nil after a StopMotion that failed")
			}
		})
	}
}

// AZ: StopMotion is one exchange with zero speeds.
func TestStopMotionAZ(t *testing.T) {
	sc, addr := startAZ(t, vrepsim.AZConfig{})
	s := newScene(t, vrep.Config{Address: addr, Timeout: 10 * time.Second, MaxFailures: 1})
	meas := make([]float64, 3)
	tick(t, s, meas, []float64{1, 2})
	sc.Inject(vrepsim.CloseEarly, 1)
	failTicks(t, s, []float64{1, 2})
	if err := s.StopMotion(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sp := sc.World().Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 {
		t.Errorf("speeds %v after StopMotion", sp)
	}
	if err := s.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sp := sc.World().Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 {
		t.Errorf("speeds %v after the reopen: the stopped command came back", sp)
	}
	tick(t, s, meas, []float64{-1, 1})
	if sp := sc.World().Snapshot().Speeds; sp[0] != -1 {
		t.Errorf("speeds %v: a fresh command after the reopen did not go through", sp)
	}
}

// run drives the scene as a link does for n ticks: Measure, a fresh
// command, and a wait for the worker's exchange to end, well or not. check
// runs after each tick.
func run(t *testing.T, s *vrep.Scene, obs *counter, n int, check func(i int)) {
	t.Helper()
	meas := make([]float64, s.MeasureLen())
	u := make([]float64, s.CommandLen())
	done := func() int {
		return obs.get(func(c *counter) int {
			k := c.exchanges
			for _, f := range c.failed {
				k += f
			}
			return k
		})
	}
	for i := range n {
		if err := s.Measure(meas); err != nil {
			t.Fatalf("tick %d: the link would go degraded: %v", i, err)
		}
		before := done()
		for j := range u {
			u[j] = 0.5
		}
		if err := s.Command(u); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, "the worker's exchange", func() bool { return done() > before })
		if check != nil {
			check(i)
		}
	}
}

// One slow reply in 200 calls, and once every connection dropped: the
// scene never leaves lock step, never freezes, never sees a second client,
// and the link never goes degraded.
func TestSlowReplyKeepsLockStep(t *testing.T) {
	const timeout = 400 * time.Millisecond
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{Delay: timeout * 3 / 2, Every: 200, Periodic: vrepsim.Delay})
	obs := &counter{}
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: timeout, Stepping: true, Start: true, Observer: obs})
	const ticks = 300
	run(t, s, obs, ticks, func(i int) {
		if scene.Stepping() != 1 || scene.Clients() != 1 {
			t.Fatalf("tick %d: %d stepping clients, %d clients; want 1 and 1", i, scene.Stepping(), scene.Clients())
		}
		if i == ticks/2 {
			scene.Drop()
		}
	})
	st := s.Stats()
	if st.LateReplies == 0 || obs.get(func(c *counter) int { return c.failed[vrep.ReasonTimeout] }) == 0 {
		t.Errorf("no late reply seen (%+v, %v): the test shows nothing", st, obs.failed)
	}
	if n := obs.get(func(c *counter) int { return c.failed[vrep.ReasonOther] }); n > 0 {
		t.Errorf("%d failures of reason other: %v", n, obs.failed)
	}
	// Still in lock step, not frozen: one step a tick.
	steps := scene.World().Snapshot().Steps
	if steps < ticks/2 {
		t.Errorf("%d steps in %d ticks", steps, ticks)
	}
	scene.Every(0, vrepsim.None)
	run(t, s, obs, 5, nil)
	if n := scene.World().Snapshot().Steps - steps; n != 5 {
		t.Errorf("%d steps in 5 ticks after the faults, want 5", n)
	}
	if st.OutOfStep != 0 {
		t.Errorf("out of lock step %d times", st.OutOfStep)
	}
	t.Logf("%d steps, %d late replies, failures %v", steps, st.LateReplies, obs.failed)
}

// The same fault on AZ: a slow reply now and then never degrades the link.
func TestSlowReplyAZ(t *testing.T) {
	const timeout = 400 * time.Millisecond
	_, addr := startAZ(t, vrepsim.AZConfig{Delay: timeout * 3 / 2, Every: 50, Periodic: vrepsim.Delay})
	obs := &counter{}
	s := newScene(t, vrep.Config{Address: addr, Timeout: timeout, Observer: obs})
	run(t, s, obs, 200, nil)
	if n := obs.get(func(c *counter) int { return c.failed[vrep.ReasonTimeout] }); n == 0 {
		t.Errorf("no timeout: the test shows nothing (%v)", obs.failed)
	}
}

// A person stops the simulation: the link fails at once, its Reopen is a
// latched stop (start = true notwithstanding) that says what to do; a
// latched Reopen reconnects nothing; Resume lets the next Reopen start
// the simulation, in lock step, at rest.
func TestPersonStopIsLatched(t *testing.T) {
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{})
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 10 * time.Second, Stepping: true, Start: true, Name: "wheels"})
	meas := make([]float64, 3)
	for range 3 {
		tick(t, s, meas, []float64{1, 1})
	}
	scene.Stop()
	failTicks(t, s, []float64{1, 1})
	var e *vrep.ExchangeError
	if err := s.Measure(meas); !errors.As(err, &e) || e.Reason != vrep.ReasonStopped {
		t.Fatalf("after the stop: %v", err)
	}
	if err := s.StopMotion(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		err := s.Reopen(context.Background())
		if !errors.Is(err, plant.ErrStopLatched) || !strings.Contains(err.Error(), "stopped in CoppeliaSim: press Play there, or run `bridge resume wheels`") {
			t.Fatalf("reopen of a stopped simulation: %v", err)
		}
		if scene.State() != vrepsim.StateStopped {
			t.Fatal("the bridge started a simulation a person stopped")
		}
	}
	if !s.Stats().Stopped {
		t.Error("Stats.Stopped is false while latched")
	}
	if n := scene.Calls()["zmqRemoteApi.require"]; n != 1 {
		t.Errorf("%d connections set up: a latched reopen reconnected", n)
	}
	s.Resume()
	if err := s.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if scene.State() != vrepsim.StateRunning || scene.Stepping() != 1 || scene.Clients() != 1 {
		t.Fatalf("after resume: state %d, %d stepping, %d clients", scene.State(), scene.Stepping(), scene.Clients())
	}
	if sp := scene.World().Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 {
		t.Errorf("speeds %v after resume, want at rest until a fresh command", sp)
	}
	tick(t, s, meas, []float64{1, 1})
}

// Pressing Play is a person's action too; a resume asked while the stop
// cannot end (start = false) is consumed, so Play later starts nothing by
// itself beyond what the person did.
func TestPersonStopPlay(t *testing.T) {
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{Running: true})
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 10 * time.Second, Stepping: true})
	meas := make([]float64, 3)
	tick(t, s, meas, []float64{1, 1})
	tick(t, s, meas, []float64{1, 1})
	scene.Stop()
	failTicks(t, s, []float64{1, 1})
	s.StopMotion(context.Background())
	s.Resume()
	err := s.Reopen(context.Background())
	if !errors.Is(err, plant.ErrStopLatched) || !strings.Contains(err.Error(), "press Play there; the link goes on by itself") {
		t.Fatalf("start = false, resumed: %v", err)
	}
	if scene.State() != vrepsim.StateStopped {
		t.Fatal("started without start = true")
	}
	scene.Play()
	if err := s.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if scene.Stepping() != 1 {
		t.Errorf("%d stepping after Play", scene.Stepping())
	}
}

// A scene that forgot the client (its timeout passed during a pause of the
// bridge) runs free: the next step sees it, counts it and steps in lock
// again.
func TestOutOfStep(t *testing.T) {
	scene, addr := startZMQ(t, vrepsim.ZMQConfig{Step: 5 * time.Millisecond})
	s := newScene(t, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 10 * time.Second, Stepping: true, Start: true})
	meas := make([]float64, 3)
	tick(t, s, meas, []float64{1, 1})
	scene.Forget()
	steps := scene.World().Snapshot().Steps
	testutil.WaitFor(t, "the simulation running free", func() bool { return scene.World().Snapshot().Steps > steps+2 })
	tick(t, s, meas, []float64{1, 1})
	if st := s.Stats(); st.OutOfStep != 1 || scene.Stepping() != 1 {
		t.Fatalf("out of step %d times, %d stepping clients; want 1, 1", st.OutOfStep, scene.Stepping())
	}
	steps = scene.World().Snapshot().Steps
	for range 3 {
		tick(t, s, meas, []float64{1, 1})
	}
	if n := scene.World().Snapshot().Steps - steps; n != 3 {
		t.Errorf("%d steps in 3 ticks after it, want 3", n)
	}
}
