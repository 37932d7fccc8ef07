package vrep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/plant"
)

// sample is one reading of the scene: its time and the joints' angles.
type sample struct {
	time float64
	q    []float64
}

// backend is one way of talking to the scene. Only one goroutine at a time
// uses it (Scene.bmu).
type backend interface {
	// open connects if need be and prepares the scene (ZMQ: handles,
	// stepping, the simulation started); resume: a person asked to end a
	// latched stop.
	open(ctx context.Context, resume bool) error
	// step is one tick's I/O: set the joints' targets (if set), advance
	// the simulation one step (if advance and stepping), read s.
	step(set bool, targets []float64, advance bool, s *sample) error
	// stopMotion zeroes the velocities and releases the lock step.
	stopMotion(ctx context.Context) error
	// halt applies the halt policy.
	halt(ctx context.Context, p plant.HaltPolicy, targets []float64) error
	// restarted is told that the simulation's time went back: what the
	// scene forgot of this client is set again, or the error says the
	// simulation is stopped.
	restarted() error
	close() error
}

// Scene is a V-REP or CoppeliaSim scene as a plant. Measure, Command and
// Idle run on the loop thread and never wait on TCP: Command and Idle hand
// the tick's targets to the worker (Serve), which makes the exchange; the
// next tick's Measure copies the newest reply. A tick whose targets the
// worker had no time to send is superseded by the next, and counted.
type Scene struct {
	cfg    Config
	log    *slog.Logger
	obs    Observer
	layout plant.Layout
	n      int   // joints
	mIdx   []int // measurement element → 0 (time) or 1+joint
	cIdx   []int // command element → joint
	limits [][2]float64

	// The loop thread's.
	held      []float64 // the last good targets, by joint
	haveHeld  bool
	stopped   bool         // the dead-man has stopped the joints
	lastFresh atomic.Int64 // unix ns of the last fresh command

	// The mailbox, loop → worker.
	mu      sync.Mutex
	next    []float64
	nextSet bool
	posted  bool
	wake    chan struct{}
	// Published by the worker and Reopen, read by Measure.
	smp        sample
	have       bool // since the last (re)open
	seen       bool // ever: smp.time is a time of this scene's
	fail       error
	failures   int // in a row
	restarts   uint64
	lastRTT    time.Duration
	superseded uint64
	count      uint64
	// fenced: Halt or StopMotion was the last write; posts are dropped
	// until a Reopen.
	fenced  bool
	dropped uint64 // posts dropped by the fence
	stopErr error  // the last StopMotion's or Halt's failure to reach the scene

	resume atomic.Bool // a person asked to end a latched stop
	cnt    counters

	// The backend: the worker, Reopen, Halt and Close take turns.
	bmu    sync.Mutex
	be     backend
	closed bool
	work   sample
	wt, rt []float64 // targets: the worker's, and Reopen's and Halt's (under bmu)
}

// New checks cfg and returns a Scene, not connected: Open (or the
// supervisor's Reopen) connects, Serve runs its worker.
func New(cfg Config) (*Scene, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Scene{cfg: cfg, log: cfg.Logger.With("scene", cfg.Address), obs: cfg.Observer, layout: Layout(cfg),
		wake: make(chan struct{}, 1)}
	if cfg.Protocol == AZ {
		s.n = 2
		for _, name := range cfg.Measure {
			s.mIdx = append(s.mIdx, slices.Index(AZMeasureNames, name))
		}
		for _, name := range cfg.Command {
			s.cIdx = append(s.cIdx, slices.Index(AZCommandNames, name))
		}
		c, err := NewAZClient(cfg.Address, cfg.Timeout)
		if err != nil {
			return nil, err
		}
		s.be = &azBackend{c: c}
	} else {
		s.n = len(cfg.Joints)
		s.mIdx = append(s.mIdx, 0)
		for j := range s.n {
			s.mIdx = append(s.mIdx, 1+j)
			s.cIdx = append(s.cIdx, j)
		}
		s.be = &zmqBackend{cfg: &s.cfg, log: s.log, uuid: NewUUID(), cnt: &s.cnt}
	}
	s.limits = cfg.Limits
	if s.limits == nil {
		s.limits = make([][2]float64, s.cfg.commandLen())
		for i := range s.limits {
			s.limits[i] = [2]float64{-math.MaxFloat32, math.MaxFloat32}
		}
	}
	s.held = make([]float64, s.n)
	s.next = make([]float64, s.n)
	s.wt = make([]float64, s.n)
	s.rt = make([]float64, s.n)
	s.smp.q = make([]float64, s.n)
	s.work.q = make([]float64, s.n)
	return s, nil
}

// MeasureLen implements plant.Plant.
func (s *Scene) MeasureLen() int { return len(s.mIdx) }

// CommandLen implements plant.Plant.
func (s *Scene) CommandLen() int { return len(s.cIdx) }

// Layout implements plant.Describer.
func (s *Scene) Layout() plant.Layout { return s.layout }

// Addr is the scene's address.
func (s *Scene) Addr() string { return s.cfg.Address }

// Ready implements plant.Readier: the scene has answered since it was
// (re)opened, so the measurement is the scene's.
func (s *Scene) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.have
}

// Lack implements plant.Lacker: before the scene's first reply since it was
// (re)opened, the measurement would be made up.
func (s *Scene) Lack() error {
	if s.Ready() {
		return nil
	}
	return errNoReplyYet
}

// errNoReplyYet is the scene's lack before its first reply.
var errNoReplyYet = errors.New("vrep: waiting for the scene's first reply: is the simulation running (press Play in the simulator)?")

// Measure implements plant.Plant: the newest reply of the scene. It fails
// once MaxFailures exchanges in a row have failed; before the first reply
// the values are NaN.
func (s *Scene) Measure(dst []float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for i, k := range s.mIdx {
		switch {
		case !s.have:
			dst[i] = math.NaN()
		case k == 0:
			dst[i] = s.smp.time
		default:
			dst[i] = s.smp.q[k-1]
		}
	}
	return nil
}

// Command implements plant.Plant: the targets go to the worker, which sends
// them at once. NaN and ±Inf are refused; values are clamped to Limits.
func (s *Scene) Command(u []float64) error {
	if len(u) != len(s.cIdx) {
		return fmt.Errorf("%w: %d command values, want %d", ErrConfig, len(u), len(s.cIdx))
	}
	for i, v := range u {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: command value %d is %v", ErrRange, i, v)
		}
	}
	for i, v := range u {
		s.held[s.cIdx[i]] = math.Max(s.limits[i][0], math.Min(s.limits[i][1], v))
	}
	s.haveHeld, s.stopped = true, false
	s.lastFresh.Store(s.cfg.Now().UnixNano())
	s.post(true, s.held)
	return nil
}

// Idle implements plant.Deadman: a tick without a fresh command. Targets
// are held, velocities for VelTimeout only: then the joints are commanded
// zero, so that a robot whose controller went silent stops by itself. The
// scene is still exchanged with, for the measurement (and the step).
func (s *Scene) Idle() error {
	switch {
	case s.cfg.Mode == Position || s.stopped:
		s.post(s.haveHeld, s.held)
	case s.haveHeld && s.cfg.Now().UnixNano()-s.lastFresh.Load() <= int64(s.cfg.VelTimeout):
		s.post(true, s.held)
	default:
		if s.haveHeld {
			s.obs.DeadmanStop()
		}
		clear(s.held)
		s.stopped = true
		// AZ always sets the speeds; ZMQ leaves a scene nobody commanded
		// alone.
		s.post(s.haveHeld || s.cfg.Protocol == AZ, s.held)
	}
	return nil
}

// post hands targets to the worker; a post the worker has not taken yet
// is replaced and counted. After Halt or StopMotion, until a Reopen, posts
// are dropped.
func (s *Scene) post(set bool, targets []float64) {
	s.mu.Lock()
	if s.fenced {
		s.dropped++
		s.mu.Unlock()
		return
	}
	copy(s.next, targets)
	s.nextSet = set
	superseded := s.posted
	s.posted = true
	if superseded {
		s.superseded++
	}
	s.mu.Unlock()
	if superseded {
		s.obs.Superseded()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Serve runs the worker until ctx is done: one exchange per post. It can be
// served again.
func (s *Scene) Serve(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		}
		// The post is taken under bmu, so that Halt and StopMotion, which
		// fence the mailbox and then take bmu, are the last write: a post
		// made before them is either sent before they start or never.
		s.bmu.Lock()
		s.mu.Lock()
		if !s.posted || s.fail != nil || s.fenced {
			// After a failure only Reopen talks to the scene.
			s.posted = false
			s.mu.Unlock()
			s.bmu.Unlock()
			continue
		}
		set := s.nextSet
		copy(s.wt, s.next)
		s.posted = false
		s.mu.Unlock()
		s.exchange(set, s.wt, true)
		s.bmu.Unlock()
	}
}

// exchange makes one exchange and publishes its outcome; bmu is held.
func (s *Scene) exchange(set bool, targets []float64, advance bool) error {
	if s.closed {
		return ErrClosed
	}
	t0 := time.Now()
	err := s.be.step(set, targets, advance, &s.work)
	rtt := time.Since(t0)
	back := false
	var from float64
	if err == nil {
		// Across a reopen too: a scene stopped and started again while
		// the link was degraded is a restart.
		s.mu.Lock()
		back, from = s.seen && s.work.time < s.smp.time, s.smp.time
		s.mu.Unlock()
		if back {
			err = s.be.restarted()
		}
	}
	if err != nil {
		var e *ExchangeError
		reason := ReasonOther
		if errors.As(err, &e) {
			reason = e.Reason
		}
		s.obs.Failed(reason)
		s.mu.Lock()
		s.failures++
		if s.failures >= s.cfg.MaxFailures || !s.have || reason == ReasonStopped {
			s.fail = err
		}
		s.mu.Unlock()
		return err
	}
	s.obs.Exchanged(rtt, s.work.time)
	s.mu.Lock()
	s.smp.time = s.work.time
	copy(s.smp.q, s.work.q)
	s.have, s.seen, s.failures, s.lastRTT = true, true, 0, rtt
	s.count++
	if back {
		s.restarts++
	}
	s.mu.Unlock()
	if back {
		s.obs.Restarted()
		s.log.Warn("the scene's simulation time went backwards: the simulation was restarted; the wheel angles start again too",
			"from_s", from, "to_s", s.work.time)
	}
	return nil
}

// Exchange makes one tick's exchange now, on the caller's goroutine, with
// the command u (nil: no targets, as an idle tick before any command), and
// returns its outcome: for benchmarks and tools, not for a loop thread.
func (s *Scene) Exchange(u []float64) error {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	set := u != nil
	if set {
		if len(u) != len(s.cIdx) {
			return fmt.Errorf("%w: %d command values, want %d", ErrConfig, len(u), len(s.cIdx))
		}
		for i, v := range u {
			s.rt[s.cIdx[i]] = v
		}
	}
	return s.exchange(set || s.cfg.Protocol == AZ, s.rt, true)
}

// Open connects to the scene and makes a first exchange; the same as
// Reopen.
func (s *Scene) Open(ctx context.Context) error { return s.reopen(ctx, false) }

// Reopen implements plant.Reopener: it connects again if the connection
// broke (ZMQ: as the same client) and exchanges once (velocities held
// within VelTimeout of the last command, else zero; ZMQ reads without
// stepping). A scene that refuses the connection is absent
// (plant.ErrAbsent): the supervisor polls it, so a simulation started
// again is noticed at once. A ZMQ simulation that a person stopped after
// the bridge saw it run is a latched stop (a *StoppedError, wrapping
// plant.ErrStopLatched): Reopen starts nothing until the person presses
// Play, or asks to resume (Resume) with start = true.
func (s *Scene) Reopen(ctx context.Context) error { return s.reopen(ctx, true) }

// Resume implements plant.Resumer: a person asks to end a latched stop. The
// next Reopen consumes the request; with start = true it starts the
// simulation that was stopped.
func (s *Scene) Resume() { s.resume.Store(true) }

func (s *Scene) reopen(ctx context.Context, again bool) error {
	s.bmu.Lock()
	if s.closed {
		s.bmu.Unlock()
		return ErrClosed
	}
	err := s.be.open(ctx, s.resume.Swap(false))
	if err == nil {
		s.mu.Lock()
		s.fail, s.have, s.failures, s.posted = nil, false, 0, false
		copy(s.rt, s.next)
		set, fenced := s.nextSet, s.fenced
		s.mu.Unlock()
		// Velocities that were stopped stay stopped until a fresh
		// command; others are held within VelTimeout of the last one.
		if s.cfg.Mode == Velocity && (fenced || s.cfg.Now().UnixNano()-s.lastFresh.Load() > int64(s.cfg.VelTimeout)) {
			clear(s.rt)
		}
		err = s.exchange(set || s.cfg.Protocol == AZ, s.rt, false)
		if err == nil {
			s.mu.Lock()
			s.fenced, s.stopErr = false, nil
			s.mu.Unlock()
		}
	}
	s.bmu.Unlock()
	if err != nil {
		s.mu.Lock()
		s.fail = err
		s.mu.Unlock()
		var e *ExchangeError
		if errors.As(err, &e) && e.Reason == ReasonRefused || errors.Is(err, ErrNotRunning) {
			return fmt.Errorf("%w: %w", plant.ErrAbsent, err)
		}
		return err
	}
	if again {
		s.obs.Reconnected()
	}
	return nil
}

// ErrHalted: the scene was halted (or its motion stopped) and nothing is
// sent to it before a Reopen.
var ErrHalted = errors.New("vrep: the scene was halted; it is reopened before any command reaches it")

// fence makes the next write the last: posts not taken by the worker are
// dropped, and so are later ones, until a Reopen. The caller then takes
// bmu, which waits for an exchange under way.
func (s *Scene) fence() {
	s.mu.Lock()
	s.fenced, s.posted = true, false
	if s.fail == nil {
		s.fail = ErrHalted
	}
	s.mu.Unlock()
}

// stopTimeout bounds a Halt: a reconnection and a few tries of each call.
func (s *Scene) stopTimeout() time.Duration {
	return time.Duration(2*haltTries+2) * s.cfg.Timeout
}

// Halt implements plant.Plant: velocities are set to zero (the robot stops
// where it is), a lock-stepped simulation is let run on, and HaltTorqueOff
// also stops a ZMQ simulation. The halt is the last write: a command
// posted before it never reaches the scene after it, and none after it
// does until a Reopen.
func (s *Scene) Halt(p plant.HaltPolicy) error {
	s.fence()
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.mu.Lock()
	copy(s.rt, s.next)
	s.mu.Unlock()
	if s.cfg.Mode == Velocity {
		clear(s.rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.stopTimeout())
	defer cancel()
	err := s.be.halt(ctx, p, s.rt)
	s.stopDone(err)
	return err
}

// StopMotion implements plant.Stopper: for a link gone degraded, the
// joints' velocities are set to zero (velocity mode) and the lock step is
// released, on the live connection or a new one as the same client; AZ
// makes one exchange with zero speeds. Nothing else is sent before a
// Reopen, which puts the simulation in lock step again. An error
// (*UnreachableError) says what may still move.
func (s *Scene) StopMotion(ctx context.Context) error {
	s.fence()
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.stopTimeout())
		defer cancel()
	}
	err := s.be.stopMotion(ctx)
	s.stopDone(err)
	return err
}

func (s *Scene) stopDone(err error) {
	s.mu.Lock()
	s.stopErr = err
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("could not stop the scene's motion", "err", err)
	}
}

// Close releases the connection; the scene cannot be used afterwards.
func (s *Scene) Close() error {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.be.close()
}

// Stats is what a person watching wants to know of the scene.
type Stats struct {
	SimTime    float64 // the scene's clock at the last reply (s), NaN before one
	RTT        time.Duration
	Exchanges  uint64
	Restarts   uint64
	Superseded uint64 // ticks whose targets the worker had no time to send
	Failures   int    // in a row
	// OutOfStep counts the steps after which the simulation had run on
	// more than the one step asked, though stepping is configured: it ran
	// free of the link (restarted, or this client forgotten), and was put
	// in lock step again (ZMQ).
	OutOfStep uint64
	// LateReplies counts replies that came after their call had timed
	// out, read and dropped by the next call (ZMQ).
	LateReplies uint64
	// Dropped counts commands dropped because the scene was halted or its
	// motion stopped (the link was stopping or degraded).
	Dropped uint64
	// StopErr is what the last StopMotion or Halt could not reach (a
	// *UnreachableError), nil when it reached the scene or after a
	// Reopen.
	StopErr error
	// Stopped: a person stopped the simulation in CoppeliaSim and the link
	// waits for them (a latched stop, ZMQ).
	Stopped bool
}

// Stats returns the scene's numbers; safe from any goroutine.
func (s *Scene) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{SimTime: math.NaN(), RTT: s.lastRTT, Exchanges: s.count, Restarts: s.restarts, Failures: s.failures,
		Superseded: s.superseded, OutOfStep: s.cnt.outOfStep.Load(), LateReplies: s.cnt.late.Load(), Dropped: s.dropped,
		StopErr: s.stopErr, Stopped: s.cnt.stopped.Load()}
	if s.have {
		st.SimTime = s.smp.time
	}
	return st
}

// Status is a few words for the terminal view: the protocol, the last
// exchange's round trip, and what went wrong if anything did.
func (s *Scene) Status() string {
	st := s.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "%s rtt %v", s.cfg.Protocol, st.RTT.Round(time.Microsecond))
	if st.Failures > 0 {
		fmt.Fprintf(&b, " failing %d", st.Failures)
	}
	if st.Restarts > 0 {
		fmt.Fprintf(&b, " restarts %d", st.Restarts)
	}
	if st.Superseded > 0 {
		fmt.Fprintf(&b, " superseded %d", st.Superseded)
	}
	return b.String()
}
