package simulink

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
)

// ptWait bounds every wait for a datagram or a counter; it only matters when
// a test fails.
const ptWait = 5 * time.Second

var ptAny = netip.MustParseAddrPort("127.0.0.1:0")

// ptHex decodes a transcript: hex bytes, spaces ignored.
func ptHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad transcript %q: %v", s, err)
	}
	return b
}

// ptDatagram encodes [seq, vals…] as little-endian float64.
func ptDatagram(seq float64, vals ...float64) []byte {
	b := make([]byte, 0, (1+len(vals))*ValueSize)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(seq))
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// ptMirror commands the measured motor angles of the same step, so that each
// reply shows which measurement produced it.
type ptMirror struct{ steps int }

func (m *ptMirror) Reset() { m.steps = 0 }
func (m *ptMirror) Step(_ int64, y, u []float64) {
	m.steps++
	copy(u, y[len(y)-len(u):])
}

func ptListen(t testing.TB) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ptAny))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ptAddr(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// ptRig is a serving Partner between two plain sockets: master plays the
// bridge's port 9090, replies its port 25001.
type ptRig struct {
	t       testing.TB
	master  *net.UDPConn
	replies *net.UDPConn
	p       *Partner
	buf     []byte
}

func ptConfig(master, replies *net.UDPConn) PartnerConfig {
	return PartnerConfig{Listen: ptAny, Accept: ptAddr(master), ReplyTo: ptAddr(replies), MeasureLen: 7, CommandLen: 4, Controller: ptHold()}
}

// ptHold holds the four angles measured after the marker, as the shipped
// models do when their controller is off.
func ptHold() Controller {
	h, err := NewHold(emioDims(1, 4))
	if err != nil {
		panic(err)
	}
	return h
}

func ptNewRig(t testing.TB, edit func(*PartnerConfig)) *ptRig {
	t.Helper()
	r := &ptRig{t: t, master: ptListen(t), replies: ptListen(t), buf: make([]byte, 2048)}
	cfg := ptConfig(r.master, r.replies)
	if edit != nil {
		edit(&cfg)
	}
	p, err := NewPartner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

func (r *ptRig) send(b []byte) {
	r.t.Helper()
	if _, err := r.master.WriteToUDPAddrPort(b, r.p.Addr()); err != nil {
		r.t.Fatal(err)
	}
}

// recv returns the next reply and checks its source.
func (r *ptRig) recv() []byte {
	r.t.Helper()
	if err := r.replies.SetReadDeadline(time.Now().Add(ptWait)); err != nil {
		r.t.Fatal(err)
	}
	n, from, err := r.replies.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		r.t.Fatalf("no reply: %v", err)
	}
	if from != r.p.ReplyAddr() {
		r.t.Errorf("reply from %v, ReplyAddr says %v", from, r.p.ReplyAddr())
	}
	return slices.Clone(r.buf[:n])
}

// quiet fails if a reply is queued. Call it once the partner's counters show
// that the datagram was handled, so that a wrong reply is already on its way.
func (r *ptRig) quiet() {
	r.t.Helper()
	if err := r.replies.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		r.t.Fatal(err)
	}
	if n, _, err := r.replies.ReadFromUDPAddrPort(r.buf); err == nil {
		r.t.Fatalf("unexpected reply % x", r.buf[:n])
	}
}

// waitStats polls the counters until cond holds.
func (r *ptRig) waitStats(what string, cond func(PartnerStats) bool) {
	r.t.Helper()
	for end := time.Now().Add(ptWait); !cond(r.p.Stats()); {
		if time.Now().After(end) {
			r.t.Fatalf("gave up waiting for %s: %+v", what, r.p.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// Little-endian float64 values used in the transcripts.
const (
	hZero  = "0000000000000000"
	hM1    = "000000000000f0bf" // −1
	hHalf  = "000000000000e03f" // 0.5
	hMQuar = "000000000000d0bf" // −0.25
	hOne   = "000000000000f03f"
	hTwo   = "0000000000000040"
	hThree = "0000000000000840"
	hFour  = "0000000000001040"
	hFive  = "0000000000001440"
)

func ptJoin(vals ...string) string { return strings.Join(vals, " ") }

// TestPartnerTranscripts checks exact bytes out for bytes in, over loopback
// (docs/simulink-udp.md §4, §9.1). MeasureLen 7 (one marker), CommandLen 4.
func TestPartnerTranscripts(t *testing.T) { ptModes(t, testPartnerTranscripts) }

func testPartnerTranscripts(t *testing.T, priority int) {
	handshake := ptJoin(hM1, hZero, hZero, hZero, hZero, hZero, hZero, hZero)
	type step struct{ in, out string }
	for _, tc := range []struct {
		name  string
		delay bool
		steps []step
	}{
		{"echo", false, []step{
			// handshake → [−1, u] with u still the initial zeros
			{handshake, ptJoin(hM1, hZero, hZero, hZero, hZero)},
			// seq 0 steps the controller but answers −1 (the Switch)
			{ptJoin(hZero, hOne, hOne, hOne, hHalf, hMQuar, hOne, hZero), ptJoin(hM1, hHalf, hMQuar, hOne, hZero)},
			// a handshake holds u: its zero payload is never used
			{handshake, ptJoin(hM1, hHalf, hMQuar, hOne, hZero)},
			// seq 5 → [5, u]
			{ptJoin(hFive, hZero, hZero, hZero, hTwo, hThree, hFour, hFive), ptJoin(hFive, hTwo, hThree, hFour, hFive)},
		}},
		{"delay", true, []step{
			// first step after start: [−1, held u]
			{ptJoin(hThree, hZero, hZero, hZero, hHalf, hMQuar, hOne, hZero), ptJoin(hM1, hZero, hZero, hZero, hZero)},
			// seq 4 → [3, u computed from seq 3]
			{ptJoin(hFour, hZero, hZero, hZero, hTwo, hThree, hFour, hFive), ptJoin(hThree, hHalf, hMQuar, hOne, hZero)},
			// seq 5 → [4, u computed from seq 4]
			{ptJoin(hFive, hZero, hZero, hZero, hOne, hOne, hOne, hOne), ptJoin(hFour, hTwo, hThree, hFour, hFive)},
			// a handshake answers the held output and empties the delay line
			{handshake, ptJoin(hM1, hTwo, hThree, hFour, hFive)},
			{ptJoin(hZero, hZero, hZero, hZero, hHalf, hHalf, hHalf, hHalf), ptJoin(hM1, hTwo, hThree, hFour, hFive)},
			{ptJoin(hOne, hZero, hZero, hZero, hOne, hOne, hOne, hOne), ptJoin(hZero, hHalf, hHalf, hHalf, hHalf)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ptNewRig(t, func(c *PartnerConfig) { c.Delay = tc.delay; c.Controller = &ptMirror{}; c.Priority = priority })
			for i, s := range tc.steps {
				r.send(ptHex(t, s.in))
				got := r.recv()
				if want := ptHex(t, s.out); !slices.Equal(got, want) {
					t.Fatalf("step %d:\n got % x\nwant % x", i, got, want)
				}
			}
			n := uint64(len(tc.steps))
			r.waitStats("the counters", func(s PartnerStats) bool { return s.Received == n && s.Replied == n && s.Dropped == 0 })
		})
	}
}

// TestPartnerDrops: every bad datagram is dropped and counted, without a reply
// (§14.2 4, 5). A good datagram follows each bad one; its reply must be the
// first one read.
func TestPartnerDrops(t *testing.T) { ptModes(t, testPartnerDrops) }

func testPartnerDrops(t *testing.T, priority int) {
	good := ptDatagram(7, 0, 0, 0, 0.5, 0.5, 0.5, 0.5)
	nan := slices.Clone(good)
	binary.LittleEndian.PutUint64(nan[5*8:], math.Float64bits(math.NaN()))
	for _, tc := range []struct {
		name    string
		in      []byte
		foreign bool // sent from another port of 127.0.0.1
	}{
		{"empty", nil, false},
		{"one value short", good[:56], false},
		{"one value long", append(slices.Clone(good), make([]byte, 8)...), false},
		{"one byte long", append(slices.Clone(good), 0), false},
		{"huge", make([]byte, 1500), false},
		{"handshake of another size", ptDatagram(-1, 0, 0, 0, 0), false},
		{"NaN payload", nan, false},
		{"NaN seq", ptDatagram(math.NaN(), 0, 0, 0, 0, 0, 0, 0), false},
		{"+Inf payload", ptDatagram(1, 0, math.Inf(1), 0, 0, 0, 0, 0), false},
		{"-Inf seq", ptDatagram(math.Inf(-1), 0, 0, 0, 0, 0, 0, 0), false},
		{"seq beyond 2^53", ptDatagram(1<<60, 0, 0, 0, 0, 0, 0, 0), false},
		{"foreign source", good, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ptNewRig(t, func(c *PartnerConfig) { c.Priority = priority })
			if tc.foreign {
				other := ptListen(t)
				if _, err := other.WriteToUDPAddrPort(tc.in, r.p.Addr()); err != nil {
					t.Fatal(err)
				}
			} else {
				r.send(tc.in)
			}
			r.send(good)
			if got, want := r.recv(), ptDatagram(7, 0.5, 0.5, 0.5, 0.5); !slices.Equal(got, want) {
				t.Fatalf("got % x, want % x", got, want)
			}
			r.waitStats("2 received, 1 dropped, 1 replied, last seq 7", func(s PartnerStats) bool {
				return s.Received == 2 && s.Dropped == 1 && s.Replied == 1 && s.LastSeq == 7
			})
		})
	}
}

// TestPartnerAcceptFilter covers the three forms of Accept.
func TestPartnerAcceptFilter(t *testing.T) { ptModes(t, testPartnerAcceptFilter) }

func testPartnerAcceptFilter(t *testing.T, priority int) {
	for _, tc := range []struct {
		name   string
		accept func(master netip.AddrPort) netip.AddrPort
		want   bool // is a datagram from another port of 127.0.0.1 accepted
	}{
		{"exact", func(m netip.AddrPort) netip.AddrPort { return m }, false},
		{"any port", func(m netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(m.Addr(), 0) }, true},
		{"any source", func(netip.AddrPort) netip.AddrPort { return netip.AddrPort{} }, true},
		{"other address", func(netip.AddrPort) netip.AddrPort { return netip.MustParseAddrPort("127.0.0.2:0") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ptNewRig(t, func(c *PartnerConfig) { c.Accept = tc.accept(c.Accept); c.Priority = priority })
			other := ptListen(t)
			if _, err := other.WriteToUDPAddrPort(ptDatagram(1, 0, 0, 0, 1, 1, 1, 1), r.p.Addr()); err != nil {
				t.Fatal(err)
			}
			r.waitStats("the datagram", func(s PartnerStats) bool { return s.Dropped+s.Replied == 1 })
			if got := r.p.Stats().Dropped == 0; got != tc.want {
				t.Fatalf("accepted = %v, want %v (%+v)", got, tc.want, r.p.Stats())
			}
			if tc.want {
				if got, want := r.recv(), ptDatagram(1, 1, 1, 1, 1); !slices.Equal(got, want) {
					t.Fatalf("got % x, want % x", got, want)
				}
			}
		})
	}
}

// TestPartnerHoldAndRestart: the default controller holds the angles measured
// at the first step; Restart starts the model again from zeros.
func TestPartnerHoldAndRestart(t *testing.T) {
	r := ptNewRig(t, nil)
	cmd := make([]float64, 4)
	exchange := func(seq float64, q float64, want []byte) {
		t.Helper()
		r.send(ptDatagram(seq, 9, 9, 9, q, q, q, q))
		if got := r.recv(); !slices.Equal(got, want) {
			t.Fatalf("seq %v: got % x, want % x", seq, got, want)
		}
	}
	exchange(-1, 0, ptDatagram(-1, 0, 0, 0, 0))
	exchange(0, 0.5, ptDatagram(-1, 0.5, 0.5, 0.5, 0.5))
	exchange(1, 1, ptDatagram(1, 0.5, 0.5, 0.5, 0.5))
	r.p.Command(cmd)
	if !slices.Equal(cmd, []float64{0.5, 0.5, 0.5, 0.5}) {
		t.Errorf("Command = %v", cmd)
	}
	r.p.Restart()
	r.p.Command(cmd)
	if !slices.Equal(cmd, []float64{0, 0, 0, 0}) {
		t.Errorf("Command after Restart = %v", cmd)
	}
	exchange(-1, 0, ptDatagram(-1, 0, 0, 0, 0))
	exchange(0, 1, ptDatagram(-1, 1, 1, 1, 1))
	exchange(1, 2, ptDatagram(1, 1, 1, 1, 1))
	want := PartnerStats{Received: 6, Replied: 6, Handshakes: 2, LastSeq: 1}
	r.waitStats("the counters", func(s PartnerStats) bool { return s == want })
}

// ptNaNController returns NaN commands; the partner must never send them.
type ptNaNController struct{}

func (ptNaNController) Reset()                       {}
func (ptNaNController) Step(_ int64, _, u []float64) { u[0] = math.NaN() }

func TestPartnerNeverSendsNaN(t *testing.T) {
	r := ptNewRig(t, func(c *PartnerConfig) { c.Controller = ptNaNController{} })
	r.send(ptDatagram(3, 0, 0, 0, 0, 0, 0, 0))
	if got, want := r.recv(), ptDatagram(3, 0, 0, 0, 0); !slices.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
}

func TestPartnerConfigErrors(t *testing.T) {
	sine, err := NewSine([]float64{0, 0}, []float64{0.1, 0.1}, []float64{1, 1}, 30)
	if err != nil {
		t.Fatal(err)
	}
	jac, err := NewJacobian(JacobianParams{Dims: emioDims(2, 4), Rate: 30})
	if err != nil {
		t.Fatal(err)
	}
	to := netip.MustParseAddrPort("127.0.0.1:25001")
	for _, tc := range []struct {
		field string
		edit  func(*PartnerConfig)
	}{
		{"MeasureLen", func(c *PartnerConfig) { c.MeasureLen = 0 }},
		{"MeasureLen", func(c *PartnerConfig) { c.MeasureLen = 9000 }},
		{"CommandLen", func(c *PartnerConfig) { c.CommandLen = -1 }},
		{"Listen", func(c *PartnerConfig) { c.Listen = netip.AddrPort{} }},
		{"Accept", func(c *PartnerConfig) { c.Accept = netip.AddrPortFrom(netip.Addr{}, 9090) }},
		{"ReplyTo", func(c *PartnerConfig) { c.ReplyTo = netip.AddrPort{} }},
		{"ReplyTo", func(c *PartnerConfig) { c.ReplyTo = netip.MustParseAddrPort("127.0.0.1:0") }},
		{"ReplyTo", func(c *PartnerConfig) { c.ReplyTo = netip.MustParseAddrPort("0.0.0.0:25001") }},
		{"Faults.Drop", func(c *PartnerConfig) { c.Faults = &Faults{Drop: 1.5} }},
		{"Faults.Reorder", func(c *PartnerConfig) { c.Faults = &Faults{Reorder: math.NaN()} }},
		{"Faults.Delay", func(c *PartnerConfig) { c.Faults = &Faults{Delay: -time.Millisecond} }},
		{"Controller", func(c *PartnerConfig) { c.Controller = sine }},
		{"Controller", func(c *PartnerConfig) { c.Controller = jac }},
		{"Priority", func(c *PartnerConfig) { c.Priority = -1 }},
		{"Priority", func(c *PartnerConfig) { c.Priority = 100 }},
		{"Budget", func(c *PartnerConfig) { c.Budget = -1; c.BudgetPeriod = time.Millisecond }},
		{"Budget", func(c *PartnerConfig) {
			c.Priority = 80
			c.Budget = 2 * time.Millisecond
			c.BudgetPeriod = time.Millisecond
		}},
		{"Budget", func(c *PartnerConfig) {
			c.Priority = 80
			c.Pin, c.CPU = true, 0
			c.Budget = 100 * time.Microsecond
			c.BudgetPeriod = time.Millisecond
		}},
		{"Budget", func(c *PartnerConfig) { c.Budget = 100 * time.Microsecond; c.BudgetPeriod = time.Millisecond }},
		{"CPU", func(c *PartnerConfig) { c.Pin, c.CPU = true, -1 }},
		{"CPU", func(c *PartnerConfig) { c.Pin, c.CPU = true, realtime.MaxCPUs }},
	} {
		cfg := PartnerConfig{Listen: ptAny, ReplyTo: to, MeasureLen: 7, CommandLen: 4}
		tc.edit(&cfg)
		p, err := NewPartner(cfg)
		if err == nil {
			p.Close()
			t.Errorf("%s: no error for %+v", tc.field, cfg)
			continue
		}
		var ce *PartnerConfigError
		if !errors.Is(err, ErrPartnerConfig) || !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
		if !strings.HasPrefix(err.Error(), "simulink: partner "+tc.field+": ") {
			t.Errorf("%s: message %q", tc.field, err)
		}
	}
}

func TestPartnerBindConflict(t *testing.T) {
	taken := ptListen(t)
	_, err := NewPartner(PartnerConfig{Listen: ptAddr(taken), ReplyTo: ptAddr(taken), MeasureLen: 7, CommandLen: 4})
	if err == nil || !strings.Contains(err.Error(), ptAddr(taken).String()) {
		t.Fatalf("got %v, want an error naming %v", err, ptAddr(taken))
	}
}

func TestPartnerServeLifecycle(t *testing.T) { ptModes(t, testPartnerServeLifecycle) }

func testPartnerServeLifecycle(t *testing.T, priority int) {
	replies := ptListen(t)
	newP := func() *Partner {
		p, err := NewPartner(PartnerConfig{Listen: ptAny, ReplyTo: ptAddr(replies), MeasureLen: 7, CommandLen: 4, Priority: priority})
		if err != nil {
			t.Fatal(err)
		}
		if !p.Addr().Addr().IsLoopback() || p.Addr().Port() == 0 || !p.ReplyAddr().Addr().IsLoopback() || p.ReplyAddr().Port() == 0 {
			t.Fatalf("Addr %v, ReplyAddr %v", p.Addr(), p.ReplyAddr())
		}
		return p
	}
	t.Run("cancel", func(t *testing.T) {
		p := newP()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Serve(ctx) }()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
		// Served again (a supervisor's restart), it binds the same
		// address and answers.
		addr := p.Addr()
		ctx, cancel = context.WithCancel(context.Background())
		go func() { done <- p.Serve(ctx) }()
		// The socket is bound again by Serve's goroutine: send until it
		// answers.
		for start := time.Now(); ; {
			if _, err := replies.WriteToUDPAddrPort(ptDatagram(-1, 0, 0, 0, 0, 0, 0, 0), addr); err != nil {
				t.Fatal(err)
			}
			if err := replies.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := replies.ReadFromUDPAddrPort(make([]byte, 64)); err == nil {
				break
			} else if time.Since(start) > ptWait {
				t.Fatalf("no reply from the second Serve: %v", err)
			}
		}
		if p.Addr() != addr {
			t.Errorf("second Serve listens on %v, want %v", p.Addr(), addr)
		}
		if err := p.Serve(context.Background()); !errors.Is(err, ErrPartnerServing) {
			t.Errorf("concurrent Serve = %v, want ErrPartnerServing", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("second Serve = %v, want nil", err)
		}
		p.Close()
	})
	t.Run("close", func(t *testing.T) {
		p := newP()
		done := make(chan error, 1)
		go func() { done <- p.Serve(context.Background()) }()
		// One exchange, so that Close finds Serve running.
		if _, err := replies.WriteToUDPAddrPort(ptDatagram(-1, 0, 0, 0, 0, 0, 0, 0), p.Addr()); err != nil {
			t.Fatal(err)
		}
		if err := replies.SetReadDeadline(time.Now().Add(ptWait)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := replies.ReadFromUDPAddrPort(make([]byte, 64)); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
	})
	t.Run("after close", func(t *testing.T) {
		p := newP()
		p.Close()
		if err := p.Serve(context.Background()); !errors.Is(err, ErrPartnerClosed) || !errors.Is(err, plant.ErrPermanent) {
			t.Fatalf("Serve = %v, want ErrPartnerClosed, a permanent failure", err)
		}
	})
}

// TestPartnerConcurrentControl exercises Restart, Command, Stats and Pause
// while datagrams flow, for the race detector.
func TestPartnerConcurrentControl(t *testing.T) { ptModes(t, testPartnerConcurrentControl) }

func testPartnerConcurrentControl(t *testing.T, priority int) {
	f := &Faults{}
	r := ptNewRig(t, func(c *PartnerConfig) { c.Faults = f; c.Delay = true; c.Priority = priority })
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		cmd := make([]float64, 4)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r.p.Restart()
			r.p.Command(cmd)
			_ = r.p.Stats()
			f.Pause()
			f.Resume()
		}
	}()
	for i := range 200 {
		// A bounded backlog: the kernel drops what overflows the partner's
		// socket buffer while it is off the CPU, and Received counts reads.
		r.waitStats("room in the socket buffer", func(s PartnerStats) bool { return s.Received+32 > uint64(i) })
		r.send(ptDatagram(float64(i), 0, 0, 0, 1, 1, 1, 1))
	}
	r.waitStats("200 datagrams", func(s PartnerStats) bool { return s.Received == 200 })
	close(stop)
	wg.Wait()
}

// TestPartnerRoundTripAllocs: a whole exchange, seen from the master's
// sockets, allocates nothing in the process.
func TestPartnerRoundTripAllocs(t *testing.T) { ptModes(t, testPartnerRoundTripAllocs) }

func testPartnerRoundTripAllocs(t *testing.T, priority int) {
	r := ptNewRig(t, func(c *PartnerConfig) { c.Priority = priority })
	in := ptDatagram(1, 0, 0, 0, 1, 1, 1, 1)
	to := r.p.Addr()
	if err := r.replies.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	r.send(in)
	r.recv() // warm up
	if err := r.replies.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var failed bool
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := r.master.WriteToUDPAddrPort(in, to); err != nil {
			failed = true
		}
		if n, _, err := r.replies.ReadFromUDPAddrPort(r.buf); err != nil || n != 40 {
			failed = true
		}
	})
	if failed {
		t.Fatal("exchange failed")
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per round trip, want 0", allocs)
	}
}

// TestPartnerProcessAllocs covers both modes and a real controller without
// sockets.
func TestPartnerProcessAllocs(t *testing.T) {
	replies := ptListen(t)
	for _, delay := range []bool{false, true} {
		jac, err := NewJacobian(JacobianParams{Dims: emioDims(1, 4), Rate: 1000, Alpha: 0.05, Jinv: make([]float64, 12)})
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPartner(PartnerConfig{Listen: ptAny, ReplyTo: ptAddr(replies), MeasureLen: 7, CommandLen: 4, Delay: delay, Controller: jac})
		if err != nil {
			t.Fatal(err)
		}
		in := ptDatagram(0, 1, 2, 3, 0.1, 0.2, 0.3, 0.4)
		src := ptAddr(replies)
		seq := 0.0
		allocs := testing.AllocsPerRun(500, func() {
			seq++
			binary.LittleEndian.PutUint64(in, math.Float64bits(seq))
			if p.process(in, src, p.wbuf) != 40 {
				t.Fatal("no reply")
			}
		})
		p.Close()
		if allocs != 0 {
			t.Errorf("delay=%v: %v allocations per datagram, want 0", delay, allocs)
		}
	}
}

// FuzzPartnerDatagram: no datagram makes the partner panic, reply with
// another size, or send a non-finite value or a seq the rules forbid.
func FuzzPartnerDatagram(f *testing.F) {
	f.Add(ptDatagram(-1, 0, 0, 0, 0, 0, 0, 0), true, false)
	f.Add(ptDatagram(0, 1, 2, 3, 0.1, 0.2, 0.3, 0.4), true, false)
	f.Add(ptDatagram(5, 1e308, -1e308, 1e308, 0.1, 0.2, 0.3, 0.4), true, true)
	f.Add(ptDatagram(-0.5, 0, 0, 0, 0, 0, 0, 0), true, true)
	f.Add(ptDatagram(math.NaN(), 0, 0, 0, 0, 0, 0, 0), true, false)
	f.Add([]byte{1, 2, 3}, true, false)
	f.Add(ptDatagram(1, 0, 0, 0, 0, 0, 0, 0), false, false)
	replies := ptListen(f)
	master := ptAddr(ptListen(f))
	other := netip.MustParseAddrPort("127.0.0.1:1")
	partners := map[bool]*Partner{}
	for _, delay := range []bool{false, true} {
		jinv := make([]float64, 12)
		for i := range jinv {
			jinv[i] = 1e300 // saturate, and overflow to ±Inf on big inputs
		}
		jac, err := NewJacobian(JacobianParams{Dims: emioDims(1, 4), Rate: 30, Alpha: 1, Jinv: jinv})
		if err != nil {
			f.Fatal(err)
		}
		p, err := NewPartner(PartnerConfig{Listen: ptAny, Accept: master, ReplyTo: ptAddr(replies), MeasureLen: 7, CommandLen: 4, Delay: delay, Controller: jac})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { p.Close() })
		partners[delay] = p
	}
	f.Fuzz(func(t *testing.T, in []byte, fromMaster, delay bool) {
		p := partners[delay]
		src := other
		if fromMaster {
			src = master
		}
		out := make([]byte, DatagramSize(4))
		n := p.process(in, src, out)
		if n == 0 {
			return
		}
		if n != len(out) {
			t.Fatalf("reply of %d bytes", n)
		}
		u := make([]float64, 4)
		back, err := Unmarshal(out, u)
		if err != nil {
			t.Fatalf("reply % x: %v", out, err)
		}
		seq, err := Unmarshal(in, make([]float64, 7))
		if err != nil || !fromMaster {
			t.Fatalf("replied to a datagram it should drop: % x", in)
		}
		switch {
		case back < -1:
			t.Fatalf("seq %d answered %d", seq, back)
		case seq < 0 && back != -1:
			t.Fatalf("handshake answered %d, want -1", back)
		case !delay && seq == 0 && back != -1:
			t.Fatalf("seq 0 answered %d, want -1", back)
		case !delay && seq > 0 && back != seq:
			t.Fatalf("seq %d answered %d in echo mode", seq, back)
		}
		for _, v := range u {
			if math.Abs(v) > JacobianDefaultSat {
				t.Fatalf("command %v beyond the saturation", u)
			}
		}
	})
}

// BenchmarkPartnerRoundTrip measures one exchange from the master's sockets:
// send a measurement, read the reply. It reports the p50 and p99 round trip.
// The sub-benchmarks compare the netpoller mode with the FIFO mode.
// benchPartner serves a partner until the benchmark ends and returns the
// master's sockets and the partner's address.
func benchPartner(b *testing.B, priority int) (master, replies *net.UDPConn, to netip.AddrPort) {
	master, replies = ptListen(b), ptListen(b)
	cfg := ptConfig(master, replies)
	cfg.Priority = priority
	p, err := NewPartner(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	if err := replies.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	return master, replies, p.Addr()
}

func BenchmarkPartnerRoundTrip(b *testing.B) { benchRoundTrip(b, 0) }

// BenchmarkPartnerAt1kHz paces exchanges at 1 kHz, the rate of the latency
// target, since an idle partner wakes up more slowly than a busy one.
func BenchmarkPartnerAt1kHz(b *testing.B) { benchRoundTrip(b, time.Millisecond) }

// benchRoundTrip times master → partner → master round trips, one every
// pace (0: back to back), on the netpoller and in the FIFO mode (at
// priority 79, when permitted).
func benchRoundTrip(b *testing.B, pace time.Duration) {
	for _, priority := range []int{0, 79} {
		name := "netpoller"
		if priority > 0 {
			name = "fifo"
		}
		b.Run(name, func(b *testing.B) {
			master, replies, to := benchPartner(b, priority)
			in := ptDatagram(1, 0, 0, 0, 1, 1, 1, 1)
			buf := make([]byte, 64)
			rtt := make([]time.Duration, 0, max(b.N, 1))
			next := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if pace > 0 {
					next = next.Add(pace)
					for time.Now().Before(next) { // spin: Go timers wake in whole ms
					}
				}
				t0 := time.Now()
				if _, err := master.WriteToUDPAddrPort(in, to); err != nil {
					b.Fatal(err)
				}
				if _, _, err := replies.ReadFromUDPAddrPort(buf); err != nil {
					b.Fatal(err)
				}
				rtt = append(rtt, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(rtt)
			b.ReportMetric(float64(rtt[len(rtt)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(rtt[len(rtt)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
