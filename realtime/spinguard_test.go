//go:build cgo && linux

package realtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var errNeedFIFO = errors.New("needs SCHED_FIFO")

// onFIFOThread runs body on a locked thread at SCHED_FIFO 20, or skips the
// test saying what it needs.
func onFIFOThread(t *testing.T, body func(th *Thread) error) {
	t.Helper()
	err := RunLocked(context.Background(), nil, func() error {
		th, warns := SetupThread(ThreadConfig{Priority: 20, CPU: -1})
		if len(warns) > 0 {
			return fmt.Errorf("%w: %v", errNeedFIFO, warns[0])
		}
		return body(th)
	})
	if errors.Is(err, errNeedFIFO) {
		t.Skipf("run as root or with CAP_SYS_NICE / LimitRTPRIO: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func policyOf(t *testing.T) uint32 {
	t.Helper()
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return attr.Policy
}

func startGuard(t *testing.T) *SpinGuard {
	t.Helper()
	g, err := StartSpinGuard(SpinGuardConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Refused(); err != nil {
		t.Skipf("the guard's thread needs SCHED_FIFO (run as root or with CAP_SYS_NICE): %v", err)
	}
	return g
}

// A real-time thread that runs without a mark for longer than its
// threshold is demoted to SCHED_OTHER (the spin here is the test's own
// busy loop: what the guard sees of a loop spinning in the runtime,
// running and not in its own code); Mark and Check put it back to
// SCHED_FIFO at its priority, and the guard watches it again.
func TestSpinGuardDemotesAndCheckRestores(t *testing.T) {
	g := startGuard(t)
	onFIFOThread(t, func(th *Thread) error {
		w, err := g.Watch(th, 2*time.Millisecond)
		if err != nil {
			return err
		}
		defer w.Release()
		for round := 1; round <= 2; round++ {
			w.MarkNow()
			// Busy until demoted; a machine so loaded that the thread
			// never runs 1 ms on end makes this slow, not wrong.
			for w.Breaks() < uint64(round) {
			}
			for s := w.s.Load(); s.load() == slotDemoting; {
			}
			if p := policyOf(t); p != unix.SCHED_NORMAL {
				t.Errorf("round %d: policy after a break = %d, want SCHED_OTHER (SCHED_NORMAL, %d)", round, p, unix.SCHED_NORMAL)
			}
			for !w.Check() { // the guard's last store may follow its count
				w.MarkNow()
			}
			attr, err := unix.SchedGetAttr(0, 0)
			if err != nil {
				return err
			}
			if attr.Policy != unix.SCHED_FIFO || attr.Priority != 20 {
				t.Errorf("round %d: after Check policy %d priority %d, want SCHED_FIFO 20", round, attr.Policy, attr.Priority)
			}
			if attr.Flags&unix.SCHED_FLAG_RESET_ON_FORK == 0 {
				t.Errorf("round %d: after Check the reset-on-fork flag is gone", round)
			}
		}
		if w.Failures() != 0 {
			t.Errorf("%d demotions refused", w.Failures())
		}
		return nil
	})
}

// A thread that is blocked past its mark (a late timer, a wait for the
// runtime) is not running, and the guard leaves it alone: demoting it
// would help nobody.
func TestSpinGuardLeavesABlockedThread(t *testing.T) {
	g := startGuard(t)
	onFIFOThread(t, func(th *Thread) error {
		w, err := g.Watch(th, time.Millisecond)
		if err != nil {
			return err
		}
		defer w.Release()
		w.MarkNow()
		before := g.Passes()
		for g.Passes() < before+40 { // 40 passes, at least 10 ms
			ts := unix.NsecToTimespec(int64(5 * time.Millisecond))
			_ = unix.Nanosleep(&ts, nil)
		}
		if w.Breaks() != 0 {
			t.Errorf("a sleeping thread was demoted %d times", w.Breaks())
		}
		if p := policyOf(t); p != unix.SCHED_FIFO {
			t.Errorf("policy %d, want SCHED_FIFO", p)
		}
		return nil
	})
}

// Release restores a demoted thread and keeps the counts readable; a
// thread that is not SCHED_FIFO is not watched.
func TestSpinGuardRelease(t *testing.T) {
	g := startGuard(t)
	onFIFOThread(t, func(th *Thread) error {
		if w, err := g.Watch(&Thread{got: Settings{Policy: "SCHED_OTHER"}}, time.Millisecond); w != nil || err != nil {
			t.Errorf("Watch of a SCHED_OTHER thread = %v, %v; want nil, nil", w, err)
		}
		w, err := g.Watch(th, time.Millisecond)
		if err != nil {
			return err
		}
		w.MarkNow()
		for w.Breaks() == 0 {
		}
		for s := w.s.Load(); s.load() == slotDemoting; {
		}
		w.Release()
		if p := policyOf(t); p != unix.SCHED_FIFO {
			t.Errorf("policy after Release = %d, want SCHED_FIFO", p)
		}
		if w.Breaks() == 0 {
			t.Error("Breaks after Release = 0, want the count")
		}
		w.MarkNow() // harmless after Release
		if w.Check() {
			t.Error("Check after Release = true")
		}
		return nil
	})
}

func TestSpinGuardConfigRefused(t *testing.T) {
	for _, cfg := range []SpinGuardConfig{
		{Priority: 100},
		{Priority: -1},
		{Interval: time.Microsecond},
		{Slots: -1},
	} {
		if g, err := StartSpinGuard(cfg); !errors.Is(err, ErrSpinGuard) {
			if g != nil {
				g.Close()
			}
			t.Errorf("StartSpinGuard(%+v) = %v, want ErrSpinGuard", cfg, err)
		}
	}
	g := startGuard(t)
	if _, err := g.Watch(&Thread{got: Settings{Policy: "SCHED_FIFO", Priority: 1}}, time.Microsecond); !errors.Is(err, ErrSpinGuard) {
		t.Errorf("Watch with a 1 µs threshold = %v, want ErrSpinGuard", err)
	}
}

// The loop's part, Mark and Check, allocates nothing.
func TestSpinGuardMarkAllocs(t *testing.T) {
	g := startGuard(t)
	onFIFOThread(t, func(th *Thread) error {
		w, err := g.Watch(th, 5*time.Millisecond)
		if err != nil {
			return err
		}
		defer w.Release()
		if n := testing.AllocsPerRun(1000, func() {
			w.MarkNow()
			w.Check()
		}); n != 0 {
			t.Errorf("Mark+Check allocate %v per call, want 0", n)
		}
		return nil
	})
}

// The guard's thread is named, so that ps -L and top -H show it.
func TestSpinGuardThreadNamed(t *testing.T) {
	g, err := StartSpinGuard(SpinGuardConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if comm, err := os.ReadFile("/proc/self/task/" + task.Name() + "/comm"); err == nil && string(comm) == "spin-guard\n" {
			return
		}
	}
	t.Error("no thread named spin-guard in /proc/self/task")
}
