// Package zmtp carries the messages of a ZeroMQ REQ or REP socket over one
// TCP connection that the caller owns (ZMTP 3.0, rfc.zeromq.org spec 23;
// docs/vrep.md "ZMQ remote API"). The greeting and the NULL security
// handshake are github.com/go-zeromq/zmq4's; the frames after it are read
// here, into a buffer that never grows past a limit, because zmq4 allocates
// whatever length a peer announces, and because a caller on a control loop
// needs deadlines on its own socket and no allocation per message.
//
// One request or reply is two frames: an empty delimiter, then the body
// (the envelope a REQ socket adds and a REP socket returns). A PING command
// (ZMTP 3.1 heartbeats) is answered with a PONG; other commands are skipped.
package zmtp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// Sentinels of this package's errors.
var (
	// ErrTooLarge: a peer announced a frame longer than the limit.
	ErrTooLarge = errors.New("zmtp: frame too large")
	// ErrProtocol: a peer broke the framing or the envelope.
	ErrProtocol = errors.New("zmtp: protocol error")
	// ErrHandshake: the greeting or the security handshake failed.
	ErrHandshake = errors.New("zmtp: handshake failed")
)

// DefaultLimit bounds a frame when the caller gives no limit (1 MiB).
const DefaultLimit = 1 << 20

const (
	flagMore    = 0x01
	flagLong    = 0x02
	flagCommand = 0x04

	greetingLen = 64
)

// Conn is one ZMTP connection after its handshake. It is not safe for
// concurrent use; deadlines are set on it as on the net.Conn underneath.
type Conn struct {
	nc    net.Conn
	limit int
	buf   []byte // the body of the last message read
	wbuf  []byte
	hdr   [9]byte
	// torn: a read or write failed part way through a message, so the
	// stream no longer starts at a message (Torn).
	torn   bool
	midway bool // the Recv under way has read part of a frame
	// Peer is the peer's socket type from its READY command ("REQ", "REP").
	Peer string
}

// Handshake greets the peer on nc as a socket of type typ (zmq4.Req or
// zmq4.Rep) and runs the NULL security handshake; it must finish before
// deadline. limit bounds every frame, the handshake's included (0:
// DefaultLimit). On error nc is left open for the caller to close.
func Handshake(nc net.Conn, typ zmq4.SocketType, limit int, deadline time.Time) (*Conn, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	g := &guard{Conn: nc, limit: uint64(limit), skip: greetingLen}
	zc, err := zmq4.Open(g, null.Security(), typ, nil, typ == zmq4.Rep, nil)
	if err != nil {
		if g.err != nil {
			return nil, g.err
		}
		return nil, fmt.Errorf("%w with %v: %w", ErrHandshake, nc.RemoteAddr(), err)
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	return &Conn{nc: nc, limit: limit, buf: make([]byte, 0, 4096), wbuf: make([]byte, 0, 4096),
		Peer: zc.Peer.Meta["Socket-Type"]}, nil
}

// NetConn is the connection underneath, for deadlines and Close.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// SetDeadline sets the deadline of the reads and writes that follow.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// Torn reports whether a Send or Recv failed part way through a message:
// the stream is then out of step with the peer and only a new connection
// mends it. A Recv that timed out before the first byte of a message is
// not torn: the message can still be read whole by the next Recv.
func (c *Conn) Torn() bool { return c.torn }

// Send writes one message, the empty delimiter and body, in one write.
// It allocates only when body outgrows the largest message sent before.
// A failed Send leaves the connection torn: part of it may have left.
func (c *Conn) Send(body []byte) error {
	b := append(c.wbuf[:0], flagMore, 0)
	if len(body) > 255 {
		b = append(b, flagLong)
		b = binary.BigEndian.AppendUint64(b, uint64(len(body)))
	} else {
		b = append(b, 0, byte(len(body)))
	}
	b = append(b, body...)
	c.wbuf = b
	if _, err := c.nc.Write(b); err != nil {
		c.torn = true
		return fmt.Errorf("zmtp: sending %d bytes to %v: %w", len(body), c.nc.RemoteAddr(), err)
	}
	return nil
}

// Recv reads one message and returns its body, valid until the next Recv.
// Frames before the empty delimiter (a ROUTER's routing identities, which
// a direct REQ/REP pair never has) are refused.
func (c *Conn) Recv() ([]byte, error) {
	b, err := c.recv()
	if err != nil {
		c.torn = c.torn || c.midway
	}
	return b, err
}

func (c *Conn) recv() ([]byte, error) {
	c.buf = c.buf[:0]
	c.midway = false
	frames := 0
	for {
		flags, n, err := c.header()
		if err != nil {
			// Before a message's first byte the stream is still whole.
			c.midway = c.midway || frames > 0
			return nil, err
		}
		if flags&flagCommand != 0 {
			if err := c.command(n); err != nil {
				c.midway = true
				return nil, err
			}
			continue
		}
		start := len(c.buf)
		if err := c.read(n); err != nil {
			c.midway = true
			return nil, err
		}
		frames++
		if frames == 1 && n != 0 {
			return nil, fmt.Errorf("%w: a message from %v starts with a %d-byte frame, not the empty delimiter", ErrProtocol, c.nc.RemoteAddr(), n)
		}
		if frames == 2 {
			c.buf = c.buf[start:]
		}
		if flags&flagMore == 0 {
			if frames != 2 {
				return nil, fmt.Errorf("%w: a message from %v has %d frame(s), want the delimiter and a body", ErrProtocol, c.nc.RemoteAddr(), frames)
			}
			return c.buf, nil
		}
		if frames >= 2 {
			return nil, fmt.Errorf("%w: a message from %v has more than two frames", ErrProtocol, c.nc.RemoteAddr())
		}
	}
}

// header reads a frame header: flags and length.
func (c *Conn) header() (byte, int, error) {
	if n, err := io.ReadFull(c.nc, c.hdr[:2]); err != nil {
		c.midway = n > 0
		return 0, 0, c.ioErr(err)
	}
	flags := c.hdr[0]
	if flags&^(flagMore|flagLong|flagCommand) != 0 {
		return 0, 0, fmt.Errorf("%w: frame flags %#02x from %v", ErrProtocol, flags, c.nc.RemoteAddr())
	}
	n := uint64(c.hdr[1])
	if flags&flagLong != 0 {
		if _, err := io.ReadFull(c.nc, c.hdr[2:9]); err != nil {
			c.midway = true
			return 0, 0, c.ioErr(err)
		}
		n = binary.BigEndian.Uint64(c.hdr[1:9])
	}
	if n > uint64(c.limit) {
		return 0, 0, fmt.Errorf("%w: %v announced %d bytes, the limit is %d", ErrTooLarge, c.nc.RemoteAddr(), n, c.limit)
	}
	return flags, int(n), nil
}

// read appends n bytes of body to c.buf.
func (c *Conn) read(n int) error {
	start := len(c.buf)
	if start+n > c.limit {
		return fmt.Errorf("%w: a message from %v longer than %d bytes", ErrTooLarge, c.nc.RemoteAddr(), c.limit)
	}
	if cap(c.buf) < start+n {
		nb := make([]byte, start, min(max(2*cap(c.buf), start+n), c.limit))
		copy(nb, c.buf)
		c.buf = nb
	}
	c.buf = c.buf[:start+n]
	if _, err := io.ReadFull(c.nc, c.buf[start:]); err != nil {
		return c.ioErr(err)
	}
	return nil
}

// command handles a command frame of n bytes: PING is answered, the rest
// skipped.
func (c *Conn) command(n int) error {
	start := len(c.buf)
	if err := c.read(n); err != nil {
		return err
	}
	body := c.buf[start:]
	c.buf = c.buf[:start]
	if len(body) < 1 || int(body[0]) > len(body)-1 {
		return fmt.Errorf("%w: a malformed command from %v", ErrProtocol, c.nc.RemoteAddr())
	}
	if string(body[1:1+body[0]]) != "PING" { // compared, not allocated
		return nil
	}
	// PING: TTL (2 bytes), context (≤ 16 bytes); PONG echoes the context.
	ctx := body[1+body[0]:]
	if len(ctx) < 2 {
		return fmt.Errorf("%w: a PING without TTL from %v", ErrProtocol, c.nc.RemoteAddr())
	}
	ctx = ctx[2:]
	if len(ctx) > 16 {
		ctx = ctx[:16]
	}
	pong := append(c.wbuf[:0], flagCommand, byte(5+len(ctx)), 4, 'P', 'O', 'N', 'G')
	pong = append(pong, ctx...)
	c.wbuf = pong
	if _, err := c.nc.Write(pong); err != nil {
		return c.ioErr(err)
	}
	return nil
}

func (c *Conn) ioErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("zmtp: %v closed the connection in the middle of a frame: %w", c.nc.RemoteAddr(), err)
	}
	return fmt.Errorf("zmtp: %v: %w", c.nc.RemoteAddr(), err)
}

// guard checks every frame length that passes during the handshake before
// zmq4 sees it whole, so that a peer cannot make it allocate more than
// limit. It reads ahead into a small buffer to see a length entire.
type guard struct {
	net.Conn
	limit uint64
	skip  int // greeting bytes still to pass unparsed
	// The frame parser.
	state int // 0 flags, 1 short length, 2..9 long length bytes, 10 body
	flags byte
	size  uint64
	body  uint64
	err   error
}

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.Conn.Read(p)
	for _, b := range p[:n] {
		if g.skip > 0 {
			g.skip--
			continue
		}
		switch {
		case g.state == 0:
			g.flags, g.size = b, 0
			g.state = 1
			if b&flagLong != 0 {
				g.state = 2
			}
		case g.state == 1:
			g.size = uint64(b)
			g.enter()
		case g.state >= 2 && g.state < 10:
			g.size = g.size<<8 | uint64(b)
			if g.state == 9 {
				g.enter()
			} else {
				g.state++
			}
		default:
			g.body--
			if g.body == 0 {
				g.state = 0
			}
		}
		if g.err != nil {
			return 0, g.err
		}
	}
	return n, err
}

func (g *guard) enter() {
	if g.size > g.limit {
		g.err = fmt.Errorf("%w: %v announced a %d-byte handshake frame, the limit is %d", ErrTooLarge, g.Conn.RemoteAddr(), g.size, g.limit)
		return
	}
	g.body = g.size
	g.state = 10
	if g.body == 0 {
		g.state = 0
	}
}
