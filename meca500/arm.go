package meca500

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/plant"
)

// Observer sees what happens to the robot (metrics). Its methods run on the
// reader's or the supervisor's goroutine, never on the loop thread, except
// WatchdogRefreshed, which must not allocate.
type Observer interface {
	// State: the 2007 status changed.
	State(s Status)
	// Error: the robot reported an error (a 1xxx code, or 3005 and other
	// motion errors).
	Error(code int)
	// SafetyStop: a safety stop changed state (1 active, 2 awaiting reset,
	// 0 cleared).
	SafetyStop(code, state int)
	// BufferFull: a motion command was refused with 1000.
	BufferFull()
	// Connected: a (re)connection finished its start-up.
	Connected()
	// WatchdogRefreshed: a tick refreshed the connection watchdog.
	WatchdogRefreshed()
}

type nopObserver struct{}

func (nopObserver) State(Status)        {}
func (nopObserver) Error(int)           {}
func (nopObserver) SafetyStop(int, int) {}
func (nopObserver) BufferFull()         {}
func (nopObserver) Connected()          {}
func (nopObserver) WatchdogRefreshed()  {}

// cycle is one monitoring cycle (docs/meca500.md §7).
type cycle struct {
	t                      float64 // robot time, µs
	target, pose           [Joints]float64
	measured, measuredPose [Joints]float64
}

// state is what the reader learns; guarded by Arm.mu.
type state struct {
	connected bool
	lost      error // why the connection ended
	banner    Banner
	bannerOK  bool
	refusal   int // 3001, 3002, 3053
	seen      [10000]uint32
	errors    uint32 // 1xxx codes seen (besides 1000)
	status    Status
	statusOK  bool
	lastError int
	errText   [200]byte
	errLen    int
	safety    [16]int8 // by safetySlot
	pend      cycle
	sample    cycle
	sampleAt  time.Time
	haveSamp  bool
	samples   uint64
}

// safetySlot maps a safety-stop code to its slot, or -1.
func safetySlot(code int) int {
	switch {
	case code == 3069:
		return 0
	case code == 3070:
		return 1
	case code == 3032:
		return 2
	case code >= 3080 && code <= 3087:
		return 3 + code - 3080
	}
	return -1
}

var slotCodes = [...]int{3069, 3070, 3032, 3080, 3081, 3082, 3083, 3084, 3085, 3086, 3087}

// Arm is a Meca500 as a plant: Measure and Command run on the loop thread
// and never wait on TCP; Reopen (the supervisor's) connects and runs the
// start-up; a reader goroutine per connection keeps the newest state.
type Arm struct {
	cfg    Config
	addr   string
	log    *slog.Logger
	obs    Observer
	layout plant.Layout
	limits [Joints][2]float64
	law    PositionLaw // joint_position's controller

	mu    sync.Mutex
	st    state
	view  viewBuf       // the loop's copy of st, published on each release of mu
	poke  chan struct{} // the reader's "something changed", for the start-up
	onMsg func([]byte)
	// Under mu: the arm has been started (a stop from now on latches),
	// what latched it, a person's resume waiting for the next Reopen, the
	// last Reopen's error (for Health), the last buffer-full refusal.
	started     bool
	latch       latchState
	resumeArmed bool
	reopenErr   error
	lastFull    time.Time

	// What Age reads on the loop thread while Reopen may run: the reader
	// and the supervisor's goroutine publish them (publishLocked).
	epoch    time.Time
	sampleNs atomic.Int64  // arrival of the cycle the last Measure copied, since epoch; 0: none
	flagBits atomic.Uint32 // the 2007 flags, bit i = flags()[i]
	up       atomic.Bool
	sampled  atomic.Bool // a monitoring cycle has arrived on this connection (Ready)
	errField atomic.Int64
	fulls    atomic.Uint64 // motion commands refused with 1000

	wmu    sync.Mutex // one writer at a time, and conn
	conn   net.Conn
	done   chan struct{} // the reader of conn has returned
	framer *Framer
	silent string // "-" on firmware ≥ 9.2 (docs/meca500.md §10)

	// The loop thread's.
	move, watchdog string // command names, with their prefixes
	wbuf           []byte
	v              [Joints]float64
	q              [Joints]float64
	haveQ          bool
	streaming      bool
	wdArmed        bool // a Command armed the watchdog on this connection
}

// New checks cfg and returns an Arm, not connected: the supervisor's first
// Reopen (or Open) connects.
func New(cfg Config) (*Arm, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Arm{
		cfg: cfg, addr: withPort(cfg.Address), obs: cfg.Observer,
		log:    cfg.Logger.With("robot", withPort(cfg.Address)),
		layout: Layout(cfg.Mode, cfg.Pose),
		limits: Limits(cfg.Mode, cfg.SpeedFraction),
		poke:   make(chan struct{}, 1),
		framer: NewFramer(4096),
		wbuf:   make([]byte, 0, 512),
		epoch:  time.Now(),
	}
	a.law = NewPositionLaw(cfg)
	a.view.init()
	a.onMsg = a.handle
	a.setNames()
	return a, nil
}

func (a *Arm) setNames() {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	// As mecademicpy: motion commands plain (the robot's log shows what
	// moved it), the watchdog refresh silent (docs/meca500.md §2.1).
	a.move = "MoveJointsVel"
	if a.cfg.Mode == CartesianVelocity {
		a.move = "MoveLinVelWrf"
	}
	a.watchdog = a.silent + "ConnectionWatchdog"
}

// MeasureLen implements plant.Plant.
func (a *Arm) MeasureLen() int { return a.layout.MeasureLen() }

// CommandLen implements plant.Plant.
func (a *Arm) CommandLen() int { return Joints }

// Layout implements plant.Describer.
func (a *Arm) Layout() plant.Layout { return a.layout }

// Banner returns what the robot said of itself on the last connection.
func (a *Arm) Banner() (Banner, bool) {
	a.mu.Lock()
	defer a.unlock()
	return a.st.banner, a.st.bannerOK
}

// Status returns the robot's last 2007 status and the last error code.
func (a *Arm) Status() (Status, int) {
	a.mu.Lock()
	defer a.unlock()
	return a.st.status, a.st.lastError
}

// SampleAge is how old the newest monitoring cycle is (s), NaN before one.
func (a *Arm) SampleAge() float64 {
	a.mu.Lock()
	defer a.unlock()
	if !a.st.haveSamp {
		return math.NaN()
	}
	return time.Since(a.st.sampleAt).Seconds()
}

// Ready implements plant.Readier: a monitoring cycle has arrived on this
// connection, so the measurement is the robot's, not made up.
func (a *Arm) Ready() bool { return a.sampled.Load() }

// Lack implements plant.Lacker: before the first monitoring cycle on this
// connection, the measurement would be made up.
func (a *Arm) Lack() error {
	if a.Ready() {
		return nil
	}
	return errNoCycleYet
}

// errNoCycleYet is the arm's lack before its first monitoring cycle.
var errNoCycleYet = errors.New("meca500: waiting for the robot's first real-time monitoring cycle since it connected (SetRealTimeMonitoring was sent; check the robot's firmware)")

// Measure implements plant.Plant: it copies the newest monitoring cycle,
// the status, the last error and the sample's age. It fails when the
// connection is lost or silent. Before the first cycle the joints are NaN.
func (a *Arm) Measure(dst []float64) error {
	now := time.Now()
	v := a.view.read()
	if !v.connected || v.latched {
		return a.measureFailed()
	}
	if v.haveSamp && now.Sub(v.sampleAt) > a.cfg.Silence {
		return fmt.Errorf("%w for %v: the robot or the network stalled", ErrSilent, a.cfg.Silence)
	}
	joints, pose := &v.sample.target, &v.sample.pose
	if a.cfg.Measured {
		joints, pose = &v.sample.measured, &v.sample.measuredPose
	}
	n := copy(dst, joints[:])
	if !v.haveSamp {
		for i := range Joints {
			dst[i] = math.NaN()
		}
	}
	a.q, a.haveQ = *joints, v.haveSamp
	if a.cfg.Pose {
		n += copy(dst[n:], pose[:])
		if !v.haveSamp {
			for i := n - Joints; i < n; i++ {
				dst[i] = math.NaN()
			}
		}
	}
	for _, f := range v.flags {
		dst[n] = b2f(f)
		n++
	}
	dst[n] = float64(v.errCode)
	dst[n+1] = math.NaN()
	if v.haveSamp {
		dst[n+1] = now.Sub(v.sampleAt).Seconds()
		// The joints Simulink keeps getting while the link is down are
		// these: Age counts their age.
		a.sampleNs.Store(int64(v.sampleAt.Sub(a.epoch)))
	}
	return nil
}

// measureFailed is Measure's error when the view says the arm is not
// connected or stopped: why, from the state itself.
func (a *Arm) measureFailed() error {
	a.mu.Lock()
	defer a.unlock()
	if !a.st.connected {
		return a.st.lost
	}
	if a.latch.kind != latchNone {
		// A stop only a person ends: the link goes degraded.
		return a.latchedErrLocked("", nil)
	}
	// It changed since the view was published: the next tick reads it.
	return fmt.Errorf("%w: the connection changed during the tick", ErrDisconnected)
}

// Latch implements plant.Latcher: the link calls it right before the
// datagram leaves, a lead after Measure, so that the status flags, the
// last error and the sample's age are the reader's newest: a robot that
// went into error while the tick waited for its send says so in that
// datagram. The joints and pose stay those Measure read.
func (a *Arm) Latch(dst []float64) {
	now := time.Now()
	v := a.view.read()
	n := Joints
	if a.cfg.Pose {
		n += Joints
	}
	if len(dst) < n+len(v.flags)+2 || !v.connected {
		return
	}
	for _, f := range v.flags {
		dst[n] = b2f(f)
		n++
	}
	dst[n] = float64(v.errCode)
	if v.haveSamp {
		dst[n+1] = now.Sub(v.sampleAt).Seconds()
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Command implements plant.Plant: one motion command per tick, with the
// watchdog refresh in the same write (docs/meca500.md §13). The link calls
// it only with a fresh command; ticks without one call Idle.
func (a *Arm) Command(u []float64) error {
	if err := a.ready(); err != nil {
		return err
	}
	if len(u) != Joints {
		return fmt.Errorf("%w: %d command values, want %d", ErrConfig, len(u), Joints)
	}
	for i, x := range u {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("meca500: command value %d is %v: %w", i, x, ErrNotFinite)
		}
		if a.cfg.Mode == JointPosition {
			if !a.haveQ {
				return nil // no joints yet to control from
			}
			x = a.law.Velocity(i, x, a.q[i])
		} else {
			x = math.Max(a.limits[i][0], math.Min(a.limits[i][1], x))
		}
		a.v[i] = x
	}
	b, err := AppendCommand(a.wbuf[:0], a.move, a.v[:]...)
	if err != nil {
		return err
	}
	if a.cfg.Watchdog > 0 {
		b, _ = AppendCommand(b, a.watchdog, a.cfg.Watchdog.Seconds())
	}
	a.wbuf = b
	if err := a.write(b); err != nil {
		return err
	}
	a.streaming = true
	if a.cfg.Watchdog > 0 {
		a.wdArmed = true
		a.obs.WatchdogRefreshed()
	}
	return nil
}

// Idle implements the plant's dead-man contract: the tick brings no fresh
// command (the partner timed out or lost sync, or the handshake is not
// done). The first idle tick after streaming sends zero velocity, so the
// robot stops at once (its velocity timeout would stop it anyway). Every
// idle tick still refreshes the connection watchdog once a command armed
// it: the watchdog guards against the bridge hanging, and a loop that calls
// Idle is alive, so a silent partner stops the arm without dropping its
// connection. A hung bridge calls nothing, and the watchdog drops the
// connection (docs/meca500.md §13).
func (a *Arm) Idle() error {
	if err := a.ready(); err != nil {
		return err
	}
	if !a.streaming && !a.wdArmed {
		return nil
	}
	b := a.wbuf[:0]
	if a.streaming {
		var zero [Joints]float64
		b, _ = AppendCommand(b, a.move, zero[:]...)
		a.streaming = false
	}
	if a.wdArmed {
		b, _ = AppendCommand(b, a.watchdog, a.cfg.Watchdog.Seconds())
	}
	a.wbuf = b
	if err := a.write(b); err != nil {
		return err
	}
	if a.wdArmed {
		a.obs.WatchdogRefreshed()
	}
	return nil
}

// ready is nil when the robot can take motion commands: connected,
// activated, homed, not in error, not paused, no safety stop. It allocates
// only when it fails.
func (a *Arm) ready() error {
	if a.view.read().ready {
		return nil
	}
	a.mu.Lock()
	defer a.unlock()
	return a.st.readyErr()
}

func (st *state) readyErr() error {
	if !st.connected {
		return st.lost
	}
	for i, s := range st.safety {
		if s != 0 && i < len(slotCodes) {
			return &SafetyStopError{Code: slotCodes[i], State: int(s)}
		}
	}
	switch s := st.status; {
	case s.Error:
		return &RobotError{Code: st.lastError, Text: string(st.errText[:st.errLen])}
	case !s.Activated:
		return fmt.Errorf("%w: the robot is deactivated", ErrPolicy)
	case !s.Homed:
		return fmt.Errorf("%w: the robot is not homed", ErrPolicy)
	case s.Paused:
		return fmt.Errorf("%w: the robot's motion is paused", ErrPolicy)
	}
	return nil
}

// Halt implements plant.Plant. HaltHold stops the robot where it is (zero
// velocity) and turns the watchdog off, so that the bridge stopping is not
// a connection-drop stop; HaltTorqueOff also deactivates the robot.
func (a *Arm) Halt(p plant.HaltPolicy) error {
	a.wmu.Lock()
	conn, move, watchdog := a.conn, a.move, a.watchdog
	a.wmu.Unlock()
	if conn == nil {
		return nil
	}
	var zero [Joints]float64
	b, _ := AppendCommand(nil, move, zero[:]...)
	b, _ = AppendCommand(b, watchdog, 0)
	if p == plant.HaltTorqueOff {
		b, _ = AppendCommand(b, "PauseMotion")
		b, _ = AppendCommand(b, "DeactivateRobot")
		// The bridge deactivates it: no stop to latch, and the next
		// serve starts it as at the bridge's start.
		a.mu.Lock()
		a.started = false
		a.unlock()
	}
	a.streaming, a.wdArmed = false, false
	if err := a.writeTimeout(b, a.cfg.ReplyTimeout); err != nil {
		return err
	}
	return nil
}

// write sends b with the loop's write timeout.
func (a *Arm) write(b []byte) error { return a.writeTimeout(b, a.cfg.WriteTimeout) }

func (a *Arm) writeTimeout(b []byte, d time.Duration) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if a.conn == nil {
		return ErrDisconnected
	}
	if err := a.conn.SetWriteDeadline(time.Now().Add(d)); err != nil {
		return fmt.Errorf("%w: %w", ErrDisconnected, err)
	}
	if _, err := a.conn.Write(b); err != nil {
		// A partial write leaves half a command in the stream: the
		// connection is unusable either way.
		a.conn.Close()
		return fmt.Errorf("%w: writing a command: %w", ErrDisconnected, err)
	}
	return nil
}

// Close closes the connection and waits for its reader. The Arm can be
// reopened afterwards.
func (a *Arm) Close() error {
	a.wmu.Lock()
	conn, done := a.conn, a.done
	a.conn = nil
	a.wmu.Unlock()
	if conn == nil {
		return nil
	}
	err := conn.Close()
	<-done
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
