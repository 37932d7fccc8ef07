package realtime

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ErrClosed is a Signal or a wait on an Event after Close.
var ErrClosed = errors.New("realtime: event closed")

// Event wakes one waiting thread from another goroutine: an eventfd that the
// waiter polls with ppoll, so a loop thread can wait for a camera frame with a
// deadline without going through the Go netpoller or a channel (no hand-off to
// another thread, no allocation). Signals that arrive while nobody waits are
// counted, not lost: the next wait returns at once and reports how many came.
//
// One goroutine may wait at a time; any number may signal. After Close,
// Signal and WaitUntil return ErrClosed: they never touch the file
// descriptor again, which the kernel may by then have given to another file.
type Event struct {
	// mu is held shared by Signal and WaitUntil while they use fd, and
	// exclusively by Close, so the descriptor is never closed under them.
	mu     sync.RWMutex
	closed bool
	fd     int
	c      *Clock
	last   atomic.Int64 // clock reading passed to the last Signal
	one    [8]byte      // the counter increment every Signal writes; read-only after NewEvent

	// Waiter-owned scratch, so that waiting allocates nothing.
	pfd [1]unix.PollFd
	ts  unix.Timespec
	rb  [8]byte
}

// NewEvent opens the eventfd; deadlines of WaitUntil are readings of c.
func NewEvent(c *Clock) (*Event, error) {
	if c == nil {
		return nil, fmt.Errorf("realtime: event clock <nil>")
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("realtime: eventfd: %w", err)
	}
	e := &Event{fd: fd, c: c}
	e.one[0] = 1 // the eventfd counter is host-endian; Linux targets are little-endian
	e.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	return e, nil
}

// Signal records at (a Clock reading: when the event happened) and wakes the
// waiter. It does not allocate.
func (e *Event) Signal(at int64) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return ErrClosed
	}
	e.last.Store(at)
	for {
		_, err := unix.Write(e.fd, e.one[:])
		switch err {
		case nil, unix.EAGAIN: // EAGAIN: the counter is saturated, a wake is pending anyway
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("realtime: event signal: %w", err)
		}
	}
}

// WaitUntil waits until the event is signalled or the clock reaches deadline
// (ns). It returns how many signals arrived since the last wait (0 on
// timeout) and the time passed to the newest of them. It does not allocate.
// A Close meanwhile waits for it to return (at the latest at deadline).
func (e *Event) WaitUntil(deadline int64) (n uint64, at int64, err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, 0, ErrClosed
	}
	for {
		if n, ok, err := e.take(); err != nil || ok {
			return n, e.last.Load(), err
		}
		left := deadline - e.c.Now()
		if left <= 0 {
			return 0, 0, nil
		}
		e.ts = unix.NsecToTimespec(left)
		if _, err := unix.Ppoll(e.pfd[:], &e.ts, nil); err != nil && err != unix.EINTR {
			return 0, 0, fmt.Errorf("realtime: event wait: %w", err)
		}
	}
}

// take reads and resets the counter without blocking.
func (e *Event) take() (uint64, bool, error) {
	for {
		_, err := unix.Read(e.fd, e.rb[:])
		switch err {
		case nil:
			n := uint64(e.rb[0]) | uint64(e.rb[1])<<8 | uint64(e.rb[2])<<16 | uint64(e.rb[3])<<24 |
				uint64(e.rb[4])<<32 | uint64(e.rb[5])<<40 | uint64(e.rb[6])<<48 | uint64(e.rb[7])<<56
			return n, true, nil
		case unix.EAGAIN:
			return 0, false, nil
		case unix.EINTR:
			continue
		default:
			return 0, false, fmt.Errorf("realtime: event read: %w", err)
		}
	}
}

// Close closes the eventfd. It is idempotent.
func (e *Event) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return unix.Close(e.fd)
}
