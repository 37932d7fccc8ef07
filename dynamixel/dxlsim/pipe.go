package dxlsim

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/dynamixel"
)

// Pipe is an in-memory serial port to a Bus, the client's end of a
// simulated adapter. Write executes the instructions at once, in the
// caller's goroutine, so the replies are ready (or scheduled, under a
// Timing model) when Write returns; nothing runs in the background.
// Neither Write nor Read allocates.
//
// Like go.bug.st/serial, Read returns (0, nil) when the read timeout expires
// (docs/dynamixel.md §14).
type Pipe struct {
	bus *Bus
	st  *stream

	readMu  sync.Mutex // one reader at a time; it owns timer
	timer   *time.Timer
	timeout atomic.Int64 // ns; negative blocks
	gen     atomic.Uint64
	closed  atomic.Bool
	done    chan struct{}
	once    sync.Once
}

var _ dynamixel.Port = (*Pipe)(nil)

// NewPipe connects a new client to bus. Several pipes may share a bus; each
// gets the replies to its own instructions.
func NewPipe(bus *Bus) *Pipe {
	p := &Pipe{bus: bus, st: newStream(bus), timer: time.NewTimer(time.Hour), done: make(chan struct{})}
	p.timer.Stop()
	p.timeout.Store(-1)
	_, gen, _ := bus.plugState()
	p.gen.Store(gen)
	return p
}

// check fails a call on a closed or unplugged pipe, and forgets what was in
// flight when the adapter was unplugged since the last call.
func (p *Pipe) check() (<-chan struct{}, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	unplugged, gen, changed := p.bus.plugState()
	if unplugged {
		return nil, ErrUnplugged
	}
	if old := p.gen.Swap(gen); old != gen {
		p.st.reset()
	}
	return changed, nil
}

// Write sends instruction bytes to the bus.
func (p *Pipe) Write(b []byte) (int, error) {
	if _, err := p.check(); err != nil {
		return 0, err
	}
	p.st.feed(b)
	return len(b), nil
}

// Read returns the reply bytes available, waiting up to the read timeout for
// the first one.
func (p *Pipe) Read(b []byte) (int, error) {
	p.readMu.Lock()
	defer p.readMu.Unlock()
	timeout := time.Duration(p.timeout.Load())
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		changed, err := p.check()
		if err != nil {
			return 0, err
		}
		if len(b) == 0 {
			return 0, nil
		}
		n, next := p.st.out.take(b)
		if n > 0 {
			return n, nil
		}
		if timeout == 0 {
			return 0, nil
		}
		wait := time.Duration(-1) // forever
		if timeout > 0 {
			if wait = time.Until(deadline); wait <= 0 {
				return 0, nil
			}
		}
		if next >= 0 {
			if d := time.Duration(next - p.st.out.now()); wait < 0 || d < wait {
				wait = max(d, 0)
			}
		}
		if wait < 0 {
			select {
			case <-p.st.out.notify:
			case <-changed:
			case <-p.done:
			}
			continue
		}
		p.timer.Reset(wait)
		select {
		case <-p.st.out.notify:
		case <-p.timer.C:
		case <-changed:
		case <-p.done:
		}
		p.timer.Stop()
	}
}

// SetBaud sets the line rate (bit/s) of the instructions written from now
// on: only the servos whose Baud Rate is bps hear them, as on a real line.
// 0, a new pipe's rate, is not modelled: every servo hears at any rate.
func (p *Pipe) SetBaud(bps int) error {
	if bps < 0 {
		return fmt.Errorf("%w: baud %d, want 0 or more", ErrConfig, bps)
	}
	p.st.setLine(bps)
	return nil
}

// SetReadTimeout sets how long Read waits for a first byte; a negative
// timeout waits forever, 0 does not wait.
func (p *Pipe) SetReadTimeout(t time.Duration) error {
	p.timeout.Store(int64(t))
	return nil
}

// ResetInputBuffer discards the reply bytes already received. Bytes still
// on their way (under a Timing model) arrive later, as on a real line.
func (p *Pipe) ResetInputBuffer() error {
	if _, err := p.check(); err != nil {
		return err
	}
	p.st.out.discard()
	return nil
}

// Close closes the pipe; a blocked Read returns ErrClosed.
func (p *Pipe) Close() error {
	p.once.Do(func() {
		p.closed.Store(true)
		close(p.done)
	})
	return nil
}
