package meca500

import (
	"sync/atomic"
	"time"
)

// view is what the loop thread reads each tick: the newest sample and what
// decides whether the arm can take a command. Whoever changes the arm's
// state publishes it whole on releasing Arm.mu (Arm.unlock), so that a tick
// never waits for that mutex: the reader goroutine runs at an ordinary
// priority, and when it lost its CPU while holding the mutex, a 1 kHz loop
// waited up to 2.6 ms for it under HTTP load (docs/realtime.md §17).
type view struct {
	connected bool
	latched   bool // a stop only a person ends
	ready     bool // state.readyErr() == nil
	haveSamp  bool
	sample    cycle
	sampleAt  time.Time
	flags     [7]bool
	errCode   int
}

// viewBuf is a triple buffer of views: one writer at a time (under
// Arm.mu), one reader (the loop thread), neither of which ever waits. The
// writer fills its back buffer and swaps it with the middle one; the reader
// swaps its front buffer with the middle one when a newer view is there.
type viewBuf struct {
	bufs  [3]view
	mid   atomic.Uint32 // index of the middle buffer, | freshView when newer than the front
	back  uint32        // the writer's, under Arm.mu
	front uint32        // the reader's
}

const freshView = 4

func (b *viewBuf) init() { b.back, b.front = 0, 2; b.mid.Store(1) }

// next is the buffer to fill, under Arm.mu.
func (b *viewBuf) next() *view { return &b.bufs[b.back] }

// publish makes the filled buffer the newest view.
func (b *viewBuf) publish() { b.back = b.mid.Swap(b.back|freshView) &^ freshView }

// read returns the newest published view; the loop thread only.
func (b *viewBuf) read() *view {
	if b.mid.Load()&freshView != 0 {
		b.front = b.mid.Swap(b.front) &^ freshView
	}
	return &b.bufs[b.front]
}

// unlock publishes the state for the loop thread and releases a.mu. Every
// release of a.mu goes through it, so no change of state can miss the view.
func (a *Arm) unlock() {
	a.publishLocked()
	a.mu.Unlock()
}

// canMove is readyErr() == nil without building the error.
func (st *state) canMove() bool {
	if !st.connected {
		return false
	}
	for i, s := range st.safety {
		if s != 0 && i < len(slotCodes) {
			return false
		}
	}
	s := st.status
	return !s.Error && s.Activated && s.Homed && !s.Paused
}
