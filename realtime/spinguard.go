package realtime

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// ErrSpinGuard reports a spin guard that cannot start or watch.
var ErrSpinGuard = errors.New("realtime: spin guard")

// SpinGuardConfig sets up a SpinGuard.
type SpinGuardConfig struct {
	// Priority is the guard thread's SCHED_FIFO priority: at least that of
	// every thread it watches, so that it runs beside a spinning one (a
	// spin yields to threads of its own priority). 0 is MaxPriority, or,
	// where that is not permitted, the highest RLIMIT_RTPRIO permits
	// (LimitRTPRIO in a unit).
	Priority int
	// Interval is the shortest time between two passes over the watched
	// threads; 0 is DefaultSpinGuardInterval.
	Interval time.Duration
	// Slots bounds how many threads can be watched at once; 0 is 256.
	Slots int

	fallback int // RLIMIT_RTPRIO's soft limit, with Priority 0
}

// DefaultSpinGuardInterval is the shortest time between two of the guard's
// passes: a demotion comes at most this long after the threshold, and the
// guard wakes at most 4 000 times a second when watched threads tick faster.
const DefaultSpinGuardInterval = 250 * time.Microsecond

// GuardThreshold is the default threshold of a thread that ticks every
// period: half the period, within 500 µs..2 ms. A 1 kHz tick that runs
// 500 µs on end outside its own code has already missed its period; a slow
// loop's tick does its waiting blocked (a serial reply, a frame), not
// running.
func GuardThreshold(period time.Duration) time.Duration {
	return min(max(period/2, 500*time.Microsecond), 2*time.Millisecond)
}

// SpinGuard demotes a real-time thread that runs outside its own code for
// longer than its threshold to SCHED_OTHER until the thread is back in its
// own code, which then restores its policy (Watched.Check).
//
// Why: a Go goroutine locked to a SCHED_FIFO thread that leaves a system
// call while another thread of the runtime holds it (the monitor's retake,
// a stop-the-world) waits in a loop of sched_yield, which under SCHED_FIFO
// gives the CPU only to threads of its own priority or higher. When the
// holder is an ordinary thread on the same CPU, the loop spins until the
// kernel's real-time throttling stops it, up to 0.95 s (docs/realtime.md
// §17, kind 2; §19). Demoted, the spinning thread's yield lets the holder
// run, and the spin ends.
//
// The guard is a C thread (pthread, every signal blocked) at SCHED_FIFO
// Priority: it needs no P of the Go runtime to run, so nothing a spinning
// loop waits for can hold it. Only for a thread whose mark is older than
// half its threshold, it reads the thread's CPU time (the kernel's
// per-thread CPU clock, exact to the call) and its wait for a CPU
// (schedstat). A spin never blocks: a thread that was running or waiting
// for a CPU for at least 90 % of each pass's window, and ran at least 25 %
// of it (half, when it yields to a spinning peer), from half its threshold
// on, is demoted once its mark is a threshold old. A thread that blocked
// (a late timer, a wait of the runtime's on a futex) is left alone, and so
// is one that only waited for a CPU. Without cgo, StartSpinGuard fails.
type SpinGuard struct {
	c     guardC
	clock *Clock // for MarkNow

	mu      sync.Mutex
	free    []int // slot indices not in use
	watched int   // slots in use
	closed  bool
	stopped bool
}

// StartSpinGuard starts the guard's thread. The thread asks for SCHED_FIFO
// at cfg.Priority; when refused it runs as an ordinary thread, and Refused
// says why.
func StartSpinGuard(cfg SpinGuardConfig) (*SpinGuard, error) {
	if cfg.Priority == 0 {
		cfg.Priority = MaxPriority
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_RTPRIO, &lim) == nil {
			cfg.fallback = int(min(lim.Cur, MaxPriority))
		}
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultSpinGuardInterval
	}
	if cfg.Slots == 0 {
		cfg.Slots = 256
	}
	switch {
	case cfg.Priority < 1 || cfg.Priority > MaxPriority:
		return nil, fmt.Errorf("%w: priority %d: %w (want 1..%d)", ErrSpinGuard, cfg.Priority, ErrPriority, MaxPriority)
	case cfg.Interval < 10*time.Microsecond || cfg.Interval > time.Second:
		return nil, fmt.Errorf("%w: interval %v (want 10µs..1s)", ErrSpinGuard, cfg.Interval)
	case cfg.Slots < 1 || cfg.Slots > 1<<16:
		return nil, fmt.Errorf("%w: %d slots (want 1..65536)", ErrSpinGuard, cfg.Slots)
	}
	c, err := startGuardC(cfg)
	if err != nil {
		return nil, err
	}
	g := &SpinGuard{c: c, clock: NewClock()}
	for i := cfg.Slots - 1; i >= 0; i-- {
		g.free = append(g.free, i)
	}
	return g, nil
}

// Refused is why the guard's thread runs without SCHED_FIFO (then it cannot
// run on a CPU that a spinning real-time thread holds), nil when it got it.
func (g *SpinGuard) Refused() error {
	if err := g.c.refused(); err != nil {
		return fmt.Errorf("%w: SCHED_FIFO for its thread: %w", ErrSpinGuard, err)
	}
	return nil
}

// Priority is the guard thread's SCHED_FIFO priority, 0 when it runs as an
// ordinary thread.
func (g *SpinGuard) Priority() int { return g.c.priority() }

// CPUTime is the CPU time the guard's thread has used, -1 unknown or after
// Close: what the guard costs.
func (g *SpinGuard) CPUTime() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return -1
	}
	return g.c.cpuTime()
}

// Passes is how many times the guard's thread has looked at the watched
// threads.
func (g *SpinGuard) Passes() uint64 { return g.c.passes() }

// Close stops the guard's thread: nothing is demoted after it returns. A
// thread still watched keeps its Watched, whose methods then do nothing
// harmful; the memory goes with the last Release.
func (g *SpinGuard) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	g.c.halt()
	g.stopped = true
	if g.watched == 0 {
		g.c.free()
	}
	return nil
}

// Watch watches the calling thread, which th set up (its real-time policy
// is what Check restores). A thread that is not SCHED_FIFO needs no guard:
// under SCHED_OTHER a yield lets anyone run, and under SCHED_DEADLINE it
// ends the thread's turn; Watch then returns a nil *Watched, whose methods
// do nothing. threshold is how long the thread may run outside its own
// code (Mark) before it is demoted; it must be at least twice the guard's
// interval.
func (g *SpinGuard) Watch(th *Thread, threshold time.Duration) (*Watched, error) {
	if g == nil || th == nil || th.got.Policy != "SCHED_FIFO" {
		return nil, nil
	}
	if threshold < 100*time.Microsecond {
		return nil, fmt.Errorf("%w: threshold %v (want at least 100µs)", ErrSpinGuard, threshold)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, fmt.Errorf("%w: closed", ErrSpinGuard)
	}
	if len(g.free) == 0 {
		return nil, fmt.Errorf("%w: every slot in use", ErrSpinGuard)
	}
	i := g.free[len(g.free)-1]
	g.free = g.free[:len(g.free)-1]
	g.watched++
	s := g.c.slot(i)
	*s.tid = int32(unix.Gettid())
	*s.thresh = threshold.Nanoseconds()
	*s.seen = 0
	*s.breaks, *s.failures = 0, 0
	w := &Watched{g: g, i: i, th: th}
	w.s.Store(s)
	w.MarkNow()
	s.set(slotWatched) // publishes the fields above
	return w, nil
}

// Watched is one thread under a SpinGuard. Mark and Check are for the
// watched thread only; Breaks and Failures may be read from anywhere. A nil
// *Watched does nothing.
type Watched struct {
	g  *SpinGuard
	i  int
	s  atomic.Pointer[slotC] // nil after Release
	th *Thread

	// The counters at Release.
	breaks, failures atomic.Uint64

	restoreErr error
}

// Mark says the thread is in its own code at now (CLOCK_MONOTONIC ns), or,
// before a sleep, that it will be at now, its wake-up. A mark only moves
// forward. It does not allocate.
func (w *Watched) Mark(now int64) {
	if w == nil {
		return
	}
	if s := w.s.Load(); s != nil {
		atomic.StoreInt64(s.mark, now)
	}
}

// MarkNow is Mark at the current time, read from the vDSO (no system
// call).
func (w *Watched) MarkNow() {
	if w == nil {
		return
	}
	w.Mark(w.g.clock.Now())
}

// MarkAfter is Mark at d from now: the thread waits for something due
// within d, and the guard need not look at it before.
func (w *Watched) MarkAfter(d time.Duration) {
	if w == nil {
		return
	}
	w.Mark(w.g.clock.Now() + int64(d))
}

// Check restores the thread's real-time policy if the guard demoted it,
// and reports whether it did. Call it after Mark. It does not allocate.
func (w *Watched) Check() bool {
	if w == nil {
		return false
	}
	s := w.s.Load()
	if s == nil || s.load() != slotDemoted {
		return false
	}
	if err := w.th.reapply(); err != nil {
		w.restoreErr = err // the thread stays demoted: the guard leaves it alone
		return false
	}
	s.set(slotWatched)
	return true
}

// RestoreError is the error of the last restore the kernel refused, nil
// when none was. Watched thread only.
func (w *Watched) RestoreError() error {
	if w == nil {
		return nil
	}
	return w.restoreErr
}

// Breaks is how many times the guard demoted the thread.
func (w *Watched) Breaks() uint64 {
	if w == nil {
		return 0
	}
	if s := w.s.Load(); s != nil {
		return atomic.LoadUint64(s.breaks)
	}
	return w.breaks.Load()
}

// Failures is how many demotions the kernel refused.
func (w *Watched) Failures() uint64 {
	if w == nil {
		return 0
	}
	if s := w.s.Load(); s != nil {
		return atomic.LoadUint64(s.failures)
	}
	return w.failures.Load()
}

// Release stops watching the thread, restoring its policy first if it is
// demoted. Watched thread only; the counters stay readable.
func (w *Watched) Release() {
	if w == nil {
		return
	}
	s := w.s.Load()
	if s == nil {
		return
	}
	for {
		st := s.load()
		if st == slotDemoting {
			continue // the guard is between two stores of its own
		}
		if st == slotDemoted {
			_ = w.th.reapply()
		}
		if s.cas(st, slotFree) {
			break
		}
	}
	w.breaks.Store(atomic.LoadUint64(s.breaks))
	w.failures.Store(atomic.LoadUint64(s.failures))
	w.s.Store(nil)
	g := w.g
	g.mu.Lock()
	g.free = append(g.free, w.i)
	g.watched--
	if g.stopped && g.watched == 0 {
		g.c.free()
	}
	g.mu.Unlock()
}

// reapply sets the calling thread's policy back to what SetupThread gave
// it. It does not allocate.
func (t *Thread) reapply() error {
	attr := unix.SchedAttr{
		Size:     unix.SizeofSchedAttr,
		Policy:   unix.SCHED_FIFO,
		Priority: uint32(t.got.Priority),
		Flags:    unix.SCHED_FLAG_RESET_ON_FORK,
	}
	return unix.SchedSetAttr(0, &attr, 0)
}

// slotC points into one slot of the guard's memory.
type slotC struct {
	mark, thresh, seen *int64
	state, tid         *int32
	breaks, failures   *uint64
}

func (s *slotC) load() int32             { return atomic.LoadInt32(s.state) }
func (s *slotC) cas(old, new int32) bool { return atomic.CompareAndSwapInt32(s.state, old, new) }
func (s *slotC) set(state int32)         { atomic.StoreInt32(s.state, state) }
