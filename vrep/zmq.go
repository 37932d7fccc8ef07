package vrep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/labbridge/bridge/plant"
)

// CoppeliaSim's simulation states (sim.simulation_stopped, …_paused).
const (
	simStopped = 0
	simPaused  = 8
)

// maxReleases bounds the sim.setStepping(false) calls that bring this
// client's stepping level down to 0.
const maxReleases = 8

// StoppedError is a simulation that a person stopped in CoppeliaSim after
// the bridge had seen it run: a stop that only a person ends (it wraps
// plant.ErrStopLatched). Pressing Play ends it; with start = true, so does
// `bridge resume LINK`, after which the bridge starts the simulation.
type StoppedError struct {
	Addr  string
	Link  string // the link's name, for the command to run
	Start bool   // the configuration lets the bridge start the simulation
}

func (e *StoppedError) Error() string {
	if !e.Start {
		return fmt.Sprintf("vrep: the simulation at %s was stopped in CoppeliaSim: press Play there; the link goes on by itself", e.Addr)
	}
	link := e.Link
	if link == "" {
		link = "LINK"
	}
	return fmt.Sprintf("vrep: the simulation at %s was stopped in CoppeliaSim: press Play there, or run `bridge resume %s` (POST /links/%s/resume) to have the bridge start it",
		e.Addr, link, link)
}

func (e *StoppedError) Unwrap() error { return plant.ErrStopLatched }

// UnreachableError is a stop (StopMotion, Halt) that could not reach the
// scene: what may still move is said.
type UnreachableError struct {
	Addr string
	// Zeroed: the velocities were set to zero; what failed is the release
	// of the lock step.
	Zeroed        bool
	ClientTimeout int // seconds the scene keeps the client's stepping
	Err           error
}

func (e *UnreachableError) Error() string {
	if e.Zeroed {
		return fmt.Sprintf("vrep: the scene at %s stopped answering after its speeds were set to zero; it stays in lock step until its client timeout (%d s) ends (%v)",
			e.Addr, e.ClientTimeout, e.Err)
	}
	return fmt.Sprintf("vrep: the scene at %s is unreachable; its last speeds may still be applied (%v)", e.Addr, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// zmqBackend drives the scene through the ZMQ remote API: per tick, the
// joints' targets, one sim.step when stepping, then the joints' angles and
// the simulation time (docs/vrep.md §4). It is one client of the scene for
// the Scene's whole life: one UUID, one stepping level, whatever the
// reconnections.
type zmqBackend struct {
	cfg     *Config
	log     *slog.Logger
	uuid    string
	r       *Remote
	handles []int64
	ready   bool    // handles read on the present connection
	dt      float64 // the simulation's time step (s); 0: unknown
	// seen: the bridge has seen the simulation run, so a stopped one is a
	// person's stop (start applies to the first open only).
	seen bool
	// lastT is the time read after the last successful step; haveT
	// says whether it is the previous step's (for the lock-step check).
	lastT float64
	haveT bool
	cnt   *counters
}

// counters are the numbers a backend keeps for Stats; safe from any
// goroutine.
type counters struct {
	outOfStep atomic.Uint64
	late      atomic.Uint64
	stopped   atomic.Bool // a person stopped the simulation (latched)
}

// connect makes sure of a connection: the present one if it still stands
// (a reply it owes is read by the next call), else a new one under the
// same UUID.
func (b *zmqBackend) connect(ctx context.Context) error {
	if b.r != nil && b.r.Connected() {
		return nil
	}
	b.ready = false
	if b.r != nil {
		b.countLate()
		return b.r.Redial(ctx)
	}
	r, err := DialRemote(ctx, RemoteConfig{Address: b.cfg.Address, CallTimeout: b.cfg.Timeout,
		ClientTimeout: b.cfg.ClientTimeout, Dial: b.cfg.Dial, UUID: b.uuid})
	if err != nil {
		return err
	}
	b.r = r
	return nil
}

func (b *zmqBackend) countLate() {
	if b.r != nil && b.r.Late > 0 {
		b.cnt.late.Add(b.r.Late)
		b.r.Late = 0
	}
}

func (b *zmqBackend) open(ctx context.Context, resume bool) error {
	b.haveT = false
	if err := b.connect(ctx); err != nil {
		return err
	}
	r := b.r
	if !b.ready {
		// As the official clients: the server loads the module, and a
		// server of protocol version 1 says so here.
		if _, err := r.Call("zmqRemoteApi.require", "sim"); err != nil {
			return err
		}
		b.handles = b.handles[:0]
		for _, path := range b.cfg.Joints {
			h, err := r.Float("sim.getObject", path)
			if err != nil {
				return fmt.Errorf("vrep: joint %q of the scene at %s: %w (is the scene loaded, and the path right?)", path, b.cfg.Address, err)
			}
			b.handles = append(b.handles, int64(h))
		}
		dt, err := r.Float("sim.getSimulationTimeStep")
		if err != nil {
			return err
		}
		b.dt = dt
		b.ready = true
	}
	state, err := r.Float("sim.getSimulationState")
	if err != nil {
		return err
	}
	start := false
	if state == simStopped {
		switch {
		case b.seen && resume && b.cfg.Start:
			b.log.Warn("a person asked to resume: starting the simulation that was stopped in CoppeliaSim")
			start = true
		case b.seen:
			b.cnt.stopped.Store(true)
			return &StoppedError{Addr: b.cfg.Address, Link: b.cfg.Name, Start: b.cfg.Start}
		case b.cfg.Start:
			start = true
		default:
			return fmt.Errorf("%w at %s: press Play in CoppeliaSim, or set start = true", ErrNotRunning, b.cfg.Address)
		}
	}
	b.cnt.stopped.Store(false)
	if b.cfg.Stepping {
		// Before starting, so that not one step runs ahead of the link.
		if err := b.lockStep(); err != nil {
			return err
		}
	}
	if start {
		if _, err := r.Call("sim.startSimulation"); err != nil {
			return err
		}
		b.log.Info("started the simulation", "stepping", b.cfg.Stepping)
	}
	b.seen = true
	return nil
}

// lockStep puts this client in lock step, once: sim.setStepping(true)
// raises a level and returns the one before, so a raise over a level the
// client still had is undone at once. One client, one level, whatever the
// reopens.
func (b *zmqBackend) lockStep() error {
	prev, err := b.r.Float("sim.setStepping", true)
	if err != nil {
		return err
	}
	if prev > 0 {
		_, err = b.r.Call("sim.setStepping", false)
	}
	return err
}

func (b *zmqBackend) step(set bool, targets []float64, advance bool, s *sample) error {
	err := b.stepOnce(set, targets, advance, s)
	if err != nil {
		// A failed step's late reply may be a sim.step: the next time read
		// may be two steps on.
		b.haveT = false
		return err
	}
	if advance && b.cfg.Stepping && b.haveT && b.dt > 0 && s.time-b.lastT > 1.5*b.dt {
		// The simulation ran more than the one step asked: this client is
		// not holding it (restarted without our stepping, forgotten after
		// a pause): in lock step again.
		b.cnt.outOfStep.Add(1)
		if err := b.lockStep(); err != nil {
			b.haveT = false
			return err
		}
	}
	b.lastT, b.haveT = s.time, true
	return nil
}

func (b *zmqBackend) stepOnce(set bool, targets []float64, advance bool, s *sample) error {
	if b.r == nil {
		return &ExchangeError{Addr: b.cfg.Address, Reason: ReasonDropped, Err: ErrDropped}
	}
	if !b.r.Connected() {
		// Dropped after a broken stream: the same client again, its
		// stepping kept by the scene. Bounded by the call timeout.
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.Timeout)
		err := b.r.Redial(ctx)
		cancel()
		if err != nil {
			return err
		}
	}
	defer b.countLate()
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

// restarted is told that the simulation's time went back. A simulation
// that is now stopped was stopped by a person: a failure of ReasonStopped,
// which the next Reopen turns into a latched stop. One that runs again
// (Stop, then Play) has forgotten every client's stepping
// (sim.stopSimulation ends it, docs/vrep.md §4): in lock step again.
func (b *zmqBackend) restarted() error {
	if b.r == nil {
		return nil
	}
	b.haveT = false
	state, err := b.r.Float("sim.getSimulationState")
	if err != nil {
		return err
	}
	if state == simStopped {
		return &ExchangeError{Addr: b.cfg.Address, Reason: ReasonStopped, Err: errors.New("the simulation is stopped")}
	}
	if !b.cfg.Stepping {
		return nil
	}
	if err := b.lockStep(); err != nil {
		return err
	}
	b.log.Info("the simulation was stopped and started again: in lock step with the link again")
	return nil
}

// retry runs call up to haltTries times while it times out: a stop is not
// bound to a tick, and the next try first reads the late reply.
func retry(call func() error) error {
	var err error
	for range haltTries {
		if err = call(); err == nil {
			return nil
		}
		var e *ExchangeError
		if !errors.As(err, &e) || e.Reason != ReasonTimeout {
			return err
		}
	}
	return err
}

// stopMotion zeroes the joints' velocities (velocity mode) and releases
// this client's lock step, on the present connection or a new one under
// the same UUID, so that the old client's stepping is the one released.
func (b *zmqBackend) stopMotion(ctx context.Context) error {
	b.haveT = false
	unreachable := func(zeroed bool, err error) error {
		return &UnreachableError{Addr: b.cfg.Address, Zeroed: zeroed, ClientTimeout: max(int(b.cfg.ClientTimeout.Seconds()), 1), Err: err}
	}
	if err := b.connect(ctx); err != nil {
		return unreachable(false, err)
	}
	defer b.countLate()
	if b.cfg.Mode == Velocity {
		for _, h := range b.handles {
			if err := retry(func() error { _, err := b.r.Call("sim.setJointTargetVelocity", h, 0.0); return err }); err != nil {
				return unreachable(false, err)
			}
		}
	}
	if b.cfg.Stepping {
		// Down to level 0, however many raises the scene kept.
		for range maxReleases {
			var prev float64
			err := retry(func() error {
				var err error
				prev, err = b.r.Float("sim.setStepping", false)
				return err
			})
			if err != nil {
				return unreachable(b.cfg.Mode == Velocity, err)
			}
			if prev <= 1 {
				break
			}
		}
	}
	return nil
}

func (b *zmqBackend) halt(ctx context.Context, p plant.HaltPolicy, _ []float64) error {
	if err := b.stopMotion(ctx); err != nil {
		return err
	}
	if p == plant.HaltTorqueOff {
		if err := retry(func() error { _, err := b.r.Call("sim.stopSimulation"); return err }); err != nil {
			return err
		}
		// The bridge stopped it, not a person: a link served again may
		// start it.
		b.seen = false
		b.log.Info("stopped the simulation (halt = torque_off)")
	}
	return nil
}

func (b *zmqBackend) close() error {
	if b.r == nil {
		return nil
	}
	b.countLate()
	err := b.r.Close()
	b.r = nil
	return err
}
