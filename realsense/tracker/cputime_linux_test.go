package tracker

import (
	"syscall"
	"unsafe"
)

// threadClock returns a clock of the calling thread's CPU time in ns
// (CLOCK_THREAD_CPUTIME_ID): the time it ran, without the time other
// processes held its core. The caller locks its goroutine to its thread.
func threadClock() (now func() int64, ok bool) {
	return func() int64 {
		var ts syscall.Timespec
		const clockThreadCPUTime = 3
		if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
			return 0
		}
		return ts.Nano()
	}, true
}

// threadSwitches returns a counter of the calling thread's context switches,
// voluntary and not (getrusage RUSAGE_THREAD): a frame during which it did
// not move ran without being preempted or blocked. The caller locks its
// goroutine to its thread.
func threadSwitches() (count func() int64, ok bool) {
	return func() int64 {
		var ru syscall.Rusage
		const rusageThread = 1
		if err := syscall.Getrusage(rusageThread, &ru); err != nil {
			return -1
		}
		return ru.Nvcsw + ru.Nivcsw
	}, true
}
