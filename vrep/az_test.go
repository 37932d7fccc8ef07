package vrep_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The AZ messages byte for byte (docs/vrep.md §1): '<BBff' and '<BBfff'.
func TestAZTranscripts(t *testing.T) {
	reqs := []struct {
		req  vrep.Request
		wire string
	}{
		{vrep.Request{Left: 1, Right: -0.5}, "415a" + "0000803f" + "000000bf"},
		{vrep.Request{Left: 0.5, Right: 0.5}, "415a" + "0000003f" + "0000003f"},
		{vrep.Request{}, "415a" + "00000000" + "00000000"},
	}
	for _, c := range reqs {
		var b [vrep.RequestLen]byte
		if n, err := c.req.MarshalTo(b[:]); err != nil || n != vrep.RequestLen || hex.EncodeToString(b[:]) != c.wire {
			t.Errorf("%+v: % x, %d, %v; want %s", c.req, b, n, err, c.wire)
		}
		var back vrep.Request
		if err := back.Unmarshal(unhex(t, c.wire)); err != nil || back != c.req {
			t.Errorf("%s: %+v, %v", c.wire, back, err)
		}
	}
	// The reply of docs/vrep.md §3's observed run: 0.05 s, 0.05, -0.025.
	wire := "415a" + "cdcc4c3d" + "cdcc4c3d" + "cdcccc bc"
	wire = string(bytes.ReplaceAll([]byte(wire), []byte(" "), nil))
	var rep vrep.Reply
	if err := rep.Unmarshal(unhex(t, wire)); err != nil || rep != (vrep.Reply{Time: 0.05, Left: 0.05, Right: -0.025}) {
		t.Errorf("reply: %+v, %v", rep, err)
	}
	var b [vrep.ReplyLen]byte
	if n, err := rep.MarshalTo(b[:]); err != nil || n != vrep.ReplyLen || hex.EncodeToString(b[:]) != wire {
		t.Errorf("reply marshal: % x %v", b, err)
	}
}

func TestAZDecodeErrors(t *testing.T) {
	var rep vrep.Reply
	before := vrep.Reply{Time: 1, Left: 2, Right: 3}
	rep = before
	var me *vrep.MagicError
	if err := rep.Unmarshal(unhex(t, "415900000000000000000000ffff")); !errors.As(err, &me) || me.Got != [2]byte{'A', 'Y'} || rep != before {
		t.Errorf("wrong magic: %v, %+v", err, rep)
	}
	if err := rep.Unmarshal(make([]byte, 13)); !errors.Is(err, vrep.ErrLength) {
		t.Errorf("13 bytes: %v", err)
	}
	var req vrep.Request
	if err := req.Unmarshal(unhex(t, "5a410000803f000000bf")); !errors.As(err, &me) || req != (vrep.Request{}) {
		t.Errorf("request magic: %v %+v", err, req)
	}
	if _, err := (vrep.Request{}).MarshalTo(make([]byte, 9)); !errors.Is(err, vrep.ErrLength) {
		t.Errorf("short buffer: %v", err)
	}
	if _, err := (vrep.Reply{}).MarshalTo(make([]byte, 13)); !errors.Is(err, vrep.ErrLength) {
		t.Errorf("short reply buffer: %v", err)
	}
}

func TestNarrow(t *testing.T) {
	for _, c := range []struct {
		x  float64
		ok bool
	}{
		{0, true}, {-1.5, true}, {math.MaxFloat32, true}, {-math.MaxFloat32, true}, {1e-50, true},
		{math.NaN(), false}, {math.Inf(1), false}, {math.Inf(-1), false}, {1e39, false}, {-3.5e38, false},
	} {
		f, err := vrep.Narrow(c.x)
		if c.ok != (err == nil) || c.ok && math.IsInf(float64(f), 0) {
			t.Errorf("Narrow(%v) = %v, %v", c.x, f, err)
		}
		if !c.ok && !errors.Is(err, vrep.ErrRange) {
			t.Errorf("Narrow(%v): %v is not ErrRange", c.x, err)
		}
	}
}

func TestAZCodecAllocs(t *testing.T) {
	var b [vrep.ReplyLen]byte
	var rep vrep.Reply
	req := vrep.Request{Left: 1, Right: 2}
	if n := testing.AllocsPerRun(100, func() {
		req.MarshalTo(b[:])
		vrep.Reply{Time: 1}.MarshalTo(b[:])
		rep.Unmarshal(b[:])
		vrep.Narrow(1.5)
	}); n != 0 {
		t.Errorf("%v allocations per message, want 0", n)
	}
}

func FuzzReply(f *testing.F) {
	f.Add(unhex(f, "415acdcc4c3dcdcc4c3dcdccccbc"))
	f.Add(unhex(f, "415900000000000000000000ffff"))
	f.Add([]byte("AZ"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var rep vrep.Reply
		if err := rep.Unmarshal(b); err != nil {
			return
		}
		var out [vrep.ReplyLen]byte
		rep.MarshalTo(out[:])
		var back vrep.Reply
		if err := back.Unmarshal(out[:]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[2:], b[2:]) {
			t.Fatalf("% x became % x", b, out)
		}
	})
}

func FuzzRequest(f *testing.F) {
	f.Add(unhex(f, "415a0000803f000000bf"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req vrep.Request
		if err := req.Unmarshal(b); err != nil {
			return
		}
		var out [vrep.RequestLen]byte
		req.MarshalTo(out[:])
		if !bytes.Equal(out[:], b) {
			t.Fatalf("% x became % x", b, out)
		}
	})
}

// The client's bytes on the wire, and its reading of a reply that arrives
// in pieces.
func TestAZClientWire(t *testing.T) {
	ln := listen(t)
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, vrep.RequestLen)
		io.ReadFull(c, b)
		got <- b
		rep := unhex(t, "415acdcc4c3dcdcc4c3dcdccccbc")
		for i := range rep { // one byte per write: the client loops
			c.Write(rep[i : i+1])
			time.Sleep(time.Millisecond)
		}
	}()
	c, err := vrep.NewAZClient(ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Exchange(vrep.Request{Left: 1, Right: -0.5})
	if err != nil {
		t.Fatal(err)
	}
	if b := <-got; hex.EncodeToString(b) != "415a0000803f000000bf" {
		t.Errorf("request % x", b)
	}
	if rep != (vrep.Reply{Time: 0.05, Left: 0.05, Right: -0.025}) {
		t.Errorf("reply %+v", rep)
	}
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP port to listen on: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// The client against the simulated scene: values arrive, angles integrate,
// and every fault of the scene is told apart.
func TestAZClientFaults(t *testing.T) {
	scene, addr := startAZ(t, vrepsim.AZConfig{Delay: 300 * time.Millisecond})
	c, err := vrep.NewAZClient(addr, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	exchange := func() (vrep.Reply, error) {
		t.Helper()
		return c.Exchange(vrep.Request{Left: 1, Right: -0.5})
	}
	var last vrep.Reply
	for i := range 3 {
		rep, err := exchange()
		if err != nil {
			t.Fatal(err)
		}
		want := float32(0.05) * float32(i)
		if math.Abs(float64(rep.Time-want)) > 1e-6 || math.Abs(float64(rep.Left-want)) > 1e-6 || math.Abs(float64(rep.Right+want/2)) > 1e-6 {
			t.Errorf("exchange %d: %+v, want time and left %v, right %v", i, rep, want, -want/2)
		}
		last = rep
	}
	for _, c := range []struct {
		fault  vrepsim.Fault
		reason vrep.Reason
	}{
		{vrepsim.CloseEarly, vrep.ReasonClosed},
		{vrepsim.Short, vrep.ReasonShort},
		{vrepsim.BadMagic, vrep.ReasonMagic},
		{vrepsim.Refuse, vrep.ReasonReset},
		{vrepsim.Delay, vrep.ReasonTimeout},
	} {
		scene.Inject(c.fault, 1)
		_, err := exchange()
		var e *vrep.ExchangeError
		if !errors.As(err, &e) || e.Reason != c.reason {
			t.Errorf("%v: %v, want reason %v", c.fault, err, c.reason)
			continue
		}
		t.Logf("%v: %v", c.fault, err)
	}
	// Still served after the faults, once the scene has finished the
	// delayed reply (it serves one connection at a time, as the seed's
	// script); a restarted scene starts again at 0.
	rep, err := exchange()
	for i := 0; err != nil && i < 100; i++ {
		rep, err = exchange()
	}
	if err != nil || rep.Time <= last.Time {
		t.Errorf("after the faults: %+v, %v", rep, err)
	}
	scene.Restart()
	if rep, err := exchange(); err != nil || rep.Time != 0 || rep.Left != 0 {
		t.Errorf("after a restart: %+v, %v", rep, err)
	}
}

func TestAZClientRefused(t *testing.T) {
	// Bound, never listening: refused, and no other program can take the
	// port while the test runs.
	addr, _ := testutil.ClosedTCPPort(t)
	c, _ := vrep.NewAZClient(addr, time.Second)
	_, err := c.Exchange(vrep.Request{})
	var e *vrep.ExchangeError
	if !errors.As(err, &e) || e.Reason != vrep.ReasonRefused {
		t.Fatalf("%v, want a refusal", err)
	}
	if want := "connection refused on " + addr + ": is the simulation started?"; e.Error() != "vrep: "+want {
		t.Errorf("message %q", e.Error())
	}
}

// The client allocates nothing per exchange. The scene runs in another
// process (a Python server of the seed's replies), so that only the
// client's allocations are counted.
func TestAZClientAllocs(t *testing.T) {
	py := testutil.Python(t, "apt-get install python3")
	const server = `
import socket, struct, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    data = b""
    while len(data) < 10:
        d = c.recv(10 - len(data))
        if not d:
            break
        data += d
    c.sendall(struct.pack("<BBfff", 65, 90, 1.0, 2.0, 3.0))
    c.close()
`
	cmd := exec.Command(py, "-c", server)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var port int
	if _, err := fmt.Fscan(out, &port); err != nil {
		t.Fatalf("the Python server: %v", err)
	}
	c, err := vrep.NewAZClient(fmt.Sprintf("127.0.0.1:%d", port), patience)
	if err != nil {
		t.Fatal(err)
	}
	req := vrep.Request{Left: 1, Right: 2}
	if rep, err := c.Exchange(req); err != nil || rep != (vrep.Reply{Time: 1, Left: 2, Right: 3}) {
		t.Fatalf("%+v %v", rep, err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := c.Exchange(req); err != nil {
			t.Fatal(err)
		}
	}); n != 0 && !raceEnabled {
		t.Errorf("%v allocations per exchange, want 0", n)
	}
}
