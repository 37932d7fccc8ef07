package dxlsim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/internal/pty"
)

// ErrServed is a second call to PTY.Serve, or Close after Serve.
var ErrServed = errors.New("dxlsim: pty already served")

// PTY serves a Bus on a pseudo-terminal, so that a client opens it like a USB
// adapter, through the real termios path (go.bug.st/serial, pyserial). The
// slave starts raw (no echo, no CR/LF mapping). The PTY keeps its own
// descriptor of the slave, so a client may close and reopen it at will
// (docs/dynamixel.md §15).
//
// Unplugging the bus closes the pair and removes the link: the client's Read
// fails (PortClosed or EIO) and a reopen fails with ENOENT, as after a USB
// disconnect (§14). Plugging it back makes a new pair behind the same link.
type PTY struct {
	bus  *Bus
	link string
	used atomic.Bool
	any  atomic.Bool // answer at every line rate

	mu     sync.Mutex // guards the pair, which Serve replaces on a replug
	master *os.File
	slave  *os.File
	path   string
}

// NewPTY opens a pseudo-terminal for bus and, when link is not empty, makes
// link a symbolic link to its slave. Serve it, or Close it.
func NewPTY(bus *Bus, link string) (*PTY, error) {
	p := &PTY{bus: bus, link: link}
	if unplugged, _, _ := bus.plugState(); !unplugged {
		if err := p.open(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ServePTY serves bus on a new pseudo-terminal linked at link until ctx is
// done; see PTY.
func ServePTY(ctx context.Context, bus *Bus, link string) error {
	p, err := NewPTY(bus, link)
	if err != nil {
		return err
	}
	return p.Serve(ctx)
}

// AnswerAnyBaud makes the servos answer whatever line rate the client set
// (on), as the simulator did before it read the rate, or only at their Baud
// Rate (off, the default, as real servos do). It may be called at any time.
func (p *PTY) AnswerAnyBaud(on bool) { p.any.Store(on) }

// Path is what a client opens: the link, or without one the slave's path
// (empty while unplugged).
func (p *PTY) Path() string {
	if p.link != "" {
		return p.link
	}
	return p.SlavePath()
}

// SlavePath is the current slave device (/dev/pts/N), empty while unplugged.
func (p *PTY) SlavePath() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.path
}

func (p *PTY) open() error {
	m, path, err := pty.Open()
	if err != nil {
		return fmt.Errorf("dxlsim: open pseudo-terminal: %w", err)
	}
	s, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return fmt.Errorf("dxlsim: open slave %s: %w", path, err)
	}
	if p.link != "" {
		if err := pty.Link(path, p.link); err != nil {
			m.Close()
			s.Close()
			return fmt.Errorf("dxlsim: link %s: %w", p.link, err)
		}
	}
	p.mu.Lock()
	p.master, p.slave, p.path = m, s, path
	p.mu.Unlock()
	return nil
}

// closePair closes the pair and removes the link if it still points at it.
func (p *PTY) closePair() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.master == nil {
		return
	}
	p.master.Close()
	p.slave.Close()
	if p.link != "" {
		if t, err := os.Readlink(p.link); err == nil && t == p.path {
			os.Remove(p.link)
		}
	}
	p.master, p.slave, p.path = nil, nil, ""
}

// Close releases a PTY that will not be served.
func (p *PTY) Close() error {
	if !p.used.CompareAndSwap(false, true) {
		return ErrServed
	}
	p.closePair()
	return nil
}

// Serve answers the client until ctx is done, then closes the pair, removes
// the link and returns nil. It follows the bus's Unplug and Plug. A failure
// of the pseudo-terminal ends it with an error. It may be called once.
func (p *PTY) Serve(ctx context.Context) error {
	if !p.used.CompareAndSwap(false, true) {
		return ErrServed
	}
	defer p.closePair()
	for {
		unplugged, _, changed := p.bus.plugState()
		if unplugged {
			p.closePair()
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
				continue
			}
		}
		p.mu.Lock()
		m := p.master
		p.mu.Unlock()
		if m == nil {
			if err := p.open(); err != nil {
				return err
			}
			continue
		}
		if err := p.serveConn(ctx, m, changed); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// serveConn runs one pair until ctx is done, the plug changes or the pair
// fails, and closes it. Its reader feeds the bus; its writer delivers the
// replies as the timing model releases them.
func (p *PTY) serveConn(ctx context.Context, m *os.File, changed <-chan struct{}) error {
	st := newStream(p.bus)
	stop := make(chan struct{})
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		errc <- p.readLoop(m, st)
	}()
	go func() {
		defer wg.Done()
		errc <- p.writeLoop(m, st, stop)
	}()
	var err error
	select {
	case <-ctx.Done():
	case <-changed:
	case err = <-errc:
	}
	close(stop)
	p.closePair() // unblocks the reader and a blocked write
	wg.Wait()
	close(errc)
	for e := range errc {
		if err == nil {
			err = e
		}
	}
	return err
}

// readLoop feeds the instruction bytes to the bus until the master closes,
// at the line rate the client set on the slave: a client at a rate no servo
// uses gets no answer. The rate is read after the bytes arrive; a client sets
// its rate before it writes, so it is the rate they were sent at.
func (p *PTY) readLoop(m *os.File, st *stream) error {
	buf := make([]byte, 4096)
	for {
		n, err := m.Read(buf)
		if n > 0 && p.any.Load() {
			st.feedAt(buf[:n], 0)
		} else if n > 0 {
			line, berr := pty.Baud(m)
			if errors.Is(berr, os.ErrClosed) {
				return nil
			}
			if berr != nil {
				return fmt.Errorf("dxlsim: %w", berr)
			}
			if line == 0 {
				line = -1 // B0 hangs the line up: no servo hears it
			}
			st.feedAt(buf[:n], line)
		}
		if errors.Is(err, os.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dxlsim: read pseudo-terminal %s: %w", m.Name(), err)
		}
	}
}

// preciseWait is the longest wait slept on the thread instead of a Go timer.
const preciseWait = 5 * time.Millisecond

// writeLoop writes the replies when due until stop or the master closes.
func (p *PTY) writeLoop(m *os.File, st *stream, stop <-chan struct{}) error {
	// The replies' byte times need a thread that sleeps precisely.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	buf := make([]byte, 4096)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		n, next := st.out.take(buf)
		if n > 0 {
			if _, err := m.Write(buf[:n]); err != nil {
				if errors.Is(err, os.ErrClosed) {
					return nil
				}
				return fmt.Errorf("dxlsim: write pseudo-terminal %s: %w", m.Name(), err)
			}
			continue
		}
		wake := timer.C
		if next >= 0 {
			wait := time.Duration(next - st.out.now())
			if wait > 0 && wait < preciseWait {
				// Go timers wake in whole milliseconds (docs/realtime.md
				// §1); byte times are microseconds. Sleep on this thread.
				ts := unix.NsecToTimespec(int64(wait))
				_ = unix.Nanosleep(&ts, nil)
				continue
			}
			timer.Reset(max(wait, 0))
		} else {
			timer.Stop()
			wake = nil
		}
		select {
		case <-st.out.notify:
		case <-wake:
		case <-stop:
			return nil
		}
	}
}
