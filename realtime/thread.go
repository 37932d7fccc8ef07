package realtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Validation sentinels: a ThreadConfig that cannot be applied at all.
var (
	// ErrPriority reports a SCHED_FIFO priority outside 0..99.
	ErrPriority = errors.New("realtime: invalid SCHED_FIFO priority")
	// ErrCPU reports a CPU number that is neither -1 nor a valid CPU index.
	ErrCPU = errors.New("realtime: invalid CPU")
	// ErrTimerSlack reports a negative timer slack.
	ErrTimerSlack = errors.New("realtime: invalid timer slack")
	// ErrBudget reports a SCHED_DEADLINE budget that cannot be asked for:
	// negative, longer than its period, pinned, or without a priority to
	// fall back on.
	ErrBudget = errors.New("realtime: invalid SCHED_DEADLINE budget")
)

// MaxPriority is the highest SCHED_FIFO priority on Linux.
const MaxPriority = 99

// MaxCPUs bounds the CPU numbers a thread can be pinned to (a CPU set's
// size).
const MaxCPUs = 1024

const maxCPU = MaxCPUs

// DMALatencyPath is the PM QoS node that keeps C-states shallow while open.
const DMALatencyPath = "/dev/cpu_dma_latency"

// ThreadConfig is the real-time set-up of one OS thread.
type ThreadConfig struct {
	// Priority is the SCHED_FIFO priority, 1..99; 0 keeps SCHED_OTHER.
	Priority int
	// CPU pins the thread to one CPU; -1 leaves the affinity alone.
	CPU int
	// TimerSlack sets PR_SET_TIMERSLACK; 0 leaves it as is. SCHED_OTHER
	// threads default to 50 µs; 1 ns halved the loop's p50 lateness
	// (docs/realtime.md §2).
	TimerSlack time.Duration
	// LockMemory calls mlockall(MCL_CURRENT|MCL_FUTURE). It is process-wide
	// and stays in force after Close.
	LockMemory bool
	// DMALatency writes 0 to /dev/cpu_dma_latency and keeps it open until
	// Close, which keeps every CPU out of deep C-states as cyclictest does.
	DMALatency bool
	// Budget, when > 0, runs the thread under SCHED_DEADLINE instead of
	// SCHED_FIFO: Budget of CPU time every BudgetPeriod, which is also its
	// relative deadline. It needs a Priority (the SCHED_FIFO fallback when
	// the kernel refuses the reservation) and no CPU (the kernel does not
	// let a deadline thread be pinned). Why: the Go runtime's waits between
	// threads yield with sched_yield, which under SCHED_FIFO gives the CPU
	// only to threads of the same or a higher priority, so a real-time
	// thread can spin for up to a second on an ordinary thread it preempted;
	// under SCHED_DEADLINE sched_yield ends the thread's turn until its next
	// period, and the ordinary thread runs (docs/realtime.md §18). The
	// reservation is applied as the same share of at most DeadlineSlice.
	Budget       time.Duration
	BudgetPeriod time.Duration
}

// Kernel bounds of a SCHED_DEADLINE reservation (sched(7): runtime at least
// 1024 ns; kernel.sched_deadline_period_min_us and _max_us default to 100 µs
// and 4 s). A period outside them is not an error: the kernel refuses it and
// the thread falls back to SCHED_FIFO with a warning.
const minBudget = 1024 * time.Nanosecond

// Validate reports a configuration that cannot be applied on any machine. Its
// errors wrap ErrPriority, ErrCPU, ErrTimerSlack or ErrBudget.
func (c ThreadConfig) Validate() error {
	if c.Priority < 0 || c.Priority > MaxPriority {
		return fmt.Errorf("%w %d (want 0 for SCHED_OTHER or 1..%d)", ErrPriority, c.Priority, MaxPriority)
	}
	if c.CPU < -1 || c.CPU >= maxCPU {
		return fmt.Errorf("%w %d (want -1 for no pinning or 0..%d)", ErrCPU, c.CPU, maxCPU-1)
	}
	if c.TimerSlack < 0 {
		return fmt.Errorf("%w %v (want >= 0)", ErrTimerSlack, c.TimerSlack)
	}
	switch {
	case c.Budget == 0:
	case c.Budget < minBudget || c.Budget > c.BudgetPeriod:
		return fmt.Errorf("%w %v every %v (want 0 for SCHED_FIFO, or %v up to the period)", ErrBudget, c.Budget, c.BudgetPeriod, minBudget)
	case c.CPU >= 0:
		return fmt.Errorf("%w %v on CPU %d (a SCHED_DEADLINE thread cannot be pinned: want CPU -1 or budget 0)", ErrBudget, c.Budget, c.CPU)
	case c.Priority == 0:
		return fmt.Errorf("%w %v with priority 0 (want a SCHED_FIFO priority to fall back on)", ErrBudget, c.Budget)
	}
	return nil
}

// SetupError is a setting that SetupThread could not apply. It unwraps to the
// system error, so errors.Is(err, unix.EPERM) and errors.Is(err,
// fs.ErrPermission) work.
type SetupError struct {
	Setting string // e.g. "SCHED_FIFO priority 80"
	Fix     string // what to grant or change; may be empty
	Err     error
}

func (e *SetupError) Error() string {
	if e.Fix == "" {
		return "realtime: " + e.Setting + ": " + e.Err.Error()
	}
	return "realtime: " + e.Setting + ": " + e.Err.Error() + " (" + e.Fix + ")"
}

func (e *SetupError) Unwrap() error { return e.Err }

// Thread holds what SetupThread acquired for the calling thread.
type Thread struct {
	dmaFD int // -1 when not held
	got   Settings
}

// Settings are the real-time settings a thread runs with: what SetupThread
// could apply, not what was asked.
type Settings struct {
	// Policy is "SCHED_DEADLINE", "SCHED_FIFO" or "SCHED_OTHER".
	Policy string
	// Priority is the SCHED_FIFO priority, 0 under the other policies.
	Priority int
	// Budget and BudgetPeriod are the SCHED_DEADLINE reservation, 0 under
	// the other policies.
	Budget, BudgetPeriod time.Duration
	// CPU is the CPU the thread is pinned to, -1 when it is not.
	CPU int
	// LockedMemory: mlockall is in force.
	LockedMemory bool
	// DMALatency: the /dev/cpu_dma_latency request is held.
	DMALatency bool
}

// Settings returns what the thread runs with now; a nil *Thread runs with
// nothing.
func (t *Thread) Settings() Settings {
	if t == nil {
		return Settings{Policy: "SCHED_OTHER", CPU: -1}
	}
	s := t.got
	s.DMALatency = t.dmaFD >= 0
	return s
}

// SetupThread applies cfg to the calling OS thread. The caller must be a
// goroutine that called runtime.LockOSThread and never unlocks: the thread's
// scheduling changes, so it must die with the goroutine rather than return to
// the runtime's pool.
//
// Settings are per thread (sched_setattr and sched_setaffinity on tid 0, so
// threads the runtime starts later keep the normal policy), except LockMemory,
// which is process-wide. A setting that is not permitted does not stop the
// others: each failure is returned as a *SetupError warning and the caller
// goes on with what it got.
//
// An invalid cfg (see Validate) applies nothing and returns a nil *Thread and
// the validation error as the only element.
func SetupThread(cfg ThreadConfig) (*Thread, []error) {
	if err := cfg.Validate(); err != nil {
		return nil, []error{err}
	}
	t := &Thread{dmaFD: -1, got: Settings{Policy: "SCHED_OTHER", CPU: -1}}
	var warns []error
	warn := func(setting, fix string, err error) {
		warns = append(warns, &SetupError{Setting: setting, Fix: fix, Err: err})
	}

	if cfg.TimerSlack > 0 {
		if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cfg.TimerSlack), 0, 0, 0); err != nil {
			warn(fmt.Sprintf("timer slack %v", cfg.TimerSlack), "", err)
		}
	}
	if cfg.CPU >= 0 {
		var set unix.CPUSet
		set.Set(cfg.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			fix := ""
			if errors.Is(err, unix.EINVAL) {
				fix = "the CPU is offline, absent or outside the process's allowed set"
			}
			warn(fmt.Sprintf("CPU affinity %d", cfg.CPU), fix, err)
		} else {
			t.got.CPU = cfg.CPU
		}
	}
	if cfg.LockMemory {
		if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
			warn("mlockall", "grant LimitMEMLOCK=infinity or CAP_IPC_LOCK", err)
		} else {
			t.got.LockedMemory = true
		}
	}
	if cfg.Budget > 0 {
		attr := deadlineAttr(cfg.Budget, cfg.BudgetPeriod)
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			warn(fmt.Sprintf("SCHED_DEADLINE budget %v every %v", cfg.Budget, cfg.BudgetPeriod), deadlineFix(err, cfg.Priority), err)
		} else {
			t.got.Policy, t.got.Budget, t.got.BudgetPeriod = "SCHED_DEADLINE", cfg.Budget, cfg.BudgetPeriod
		}
	}
	if cfg.Priority > 0 && t.got.Policy != "SCHED_DEADLINE" {
		attr := unix.SchedAttr{
			Policy:   unix.SCHED_FIFO,
			Priority: uint32(cfg.Priority),
			// A child process must not inherit the real-time policy.
			Flags: unix.SCHED_FLAG_RESET_ON_FORK,
		}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			fix := ""
			if errors.Is(err, unix.EPERM) {
				fix = fmt.Sprintf("grant LimitRTPRIO=%d or CAP_SYS_NICE", cfg.Priority)
			}
			warn(fmt.Sprintf("SCHED_FIFO priority %d", cfg.Priority), fix, err)
		} else {
			t.got.Policy, t.got.Priority = "SCHED_FIFO", cfg.Priority
		}
	}
	if cfg.DMALatency {
		fd, err := openDMALatency()
		if err != nil {
			warn(DMALatencyPath, "needs write access: run as root or grant the service's group write access with a udev rule", err)
		} else {
			t.dmaFD = fd
		}
	}
	return t, warns
}

// DeadlineSlice is the longest period a SCHED_DEADLINE reservation is
// applied with: a budget over a longer period is applied as the same share
// of this one. The Go runtime yields (sched_yield) in its routine waits, a
// contended lock's passive spin among them, and a deadline thread that
// yields waits for its next period; with the loop's own period as the
// reservation's, each such yield cost a 1 kHz loop a whole tick, about 40
// late ticks of 1 ms in 15 s at 4 links (docs/realtime.md §18).
const DeadlineSlice = 200 * time.Microsecond

// deadlineSlice returns the kernel runtime and period of a budget every
// period: the same share of DeadlineSlice when the period is longer.
func deadlineSlice(budget, period time.Duration) (time.Duration, time.Duration) {
	if period <= DeadlineSlice {
		return budget, period
	}
	return max(minBudget, time.Duration(float64(budget)*float64(DeadlineSlice)/float64(period))), DeadlineSlice
}

// ProbeDeadline reports whether a thread of this process may run under
// SCHED_DEADLINE with budget every period: it asks on a throwaway locked
// thread, which the runtime discards when its goroutine exits locked, and
// returns the kernel's refusal (EPERM without CAP_SYS_NICE, EBUSY when the
// admission test fails) wrapped in a *SetupError.
func ProbeDeadline(budget, period time.Duration) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		attr := deadlineAttr(budget, period)
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			errc <- &SetupError{Setting: fmt.Sprintf("SCHED_DEADLINE budget %v every %v", budget, period), Fix: deadlineFix(err, 0), Err: err}
			return
		}
		errc <- nil
	}()
	return <-errc
}

// deadlineAttr is the SCHED_DEADLINE reservation of budget every period,
// applied over deadlineSlice, as SetupThread and ProbeDeadline ask for it.
func deadlineAttr(budget, period time.Duration) unix.SchedAttr {
	runtime, slice := deadlineSlice(budget, period)
	return unix.SchedAttr{
		Policy:   unix.SCHED_DEADLINE,
		Runtime:  uint64(runtime),
		Deadline: uint64(slice),
		Period:   uint64(slice),
		// A child process must not inherit the policy (and a deadline
		// thread could not fork without RESET_ON_FORK); RECLAIM lets a slow
		// tick use bandwidth the other deadline threads leave idle.
		Flags: unix.SCHED_FLAG_RESET_ON_FORK | unix.SCHED_FLAG_RECLAIM,
	}
}

// deadlineFix says what a refused SCHED_DEADLINE reservation needs; the
// thread goes on at SCHED_FIFO priority.
func deadlineFix(err error, priority int) string {
	fallback := fmt.Sprintf("running at SCHED_FIFO %d instead", priority)
	if priority == 0 {
		fallback = "the loops keep SCHED_FIFO"
	}
	switch {
	case errors.Is(err, unix.EBUSY):
		return "the machine's real-time bandwidth is taken by other deadline threads (kernel.sched_rt_runtime_us); " + fallback
	case errors.Is(err, unix.EPERM):
		return "grant CAP_SYS_NICE, or run outside a cgroup that forbids deadline threads; " + fallback
	case errors.Is(err, unix.EINVAL):
		return "the kernel refuses this budget or period (kernel.sched_deadline_period_min_us and _max_us); " + fallback
	}
	return fallback
}

// openDMALatency requests a 0 µs wake-up latency; the request holds while
// the file stays open.
func openDMALatency() (int, error) {
	fd, err := unix.Open(DMALatencyPath, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var zero [4]byte
	binary.NativeEndian.PutUint32(zero[:], 0)
	if _, err := unix.Write(fd, zero[:]); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// Close releases what the thread holds: the /dev/cpu_dma_latency request.
// The scheduling settings stay with the thread, which is discarded when its
// goroutine exits. Close is idempotent and accepts a nil *Thread.
func (t *Thread) Close() error {
	if t == nil || t.dmaFD < 0 {
		return nil
	}
	fd := t.dmaFD
	t.dmaFD = -1
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("realtime: close %s: %w", DMALatencyPath, err)
	}
	return nil
}

// HoldsDMALatency reports whether the /dev/cpu_dma_latency request is held.
func (t *Thread) HoldsDMALatency() bool { return t != nil && t.dmaFD >= 0 }

// RunLocked runs body on a new goroutine locked to its OS thread for good
// (SetupThread may change the thread's scheduling, so the runtime must
// discard the thread with the goroutine rather than reuse it), and waits
// for it. When ctx is done it sets stop, which body polls without
// blocking; stop may be nil for a body that watches ctx itself. It returns
// body's error.
func RunLocked(ctx context.Context, stop *atomic.Bool, body func() error) error {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		err = body()
	}()
	select {
	case <-ctx.Done():
		if stop != nil {
			stop.Store(true)
		}
		<-done
	case <-done:
	}
	return err
}
