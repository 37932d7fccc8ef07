package vrep_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

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
				waitFor(t, "the slow exchange under way", func() bool { return sim.world.Snapshot().Speeds[0] == 1 })
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
	waitFor(t, "the link to see the device down", func() bool {
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
	waitFor(t, "the released simulation to run on", func() bool { return scene.World().Snapshot().Steps > steps+2 })
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
			s := newScene(t, vrep.Config{Protocol: proto, Address: addr, Timeout: time.Second, Stepping: true, Start: true})
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
