package zmtp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/vrep/zmtp"
)

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP port to listen on: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// tcpPair is two ends of a loopback TCP connection: buffered, unlike
// net.Pipe, as both sides of a ZMTP greeting write before they read.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln := listen(t)
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A REQ socket of zmq4 talks to a REP Conn of this package.
func TestRepAgainstZmq4Req(t *testing.T) {
	ln := listen(t)
	peer := serveRep(t, ln, func(body []byte) []byte { return append([]byte("re:"), body...) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := zmq4.NewReq(ctx)
	defer req.Close()
	if err := req.Dial("tcp://" + ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"hello", strings.Repeat("x", 300), ""} {
		if err := req.Send(zmq4.NewMsgString(m)); err != nil {
			t.Fatal(err)
		}
		rep, err := req.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(rep.Bytes()); got != "re:"+m {
			t.Errorf("reply %q", got)
		}
	}
	req.Close()
	if p := <-peer; p != "REQ" {
		t.Errorf("peer %q", p)
	}
}

// serveRep answers the first client on ln with a REP Conn of this package
// until it leaves, replying reply(body); the peer's socket type comes on
// the channel when it has left.
func serveRep(t *testing.T, ln net.Listener, reply func([]byte) []byte) <-chan string {
	peer := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	context.AfterFunc(ctx, func() { ln.Close() })
	wg.Go(func() {
		defer close(peer)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		context.AfterFunc(ctx, func() { nc.Close() })
		c, err := zmtp.Handshake(nc, zmq4.Rep, 0, time.Now().Add(30*time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { peer <- c.Peer }()
		for {
			body, err := c.Recv()
			if err != nil {
				return
			}
			if err := c.Send(reply(body)); err != nil {
				return
			}
		}
	})
	return peer
}

// A REQ Conn of this package talks to a REP socket of zmq4.
func TestReqAgainstZmq4Rep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rep := zmq4.NewRep(ctx)
	defer rep.Close()
	if err := rep.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Skipf("no loopback port: %v", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for {
			m, err := rep.Recv()
			if err != nil {
				return
			}
			rep.Send(zmq4.NewMsg(bytes.ToUpper(m.Bytes())))
		}
	})
	nc, err := net.Dial("tcp", rep.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := zmtp.Handshake(nc, zmq4.Req, 0, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range []string{"abc", strings.Repeat("y", 1000)} {
		if err := c.Send([]byte(m)); err != nil {
			t.Fatal(err)
		}
		got, err := c.Recv()
		if err != nil || string(got) != strings.ToUpper(m) {
			t.Fatalf("%q, %v", got, err)
		}
	}
	rep.Close()
	cancel()
}

// rawPeer greets as zmq4 would and hands the raw connection to the test.
func rawPeer(t *testing.T, typ zmq4.SocketType) (*zmtp.Conn, net.Conn) {
	t.Helper()
	a, b := tcpPair(t)
	var c *zmtp.Conn
	var err error
	var wg sync.WaitGroup
	wg.Go(func() { c, err = zmtp.Handshake(a, typ, 1024, time.Now().Add(10*time.Second)) })
	peer := zmq4.Req
	if typ == zmq4.Req {
		peer = zmq4.Rep
	}
	if _, perr := zmq4.Open(b, zmtp.NullSecurity(), peer, nil, false, nil); perr != nil {
		t.Fatal(perr)
	}
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return c, b
}

// The frames of a message, byte for byte.
func TestFrames(t *testing.T) {
	c, raw := rawPeer(t, zmq4.Req)
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, 2+2+3)
		io.ReadFull(raw, b)
		got <- b
	}()
	if err := c.Send([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, []byte{0x01, 0x00, 0x00, 0x03, 'a', 'b', 'c'}) {
		t.Errorf("sent % x", b)
	}
	// A long frame, a PING the Conn answers in between, then the body.
	go func() {
		raw.Write([]byte{0x04, 0x0a, 4, 'P', 'I', 'N', 'G', 0, 10, 'c', 't', 'x'})
		raw.Write([]byte{0x01, 0x00})
		long := make([]byte, 9+300)
		long[0] = 0x02
		binary.BigEndian.PutUint64(long[1:], 300)
		long[9] = 'z'
		raw.Write(long)
	}()
	pong := make(chan []byte, 1)
	go func() {
		b := make([]byte, 10)
		io.ReadFull(raw, b)
		pong <- b
	}()
	body, err := c.Recv()
	if err != nil || len(body) != 300 || body[0] != 'z' {
		t.Fatalf("%d bytes, %v", len(body), err)
	}
	if b := <-pong; !bytes.Equal(b, []byte{0x04, 0x08, 4, 'P', 'O', 'N', 'G', 'c', 't', 'x'}) {
		t.Errorf("pong % x", b)
	}
}

func TestLimits(t *testing.T) {
	c, raw := rawPeer(t, zmq4.Req)
	go func() {
		raw.Write([]byte{0x01, 0x00})
		h := make([]byte, 9)
		h[0] = 0x02
		binary.BigEndian.PutUint64(h[1:], 1<<40)
		raw.Write(h)
	}()
	if _, err := c.Recv(); !errors.Is(err, zmtp.ErrTooLarge) {
		t.Errorf("a 1 TiB frame: %v", err)
	}
	c, raw = rawPeer(t, zmq4.Req)
	go raw.Write([]byte{0x00, 0x01, 'x'})
	if _, err := c.Recv(); !errors.Is(err, zmtp.ErrProtocol) {
		t.Errorf("no delimiter: %v", err)
	}
	c, raw = rawPeer(t, zmq4.Req)
	go raw.Write([]byte{0x01, 0x00, 0x01, 0x01, 'a', 0x00, 0x01, 'b'})
	if _, err := c.Recv(); !errors.Is(err, zmtp.ErrProtocol) {
		t.Errorf("three frames: %v", err)
	}
	c, raw = rawPeer(t, zmq4.Req)
	go raw.Write([]byte{0x80, 0x00})
	if _, err := c.Recv(); !errors.Is(err, zmtp.ErrProtocol) {
		t.Errorf("bad flags: %v", err)
	}
}

// A peer announcing a huge handshake frame is refused before anyone
// allocates it.
func TestHandshakeLimit(t *testing.T) {
	a, b := tcpPair(t)
	go func() {
		g := make([]byte, 64)
		g[0], g[9], g[10] = 0xff, 0x7f, 3
		copy(g[12:], "NULL")
		b.Write(g)
		io.CopyN(io.Discard, b, 64)
		h := make([]byte, 9)
		h[0] = 0x06
		binary.BigEndian.PutUint64(h[1:], 1<<50)
		b.Write(h)
		io.Copy(io.Discard, b)
	}()
	if _, err := zmtp.Handshake(a, zmq4.Req, 4096, time.Now().Add(10*time.Second)); !errors.Is(err, zmtp.ErrTooLarge) {
		t.Fatalf("%v", err)
	}
}

func TestSendRecvAllocs(t *testing.T) {
	c, raw := rawPeer(t, zmq4.Req)
	msg := []byte{0x01, 0x00, 0x00, 0x05, 'h', 'e', 'l', 'l', 'o'}
	go func() {
		buf := make([]byte, 9)
		for {
			if _, err := io.ReadFull(raw, buf); err != nil {
				return
			}
			if _, err := raw.Write(msg); err != nil {
				return
			}
		}
	}()
	body := []byte("world")
	if n := testing.AllocsPerRun(200, func() {
		c.Send(body)
		c.Recv()
	}); n != 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
}

// pyzmq's REQ socket (libzmq, a ZeroMQ that is not Go) against a REP Conn.
func TestPyzmqInterop(t *testing.T) {
	py := testutil.Python(t, "python3 -m pip install pyzmq==27.3.0", "zmq")
	ln := listen(t)
	serveRep(t, ln, bytes.ToUpper)
	script := `
import sys, zmq
s = zmq.Context().socket(zmq.REQ)
s.connect("tcp://" + sys.argv[1])
for m in [b"ping", b"x" * 70000]:
    s.send(m)
    r = s.recv()
    assert r == m.upper(), r[:20]
print("ok")
`
	out, err := exec.Command(py, "-c", script, ln.Addr().String()).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v: %s", err, out)
	}
}

func FuzzRecv(f *testing.F) {
	f.Add([]byte{0x01, 0x00, 0x00, 0x03, 'a', 'b', 'c'})
	f.Add([]byte{0x04, 0x0a, 4, 'P', 'I', 'N', 'G', 0, 10, 'c', 't', 'x', 0x01, 0x00, 0x00, 0x00})
	f.Add([]byte{0x01, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 1, 'z'})
	f.Fuzz(func(t *testing.T, in []byte) {
		c := zmtp.NewConnForTest(fakeConn{Reader: bytes.NewReader(in)}, 4096)
		for range 4 {
			body, err := c.Recv()
			if err != nil {
				return
			}
			if len(body) > 4096 {
				t.Fatalf("a %d-byte body past the limit", len(body))
			}
		}
	})
}

type fakeConn struct {
	net.Conn
	io.Reader
}

func (f fakeConn) Read(p []byte) (int, error)  { return f.Reader.Read(p) }
func (f fakeConn) Write(p []byte) (int, error) { return len(p), nil }
func (f fakeConn) RemoteAddr() net.Addr        { return &net.TCPAddr{} }

// A Recv that times out before a message's first byte leaves the stream
// whole: the late message is read by the next Recv. One that times out in
// the middle of a frame tears it.
func TestRecvTimeoutTorn(t *testing.T) {
	a, b := tcpPair(t)
	c := zmtp.NewConnForTest(a, 1024)
	c.SetDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Recv(); err == nil || c.Torn() {
		t.Fatalf("nothing sent: %v, torn %v", err, c.Torn())
	}
	b.Write([]byte{0x01, 0x00, 0x00, 0x03, 'a', 'b', 'c'})
	c.SetDeadline(time.Now().Add(patience))
	if body, err := c.Recv(); err != nil || string(body) != "abc" || c.Torn() {
		t.Fatalf("the late message: %q %v, torn %v", body, err, c.Torn())
	}
	// Half a body, then silence.
	b.Write([]byte{0x01, 0x00, 0x00, 0x03, 'a'})
	c.SetDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Recv(); err == nil || !c.Torn() {
		t.Fatalf("half a message: %v, torn %v", err, c.Torn())
	}
}

// patience bounds a wait that must end; a loaded machine is slow, never
// wrong.
const patience = 30 * time.Second
