package headless

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// wsServer accepts one WebSocket on 127.0.0.1:0 and runs serve on it; it
// is waited on at the test's end.
func wsServer(t *testing.T, accept func(key string) string, serve func(c net.Conn, r *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		r := bufio.NewReader(c)
		req, err := http.ReadRequest(r)
		if err != nil {
			t.Errorf("server: %v", err)
			return
		}
		if req.Header.Get("Upgrade") != "websocket" || req.Header.Get("Sec-Websocket-Version") != "13" {
			t.Errorf("server: handshake headers %v", req.Header)
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+
			accept(req.Header.Get("Sec-Websocket-Key"))+"\r\n\r\n")
		serve(c, r)
	}()
	return "ws://" + ln.Addr().String() + "/devtools/page/x"
}

func acceptKey(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// frame is a server's frame: never masked.
func frame(fin bool, op byte, p []byte) []byte {
	b := []byte{op, 0}
	if fin {
		b[0] |= 0x80
	}
	switch {
	case len(p) < 126:
		b[1] = byte(len(p))
	case len(p) <= 0xFFFF:
		b[1] = 126
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
	default:
		b[1] = 127
		b = binary.BigEndian.AppendUint64(b, uint64(len(p)))
	}
	return append(b, p...)
}

// readClientFrame reads one frame of the client and unmasks it; a client
// frame without a mask is an error.
func readClientFrame(t *testing.T, r *bufio.Reader) (op byte, p []byte) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Errorf("server read: %v", err)
		return 0, nil
	}
	if h[1]&0x80 == 0 {
		t.Error("the client sent an unmasked frame")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(r, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(r, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	var mask [4]byte
	io.ReadFull(r, mask[:])
	p = make([]byte, n)
	io.ReadFull(r, p)
	for i := range p {
		p[i] ^= mask[i%4]
	}
	return h[0] & 0x0F, p
}

// The client masks what it sends, in every length encoding; puts a
// fragmented message together across a ping, which it answers; and stops
// on a close.
func TestWebSocketFramesAndFragments(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789"), 7000) // over 64 KiB: the 8-byte length
	url := wsServer(t, acceptKey, func(c net.Conn, r *bufio.Reader) {
		for _, want := range [][]byte{[]byte("short"), bytes.Repeat([]byte("m"), 300), big} {
			if op, p := readClientFrame(t, r); op != opText || !bytes.Equal(p, want) {
				t.Errorf("server got opcode %#x, %d bytes, want a text of %d", op, len(p), len(want))
			}
		}
		c.Write(frame(false, opText, []byte(`{"id":1,`)))
		c.Write(frame(true, opPing, []byte("are you there")))
		c.Write(frame(false, opContinuation, []byte(`"result":`)))
		c.Write(frame(true, opContinuation, []byte(`{}}`)))
		if op, p := readClientFrame(t, r); op != opPong || string(p) != "are you there" {
			t.Errorf("server got opcode %#x %q, want the pong", op, p)
		}
		c.Write(frame(true, opBinary, big))
		c.Write(frame(true, opClose, nil))
		if op, _ := readClientFrame(t, r); op != opClose {
			t.Errorf("server got opcode %#x, want the close echoed", op)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ws, err := dialWebSocket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, p := range [][]byte{[]byte("short"), bytes.Repeat([]byte("m"), 300), big} {
		if err := ws.WriteText(p, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if msg, err := ws.ReadMessage(); err != nil || string(msg) != `{"id":1,"result":{}}` {
		t.Fatalf("fragmented message: %q, %v", msg, err)
	}
	if msg, err := ws.ReadMessage(); err != nil || !bytes.Equal(msg, big) {
		t.Fatalf("large message: %d bytes, %v", len(msg), err)
	}
	if _, err := ws.ReadMessage(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after the close: %v", err)
	}
}

// A server that answers the handshake with the wrong key, or sends a
// frame the protocol forbids, is refused with the reason.
func TestWebSocketRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	url := wsServer(t, func(string) string { return "wrong" }, func(net.Conn, *bufio.Reader) {})
	if _, err := dialWebSocket(ctx, url); !errors.Is(err, ErrHandshake) {
		t.Errorf("wrong accept key: %v", err)
	}
	if _, err := dialWebSocket(ctx, "http://127.0.0.1:1/"); !errors.Is(err, ErrHandshake) {
		t.Errorf("not a ws:// URL: %v", err)
	}
	for name, bad := range map[string][]byte{
		"masked":                {0x81, 0x80 | 1, 1, 2, 3, 4, 'x'},
		"continuation first":    frame(true, opContinuation, []byte("x")),
		"text inside a message": append(frame(false, opText, []byte("a")), frame(true, opText, []byte("b"))...),
		"fragmented ping":       frame(false, opPing, nil),
		"reserved bits":         {0xC1, 0},
		"unknown opcode":        frame(true, 0x3, nil),
	} {
		t.Run(name, func(t *testing.T) {
			url := wsServer(t, acceptKey, func(c net.Conn, r *bufio.Reader) {
				c.Write(bad)
				io.Copy(io.Discard, r) // until the client hangs up
			})
			ws, err := dialWebSocket(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if _, err := ws.ReadMessage(); !errors.Is(err, ErrFrame) {
				t.Errorf("ReadMessage: %v, want ErrFrame", err)
			}
		})
	}
}
