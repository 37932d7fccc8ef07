package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/realtime"
)

// Loop errors.
var (
	// ErrTickPanic wraps a panic recovered from a tick function.
	ErrTickPanic = errors.New("bridge: tick panicked")
	// ErrLoopServing reports a second Serve on a loop that is serving.
	ErrLoopServing = errors.New("bridge: loop already serving")
)

// LoopConfig is the timing of a clock-master loop (docs/realtime.md §2, §5).
type LoopConfig struct {
	Period   time.Duration // > 0
	Priority int           // SCHED_FIFO priority of the loop thread, 1..99; 0 = SCHED_OTHER
	CPU      int           // pin the loop thread to this CPU; -1 = no pinning
	// Spin selects sleep-then-spin: sleep to this long before the send
	// instant and spin to it; 0 = off; must be < Period. It costs
	// Spin/Period of a core. AutoSpin learns it instead: the p99.9 of the
	// sleeps' wake-up lateness (docs/realtime.md §15), at least Spin.
	Spin     time.Duration
	AutoSpin bool
	// Lead is how long before the deadline the loop wakes to measure, so
	// that the datagram leaves at the deadline (TickInfo.Gate): the
	// controlled instant of a tick is its send, not its wake-up. AutoLead
	// learns it from the ticks (a running p99.9 of the time from the
	// planned wake-up to the gate, plus a guard); Lead is then its floor.
	// Lead 0 without AutoLead is the old shape: wake at the deadline and
	// send as soon as measured.
	Lead       time.Duration
	AutoLead   bool
	LockMemory bool // mlockall(MCL_CURRENT|MCL_FUTURE), process-wide
	// DMALatency holds /dev/cpu_dma_latency at 0 while the loop serves, as
	// cyclictest does, keeping the CPUs out of deep C-states. It is what
	// separated the loop from cyclictest: on a 2-vCPU VM at 1 kHz, FIFO 80,
	// it took p50 lateness from ≈ 50 to ≈ 20 µs (the idle vCPU polls
	// instead of halting).
	DMALatency bool
	// Budget, when > 0, runs a real-time (Priority > 0), unpinned (CPU -1)
	// loop's thread under SCHED_DEADLINE with this much CPU time every
	// period, falling back to SCHED_FIFO Priority when the kernel refuses:
	// a loop that waits in the Go runtime for an ordinary thread it
	// preempted then gives way at once instead of spinning until real-time
	// throttling (realtime.ThreadConfig.Budget, docs/realtime.md §18).
	// The budget must cover a tick's work and any spin.
	Budget time.Duration
	// Trigger, when set, paces the loop on external events instead of the
	// grid: clock = "camera" ticks on each camera frame, as emioapi's motor
	// process waits for the camera's frame event. Unlike emioapi, a camera
	// that stops does not stop the link: when no event comes within 1.5
	// periods the tick runs anyway (counted in Missed), and the loop goes on
	// at Period until events return.
	Trigger Trigger
	// Pacer, when set, places the deadlines instead of the fixed grid:
	// clock = "camera" ticks on a grid locked to the camera's frames
	// (framelock.Lock), on the loop's own timer.
	Pacer Pacer
	// Guard, when set, watches a SCHED_FIFO loop thread and demotes it to
	// SCHED_OTHER when it runs outside the loop's own code for longer than
	// GuardAfter: a loop spinning in the Go runtime for an ordinary thread
	// it preempted (docs/realtime.md §19). The loop restores its policy at
	// its next step. nil: no guard.
	Guard *realtime.SpinGuard
	// GuardAfter is how long a loop may run outside its own code before the
	// guard demotes it; 0 is realtime.GuardThreshold(Period).
	GuardAfter time.Duration
}

// Pacer places a loop's deadlines.
type Pacer interface {
	// Next returns the deadline (CLOCK_MONOTONIC ns) of the tick after the
	// one at prev; now is the current time. It must return a deadline after
	// prev and must not allocate or block.
	Next(prev, now int64) int64
}

// Trigger is an event source that a loop can tick on, such as a
// *realtime.Event signalled by the camera goroutine for every frame.
type Trigger interface {
	// WaitUntil blocks until the trigger fires or CLOCK_MONOTONIC reaches
	// deadline (ns). It returns how many events fired since the last call
	// (0 on timeout) and when the newest one happened. It must not allocate.
	WaitUntil(deadline int64) (n uint64, at int64, err error)
}

// Validate reports the first invalid field. Errors wrap ErrConfig and name
// the field, the value and the allowed range.
func (c LoopConfig) Validate() error {
	switch {
	case c.Period <= 0:
		return fmt.Errorf("bridge: loop period %v: %w (want > 0)", c.Period, ErrConfig)
	case c.Priority < 0 || c.Priority > realtime.MaxPriority:
		return fmt.Errorf("bridge: loop priority %d: %w (want 0 for SCHED_OTHER or 1..%d for SCHED_FIFO)",
			c.Priority, ErrConfig, realtime.MaxPriority)
	case c.Spin < 0 || c.Spin >= c.Period:
		return fmt.Errorf("bridge: loop spin %v: %w (want 0 (off) up to less than the period %v)",
			c.Spin, ErrConfig, c.Period)
	case (c.Spin > 0 || c.AutoSpin) && c.Trigger != nil:
		return fmt.Errorf("bridge: loop spin %v: %w (a loop woken by each camera frame cannot spin to a deadline; want 0)",
			c.Spin, ErrConfig)
	case c.Lead < 0 || c.Lead > c.Period/2:
		return fmt.Errorf("bridge: loop lead %v: %w (want 0 up to half the period, %v)", c.Lead, ErrConfig, c.Period/2)
	case (c.Lead > 0 || c.AutoLead) && c.Trigger != nil:
		return fmt.Errorf("bridge: loop lead %v: %w (a loop woken by each camera frame has no deadline to send on; want 0)",
			c.Lead, ErrConfig)
	case c.Budget < 0 || c.Budget > c.Period || (c.Budget > 0 && c.Budget < time.Microsecond):
		return fmt.Errorf("bridge: loop budget %v: %w (want 0 (SCHED_FIFO), or 1µs up to the period %v)", c.Budget, ErrConfig, c.Period)
	case c.Budget > 0 && c.CPU >= 0:
		return fmt.Errorf("bridge: loop budget %v: %w (a SCHED_DEADLINE thread cannot be pinned, and this loop is pinned to CPU %d: want budget 0 or cpu -1)",
			c.Budget, ErrConfig, c.CPU)
	case c.Budget > 0 && c.Priority == 0:
		return fmt.Errorf("bridge: loop budget %v: %w (a budget needs a real-time priority to fall back on: want budget 0 or priority 1..%d)",
			c.Budget, ErrConfig, realtime.MaxPriority)
	case c.Trigger != nil && c.Pacer != nil:
		return fmt.Errorf("bridge: loop: %w (a trigger and a pacer: want one of them)", ErrConfig)
	case c.GuardAfter != 0 && (c.GuardAfter < 100*time.Microsecond || c.GuardAfter > time.Second):
		return fmt.Errorf("bridge: loop guard threshold %v: %w (want 0 for the default or 100µs..1s)", c.GuardAfter, ErrConfig)
	}
	if err := c.threadConfig().Validate(); err != nil {
		// Only the CPU is left to be wrong; say so in the loop's terms.
		return fmt.Errorf("bridge: loop cpu %d: %w (want -1 for no pinning or a CPU index): %w", c.CPU, ErrConfig, err)
	}
	return nil
}

func (c LoopConfig) threadConfig() realtime.ThreadConfig {
	return realtime.ThreadConfig{
		Priority:   c.Priority,
		CPU:        c.CPU,
		TimerSlack: time.Nanosecond, // halves p50 under SCHED_OTHER (docs/realtime.md §2)
		LockMemory: c.LockMemory,
		DMALatency: c.DMALatency,
		Budget:     c.Budget,
		// A frame-triggered loop has no grid of its own; its period is
		// still the frames' nominal one.
		BudgetPeriod: c.Period,
	}
}

// TickInfo describes the tick being run. It is owned by the loop and reused:
// a tick must not keep the pointer.
type TickInfo struct {
	N        uint64 // index of this tick, from 0
	Deadline int64  // this tick's deadline, CLOCK_MONOTONIC ns: its send instant
	Next     int64  // the next tick's deadline, ns
	// NextWake is when the loop will wake for the next tick (Next less
	// the lead): a receive window must close before it.
	NextWake int64
	Wake     int64 // when the loop woke, ns
	Skipped  int   // whole periods skipped just before this tick (overrun)
	// Missed is true, on a loop paced by a Trigger, when this tick runs
	// because no event came in time.
	Missed bool

	loop    *Loop
	planned int64 // the planned wake-up: Deadline less the lead
	arrived int64 // when the tick reached Gate
	sent    int64 // when Gate returned; 0: the tick did not gate
}

// Gate waits for the tick's send instant, its Deadline, and returns the
// time: the link calls it after measuring, right before the datagram
// leaves. The loop learns from it how long measuring takes, and so how early
// to wake. A TickInfo that no loop runs (a test's) returns at once.
func (ti *TickInfo) Gate() int64 {
	if ti.loop == nil {
		return ti.Wake
	}
	return ti.loop.gate(ti)
}

// LeadObserver is a LoopObserver that also records the send gate: the lead
// in use, the measurement's age at the send (from the wake-up to the send),
// and whether measuring overran the lead (the send was late). Optional; its
// method runs on the loop thread and must not allocate.
type LeadObserver interface {
	ObserveLead(leadNs, ageNs int64, overran bool)
}

// ThreadObserver, implemented by a LoopObserver, learns the real-time
// settings the loop thread got: after its set-up, and again when it
// releases them at the end of Serve.
type ThreadObserver interface {
	ThreadSettings(realtime.Settings)
}

// LoopObserver records timing from the loop thread. Its methods run inside
// the tick's time budget and must not allocate or block.
type LoopObserver interface {
	ObserveTick(latenessNs, workNs int64)
	ObserveOverrun(periods int)
}

// Loop is the clock master: it runs a tick function on a fixed grid of
// absolute CLOCK_MONOTONIC deadlines from one locked, optionally real-time OS
// thread. On an overrun it skips whole periods and counts them, never bursts.
type Loop struct {
	cfg     LoopConfig
	period  int64
	spin    int64 // in use: cfg.Spin, or learned with AutoSpin
	lead    int64 // in use: cfg.Lead, or learned with AutoLead
	timer   loopTimer
	obs     LoopObserver
	leadObs LeadObserver // nil: obs records no lead
	log     *slog.Logger

	// Loop thread only: the samples the lead and the spin are learned from.
	pre, slept quantileWindow

	leadNow, spinNow atomic.Int64 // published copies of lead and spin
	leadOverruns     atomic.Uint64

	gateErr error // a failed sleep in Gate, returned after the tick

	watch *realtime.Watched // loop thread only; nil without a guard
	// For SpinBreaks: the breaks of the Serves before, and the current
	// watch.
	breaksMu   sync.Mutex
	breaksDone uint64
	watchPub   *realtime.Watched

	ticks    atomic.Uint64
	overruns atomic.Uint64
	missed   atomic.Uint64
	serving  atomic.Bool
	stop     atomic.Bool
	warnings atomic.Pointer[[]error]
}

// loopTimer is the loop's view of time; tests substitute a simulated one to
// make overruns exact.
type loopTimer interface {
	now() int64
	sleepUntil(deadline int64) error
	spinUntil(deadline int64)
}

type clockTimer struct{ c *realtime.Clock }

func (t clockTimer) now() int64 { return t.c.Now() }

func (t clockTimer) sleepUntil(d int64) error { return t.c.SleepUntil(d) }

func (t clockTimer) spinUntil(d int64) { realtime.SpinUntil(t.c, d) }

type nopLoopObserver struct{}

func (nopLoopObserver) ObserveTick(int64, int64) {}
func (nopLoopObserver) ObserveOverrun(int)       {}

// NewLoop validates cfg (errors wrap ErrConfig) and returns a loop on clock.
// obs may be nil; logger may be nil (no logs).
func NewLoop(cfg LoopConfig, clock *realtime.Clock, obs LoopObserver, logger *slog.Logger) (*Loop, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if clock == nil {
		return nil, fmt.Errorf("bridge: loop clock <nil>: %w (want a *realtime.Clock)", ErrConfig)
	}
	return newLoop(cfg, clockTimer{clock}, obs, logger), nil
}

func newLoop(cfg LoopConfig, timer loopTimer, obs LoopObserver, logger *slog.Logger) *Loop {
	if obs == nil {
		obs = nopLoopObserver{}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Loop{
		cfg:    cfg,
		period: int64(cfg.Period),
		spin:   int64(cfg.Spin),
		lead:   int64(cfg.Lead),
		timer:  timer,
		obs:    obs,
		log:    logger,
		pre:    newQuantileWindow(learnWindow),
		slept:  newQuantileWindow(learnWindow),
	}
	l.leadObs, _ = obs.(LeadObserver)
	if cfg.AutoLead {
		// Until the first ticks are measured: a quarter of the period, at
		// most 5 ms, which the Emio's first servo reads fit in (a tenth,
		// at most 2 ms, sent single ticks of its first second 0.3–0.8 ms
		// late).
		l.lead = max(l.lead, min(l.period/4, int64(initialLeadMax)))
	}
	l.leadNow.Store(l.lead)
	l.spinNow.Store(l.spin)
	return l
}

// How the lead and the spin are learned (docs/realtime.md §15).
const (
	learnWindow   = 1024  // samples per window; the estimate spans 1024 to 2048
	learnQuantile = 0.999 // one tick in a thousand may overrun the lead
	learnMin      = 16    // samples before the estimate replaces the initial lead
	// initialLeadMax bounds the lead before learnMin samples.
	initialLeadMax = 5 * time.Millisecond
	// leadGuard covers the gate's own cost and the histogram's resolution
	// below it.
	leadGuard = int64(20 * time.Microsecond)
)

// Lead returns the lead in use: how long before each deadline the loop
// wakes to measure.
func (l *Loop) Lead() time.Duration { return time.Duration(l.leadNow.Load()) }

// Spin returns the spin in use before each send.
func (l *Loop) Spin() time.Duration { return time.Duration(l.spinNow.Load()) }

// LeadOverruns returns how many ticks measured for longer than the lead, so
// that their datagram left late.
func (l *Loop) LeadOverruns() uint64 { return l.leadOverruns.Load() }

// Period returns the configured period.
func (l *Loop) Period() time.Duration { return l.cfg.Period }

// Ticks returns the number of ticks run so far; the watchdog checks that it
// advances.
func (l *Loop) Ticks() uint64 { return l.ticks.Load() }

// Overruns returns the number of whole periods skipped so far (on a
// triggered loop: events that came while a tick ran and were merged).
func (l *Loop) Overruns() uint64 { return l.overruns.Load() }

// SpinBreaks returns how many times the spin guard demoted the loop's
// thread (LoopConfig.Guard), over every Serve.
func (l *Loop) SpinBreaks() uint64 {
	l.breaksMu.Lock()
	defer l.breaksMu.Unlock()
	return l.breaksDone + l.watchPub.Breaks()
}

// Missed returns, on a loop paced by a Trigger, how many ticks ran because no
// event came in time.
func (l *Loop) Missed() uint64 { return l.missed.Load() }

// SetupWarnings returns the thread set-up steps that the current or last
// Serve could not apply (each a *realtime.SetupError), or nil. They are set
// before the first tick.
func (l *Loop) SetupWarnings() []error {
	if w := l.warnings.Load(); w != nil {
		return *w
	}
	return nil
}

// TickPanicError is a panic recovered from a tick. It matches ErrTickPanic
// and, if the panic value is an error, that error too.
type TickPanicError struct {
	Tick  uint64 // TickInfo.N of the tick that panicked
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack
}

func (e *TickPanicError) Error() string {
	return fmt.Sprintf("bridge: tick %d panicked: %v", e.Tick, e.Value)
}

// Unwrap returns ErrTickPanic and the panic value if it is an error.
func (e *TickPanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrTickPanic, err}
	}
	return []error{ErrTickPanic}
}

// Serve runs tick on the loop thread until ctx is done, then returns nil. It
// returns an error if a tick panics (wrapping ErrTickPanic), if sleeping
// fails, or if the loop is already serving (ErrLoopServing).
//
// The loop thread is a goroutine locked to its OS thread for good: its
// scheduling is changed (docs/realtime.md §2), so the runtime discards the
// thread when Serve returns. Set-up steps that are not permitted are logged
// once as warnings and the loop runs with what it got. The stop request is
// seen after the tick in progress, so Serve returns within about one period
// of cancellation.
func (l *Loop) Serve(ctx context.Context, tick func(*TickInfo)) error {
	if tick == nil {
		return fmt.Errorf("bridge: loop tick function <nil>: %w", ErrConfig)
	}
	if !l.serving.CompareAndSwap(false, true) {
		return ErrLoopServing
	}
	defer l.serving.Store(false)
	l.stop.Store(false)

	return realtime.RunLocked(ctx, &l.stop, func() error { return l.run(tick) })
}

// loopState is the loop's private per-Serve state.
type loopState struct {
	next    int64
	n       uint64
	skipped int
	info    TickInfo
}

// run is the loop thread's body.
func (l *Loop) run(tick func(*TickInfo)) (err error) {
	th, warns := realtime.SetupThread(l.cfg.threadConfig())
	l.warnings.Store(&warns)
	for _, w := range warns {
		l.log.Warn("bridge: loop thread set-up incomplete, running without it", "err", w)
	}
	tobs, _ := l.obs.(ThreadObserver)
	if tobs != nil {
		tobs.ThreadSettings(th.Settings())
	}
	after := l.cfg.GuardAfter
	if after == 0 {
		after = realtime.GuardThreshold(l.cfg.Period)
	}
	if w, gerr := l.cfg.Guard.Watch(th, after); gerr != nil {
		l.log.Warn("bridge: loop runs without its spin guard", "err", gerr)
	} else if w != nil {
		l.watch = w
		l.breaksMu.Lock()
		l.watchPub = w
		l.breaksMu.Unlock()
		defer func() {
			w.Release()
			l.watch = nil
			l.breaksMu.Lock()
			l.breaksDone += w.Breaks()
			l.watchPub = nil
			l.breaksMu.Unlock()
		}()
	}
	defer func() {
		if cerr := th.Close(); cerr != nil {
			l.log.Warn("bridge: loop thread release", "err", cerr)
		}
		if tobs != nil {
			tobs.ThreadSettings(th.Settings())
		}
	}()

	start := l.timer.now()
	st := loopState{next: start + l.period}
	switch {
	case l.cfg.Trigger != nil:
		st.next += l.period / 2
	case l.cfg.Pacer != nil:
		st.next = l.cfg.Pacer.Next(start, start)
	}
	defer func() {
		if r := recover(); r != nil {
			err = &TickPanicError{Tick: st.n, Value: r, Stack: debug.Stack()}
		}
	}()
	for !l.stop.Load() {
		if serr := l.step(&st, tick); serr != nil {
			return serr
		}
	}
	return nil
}

// following returns the deadline after prev: on the grid, or the pacer's.
func (l *Loop) following(prev, now int64) int64 {
	if l.cfg.Pacer != nil {
		return l.cfg.Pacer.Next(prev, now)
	}
	return prev + l.period
}

// step runs one iteration: sleep to the wake-up (the deadline less the
// lead), tick (which measures, waits in Gate for the deadline and sends),
// observe, learn, advance. It must not allocate.
func (l *Loop) step(st *loopState, tick func(*TickInfo)) error {
	if l.cfg.Trigger != nil {
		return l.stepTriggered(st, tick)
	}
	planned := st.next - l.lead
	l.watch.Mark(planned) // back in our code at the wake-up
	l.watch.Check()
	if l.lead == 0 && l.spin > 0 {
		// No lead: the old shape, spinning to the deadline before the tick.
		at := planned - l.spin
		if err := l.timer.sleepUntil(at); err != nil {
			return err
		}
		l.slept.add(l.timer.now() - at)
		l.timer.spinUntil(planned)
	} else if err := l.timer.sleepUntil(planned); err != nil {
		return err
	}
	wake := l.timer.now()
	l.watch.Mark(wake)
	l.watch.Check()
	if l.lead > 0 {
		l.slept.add(wake - planned)
	}
	after := l.following(st.next, wake)
	st.info = TickInfo{N: st.n, Deadline: st.next, Next: after, NextWake: after - l.lead, Wake: wake, Skipped: st.skipped,
		loop: l, planned: planned}
	tick(&st.info)
	end := l.timer.now()
	lateness := wake - planned
	if st.info.sent != 0 {
		lateness = st.info.sent - st.next
		l.learn(&st.info)
	}
	l.obs.ObserveTick(lateness, end-wake)
	st.n++
	l.ticks.Add(1)
	if err := l.gateErr; err != nil {
		l.gateErr = nil
		return err
	}

	st.next = after
	st.skipped = 0
	if st.next <= end {
		// Skip whole periods to the first deadline still ahead: a late loop
		// keeps its phase and never runs a burst of catch-up ticks.
		k := int64(0)
		if l.cfg.Pacer == nil {
			k = (end-st.next)/l.period + 1
			st.next += k * l.period
		} else {
			for ; st.next <= end && k < maxPacerSkips; k++ {
				st.next = l.cfg.Pacer.Next(st.next, end)
			}
			if st.next <= end {
				st.next = l.cfg.Pacer.Next(end, end)
			}
		}
		st.skipped = int(k)
		l.overruns.Add(uint64(k))
		l.obs.ObserveOverrun(int(k))
	}
	return nil
}

// maxPacerSkips bounds the walk over a pacer's deadlines after a long stall.
const maxPacerSkips = 1 << 12

// gate waits for ti's deadline: sleep, and with a spin, sleep to the spin's
// start and spin the rest. Loop thread only.
func (l *Loop) gate(ti *TickInfo) int64 {
	now := l.timer.now()
	if ti.sent != 0 {
		return ti.sent // a second Gate in one tick: already there
	}
	ti.arrived = now
	if now < ti.Deadline {
		l.watch.Mark(ti.Deadline)
		at := ti.Deadline - l.spin
		if at > now {
			if err := l.timer.sleepUntil(at); err != nil {
				l.gateErr = err // reported after the tick; the send goes now
			}
			l.slept.add(l.timer.now() - at)
		}
		if l.spin > 0 {
			l.timer.spinUntil(ti.Deadline)
		}
		now = l.timer.now()
		l.watch.Mark(now)
		l.watch.Check()
	}
	ti.sent = now
	return now
}

// learn updates the lead and the spin from a tick that gated.
func (l *Loop) learn(ti *TickInfo) {
	overran := ti.arrived > ti.Deadline
	if overran {
		l.leadOverruns.Add(1)
	}
	if l.cfg.AutoLead {
		// From the planned wake-up, so that the lead covers the wake-up's
		// own lateness as well as the measuring.
		sample := ti.arrived - ti.planned
		l.pre.add(sample)
		if l.pre.count() >= learnMin {
			q := l.pre.quantile(learnQuantile)
			l.lead = min(max(q+leadGuard, int64(l.cfg.Lead)), l.period/2)
		} else {
			// Too few samples for a quantile: the lead only grows, to
			// cover the slowest tick so far, so that one slow first tick
			// does not make the next ones late too.
			l.lead = min(max(l.lead, sample+leadGuard), l.period/2)
		}
		l.leadNow.Store(l.lead)
	}
	if l.cfg.AutoSpin && l.slept.count() >= learnMin {
		q := l.slept.quantile(learnQuantile)
		l.spin = min(max(q+leadGuard, int64(l.cfg.Spin)), l.period/4)
		l.spinNow.Store(l.spin)
	}
	if l.leadObs != nil {
		l.leadObs.ObserveLead(l.lead, ti.sent-ti.Wake, overran)
	}
}

// stepTriggered runs one iteration of a loop paced by its Trigger: wait for
// the event (or the fallback deadline), tick, observe. Lateness is the time
// from the event to the wake-up. It must not allocate.
func (l *Loop) stepTriggered(st *loopState, tick func(*TickInfo)) error {
	// An event may come before st.next; the guard looks only after it, so
	// that it need not look while the loop waits for a frame.
	l.watch.Mark(st.next)
	l.watch.Check()
	n, at, err := l.cfg.Trigger.WaitUntil(st.next)
	if err != nil {
		return err
	}
	wake := l.timer.now()
	l.watch.Mark(wake)
	l.watch.Check()
	deadline, missed, skipped := st.next, n == 0, 0
	if !missed {
		deadline = min(at, wake)
		if n > 1 {
			// Events merged while the last tick ran: like skipped periods,
			// they are counted, never replayed as a burst.
			skipped = int(n - 1)
			l.overruns.Add(n - 1)
			l.obs.ObserveOverrun(skipped)
		}
	} else {
		l.missed.Add(1)
	}
	st.info = TickInfo{N: st.n, Deadline: deadline, Next: deadline + l.period, NextWake: deadline + l.period,
		Wake: wake, Skipped: skipped, Missed: missed}
	tick(&st.info)
	end := l.timer.now()
	l.obs.ObserveTick(wake-deadline, end-wake)
	st.n++
	l.ticks.Add(1)
	// The next event is due a period after this one; half a period more
	// tolerates camera jitter. Without events, tick at the period.
	if missed {
		st.next = max(deadline+l.period, end)
	} else {
		st.next = deadline + l.period + l.period/2
	}
	return nil
}
