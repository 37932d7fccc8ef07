// Package bridge is the heart of the gateway: the clock-master Loop, the Link
// that joins a loop, a Simulink endpoint and a plant, and the Supervisor that
// runs links and the services they depend on, restarts what fails and
// reports health (docs/architecture.md). It follows docs/simulink-udp.md for
// the Emio loop semantics and docs/realtime.md for timing.
//
// It knows no device and no configuration file: a plant is anything that
// satisfies plant.Plant, and its vector lengths are the plant's.
package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// ErrConfig is the sentinel of every invalid link or loop configuration.
var ErrConfig = errors.New("bridge: invalid configuration")

// Exchanger is the Simulink side of a link: simulink.Master satisfies it.
type Exchanger interface {
	Exchange(measure, command []float64, deadline int64) simulink.Status
	Synced() bool
}

// CommandObserver counts what the link did not pass on as it came: commands
// refused or clamped before they reached the plant, and measurements sent
// again because the plant could not be read. Called on the loop thread;
// must not allocate.
type CommandObserver interface {
	RejectedNonFinite()
	Clamped()
	// StaleMeasurement: the tick sent the last measurement again, the
	// device being down (the datagram format cannot say so to Simulink).
	StaleMeasurement()
}

// ApplyMode is when a received command reaches the plant.
type ApplyMode uint8

// Apply modes.
const (
	// ApplyPrevious is emioapi's order: the reply of tick k is applied at the
	// start of tick k+1, just after the motors are read (docs/simulink-udp.md §8.4).
	ApplyPrevious ApplyMode = iota
	// ApplyImmediate applies a reply as soon as it arrives.
	ApplyImmediate
)

// ParseApplyMode parses "previous" or "immediate".
func ParseApplyMode(s string) (ApplyMode, error) {
	switch s {
	case "previous", "":
		return ApplyPrevious, nil
	case "immediate":
		return ApplyImmediate, nil
	}
	return 0, fmt.Errorf("bridge: apply %q: %w (want previous or immediate)", s, ErrConfig)
}

func (m ApplyMode) String() string {
	if m == ApplyImmediate {
		return "immediate"
	}
	return "previous"
}

// Limit is the allowed range of one command element.
type Limit struct{ Min, Max float64 }

// LinkConfig configures a link.
type LinkConfig struct {
	Name  string
	Loop  LoopConfig
	Apply ApplyMode
	Halt  plant.HaltPolicy
	// Limits has one range per command element; commands outside are clamped.
	Limits []Limit
	// Margin closes the receive window this long before the next deadline;
	// 0 means a tenth of the period, at most 2 ms.
	Margin time.Duration
	// Recorder, when set, gets every exchanged tick (a telemetry tap).
	Recorder TickRecorder
	// PlantTime, when set, is the time a plant.Stepped plant is told for a
	// tick of this deadline (nil: the deadline): a replay tells it the
	// recorded tick's. It runs on the loop thread and must not block or
	// allocate.
	PlantTime func(deadline int64) int64
	// Hold is how long the plant's measurement may lack (plant.Lacker,
	// plant.Readier) before the link leaves running for degraded; 0 means
	// DefaultHold. A camera that starts, or skips a frame, is no failure.
	Hold time.Duration
}

// DefaultHold is how long a measurement may lack before its link is
// degraded: longer than a camera takes to start streaming, short enough
// that a person sees the truth before wondering.
const DefaultHold = 2 * time.Second

// ErrIncomplete is the lack of a plant that is a Readier but not a Lacker:
// it cannot say what is missing.
var ErrIncomplete = errors.New("bridge: the plant's measurement is not complete")

// Link joins a loop, a Simulink exchanger and a plant: one tick measures,
// applies the previous tick's command and exchanges (docs/architecture.md "One tick",
// in emioapi's exact order).
type Link struct {
	cfg     LinkConfig
	plant   plant.Plant
	ready   plant.Readier // nil: the plant's measurement is always complete
	lacker  plant.Lacker  // nil: a Readier's lack is ErrIncomplete
	deadman plant.Deadman // nil: the plant gets the last good command every tick
	latch   plant.Latcher // nil: Measure fills the whole measurement
	ager    plant.Ager    // nil: a stale measurement is sent as it was
	stepped plant.Stepped // nil: the plant keeps its own time
	ex      Exchanger
	clock   *realtime.Clock
	loopObs LoopObserver
	cmdObs  CommandObserver
	logger  *slog.Logger
	margin  int64

	// Owned by the loop thread.
	meas, rx, cmd []float64
	// given is what the plant was last given (cmd at the time): in
	// emioapi's order cmd is the next tick's by the time the tick ends.
	given       []float64
	haveCmd     bool
	fresh       bool // cmd was received since it was last applied
	state       State
	tickApplied bool  // a command reached the plant in this tick
	lackSince   int64 // the deadline of the first tick whose measurement lacked; 0 while complete
	lacking     bool  // degraded because the measurement has lacked for the hold
	hold        int64
	rec         TickRecord // the recorder's, refilled every tick
	exRep       exchangeReporter

	// released: the last Serve ended with Halt(HaltTorqueOff), so the plant
	// must be reopened before the next Serve uses it. Link goroutine only.
	released bool

	// Shared with the supervisor and the status view.
	deviceUp   atomic.Bool
	down       chan struct{}
	events     chan Event
	lost       atomic.Uint64
	pubState   atomic.Uint64 // packState: the state and when it was entered, read as one
	applied    atomic.Uint64
	measured   atomic.Uint64
	stale      atomic.Uint64
	loop       atomic.Pointer[Loop]
	cmdShadow  []atomic.Uint64 // the last good command, CommandLen values
	measShadow []atomic.Uint64 // the last measurement, MeasureLen values
	haltErr    atomic.Pointer[error]
	// downErr is why the device is down as the supervisor last learned it
	// (a reopen's error, a stop latched by the device); stopErr is what
	// StopMotion could not reach. Set off the loop thread.
	downErr atomic.Pointer[error]
	stopErr atomic.Pointer[error]
	// lackErr is what the measurement lacks while the link is degraded for
	// it. Set on the loop thread.
	lackErr atomic.Pointer[error]

	// devMu keeps the supervisor's Reopen and StopMotion and the halt at
	// stop from talking to the device at once.
	devMu sync.Mutex
}

// NewLink checks that plant and limits agree and prepares the buffers. Nothing
// runs until Serve. loopObs and cmdObs may be nil.
func NewLink(cfg LinkConfig, p plant.Plant, ex Exchanger, clock *realtime.Clock,
	loopObs LoopObserver, cmdObs CommandObserver, logger *slog.Logger) (*Link, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("bridge: link name is empty: %w", ErrConfig)
	}
	if p == nil || ex == nil || clock == nil {
		return nil, fmt.Errorf("bridge: link %q: plant, exchanger and clock are required: %w", cfg.Name, ErrConfig)
	}
	// A measurement of another length would never be sent (the datagram
	// size is fixed): refuse the wiring instead of timing out forever.
	if s, ok := ex.(interface{ Lens() (measure, command int) }); ok {
		if m, c := s.Lens(); m != p.MeasureLen() || c != p.CommandLen() {
			return nil, fmt.Errorf("bridge: link %q: the exchanger carries %d measured and %d command values, the plant %d and %d: %w",
				cfg.Name, m, c, p.MeasureLen(), p.CommandLen(), ErrConfig)
		}
	}
	if p.MeasureLen() < 0 || p.CommandLen() < 1 {
		return nil, fmt.Errorf("bridge: link %q: a plant of %d measured and %d command values: %w (want ≥ 0 and ≥ 1)",
			cfg.Name, p.MeasureLen(), p.CommandLen(), ErrConfig)
	}
	if n := p.CommandLen(); len(cfg.Limits) != n {
		return nil, fmt.Errorf("bridge: link %q: %d limits for %d commands: %w", cfg.Name, len(cfg.Limits), n, ErrConfig)
	}
	for i, l := range cfg.Limits {
		if !(l.Min <= l.Max) || math.IsInf(l.Min, 0) || math.IsInf(l.Max, 0) {
			return nil, fmt.Errorf("bridge: link %q: limit %d [%v, %v] is not a finite range: %w", cfg.Name, i, l.Min, l.Max, ErrConfig)
		}
	}
	if cfg.Loop.Period <= 0 {
		return nil, fmt.Errorf("bridge: link %q: period %v: %w", cfg.Name, cfg.Loop.Period, ErrConfig)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cmdObs == nil {
		cmdObs = nopCommandObserver{}
	}
	hold := cfg.Hold
	if hold <= 0 {
		hold = DefaultHold
	}
	margin := cfg.Margin
	if margin <= 0 {
		margin = min(cfg.Loop.Period/10, 2*time.Millisecond)
	}
	l := &Link{
		cfg: cfg, plant: p, ex: ex, clock: clock, loopObs: loopObs, cmdObs: cmdObs,
		logger: logger.With("link", cfg.Name), margin: int64(margin), hold: int64(hold),
		meas:       make([]float64, p.MeasureLen()),
		rx:         make([]float64, p.CommandLen()),
		cmd:        make([]float64, p.CommandLen()),
		given:      make([]float64, p.CommandLen()),
		down:       make(chan struct{}, 1),
		events:     make(chan Event, 256),
		cmdShadow:  make([]atomic.Uint64, p.CommandLen()),
		measShadow: make([]atomic.Uint64, p.MeasureLen()),
	}
	l.ready, _ = p.(plant.Readier)
	l.lacker, _ = p.(plant.Lacker)
	l.deadman, _ = p.(plant.Deadman)
	l.latch, _ = p.(plant.Latcher)
	l.ager, _ = p.(plant.Ager)
	l.stepped, _ = p.(plant.Stepped)
	l.exRep, _ = ex.(exchangeReporter)
	l.deviceUp.Store(true)
	l.pubState.Store(packState(l.state, clock.Now()))
	return l, nil
}

// packState puts a state and the instant it was entered (monotonic ns, kept
// in µs: 2^56 µs is two thousand years of uptime) in one word, so that a
// reader never sees a state with the time of another.
func packState(s State, at int64) uint64 { return uint64(at/1000)<<8 | uint64(s) }

type nopCommandObserver struct{}

func (nopCommandObserver) RejectedNonFinite() {}
func (nopCommandObserver) Clamped()           {}
func (nopCommandObserver) StaleMeasurement()  {}

// Name returns the link's name.
func (l *Link) Name() string { return l.cfg.Name }

// Config returns the link's configuration.
func (l *Link) Config() LinkConfig { return l.cfg }

// Plant returns the link's plant.
func (l *Link) Plant() plant.Plant { return l.plant }

// Events delivers state transitions; the supervisor drains it. Events that do
// not fit are counted in Lost, never waited for.
func (l *Link) Events() <-chan Event { return l.events }

// Lost returns how many events did not fit in the buffer.
func (l *Link) Lost() uint64 { return l.lost.Load() }

// State returns the current state; safe from any goroutine.
func (l *Link) State() State { return State(l.pubState.Load() & 0xff) }

// StateSince returns the current state and when the link entered it (on
// its clock, µs resolution); safe from any goroutine.
func (l *Link) StateSince() (State, int64) {
	v := l.pubState.Load()
	return State(v & 0xff), int64(v>>8) * 1000
}

// Stale returns how many ticks sent the last measurement again because the
// device was down.
func (l *Link) Stale() uint64 { return l.stale.Load() }

// Applied returns how many commands reached the plant.
func (l *Link) Applied() uint64 { return l.applied.Load() }

// Command copies the last good command into dst (up to CommandLen values)
// and reports whether one has reached the plant; safe from any goroutine.
func (l *Link) Command(dst []float64) bool {
	load(dst, l.cmdShadow)
	return l.applied.Load() > 0
}

// Measurement copies the last measurement read from the plant into dst (up
// to MeasureLen values) and reports whether there is one; safe from any
// goroutine. A value may be one tick newer than its neighbours.
func (l *Link) Measurement(dst []float64) bool {
	load(dst, l.measShadow)
	return l.measured.Load() > 0
}

func load(dst []float64, src []atomic.Uint64) {
	for i := range min(len(dst), len(src)) {
		dst[i] = math.Float64frombits(src[i].Load())
	}
}

func store(dst []atomic.Uint64, src []float64) {
	for i, v := range src {
		dst[i].Store(math.Float64bits(v))
	}
}

// Ticks returns the ticks run by the link's loop (0 before it starts).
func (l *Link) Ticks() uint64 {
	if lp := l.loop.Load(); lp != nil {
		return lp.Ticks()
	}
	return 0
}

// SpinBreaks is Loop.SpinBreaks of the link's loop, 0 before it serves.
func (l *Link) SpinBreaks() uint64 {
	if lp := l.loop.Load(); lp != nil {
		return lp.SpinBreaks()
	}
	return 0
}

// Overruns returns the periods the loop skipped.
func (l *Link) Overruns() uint64 {
	if lp := l.loop.Load(); lp != nil {
		return lp.Overruns()
	}
	return 0
}

// Lead returns how long before each deadline the link's loop wakes to
// measure (Loop.Lead).
func (l *Link) Lead() time.Duration {
	if lp := l.loop.Load(); lp != nil {
		return lp.Lead()
	}
	return 0
}

// LeadOverruns returns how many ticks sent late because measuring took
// longer than the lead (Loop.LeadOverruns).
func (l *Link) LeadOverruns() uint64 {
	if lp := l.loop.Load(); lp != nil {
		return lp.LeadOverruns()
	}
	return 0
}

// MissedTriggers returns, on a link paced by camera frames, how many ticks
// ran without a frame (Loop.Missed).
func (l *Link) MissedTriggers() uint64 {
	if lp := l.loop.Load(); lp != nil {
		return lp.Missed()
	}
	return 0
}

// DeviceDown is signalled when the plant failed; the supervisor reopens it
// and calls DeviceUp.
func (l *Link) DeviceDown() <-chan struct{} { return l.down }

// DeviceFailed marks the device down before Serve (it could not be opened):
// the link starts degraded and the supervisor reopens it.
func (l *Link) DeviceFailed(err error) {
	l.fail(err)
}

// DeviceUp tells the loop that the plant works again.
func (l *Link) DeviceUp() { l.deviceUp.Store(true) }

// ErrReleased is the cause of a link that starts degraded because its last
// Serve released the plant (halt = "torque_off"): the supervisor reopens the
// plant, which turns the torque back on, before any command reaches it.
var ErrReleased = errors.New("bridge: the plant was released by the halt policy; reopening it")

// Serve runs the link's loop until ctx is done, then applies the halt policy.
// The supervisor calls it again after a failure (a tick that panicked); a
// plant released by the previous halt is reopened first.
func (l *Link) Serve(ctx context.Context) error {
	loop, err := NewLoop(l.cfg.Loop, l.clock, l.loopObs, l.logger)
	if err != nil {
		return fmt.Errorf("bridge: link %q: %w", l.cfg.Name, err)
	}
	l.loop.Store(loop)
	var cause error
	if l.released {
		l.released, cause = false, ErrReleased
		l.markDown()
	}
	switch {
	case l.deviceUp.Load():
		l.setState(Handshaking, CauseStart, nil)
	case l.state != Degraded || cause != nil:
		// A device that failed before the start said so already.
		l.setState(Degraded, CauseStart, cause)
	}
	err = loop.Serve(ctx, l.Tick)
	l.halted(l.halt())
	l.setState(Stopped, CauseStop, nil)
	return err
}

// ErrHalt: the halt policy could not be applied at stop; see *HaltError.
var ErrHalt = errors.New("bridge: halt not applied")

// ErrUnreached: the device was down at stop, so the halt never reached it.
var ErrUnreached = errors.New("the device was unplugged or not answering")

// HaltError is a halt policy that could not be applied when a link stopped.
type HaltError struct {
	Link   string
	Policy plant.HaltPolicy
	Err    error
}

func (e *HaltError) Error() string {
	return fmt.Sprintf("bridge: link %q: halt %v not applied: %v", e.Link, e.Policy, e.Err)
}

func (e *HaltError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrHalt) hold.
func (e *HaltError) Is(target error) bool { return target == ErrHalt }

// halt applies the halt policy, logs what it did, and returns a
// *HaltError when the policy could not be applied.
func (l *Link) halt() error {
	l.devMu.Lock()
	defer l.devMu.Unlock()
	policy := l.cfg.Halt
	if !l.deviceUp.Load() {
		if st, ok := l.plant.(plant.Stopper); ok && l.applied.Load() > 0 {
			// A robot that keeps moving by itself: try once more to
			// reach it, whatever the policy.
			ctx, cancel := context.WithTimeout(context.Background(), stopMotionTimeout)
			err := st.StopMotion(ctx)
			cancel()
			if err != nil {
				l.logger.Warn("halt could not stop the robot's motion: "+err.Error(), "halt", policy.String())
				return &HaltError{Link: l.cfg.Name, Policy: policy, Err: fmt.Errorf("%w: %w", ErrUnreached, err)}
			}
			l.logger.Info("halt: the device is down; its motion was stopped", "halt", policy.String())
			return nil
		}
		if policy == plant.HaltHold {
			// Nothing to send: the motors keep their last goal by
			// themselves.
			l.logger.Info("halt: hold; the device is down, its motors keep their last goal", "halt", policy.String())
			return nil
		}
		l.logger.Warn("halt could not reach the device: it is unplugged or not answering, so its motors keep their last state (torque on); power them off by hand if needed",
			"halt", policy.String())
		return &HaltError{Link: l.cfg.Name, Policy: policy, Err: ErrUnreached}
	}
	// Whether or not it succeeds, a torque-off halt may release some
	// motors: never use the plant again without reopening it.
	l.released = policy == plant.HaltTorqueOff
	if err := l.plant.Halt(policy); err != nil {
		l.logger.Warn("halt failed: some motors may keep their last state; check them", "halt", policy.String(), "err", err)
		return &HaltError{Link: l.cfg.Name, Policy: policy, Err: err}
	}
	l.logger.Info("halt applied", "halt", policy.String())
	return nil
}

// stopMotionTimeout bounds a StopMotion: long enough for a reconnect and a
// few calls, short enough that a stop does not hang on a dead device.
const stopMotionTimeout = 2 * time.Second

// reopenDevice runs Reopen, never at once with StopMotion or the halt.
func (l *Link) reopenDevice(ctx context.Context, r plant.Reopener) error {
	l.devMu.Lock()
	defer l.devMu.Unlock()
	return r.Reopen(ctx)
}

// stopMotion stops a velocity plant's motion after its link went degraded,
// and keeps what it could not reach for Health.
func (l *Link) stopMotion(ctx context.Context, st plant.Stopper) error {
	l.devMu.Lock()
	defer l.devMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, stopMotionTimeout)
	defer cancel()
	err := st.StopMotion(ctx)
	setErr(&l.stopErr, err)
	return err
}

func setErr(p *atomic.Pointer[error], err error) {
	if err == nil {
		p.Store(nil)
		return
	}
	p.Store(&err)
}

func getErr(p *atomic.Pointer[error]) error {
	if e := p.Load(); e != nil {
		return *e
	}
	return nil
}

// DeviceErr is why the device is down as the supervisor last learned it (a
// failed reopen, a stop only a person may end), nil while it is up.
func (l *Link) DeviceErr() error {
	if l.deviceUp.Load() {
		return nil
	}
	return getErr(&l.downErr)
}

// Latched reports whether the device is down in a stop that only a person
// may end (its last reopen failed with plant.ErrStopLatched).
func (l *Link) Latched() bool {
	return errors.Is(l.DeviceErr(), plant.ErrStopLatched)
}

// StopErr is what the last StopMotion of the degraded link could not reach,
// nil when it stopped the robot (or the plant streams no velocities).
func (l *Link) StopErr() error {
	if l.deviceUp.Load() {
		return nil
	}
	return getErr(&l.stopErr)
}

// halted records the outcome of the last halt.
func (l *Link) halted(err error) {
	if err == nil {
		l.haltErr.Store(nil)
		return
	}
	l.haltErr.Store(&err)
}

// HaltErr is the error of the last stop's halt (a *HaltError), nil when it
// was applied. Safe from any goroutine.
func (l *Link) HaltErr() error {
	if p := l.haltErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Tick runs one tick: measure, apply the previous command, exchange.
func (l *Link) Tick(ti *TickInfo) {
	l.tickApplied = false
	up := l.deviceUp.Load()
	reopened := up && l.state == Degraded && !l.lacking
	// emioapi reads the motors, then writes the previous tick's command
	// (docs/simulink-udp.md §8.3–8.4): q_k is read before u_{k−1} is written.
	measured := false
	if up {
		if l.stepped != nil {
			at := ti.Deadline
			if l.cfg.PlantTime != nil {
				at = l.cfg.PlantTime(at)
			}
			l.stepped.StepTo(at)
		}
		if err := l.plant.Measure(l.meas); err != nil {
			l.fail(err)
			up = false
		} else {
			measured = true
			l.measured.Add(1)
			l.checkLack(ti.Deadline)
		}
	}
	// A device back from a failure is running again only if its
	// measurement is whole: a lack that outlasted the failure keeps it
	// degraded, for the lack.
	if up && reopened && l.state == Degraded && !l.lacking {
		l.setState(l.linkState(), CauseDeviceReopened, nil)
	}
	// While the measurement lacks, nothing is applied: the model computed
	// its command from held values. A position is held; a velocity robot
	// idles.
	if up && l.lacking {
		if l.deadman != nil {
			up = l.idle()
		}
	} else if up && l.cfg.Apply == ApplyPrevious {
		up = l.applyPrevious()
	}
	if l.ex.Synced() && !l.complete() {
		l.latched(measured)
		if up && !l.lacking {
			l.lackAtOnce()
		}
		// Nothing to tell Simulink yet: no measurement was ever read (the
		// device has not opened), or the plant's is incomplete (no camera
		// frame yet). The handshake (seq −1, zero payload, which the
		// models ignore) may go on, as emioapi's does before its first
		// frame; a controller never integrates a made-up measurement.
		if up && l.deadman != nil && l.cfg.Apply == ApplyImmediate {
			l.idle()
		}
		return
	}
	// While degraded the last measurement is sent again: Simulink keeps its
	// step and the handshake state survives a device restart. It is counted
	// as stale, since nothing in the datagram can say so.
	stale := (!up || l.lacking) && l.ex.Synced()
	if stale {
		l.stale.Add(1)
		l.cmdObs.StaleMeasurement()
		if !up && l.ager != nil {
			// The plant's own freshness fields keep moving (an age that
			// grows, flags that say disconnected).
			l.ager.Age(l.meas)
			store(l.measShadow, l.meas)
		}
	}
	// The datagram leaves at the tick's deadline (docs/architecture.md
	// "One tick"): wait for it, then take what a goroutine keeps newest.
	ti.Gate()
	l.latched(measured)
	window := ti.Next - l.margin
	if ti.NextWake != 0 {
		// The next tick wakes a lead before its deadline.
		window = min(window, ti.NextWake)
	}
	s := l.ex.Exchange(l.meas, l.rx, window)
	accepted := s.Success() && l.accept()
	if up && l.cfg.Apply == ApplyImmediate && !l.lacking {
		switch {
		case accepted:
			up = l.apply()
		case l.deadman != nil:
			up = l.idle()
		}
	}
	if up && !l.lacking {
		next := l.linkState()
		if next == Running && !l.complete() {
			l.lackAtOnce()
		} else if next != l.state {
			cause := CauseHandshake
			if next == Handshaking {
				cause = CausePartnerLost
			}
			l.setState(next, cause, nil)
		}
	}
	if l.cfg.Recorder != nil {
		l.record(ti, s, stale)
	}
}

// record hands the tick to the recorder, in the link's own record.
func (l *Link) record(ti *TickInfo, s simulink.Status, stale bool) {
	r := &l.rec
	*r = TickRecord{
		N: ti.N, Deadline: ti.Deadline, Skipped: ti.Skipped, Status: s, State: l.state,
		Seq: -1, ReplyLatency: -1, CommandApplied: l.tickApplied, Stale: stale,
		Measurement: l.meas, Command: l.rx, Applied: l.cmd, Given: l.given,
	}
	if l.exRep != nil {
		e := l.exRep.LastExchange()
		r.Seq, r.Sent, r.ReplyLatency, r.Late = e.Seq, e.Sent, e.Latency, e.Late
	}
	l.cfg.Recorder.RecordTick(r)
}

// latched completes a measurement just read: the values a Latcher keeps
// newest, then the copy the status view reads.
func (l *Link) latched(measured bool) {
	if !measured {
		return
	}
	if l.latch != nil {
		l.latch.Latch(l.meas)
	}
	store(l.measShadow, l.meas)
}

// checkLack reads what the plant's measurement lacks and moves the link to
// degraded once it has lacked for the hold, and back once it is complete.
func (l *Link) checkLack(now int64) {
	err := l.lackNow()
	if err == nil {
		l.lackSince = 0
		if l.lacking {
			l.lacking = false
			l.lackErr.Store(nil)
			l.setState(l.linkState(), CauseComplete, nil)
		}
		return
	}
	if l.lackSince == 0 {
		l.lackSince = now
	}
	switch {
	case l.lacking:
		if p := l.lackErr.Load(); p == nil || !sameErr(*p, err) {
			// What is missing changed (the library found, the camera
			// not yet streaming): say the newest.
			setErr(&l.lackErr, err)
		}
	case now-l.lackSince >= l.hold:
		l.lacking = true
		setErr(&l.lackErr, err)
		l.setState(Degraded, CauseIncomplete, err)
	}
}

// lackAtOnce makes a synced link with nothing whole to send degraded at
// once: it is not running, and there is no hold to wait for, since nothing
// flowed yet.
func (l *Link) lackAtOnce() {
	l.lacking = true
	err := cmp.Or(l.lackNow(), ErrIncomplete)
	setErr(&l.lackErr, err)
	l.setState(Degraded, CauseIncomplete, err)
}

// lackNow is what the plant's measurement lacks now, nil when whole.
func (l *Link) lackNow() error {
	if l.lacker != nil {
		if err := l.lacker.Lack(); err != nil {
			return err
		}
	}
	if l.ready != nil && !l.ready.Ready() {
		return ErrIncomplete
	}
	return nil
}

// sameErr reports whether a and b are the same error value; an error whose
// type cannot be compared (a struct holding a slice) never is.
func sameErr(a, b error) bool {
	if t := reflect.TypeOf(a); t != reflect.TypeOf(b) || !t.Comparable() {
		return false
	}
	return a == b
}

// Lack is what the plant's measurement lacks while the link is degraded for
// it (the camera's first frame, frames that stopped), nil otherwise. Safe
// from any goroutine.
func (l *Link) Lack() error { return getErr(&l.lackErr) }

// complete reports whether the link has a real measurement to send.
func (l *Link) complete() bool {
	return l.measured.Load() > 0 && (l.ready == nil || l.ready.Ready())
}

func (l *Link) linkState() State {
	if l.ex.Synced() {
		return Running
	}
	return Handshaking
}

// accept checks a received command and makes it the last good one. A command
// holding NaN or ±Inf is refused whole (the last good one is held); values
// out of limits are clamped.
func (l *Link) accept() bool {
	for _, v := range l.rx {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			l.cmdObs.RejectedNonFinite()
			return false
		}
	}
	for i, v := range l.rx {
		lim := l.cfg.Limits[i]
		if v < lim.Min {
			v = lim.Min
			l.cmdObs.Clamped()
		} else if v > lim.Max {
			v = lim.Max
			l.cmdObs.Clamped()
		}
		l.cmd[i] = v
		l.cmdShadow[i].Store(math.Float64bits(v))
	}
	l.haveCmd, l.fresh = true, true
	return true
}

// applyPrevious applies the previous tick's command. A Deadman plant gets
// it only if it is fresh, and Idle otherwise; any other plant gets the last
// good command every tick.
func (l *Link) applyPrevious() bool {
	switch {
	case l.deadman == nil && l.haveCmd, l.deadman != nil && l.fresh:
		return l.apply()
	case l.deadman != nil:
		return l.idle()
	}
	return true
}

func (l *Link) apply() bool {
	l.fresh = false
	if err := l.plant.Command(l.cmd); err != nil {
		l.fail(err)
		return false
	}
	copy(l.given, l.cmd)
	l.applied.Add(1)
	l.tickApplied = true
	return true
}

func (l *Link) idle() bool {
	if err := l.deadman.Idle(); err != nil {
		l.fail(err)
		return false
	}
	return true
}

// fail marks the device down and asks the supervisor to reopen it.
func (l *Link) fail(err error) {
	l.fresh = false // a command from before the failure is not applied after it
	// The device's failure says more than a lack; the lack's start is
	// kept, so that a device that keeps failing does not hide a camera
	// that never streamed.
	l.lacking = false
	l.lackErr.Store(nil)
	l.markDown()
	l.setState(Degraded, CauseDeviceError, err)
}

func (l *Link) markDown() {
	l.deviceUp.Store(false)
	select {
	case l.down <- struct{}{}:
	default:
	}
}

func (l *Link) setState(to State, cause string, err error) {
	from := l.state
	l.state = to
	at := l.clock.Now()
	l.pubState.Store(packState(to, at))
	select {
	case l.events <- Event{Link: l.cfg.Name, From: from, To: to, Cause: cause, Err: err, At: at}:
	default:
		l.lost.Add(1)
	}
}
