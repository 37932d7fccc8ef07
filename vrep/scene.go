package vrep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/plant"
)

// Protocol is how the scene is reached.
type Protocol uint8

// Protocols.
const (
	// AZ is the seed's socket exchange (docs/vrep.md §1).
	AZ Protocol = iota
	// ZMQ is CoppeliaSim's ZMQ remote API, protocol version 2 (§4).
	ZMQ
)

func (p Protocol) String() string {
	if p == ZMQ {
		return "zmq"
	}
	return "az"
}

// ParseProtocol parses "az" or "zmq".
func ParseProtocol(s string) (Protocol, error) {
	switch s {
	case "az":
		return AZ, nil
	case "zmq":
		return ZMQ, nil
	}
	return 0, fmt.Errorf("%w: protocol %q: want az or zmq", ErrConfig, s)
}

// Mode is what the command sets on the joints.
type Mode uint8

// Modes.
const (
	// Velocity sets the joints' target velocities (rad/s).
	Velocity Mode = iota
	// Position sets the joints' target positions (rad); ZMQ only.
	Position
)

func (m Mode) String() string {
	if m == Position {
		return "position"
	}
	return "velocity"
}

// ParseMode parses "velocity" or "position".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "velocity":
		return Velocity, nil
	case "position":
		return Position, nil
	}
	return 0, fmt.Errorf("%w: mode %q: want velocity or position", ErrConfig, s)
}

// The elements of an AZ link's vectors, as the configuration names them.
const (
	SimTime    = "sim_time"
	LeftAngle  = "left_angle"
	RightAngle = "right_angle"
	LeftSpeed  = "left_speed"
	RightSpeed = "right_speed"
)

// AZMeasureNames and AZCommandNames are every element an AZ link can carry,
// in the default order.
var (
	AZMeasureNames = []string{SimTime, LeftAngle, RightAngle}
	AZCommandNames = []string{LeftSpeed, RightSpeed}
)

// DefaultJoints are the joints of the seed's scene, by object path.
var DefaultJoints = []string{"/MotorLeft", "/MotorRight"}

// MaxJoints bounds the joints of a ZMQ scene.
const MaxJoints = 64

// Observer sees what happens between the bridge and the scene (metrics).
// Superseded and DeadmanStop run on the loop thread and must not allocate;
// the others run on the scene's worker or the supervisor's goroutine.
type Observer interface {
	// Exchanged: one tick's exchange succeeded in rtt; the scene's clock
	// read simTime seconds.
	Exchanged(rtt time.Duration, simTime float64)
	// Failed: an exchange failed.
	Failed(r Reason)
	// Reconnected: the scene answers again after the link was degraded.
	Reconnected()
	// Restarted: the scene's simulation time went backwards.
	Restarted()
	// Superseded: a tick's command was replaced by the next before the
	// worker could send it (the scene is slower than the link's rate).
	Superseded()
	// DeadmanStop: no fresh command for VelTimeout; the wheels were
	// commanded to stop.
	DeadmanStop()
}

type nopObserver struct{}

func (nopObserver) Exchanged(time.Duration, float64) {}
func (nopObserver) Failed(Reason)                    {}
func (nopObserver) Reconnected()                     {}
func (nopObserver) Restarted()                       {}
func (nopObserver) Superseded()                      {}
func (nopObserver) DeadmanStop()                     {}

// Config configures a Scene.
type Config struct {
	Protocol Protocol
	// Address is the scene's host:port: DefaultAZAddress or
	// DefaultZMQAddress when empty.
	Address string
	// Timeout bounds one tick's exchange with the scene: the AZ
	// connection, request and reply, or the ZMQ calls of a tick.
	Timeout time.Duration
	// MaxFailures is how many exchanges in a row may fail before the link
	// is told the device is down; the ones before are counted and the last
	// measurement kept (3).
	MaxFailures int

	// Measure and Command map an AZ link's vectors: the elements of the
	// measurement (SimTime, LeftAngle, RightAngle, each at most once) and
	// of the command (LeftSpeed and RightSpeed, once each), in the order
	// Simulink sees them. Empty: the defaults.
	Measure, Command []string

	// Joints are a ZMQ scene's joints by object path (DefaultJoints).
	Joints []string
	// Mode: what a ZMQ command sets; AZ is always Velocity.
	Mode Mode
	// Stepping calls sim.step once per tick: the simulation advances in
	// lock step with the link (ZMQ only).
	Stepping bool
	// Start starts a stopped simulation (ZMQ only); false leaves the link
	// degraded until someone presses Play.
	Start bool
	// ClientTimeout is how long CoppeliaSim keeps this client's state,
	// its stepping included, once the bridge stops calling (5 s).
	ClientTimeout time.Duration
	// Name is the link's name, for the messages that tell a person what
	// to run (`bridge resume NAME`).
	Name string

	// Limits bound each command element, in command order: what the link
	// clamps to. Velocities beyond them are clamped here again.
	Limits [][2]float64
	// VelTimeout is the dead-man of a velocity command: this long without
	// a fresh command from Simulink, the joints are commanded zero.
	VelTimeout time.Duration
	// Period is the link's tick period, 0 when unknown: the defaults of
	// Timeout and VelTimeout follow it, and Validate checks the dead-man
	// against it.
	Period time.Duration

	Logger   *slog.Logger
	Observer Observer
	// Now reads the clock of the dead-man; nil: time.Now.
	Now func() time.Time
	// Dial connects (ZMQ); nil: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultConfig is the configuration of a scene of protocol p whose
// joints are commanded in mode m, exchanged once every period (0:
// unknown): what New fills in for a zero field and what the configuration
// file's keys default to.
func DefaultConfig(p Protocol, m Mode, period time.Duration) Config {
	c := Config{Protocol: p, Mode: m, Address: DefaultAZAddress, Timeout: 50 * time.Millisecond, MaxFailures: 3,
		Stepping: true, Start: true, ClientTimeout: 5 * time.Second, VelTimeout: 150 * time.Millisecond, Period: period}
	if p == ZMQ {
		c.Address = DefaultZMQAddress
		c.Joints = slices.Clone(DefaultJoints)
	} else {
		c.Measure = slices.Clone(AZMeasureNames)
		c.Command = slices.Clone(AZCommandNames)
	}
	if period > 0 {
		// The worker has a whole period for an exchange before the next
		// tick's supersedes it.
		c.Timeout = min(max(period, time.Millisecond), 10*time.Second)
		// Three periods: the wheels do not stop between ticks.
		c.VelTimeout = min(max(3*period, 100*time.Millisecond), time.Minute)
	}
	limit := 10.0 // rad/s: a wheel at about 1.6 turns a second
	if m == Position {
		limit = math.Pi
	}
	c.Limits = make([][2]float64, c.commandLen())
	for i := range c.Limits {
		c.Limits[i] = [2]float64{-limit, limit}
	}
	return c
}

// defaults fills the zero fields from DefaultConfig; Stepping, Start and
// the Limits keep their zero (off, and no clamping beyond the link's).
func (c *Config) defaults() {
	d := DefaultConfig(c.Protocol, c.Mode, c.Period)
	if c.Address == "" {
		c.Address = d.Address
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxFailures == 0 {
		c.MaxFailures = d.MaxFailures
	}
	if c.Protocol == AZ {
		if len(c.Measure) == 0 {
			c.Measure = d.Measure
		}
		if len(c.Command) == 0 {
			c.Command = d.Command
		}
	} else if len(c.Joints) == 0 {
		c.Joints = d.Joints
	}
	if c.ClientTimeout == 0 {
		c.ClientTimeout = d.ClientTimeout
	}
	if c.VelTimeout == 0 {
		c.VelTimeout = d.VelTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate checks every field and returns one *plant.FieldError per bad value,
// joined (errors.Join), or nil. Period, when set, is the link's: the
// dead-man must outlast it.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: field, Value: v, Want: want})
	}
	if host, port, err := net.SplitHostPort(c.Address); err != nil || host == "" || port == "" {
		def := DefaultAZAddress
		if c.Protocol == ZMQ {
			def = DefaultZMQAddress
		}
		bad("address", fmt.Sprintf("%q", c.Address), fmt.Sprintf("host:port such as %q", def))
	}
	for _, d := range []struct {
		key    string
		d      time.Duration
		lo, hi time.Duration
	}{
		{"timeout", c.Timeout, 100 * time.Microsecond, 10 * time.Second},
		{"vel_timeout", c.VelTimeout, time.Millisecond, time.Minute},
	} {
		if d.d < d.lo || d.d > d.hi {
			bad(d.key, d.d, fmt.Sprintf("%v..%v", d.lo, d.hi))
		}
	}
	if c.Period > 0 && c.VelTimeout <= c.Period {
		bad("vel_timeout", c.VelTimeout, fmt.Sprintf("longer than the link's period %v, or the wheels stop between ticks (3 periods is right)", c.Period))
	}
	if c.MaxFailures < 1 || c.MaxFailures > 1000 {
		bad("max_failures", c.MaxFailures, "1..1000 exchanges in a row")
	}
	if c.Protocol == AZ {
		if c.Mode != Velocity {
			bad("mode", c.Mode, "velocity: the AZ script sets target velocities")
		}
		errs = append(errs, checkNames("measure", c.Measure, AZMeasureNames, 1)...)
		errs = append(errs, checkNames("command", c.Command, AZCommandNames, len(AZCommandNames))...)
	} else {
		if c.ClientTimeout < time.Second || c.ClientTimeout > time.Hour {
			bad("client_timeout", c.ClientTimeout, "1s..1h")
		}
		if len(c.Joints) < 1 || len(c.Joints) > MaxJoints {
			bad("joints", len(c.Joints), fmt.Sprintf("1..%d object paths", MaxJoints))
			return errors.Join(errs...) // a long list is not searched for duplicates
		}
		for i, j := range c.Joints {
			if j == "" || strings.ContainsAny(j, "\x00\n") || slices.Index(c.Joints, j) != i {
				bad(fmt.Sprintf("joints[%d]", i), fmt.Sprintf("%q", j), `an object path of the scene, once, such as "/MotorLeft"`)
			}
		}
	}
	n := c.commandLen()
	if c.Limits != nil && len(c.Limits) != n {
		bad("limits", len(c.Limits), fmt.Sprintf("%d ranges, one per command element", n))
		return errors.Join(errs...)
	}
	for i, l := range c.Limits {
		if !(l[0] <= l[1]) || math.Abs(l[0]) > math.MaxFloat32 || math.Abs(l[1]) > math.MaxFloat32 {
			bad(fmt.Sprintf("limits[%d]", i), l, "finite values with min ≤ max")
		}
	}
	return errors.Join(errs...)
}

// checkNames checks a mapping of an AZ link: names from allowed, each at
// most once, at least least of them.
func checkNames(key string, names, allowed []string, least int) []error {
	want := fmt.Sprintf("%d to %d of %s", least, len(allowed), strings.Join(allowed, ", "))
	if least == len(allowed) {
		want = fmt.Sprintf("%d of %s", least, strings.Join(allowed, ", "))
	}
	if len(names) > len(allowed) || len(names) < least {
		// A long list is not searched for duplicates.
		return []error{&plant.FieldError{Err: ErrConfig, Field: key, Value: fmt.Sprintf("%q", names), Want: want}}
	}
	var errs []error
	for i, n := range names {
		switch {
		case !slices.Contains(allowed, n):
			errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: fmt.Sprintf("%s[%d]", key, i), Value: fmt.Sprintf("%q", n),
				Want: "one of " + strings.Join(allowed, ", "), Allowed: allowed})
		case slices.Index(names, n) != i:
			errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: fmt.Sprintf("%s[%d]", key, i), Value: fmt.Sprintf("%q", n), Want: "each element once"})
		}
	}
	return errs
}

func (c *Config) commandLen() int {
	if c.Protocol == AZ {
		return len(c.Command)
	}
	return len(c.Joints)
}

// Layout is the shape of a scene link's vectors: for AZ, the mapped
// elements, consecutive angles (speeds) grouped into one field "angles"
// ("speeds"); for ZMQ, the simulation time then the joints' angles, and
// the joints' speeds or angles. It fills the defaults of an incomplete
// configuration.
func Layout(cfg Config) plant.Layout {
	cfg.defaults()
	var lay plant.Layout
	if cfg.Protocol == ZMQ {
		lay.Measure = []plant.Field{{Name: "sim_time", Unit: "s", Len: 1}, {Name: "angles", Unit: "rad", Len: len(cfg.Joints)}}
		if cfg.Mode == Position {
			lay.Command = []plant.Field{{Name: "angles", Unit: "rad", Len: len(cfg.Joints)}}
		} else {
			lay.Command = []plant.Field{{Name: "speeds", Unit: "rad/s", Len: len(cfg.Joints)}}
		}
		return lay
	}
	group := func(fs []plant.Field, name, unit string) []plant.Field {
		if k := len(fs) - 1; k >= 0 && fs[k].Name == name {
			fs[k].Len++
			return fs
		}
		return append(fs, plant.Field{Name: name, Unit: unit, Len: 1})
	}
	for _, n := range cfg.Measure {
		if n == SimTime {
			lay.Measure = group(lay.Measure, "sim_time", "s")
		} else {
			lay.Measure = group(lay.Measure, "angles", "rad")
		}
	}
	for range cfg.Command {
		lay.Command = group(lay.Command, "speeds", "rad/s")
	}
	return lay
}

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

// azBackend is the seed's exchange: one connection per tick.
type azBackend struct{ c *AZClient }

func (b *azBackend) open(context.Context, bool) error { return nil }
func (b *azBackend) close() error                     { return nil }
func (b *azBackend) restarted() error                 { return nil }

func (b *azBackend) step(_ bool, targets []float64, _ bool, s *sample) error {
	var req Request
	var err error
	if req.Left, err = Narrow(targets[0]); err != nil {
		return err
	}
	if req.Right, err = Narrow(targets[1]); err != nil {
		return err
	}
	rep, err := b.c.Exchange(req)
	if err != nil {
		return err
	}
	s.time, s.q[0], s.q[1] = float64(rep.Time), float64(rep.Left), float64(rep.Right)
	return nil
}

// haltTries is how many exchanges a halt makes before it gives up: a halt is
// not bound to a tick, and one late reply from a busy scene must not leave
// the robot on its last velocities. Setting the same targets again is
// harmless.
const haltTries = 3

// halt sets zero speeds, whatever the policy: the seed's script has no
// torque to release.
func (b *azBackend) halt(ctx context.Context, _ plant.HaltPolicy, _ []float64) error {
	return b.stopMotion(ctx)
}

// stopMotion makes one exchange with zero speeds (up to haltTries).
func (b *azBackend) stopMotion(ctx context.Context) error {
	s := sample{q: make([]float64, 2)}
	var zero [2]float64
	var err error
	for range haltTries {
		if err = b.step(true, zero[:], false, &s); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return &UnreachableError{Addr: b.c.Addr(), Err: err}
}
