package loopbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/realtime"
)

// ErrSchedulerServing reports a second Serve on a scheduler that is serving,
// or an Add while it serves.
var ErrSchedulerServing = errors.New("loopbench: scheduler already serving")

// Ticker is what the scheduler ticks: *bridge.Link satisfies it.
type Ticker interface {
	Tick(*bridge.TickInfo)
}

// SchedulerConfig is the set-up of the scheduler's one thread, as in
// bridge.LoopConfig.
type SchedulerConfig struct {
	Priority   int // SCHED_FIFO 1..99; 0 = SCHED_OTHER
	CPU        int // -1 = no pinning
	LockMemory bool
	DMALatency bool
	// Logger receives the thread's set-up warnings; nil = none (they are in
	// SetupWarnings either way).
	Logger *slog.Logger
}

func (c SchedulerConfig) threadConfig() realtime.ThreadConfig {
	return realtime.ThreadConfig{
		Priority:   c.Priority,
		CPU:        c.CPU,
		TimerSlack: time.Nanosecond, // as bridge.Loop: halves p50 under SCHED_OTHER
		LockMemory: c.LockMemory,
		DMALatency: c.DMALatency,
	}
}

// Scheduler runs the ticks of several links from one locked OS thread,
// earliest deadline first: the alternative to a bridge.Loop (one thread) per
// link that `bridge bench links -model scheduler` measures. Each link keeps
// its own grid of absolute deadlines (its period, from a phase); the
// scheduler sleeps to the earliest one with clock_nanosleep, ticks that link,
// and on an overrun skips whole periods of that link and counts them, as
// bridge.Loop does. There is no lead: a tick runs at its deadline, and its
// TickInfo.Gate returns at once, so the datagram leaves as soon as the link
// has measured.
type Scheduler struct {
	cfg   SchedulerConfig
	timer schedTimer
	log   *slog.Logger
	tasks []*task
	heap  []*task // min-heap on (next, index)

	serving  atomic.Bool
	stop     atomic.Bool
	warnings atomic.Pointer[[]error]
}

// task is one link's state. Scheduler thread only, but for the counters.
type task struct {
	name    string
	index   int
	period  int64
	phase   int64
	t       Ticker
	obs     bridge.LoopObserver
	next    int64
	n       uint64
	skipped int
	info    bridge.TickInfo

	ticks, overruns atomic.Uint64
}

// schedTimer is the scheduler's view of time; tests substitute a simulated
// one so that the order of ticks and the overruns are exact.
type schedTimer interface {
	now() int64
	sleepUntil(deadline int64) error
}

type clockTimer struct{ c *realtime.Clock }

func (t clockTimer) now() int64 { return t.c.Now() }

func (t clockTimer) sleepUntil(d int64) error { return t.c.SleepUntil(d) }

type nopObserver struct{}

func (nopObserver) ObserveTick(int64, int64) {}
func (nopObserver) ObserveOverrun(int)       {}

// NewScheduler returns an empty scheduler on clock; add links before Serve.
func NewScheduler(cfg SchedulerConfig, clock *realtime.Clock) (*Scheduler, error) {
	if err := cfg.threadConfig().Validate(); err != nil {
		return nil, fmt.Errorf("loopbench: scheduler thread: %w: %w", ErrConfig, err)
	}
	if clock == nil {
		return nil, fmt.Errorf("loopbench: scheduler clock <nil>: %w (want a *realtime.Clock)", ErrConfig)
	}
	return newScheduler(cfg, clockTimer{clock}), nil
}

func newScheduler(cfg SchedulerConfig, timer schedTimer) *Scheduler {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{cfg: cfg, timer: timer, log: log}
}

// Add adds a ticker with its period; its first deadline is one period plus
// phase after Serve starts. obs, which may be nil, is called on the
// scheduler thread as a loop's observer is: lateness = wake − deadline.
func (s *Scheduler) Add(name string, period, phase time.Duration, t Ticker, obs bridge.LoopObserver) error {
	if s.serving.Load() {
		return ErrSchedulerServing
	}
	switch {
	case t == nil:
		return fmt.Errorf("loopbench: scheduler: %q has no ticker: %w", name, ErrConfig)
	case period <= 0:
		return fmt.Errorf("loopbench: scheduler: %q period %v: %w (want > 0)", name, period, ErrConfig)
	case phase < 0 || phase >= period:
		return fmt.Errorf("loopbench: scheduler: %q phase %v: %w (want 0 up to less than the period %v)", name, phase, ErrConfig, period)
	}
	if obs == nil {
		obs = nopObserver{}
	}
	s.tasks = append(s.tasks, &task{name: name, index: len(s.tasks), period: int64(period), phase: int64(phase), t: t, obs: obs})
	return nil
}

// AddLink adds a link on its configured period. A link paced by its plant's
// events or by a pacer has no fixed grid for the scheduler to run.
func (s *Scheduler) AddLink(l *bridge.Link, phase time.Duration, obs bridge.LoopObserver) error {
	lc := l.Config().Loop
	if lc.Trigger != nil || lc.Pacer != nil {
		return fmt.Errorf("loopbench: scheduler: link %q is paced by its plant: %w (want clock = \"timer\")", l.Name(), ErrConfig)
	}
	return s.Add(l.Name(), lc.Period, phase, l, obs)
}

// Len returns the number of tickers added.
func (s *Scheduler) Len() int { return len(s.tasks) }

// Ticks returns the ticks run of ticker i (in the order added).
func (s *Scheduler) Ticks(i int) uint64 { return s.tasks[i].ticks.Load() }

// Overruns returns the whole periods skipped by ticker i.
func (s *Scheduler) Overruns(i int) uint64 { return s.tasks[i].overruns.Load() }

// SetupWarnings returns the thread set-up steps the current or last Serve
// could not apply, or nil.
func (s *Scheduler) SetupWarnings() []error {
	if w := s.warnings.Load(); w != nil {
		return *w
	}
	return nil
}

// Serve runs the tickers from one locked OS thread until ctx is done, then
// returns nil; an error if a tick panics or sleeping fails. Like
// bridge.Loop.Serve, the thread's scheduling is changed, so it is discarded
// when Serve returns, and the stop is seen after the tick in progress.
func (s *Scheduler) Serve(ctx context.Context) error {
	if len(s.tasks) == 0 {
		return fmt.Errorf("loopbench: scheduler: nothing to run: %w", ErrConfig)
	}
	if !s.serving.CompareAndSwap(false, true) {
		return ErrSchedulerServing
	}
	defer s.serving.Store(false)
	s.stop.Store(false)
	return realtime.RunLocked(ctx, &s.stop, s.run)
}

func (s *Scheduler) run() (err error) {
	th, warns := realtime.SetupThread(s.cfg.threadConfig())
	s.warnings.Store(&warns)
	for _, w := range warns {
		s.log.Warn("loopbench: scheduler thread set-up incomplete, running without it", "err", w)
	}
	defer func() {
		if cerr := th.Close(); cerr != nil {
			s.log.Warn("loopbench: scheduler thread release", "err", cerr)
		}
	}()
	var cur *task
	defer func() {
		if r := recover(); r != nil {
			name := "?"
			if cur != nil {
				name = cur.name
			}
			err = fmt.Errorf("loopbench: scheduler: tick of %q panicked: %v\n%s", name, r, debug.Stack())
		}
	}()
	s.start(s.timer.now())
	for !s.stop.Load() {
		cur = s.heap[0]
		if err := s.step(); err != nil {
			return err
		}
	}
	return nil
}

// start places every ticker's first deadline and orders them.
func (s *Scheduler) start(now int64) {
	s.heap = s.heap[:0]
	for _, t := range s.tasks {
		t.next, t.n, t.skipped = now+t.period+t.phase, 0, 0
		s.heap = append(s.heap, t)
	}
	for i := len(s.heap)/2 - 1; i >= 0; i-- {
		s.down(i)
	}
}

// step runs the ticker with the earliest deadline: sleep to it, tick,
// observe, advance its deadline (skipping whole periods on an overrun) and
// put it back in order. It must not allocate.
func (s *Scheduler) step() error {
	t := s.heap[0]
	if err := s.timer.sleepUntil(t.next); err != nil {
		return fmt.Errorf("loopbench: scheduler: %w", err)
	}
	wake := s.timer.now()
	after := t.next + t.period
	t.info = bridge.TickInfo{N: t.n, Deadline: t.next, Next: after, NextWake: after, Wake: wake, Skipped: t.skipped}
	t.t.Tick(&t.info)
	end := s.timer.now()
	t.obs.ObserveTick(wake-t.next, end-wake)
	t.n++
	t.ticks.Add(1)
	t.next, t.skipped = after, 0
	if after <= end {
		// bridge.Loop's rule: the first deadline still ahead, the phase
		// kept, never a burst of catch-up ticks. A tick delayed by other
		// links' ticks overruns the same way as one that was slow itself.
		k := (end-after)/t.period + 1
		t.next += k * t.period
		t.skipped = int(k)
		t.overruns.Add(uint64(k))
		t.obs.ObserveOverrun(int(k))
	}
	s.down(0)
	return nil
}

// less orders by deadline, then by the order added, so that equal deadlines
// tick in a fixed order.
func less(a, b *task) bool {
	return a.next < b.next || a.next == b.next && a.index < b.index
}

func (s *Scheduler) down(i int) {
	h := s.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
