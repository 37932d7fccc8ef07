package realtime

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPUs returns the CPUs thread tid may run on.
func threadCPUs(t *testing.T, tid int) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err != nil {
		t.Fatalf("sched_getaffinity(%d): %v", tid, err)
	}
	var cpus []int
	for c := range maxCPU {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// Confine moves every thread of the process, and the threads the runtime
// makes afterwards inherit it; a thread that pins itself keeps its CPU.
func TestConfine(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("needs 2 CPUs to confine the process to one of them; this process may use %v", allowed)
	}
	defer func() {
		if err := Confine(allowed); err != nil {
			t.Fatalf("giving the CPUs back: %v", err)
		}
	}()
	keep, pinned := allowed[:1], allowed[len(allowed)-1]
	if err := Confine(keep); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy == unix.SCHED_DEADLINE {
			continue // left alone (TestConfineLeavesDeadlineThreads): one still exiting
		}
		if got := threadCPUs(t, tid); !slices.Equal(got, keep) {
			t.Errorf("thread %d may run on %v after Confine(%v)", tid, got, keep)
		}
	}
	// The thread another goroutine lands on (with this one locked, another
	// M: an old one confined above, or a new one that inherits the set)
	// runs on the set; once it pins itself, on its own CPU.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	type seen struct{ fresh, self []int }
	done := make(chan seen)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is discarded with the goroutine
		s := seen{fresh: threadCPUs(t, 0)}
		if _, warns := SetupThread(ThreadConfig{CPU: pinned}); len(warns) > 0 {
			t.Errorf("pinning to %d: %v", pinned, warns)
		}
		s.self = threadCPUs(t, 0)
		done <- s
	}()
	s := <-done
	if !slices.Equal(s.fresh, keep) {
		t.Errorf("another thread after Confine(%v) may run on %v", keep, s.fresh)
	}
	if !slices.Equal(s.self, []int{pinned}) {
		t.Errorf("a thread that pinned itself to %d may run on %v", pinned, s.self)
	}
}

// A SCHED_DEADLINE thread (an unpinned loop's) cannot have its affinity
// narrowed: Confine leaves it and confines the rest.
func TestConfineLeavesDeadlineThreads(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("needs 2 CPUs to confine the process to one of them; this process may use %v", allowed)
	}
	if err := ProbeDeadline(10*time.Microsecond, time.Millisecond); err != nil {
		t.Skipf("no SCHED_DEADLINE thread here to leave alone (%v): run as root or with CAP_SYS_NICE", err)
	}
	ready, stop, done := make(chan int), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread is discarded with the goroutine
		// 1 % of a CPU: admitted even beside another process's loops, which
		// may hold most of the machine's deadline bandwidth.
		th, _ := SetupThread(ThreadConfig{Priority: 1, CPU: -1, Budget: 10 * time.Microsecond, BudgetPeriod: time.Millisecond})
		if th.Settings().Policy != "SCHED_DEADLINE" {
			ready <- -1
			<-stop
			return
		}
		ready <- unix.Gettid()
		<-stop
	}()
	tid := <-ready
	if tid < 0 {
		close(stop)
		<-done
		t.Skip("the machine's deadline bandwidth is taken by other processes' loops: no deadline thread to leave alone")
	}
	defer func() {
		close(stop)
		<-done
		if err := Confine(allowed); err != nil {
			t.Fatalf("giving the CPUs back: %v", err)
		}
	}()
	if err := Confine(allowed[:1]); err != nil {
		t.Fatalf("Confine(%v) with a deadline thread running: %v", allowed[:1], err)
	}
	if got := threadCPUs(t, tid); !slices.Equal(got, allowed) {
		t.Errorf("the deadline thread may run on %v, want %v (left alone)", got, allowed)
	}
	if got := threadCPUs(t, unix.Gettid()); !slices.Equal(got, allowed[:1]) {
		t.Errorf("this thread may run on %v after Confine(%v)", got, allowed[:1])
	}
}

func TestAllowedCPUsBut(t *testing.T) {
	allowed, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AllowedCPUsBut(MaxCPUs); !errors.Is(err, ErrConfine) {
		t.Errorf("a CPU not allowed: %v, want ErrConfine", err)
	}
	rest, err := AllowedCPUsBut(allowed[0])
	switch {
	case len(allowed) == 1:
		if !errors.Is(err, ErrConfine) {
			t.Errorf("the only CPU: %v, %v; want ErrConfine", rest, err)
		}
	case err != nil || !slices.Equal(rest, allowed[1:]):
		t.Errorf("AllowedCPUsBut(%d) = %v, %v; want %v", allowed[0], rest, err, allowed[1:])
	}
	// Every CPU taken leaves none for the other threads; several CPUs, one
	// repeated, leave the rest.
	if rest, err := AllowedCPUsBut(allowed...); !errors.Is(err, ErrConfine) {
		t.Errorf("AllowedCPUsBut(all of %v) = %v, %v; want ErrConfine", allowed, rest, err)
	}
	if len(allowed) >= 3 {
		rest, err := AllowedCPUsBut(allowed[1], allowed[0], allowed[1])
		if err != nil || !slices.Equal(rest, allowed[2:]) {
			t.Errorf("AllowedCPUsBut(%d, %d, %d) = %v, %v; want %v", allowed[1], allowed[0], allowed[1], rest, err, allowed[2:])
		}
	}
}

func TestConfineRefuses(t *testing.T) {
	for _, cpus := range [][]int{nil, {-1}, {MaxCPUs}} {
		if err := Confine(cpus); !errors.Is(err, ErrConfine) {
			t.Errorf("Confine(%v) = %v, want ErrConfine", cpus, err)
		}
	}
}

// niceOf returns the nice value of thread tid.
func niceOf(t *testing.T, tid int) int {
	t.Helper()
	p, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		t.Fatalf("getpriority(%d): %v", tid, err)
	}
	return 20 - p // the system call's value, not libc's
}

// Renice sets every thread's nice value, and the threads made afterwards
// inherit it; a value out of range is refused.
func TestRenice(t *testing.T) {
	if err := Renice(20); !errors.Is(err, ErrNice) {
		t.Errorf("Renice(20) = %v, want ErrNice", err)
	}
	before := niceOf(t, 0)
	want := before - 1 // needs CAP_SYS_NICE or RLIMIT_NICE, and gives the value back
	if err := Renice(want); err != nil {
		if !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
			t.Fatal(err)
		}
		want = before + 1 // always permitted, and kept for the rest of the process
		if err := Renice(want); err != nil {
			t.Fatal(err)
		}
	} else {
		defer func() {
			if err := Renice(before); err != nil {
				t.Errorf("giving the nice value back: %v", err)
			}
		}()
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if got := niceOf(t, tid); got != want {
			t.Errorf("thread %d: nice %d after Renice(%d)", tid, got, want)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	got := make(chan int)
	go func() {
		runtime.LockOSThread() // on a thread of its own, discarded with the goroutine
		p, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
		if err != nil {
			t.Error(err)
		}
		got <- 20 - p
	}()
	if n := <-got; n != want {
		t.Errorf("a thread after Renice(%d): nice %d", want, n)
	}
}
