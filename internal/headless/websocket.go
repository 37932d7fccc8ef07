package headless

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// The WebSocket errors (RFC 6455).
var (
	// ErrHandshake: the server did not upgrade the connection.
	ErrHandshake = errors.New("headless: websocket handshake refused")
	// ErrFrame: the server sent a frame the protocol forbids.
	ErrFrame = errors.New("headless: bad websocket frame")
	// ErrClosed: the server closed the WebSocket.
	ErrClosed = errors.New("headless: websocket closed")
)

// maxMessage bounds one message: a full-page screenshot of a tall page,
// in base64, is a few MB.
const maxMessage = 64 << 20

const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// wsConn is the client end of a WebSocket: one reader (ReadMessage is not
// safe for concurrent use), any number of writers.
type wsConn struct {
	conn net.Conn
	r    *bufio.Reader
	wmu  sync.Mutex
}

// dialWebSocket opens a WebSocket to a ws:// URL; ctx bounds the dial and
// the handshake only.
func dialWebSocket(ctx context.Context, rawURL string) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "ws" || u.Host == "" {
		return nil, fmt.Errorf("headless: websocket URL %q: want ws://host:port/path: %w", rawURL, ErrHandshake)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("headless: websocket %s: %w", rawURL, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	var key [16]byte
	rand.Read(key[:])
	k := base64.StdEncoding.EncodeToString(key[:])
	req := &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, Header: http.Header{
		"Upgrade":               {"websocket"},
		"Connection":            {"Upgrade"},
		"Sec-Websocket-Key":     {k},
		"Sec-Websocket-Version": {"13"},
	}}
	// The request in the form RFC 6455 §4.1 asks (http.Request.Write
	// would add a body framing a GET does not have).
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	if err := req.Header.Write(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("headless: websocket %s: %w", rawURL, err)
	}
	if _, err := io.WriteString(conn, "\r\n"); err != nil {
		conn.Close()
		return nil, fmt.Errorf("headless: websocket %s: %w", rawURL, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("headless: websocket %s: %w", rawURL, err)
	}
	sum := sha1.Sum([]byte(k + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != http.StatusSwitchingProtocols ||
		resp.Header.Get("Sec-Websocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		conn.Close()
		return nil, fmt.Errorf("headless: websocket %s answered %q: %w", rawURL, resp.Status, ErrHandshake)
	}
	if ctx.Err() != nil {
		conn.Close()
		return nil, fmt.Errorf("headless: websocket %s: %w", rawURL, ctx.Err())
	}
	conn.SetDeadline(time.Time{})
	return &wsConn{conn: conn, r: br}, nil
}

// WriteText sends p as one masked text frame, by deadline (zero: none).
func (w *wsConn) WriteText(p []byte, deadline time.Time) error {
	return w.writeFrame(opText, p, deadline)
}

func (w *wsConn) writeFrame(op byte, p []byte, deadline time.Time) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	hdr := make([]byte, 2, 14)
	hdr[0] = 0x80 | op // FIN: the client never fragments
	switch n := len(p); {
	case n < 126:
		hdr[1] = 0x80 | byte(n)
	case n <= 0xFFFF:
		hdr[1] = 0x80 | 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 0x80 | 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	// A client masks every frame (RFC 6455 §5.3).
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	buf := make([]byte, len(hdr)+len(p))
	copy(buf, hdr)
	for i, b := range p {
		buf[len(hdr)+i] = b ^ mask[i%4]
	}
	w.conn.SetWriteDeadline(deadline)
	if _, err := w.conn.Write(buf); err != nil {
		return fmt.Errorf("headless: websocket write: %w", err)
	}
	return nil
}

// ReadMessage returns the next text or binary message, put together from
// its fragments; it answers pings on the way.
func (w *wsConn) ReadMessage() ([]byte, error) {
	var msg []byte
	inMessage := false
	for {
		fin, op, payload, err := w.readFrame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := w.writeFrame(opPong, payload, time.Now().Add(10*time.Second)); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			// Echo the close, as §5.5.1 asks; the connection is over either way.
			w.writeFrame(opClose, payload, time.Now().Add(time.Second))
			return nil, ErrClosed
		case opText, opBinary:
			if inMessage {
				return nil, fmt.Errorf("headless: websocket opcode %#x inside a fragmented message: %w", op, ErrFrame)
			}
			inMessage = true
		case opContinuation:
			if !inMessage {
				return nil, fmt.Errorf("headless: websocket continuation frame outside a message: %w", ErrFrame)
			}
		default:
			return nil, fmt.Errorf("headless: websocket opcode %#x: %w", op, ErrFrame)
		}
		if len(msg)+len(payload) > maxMessage {
			return nil, fmt.Errorf("headless: websocket message over %d bytes: %w", maxMessage, ErrFrame)
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

func (w *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(w.r, h[:]); err != nil {
		return false, 0, nil, fmt.Errorf("headless: websocket read: %w", err)
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0F
	if h[0]&0x70 != 0 {
		return false, 0, nil, fmt.Errorf("headless: websocket reserved bits %#x set: %w", h[0]&0x70, ErrFrame)
	}
	if h[1]&0x80 != 0 {
		return false, 0, nil, fmt.Errorf("headless: websocket frame from the server is masked: %w", ErrFrame)
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(w.r, b[:]); err != nil {
			return false, 0, nil, fmt.Errorf("headless: websocket read: %w", err)
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(w.r, b[:]); err != nil {
			return false, 0, nil, fmt.Errorf("headless: websocket read: %w", err)
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if op >= opClose && (n > 125 || !fin) {
		return false, 0, nil, fmt.Errorf("headless: websocket control frame %#x of %d bytes, fin %v: %w", op, n, fin, ErrFrame)
	}
	if n > maxMessage {
		return false, 0, nil, fmt.Errorf("headless: websocket frame of %d bytes, over %d: %w", n, maxMessage, ErrFrame)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(w.r, payload); err != nil {
		return false, 0, nil, fmt.Errorf("headless: websocket read: %w", err)
	}
	return fin, op, payload, nil
}

// Close closes the connection without the closing handshake: the
// browser is killed right after.
func (w *wsConn) Close() error { return w.conn.Close() }
