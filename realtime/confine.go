package realtime

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrConfine reports a process that could not be confined to a CPU set.
var ErrConfine = errors.New("realtime: cannot confine the process's threads")

// AllowedCPUs returns the CPUs the calling thread may run on, in order.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("realtime: sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := range maxCPU {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// AllowedCPUsBut returns the CPUs the calling thread may run on but cpus:
// where a process keeps its other threads when its real-time ones take
// cpus. It fails if one of cpus is not among them or none would remain.
func AllowedCPUsBut(cpus ...int) ([]int, error) {
	allowed, err := AllowedCPUs()
	if err != nil {
		return nil, err
	}
	for _, c := range cpus {
		if !slices.Contains(allowed, c) {
			return nil, fmt.Errorf("%w: CPU %d is not one of the CPUs this process may use (%v)", ErrConfine, c, allowed)
		}
	}
	rest := slices.DeleteFunc(slices.Clone(allowed), func(c int) bool { return slices.Contains(cpus, c) })
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: CPUs %v are all the CPUs this process may use: its other threads need one more", ErrConfine, cpus)
	}
	return rest, nil
}

// Confine sets the CPU affinity of every thread of the process to cpus.
// Threads the runtime creates later inherit it from the thread that creates
// them; a thread that pins itself afterwards (SetupThread with a CPU) keeps
// its own. So a process that confines itself before its real-time threads
// pin themselves to other CPUs keeps its ordinary threads (the runtime's
// monitor, GC workers, the threads that hand a P to a locked thread, HTTP)
// off those CPUs: a real-time thread that spins in the runtime waiting for
// one of them can no longer be the reason it does not run
// (docs/realtime.md §17). A thread that exits meanwhile is skipped, and so
// is a SCHED_DEADLINE thread (an unpinned loop's, §18), whose affinity the
// kernel does not let be narrowed. Errors wrap ErrConfine and name the CPUs.
func Confine(cpus []int) error {
	if len(cpus) == 0 {
		return fmt.Errorf("%w: no CPU given", ErrConfine)
	}
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= maxCPU {
			return fmt.Errorf("%w: CPU %d (want 0..%d)", ErrConfine, c, maxCPU-1)
		}
		set.Set(c)
	}
	err := eachThread(func(tid int) error {
		err := unix.SchedSetaffinity(tid, &set)
		if errors.Is(err, unix.EBUSY) {
			if a, aerr := unix.SchedGetAttr(tid, 0); aerr == nil && a.Policy == unix.SCHED_DEADLINE {
				return nil // an unpinned loop's: the kernel keeps a deadline thread's affinity whole
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%w to CPUs %v: %w", ErrConfine, cpus, err)
	}
	return nil
}

// ErrNice reports threads whose nice value could not be set.
var ErrNice = errors.New("realtime: cannot set the nice value of the process's threads")

// Renice sets the nice value of every thread of the process: on Linux a
// thread's own, which the threads the runtime creates later inherit from
// the thread that creates them. Real-time threads are not affected. Errors
// wrap ErrNice and the system's error (EACCES: a lower value than
// RLIMIT_NICE allows, without CAP_SYS_NICE).
func Renice(nice int) error {
	if nice < -20 || nice > 19 {
		return fmt.Errorf("%w: %d (want -20..19)", ErrNice, nice)
	}
	if err := eachThread(func(tid int) error { return unix.Setpriority(unix.PRIO_PROCESS, tid, nice) }); err != nil {
		return fmt.Errorf("%w to %d: %w", ErrNice, nice, err)
	}
	return nil
}

// eachThread calls set for every thread of the process. Threads may appear
// while the list is walked: it walks until a pass meets no thread it had
// not met before. A thread that exits meanwhile (ESRCH) is skipped.
func eachThread(set func(tid int) error) error {
	done := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := set(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
	return nil
}
