package vrep

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/labbridge/bridge/plant"
)

// CoppeliaSim's simulation states (sim.simulation_stopped, …_paused).
const (
	simStopped = 0
	simPaused  = 8
)

// zmqBackend drives the scene through the ZMQ remote API: per tick, the
// joints' targets, one sim.step when stepping, then the joints' angles and
// the simulation time (docs/vrep.md §4).
type zmqBackend struct {
	cfg     *Config
	log     *slog.Logger
	r       *Remote
	handles []int64
}

func (b *zmqBackend) open(ctx context.Context) error {
	r, err := DialRemote(ctx, RemoteConfig{Address: b.cfg.Address, CallTimeout: b.cfg.Timeout,
		ClientTimeout: b.cfg.ClientTimeout, Dial: b.cfg.Dial})
	if err != nil {
		return err
	}
	b.r = r
	fail := func(err error) error {
		r.Close()
		b.r = nil
		return err
	}
	// As the official clients: the server loads the module, and a server
	// of protocol version 1 says so here.
	if _, err := r.Call("zmqRemoteApi.require", "sim"); err != nil {
		return fail(err)
	}
	b.handles = b.handles[:0]
	for _, path := range b.cfg.Joints {
		h, err := r.Float("sim.getObject", path)
		if err != nil {
			return fail(fmt.Errorf("vrep: joint %q of the scene at %s: %w (is the scene loaded, and the path right?)", path, b.cfg.Address, err))
		}
		b.handles = append(b.handles, int64(h))
	}
	state, err := r.Float("sim.getSimulationState")
	if err != nil {
		return fail(err)
	}
	if b.cfg.Stepping {
		// Before starting, so that not one step runs ahead of the link.
		if _, err := r.Call("sim.setStepping", true); err != nil {
			return fail(err)
		}
	}
	if state == simStopped {
		if !b.cfg.Start {
			return fail(fmt.Errorf("%w at %s: press Play in CoppeliaSim, or set start = true", ErrNotRunning, b.cfg.Address))
		}
		if _, err := r.Call("sim.startSimulation"); err != nil {
			return fail(err)
		}
		b.log.Info("started the simulation", "stepping", b.cfg.Stepping)
	}
	return nil
}

func (b *zmqBackend) step(set bool, targets []float64, advance bool, s *sample) error {
	if b.r == nil {
		return fmt.Errorf("%w: not connected to %s", ErrClosed, b.cfg.Address)
	}
	if set {
		fn := "sim.setJointTargetVelocity"
		if b.cfg.Mode == Position {
			fn = "sim.setJointTargetPosition"
		}
		for j, h := range b.handles {
			if _, err := b.r.Call(fn, h, targets[j]); err != nil {
				return err
			}
		}
	}
	if advance && b.cfg.Stepping {
		if _, err := b.r.Call("sim.step"); err != nil {
			return err
		}
	}
	for j, h := range b.handles {
		q, err := b.r.Float("sim.getJointPosition", h)
		if err != nil {
			return err
		}
		s.q[j] = q
	}
	t, err := b.r.Float("sim.getSimulationTime")
	if err != nil {
		return err
	}
	s.time = t
	return nil
}

// restarted sets stepping again: sim.stopSimulation ends every client's
// stepping (docs/vrep.md §4), so a simulation stopped and started again by
// a person would otherwise run free of the link. setStepping returns the
// level before the call: a level this client still had is put back.
func (b *zmqBackend) restarted() error {
	if b.r == nil || !b.cfg.Stepping {
		return nil
	}
	prev, err := b.r.Float("sim.setStepping", true)
	if err != nil {
		return err
	}
	if prev > 0 {
		_, err = b.r.Call("sim.setStepping", false)
		return err
	}
	b.log.Info("the simulation was stopped and started again: in lock step with the link again")
	return nil
}

func (b *zmqBackend) halt(p plant.HaltPolicy, targets []float64) error {
	if b.r == nil {
		return nil
	}
	if b.cfg.Mode == Velocity {
		for _, h := range b.handles {
			if _, err := b.r.Call("sim.setJointTargetVelocity", h, 0.0); err != nil {
				return err
			}
		}
	}
	if b.cfg.Stepping {
		// Let the simulation run on without the bridge.
		if _, err := b.r.Call("sim.setStepping", false); err != nil {
			return err
		}
	}
	if p == plant.HaltTorqueOff {
		if _, err := b.r.Call("sim.stopSimulation"); err != nil {
			return err
		}
		b.log.Info("stopped the simulation (halt = torque_off)")
	}
	return nil
}

func (b *zmqBackend) close() error {
	if b.r == nil {
		return nil
	}
	err := b.r.Close()
	b.r = nil
	return err
}
