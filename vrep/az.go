// Package vrep relays a link to a V-REP or CoppeliaSim scene (docs/vrep.md):
// the seed's "AZ" socket exchange, one TCP connection per exchange, byte for
// byte (§1), and CoppeliaSim's ZMQ remote API, protocol version 2, with
// lock-step simulation (§4). A Scene is a plant: the loop's Measure and
// Command never wait on TCP, a worker goroutine of the scene does the I/O.
package vrep

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The AZ exchange (docs/vrep.md §1): a 10-byte request, a 14-byte reply,
// both starting with the magic 'A','Z', floats little-endian float32.
const (
	RequestLen = 10
	ReplyLen   = 14
	// DefaultAZAddress is the seed's server: the scene's threaded script
	// listens on loopback only.
	DefaultAZAddress = "127.0.0.1:33211"
)

// Magic starts every AZ request and reply.
var Magic = [2]byte{'A', 'Z'}

// Sentinels of this package's errors.
var (
	// ErrLength: a buffer of the wrong length for an AZ message.
	ErrLength = errors.New("vrep: wrong message length")
	// ErrRange: a value float32 cannot carry (NaN, ±Inf, beyond ±3.4e38).
	ErrRange = errors.New("vrep: value out of float32 range")
	// ErrConfig: an invalid configuration.
	ErrConfig = errors.New("vrep: invalid configuration")
	// ErrClosed: the scene was used after Close.
	ErrClosed = errors.New("vrep: scene closed")
)

// MagicError is a message that does not start with 'A','Z'.
type MagicError struct{ Got [2]byte }

func (e *MagicError) Error() string {
	return fmt.Sprintf("vrep: message starts with %#02x %#02x, not 'A','Z'", e.Got[0], e.Got[1])
}

// Request is an AZ request: the two wheels' target velocities (rad/s for
// revolute joints).
type Request struct{ Left, Right float32 }

// Reply is an AZ reply: the simulation time (s), read before the request
// was applied, and the two joints' angles (rad), read after.
type Reply struct{ Time, Left, Right float32 }

// MarshalTo writes the 10 bytes of r into b and returns 10.
func (r Request) MarshalTo(b []byte) (int, error) {
	if len(b) < RequestLen {
		return 0, fmt.Errorf("%w: %d bytes of buffer for a %d-byte request", ErrLength, len(b), RequestLen)
	}
	b[0], b[1] = Magic[0], Magic[1]
	binary.LittleEndian.PutUint32(b[2:], math.Float32bits(r.Left))
	binary.LittleEndian.PutUint32(b[6:], math.Float32bits(r.Right))
	return RequestLen, nil
}

// Unmarshal reads a request from exactly 10 bytes. A wrong magic is a
// *MagicError, and r is left unchanged, as the seed's server leaves the
// velocities (it answers "bad data").
func (r *Request) Unmarshal(b []byte) error {
	if len(b) != RequestLen {
		return fmt.Errorf("%w: %d bytes, an AZ request has %d", ErrLength, len(b), RequestLen)
	}
	if b[0] != Magic[0] || b[1] != Magic[1] {
		return &MagicError{Got: [2]byte{b[0], b[1]}}
	}
	r.Left = math.Float32frombits(binary.LittleEndian.Uint32(b[2:]))
	r.Right = math.Float32frombits(binary.LittleEndian.Uint32(b[6:]))
	return nil
}

// MarshalTo writes the 14 bytes of r into b and returns 14.
func (r Reply) MarshalTo(b []byte) (int, error) {
	if len(b) < ReplyLen {
		return 0, fmt.Errorf("%w: %d bytes of buffer for a %d-byte reply", ErrLength, len(b), ReplyLen)
	}
	b[0], b[1] = Magic[0], Magic[1]
	binary.LittleEndian.PutUint32(b[2:], math.Float32bits(r.Time))
	binary.LittleEndian.PutUint32(b[6:], math.Float32bits(r.Left))
	binary.LittleEndian.PutUint32(b[10:], math.Float32bits(r.Right))
	return ReplyLen, nil
}

// Unmarshal reads a reply from exactly 14 bytes. A wrong magic is a
// *MagicError and r is left unchanged.
func (r *Reply) Unmarshal(b []byte) error {
	if len(b) != ReplyLen {
		return fmt.Errorf("%w: %d bytes, an AZ reply has %d", ErrLength, len(b), ReplyLen)
	}
	if b[0] != Magic[0] || b[1] != Magic[1] {
		return &MagicError{Got: [2]byte{b[0], b[1]}}
	}
	r.Time = math.Float32frombits(binary.LittleEndian.Uint32(b[2:]))
	r.Left = math.Float32frombits(binary.LittleEndian.Uint32(b[6:]))
	r.Right = math.Float32frombits(binary.LittleEndian.Uint32(b[10:]))
	return nil
}

// Narrow converts x to float32, refusing what float32 cannot carry: NaN,
// ±Inf and magnitudes beyond math.MaxFloat32. A value that rounds to a
// neighbour is fine; one that would become ±Inf is not.
func Narrow(x float64) (float32, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
		return 0, fmt.Errorf("%w: %v", ErrRange, x)
	}
	return float32(x), nil
}

// Reason classifies a failed exchange, for the link's message and the
// failures-by-reason metric.
type Reason uint8

// Reasons of a failed exchange.
const (
	ReasonOther    Reason = iota // none of the others: a bug of the relay, report it
	ReasonRefused                // nothing listens: the simulation is not started
	ReasonTimeout                // no connection or no reply before the deadline
	ReasonClosed                 // the scene closed without a byte of reply
	ReasonShort                  // the scene sent part of a reply, then closed
	ReasonMagic                  // the reply does not start with 'A','Z'
	ReasonReset                  // the scene reset the connection
	ReasonValue                  // the reply carries NaN or ±Inf
	ReasonRemote                 // the remote API answered with an error
	ReasonProtocol               // the remote API broke its protocol
	ReasonDropped                // a call on a connection dropped after an earlier failure (ZMQ)
	ReasonStopped                // the simulation was stopped in CoppeliaSim (ZMQ)
	numReasons
)

var reasonNames = [numReasons]string{"other", "refused", "timeout", "closed", "short", "magic", "reset", "value", "remote", "protocol", "dropped", "stopped"}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "other"
}

// Reasons lists every reason, for metrics that want a series for each.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// ExchangeError is a failed exchange with the scene: where it failed, why,
// and with which address.
type ExchangeError struct {
	Addr   string
	Reason Reason
	Got    int           // reply bytes received (ReasonShort)
	Within time.Duration // the deadline (ReasonTimeout)
	Err    error
}

func (e *ExchangeError) Error() string {
	switch e.Reason {
	case ReasonRefused:
		return fmt.Sprintf("vrep: connection refused on %s: is the simulation started?", e.Addr)
	case ReasonTimeout:
		return fmt.Sprintf("vrep: no reply from %s within %v: is the simulation paused, or its script too slow?", e.Addr, e.Within)
	case ReasonClosed:
		return fmt.Sprintf("vrep: %s closed the connection without a reply: does the scene's script speak the AZ protocol?", e.Addr)
	case ReasonShort:
		return fmt.Sprintf("vrep: %s sent %d of the %d reply bytes, then closed", e.Addr, e.Got, ReplyLen)
	case ReasonMagic, ReasonValue:
		return fmt.Sprintf("vrep: reply from %s: %s", e.Addr, strings.TrimPrefix(e.Err.Error(), "vrep: "))
	case ReasonReset:
		return fmt.Sprintf("vrep: %s reset the connection: is the scene's script running?", e.Addr)
	case ReasonDropped:
		return fmt.Sprintf("vrep: the connection to %s was dropped after an earlier failure; reconnecting", e.Addr)
	case ReasonStopped:
		return fmt.Sprintf("vrep: the simulation at %s was stopped in CoppeliaSim", e.Addr)
	}
	return fmt.Sprintf("vrep: exchange with %s: %s", e.Addr, strings.TrimPrefix(e.Err.Error(), "vrep: "))
}

func (e *ExchangeError) Unwrap() error { return e.Err }

// classify turns a network error into an *ExchangeError.
func classify(addr string, within time.Duration, err error) *ExchangeError {
	e := &ExchangeError{Addr: addr, Err: err, Within: within}
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Reason = ReasonRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		e.Reason = ReasonReset
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		e.Reason = ReasonTimeout
	case errors.Is(err, io.EOF):
		e.Reason = ReasonClosed
	}
	return e
}

// AZClient makes AZ exchanges with a scene, one TCP connection each, as the
// seed's client does: connect, write 10 bytes, read exactly 14, check the
// magic, close. It calls the socket system calls itself, blocking in poll
// on the caller's goroutine: the exchange is the caller's whole business (a
// scene's worker), and Go's network poller would add a scheduler round
// trip to each step of a 40 µs exchange and allocate a connection per tick.
// Not safe for concurrent use.
type AZClient struct {
	addr    string
	timeout time.Duration
	sa      unix.Sockaddr // resolved; nil after a failure, to resolve again
	family  int
	pfd     [1]unix.PollFd
	// lingers: the scene was seen to wait for the client's close; the
	// client then closes at once (awaitClose).
	lingers bool
	req     [RequestLen]byte
	rep     [ReplyLen]byte
}

// NewAZClient returns a client of the scene at addr (host:port) whose
// exchanges, connection included, end within timeout.
func NewAZClient(addr string, timeout time.Duration) (*AZClient, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("%w: address %q: want host:port such as %s", ErrConfig, addr, DefaultAZAddress)
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("%w: exchange timeout %v: want > 0", ErrConfig, timeout)
	}
	return &AZClient{addr: addr, timeout: timeout}, nil
}

// Addr is the scene's address.
func (c *AZClient) Addr() string { return c.addr }

// resolve finds the scene's socket address; a host name is looked up again
// after every failed exchange, an IP address once.
func (c *AZClient) resolve() error {
	if c.sa != nil {
		return nil
	}
	ta, err := net.ResolveTCPAddr("tcp", c.addr)
	if err != nil {
		return err
	}
	if ip4 := ta.IP.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: ta.Port}
		copy(sa.Addr[:], ip4)
		c.sa, c.family = sa, unix.AF_INET
		return nil
	}
	sa := &unix.SockaddrInet6{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To16())
	c.sa, c.family = sa, unix.AF_INET6
	return nil
}

// Exchange sends req and returns the scene's reply. Errors are
// *ExchangeError. It allocates nothing (but an error).
func (c *AZClient) Exchange(req Request) (Reply, error) {
	deadline := time.Now().Add(c.timeout)
	if err := c.resolve(); err != nil {
		return Reply{}, c.fail(err)
	}
	fd, err := unix.Socket(c.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return Reply{}, c.fail(os.NewSyscallError("socket", err))
	}
	defer unix.Close(fd)
	// As the seed's script sends its reply in one piece, nothing waits on
	// Nagle; the request is one segment either way.
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if err := unix.Connect(fd, c.sa); err != nil {
		if err != unix.EINPROGRESS {
			return Reply{}, c.fail(os.NewSyscallError("connect", err))
		}
		if err := c.wait(fd, unix.POLLOUT, deadline); err != nil {
			return Reply{}, c.fail(err)
		}
		if soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soerr != 0 {
			if err == nil {
				err = syscall.Errno(soerr)
			}
			return Reply{}, c.fail(os.NewSyscallError("connect", err))
		}
	}
	req.MarshalTo(c.req[:])
	if err := c.write(fd, deadline); err != nil {
		return Reply{}, c.fail(err)
	}
	// Short reads are looped: TCP may deliver the 14 bytes in pieces.
	got := 0
	for got < ReplyLen {
		if err := c.wait(fd, unix.POLLIN, deadline); err != nil {
			return Reply{}, c.short(got, err)
		}
		n, err := unix.Read(fd, c.rep[got:])
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			continue
		case err != nil:
			return Reply{}, c.short(got, os.NewSyscallError("read", err))
		case n == 0:
			return Reply{}, c.short(got, io.EOF)
		}
		got += n
	}
	c.awaitClose(fd, deadline)
	var rep Reply
	if err := rep.Unmarshal(c.rep[:]); err != nil {
		return Reply{}, &ExchangeError{Addr: c.addr, Reason: ReasonMagic, Err: err}
	}
	for _, v := range [3]float32{rep.Time, rep.Left, rep.Right} {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return Reply{}, &ExchangeError{Addr: c.addr, Reason: ReasonValue, Err: fmt.Errorf("%w: the scene sent %v", ErrRange, v)}
		}
	}
	return rep, nil
}

// closeWait bounds how long the client waits for the scene to close first.
const closeWait = 5 * time.Millisecond

// awaitClose waits, briefly, for the scene to close the connection before
// the client does: the seed's script closes right after its reply, and the
// side that closes first keeps the connection in TIME_WAIT for a minute.
// On the scene's side that costs nothing; on the client's, every exchange
// would hold a local port for a minute, and a scene on another machine
// would run the client out of ports at about 470 exchanges/s
// (docs/vrep.md §2). A scene that waits for the client instead is closed on
// after closeWait, and at once from then on.
func (c *AZClient) awaitClose(fd int, deadline time.Time) {
	if c.lingers {
		return
	}
	d := time.Now().Add(closeWait)
	ours := d.Before(deadline) // the wait ends on closeWait, not on the exchange's deadline
	if ours {
		deadline = d
	}
	var b [1]byte
	for {
		if err := c.wait(fd, unix.POLLIN|unix.POLLRDHUP, deadline); err != nil {
			c.lingers = ours && errors.Is(err, os.ErrDeadlineExceeded)
			return
		}
		n, err := unix.Read(fd, b[:])
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if n <= 0 || err != nil { // the scene's FIN, or a reset: done
			return
		}
		// More than 14 bytes: not the seed's script; close on it.
		return
	}
}

// write sends the request; 10 bytes fit an empty socket buffer at once.
func (c *AZClient) write(fd int, deadline time.Time) error {
	sent := 0
	for sent < RequestLen {
		n, err := unix.Write(fd, c.req[sent:])
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			if err := c.wait(fd, unix.POLLOUT, deadline); err != nil {
				return err
			}
			continue
		case err != nil:
			return os.NewSyscallError("write", err)
		}
		sent += n
	}
	return nil
}

// wait polls fd for events until deadline; a peer's reset or hang-up
// returns so that the read or write that follows reports it.
func (c *AZClient) wait(fd int, events int16, deadline time.Time) error {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		c.pfd[0] = unix.PollFd{Fd: int32(fd), Events: events}
		// Round up: poll's unit is the millisecond, and 0 would not wait.
		n, err := unix.Poll(c.pfd[:], int((left+time.Millisecond-1)/time.Millisecond))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("poll", err)
		case n > 0:
			return nil
		}
	}
}

func (c *AZClient) fail(err error) *ExchangeError {
	c.sa = nil
	return classify(c.addr, c.timeout, err)
}

// short classifies a failed read after got bytes of reply.
func (c *AZClient) short(got int, err error) *ExchangeError {
	e := c.fail(err)
	if got > 0 && e.Reason != ReasonTimeout && e.Reason != ReasonReset {
		e.Reason, e.Got = ReasonShort, got
	}
	return e
}
