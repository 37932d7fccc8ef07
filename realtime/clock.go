// Package realtime holds the timing primitives of the clock-master loop, as
// specified in docs/realtime.md §2 and §5: a CLOCK_MONOTONIC clock read through
// the vDSO, absolute sleeps with clock_nanosleep(TIMER_ABSTIME), a spin for the
// sleep-then-spin mode, and the per-thread set-up (SCHED_FIFO, CPU pinning,
// timer slack, mlockall, /dev/cpu_dma_latency) of a goroutine locked to its OS
// thread. It is Linux-only.
package realtime

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Clock reads CLOCK_MONOTONIC in nanoseconds without a system call.
//
// x/sys's ClockGettime is a real system call, while time.Since reads the same
// clock through the vDSO; so the clock reads one base pair at creation and
// derives every later reading from it. Its readings are on the clock that
// clock_nanosleep(CLOCK_MONOTONIC) sleeps on, so they can be used as deadlines.
// A Clock is immutable and safe for concurrent use.
type Clock struct {
	base     int64     // CLOCK_MONOTONIC ns at baseTime
	baseTime time.Time // carries Go's monotonic reading
}

// pairTries is how many base pairs NewClock reads to keep the tightest one.
const pairTries = 8

// NewClock reads the base pair. Its error against CLOCK_MONOTONIC is at most
// half the duration of one clock_gettime system call (well under 1 µs).
func NewClock() *Clock {
	c := &Clock{}
	best := int64(-1)
	for range pairTries {
		var a, b unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &a) != nil {
			continue
		}
		t := time.Now()
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &b) != nil {
			continue
		}
		an, bn := a.Nano(), b.Nano()
		if w := bn - an; best < 0 || w < best {
			best = w
			// time.Now ran between the two reads: take the midpoint.
			c.base, c.baseTime = an+w/2, t
		}
	}
	if best < 0 {
		// clock_gettime(CLOCK_MONOTONIC) cannot fail on Linux; keep the clock
		// usable anyway (monotonic, only offset from the kernel's).
		c.baseTime = time.Now()
	}
	return c
}

// Time is the wall-clock time of a reading ns of this clock (without Go's
// monotonic reading: for showing and for JSON).
func (c *Clock) Time(ns int64) time.Time { return c.baseTime.Add(time.Duration(ns - c.base)).Round(0) }

// Now returns CLOCK_MONOTONIC in nanoseconds. It costs one vDSO read and does
// not allocate.
func (c *Clock) Now() int64 {
	return c.base + int64(time.Since(c.baseTime))
}

// SleepUntil sleeps the calling thread until CLOCK_MONOTONIC reaches deadline
// (ns), with clock_nanosleep(TIMER_ABSTIME), retrying when a signal interrupts
// it (the Go runtime sends preemption signals). It returns at once if the
// deadline has passed. It is a normal system call, not a raw one, so the
// runtime can hand the P away and stop the world while the thread sleeps
// (docs/realtime.md §2). It does not allocate.
func SleepUntil(deadline int64) error {
	ts := unix.NsecToTimespec(deadline)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err == nil {
			return nil
		}
		if err != unix.EINTR {
			return fmt.Errorf("realtime: clock_nanosleep until %d ns: %w", deadline, err)
		}
	}
}

// SleepUntil is the loops' sleep: it returns at once when c has already
// passed deadline, without the system call, since an expired
// clock_nanosleep still costs a trip through the kernel's scheduler
// (≈ 20 µs measured) that a late loop cannot afford; otherwise it is the
// function SleepUntil. It does not allocate.
func (c *Clock) SleepUntil(deadline int64) error {
	if deadline <= c.Now() {
		return nil
	}
	return SleepUntil(deadline)
}

// SpinUntil busy-waits until c reaches deadline (ns). It burns the CPU: use it
// only for the last stretch of a sleep, on a core the loop has to itself.
func SpinUntil(c *Clock, deadline int64) {
	for c.Now() < deadline {
	}
}
