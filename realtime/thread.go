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
}

// Validate reports a configuration that cannot be applied on any machine. Its
// errors wrap ErrPriority, ErrCPU or ErrTimerSlack.
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
	// Policy is "SCHED_FIFO" or "SCHED_OTHER".
	Policy string
	// Priority is the SCHED_FIFO priority, 0 under SCHED_OTHER.
	Priority int
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
	if cfg.Priority > 0 {
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
