package tap

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/simulink"
	"github.com/labbridge/bridge/tap/payload"
)

type fakeClock struct{ ns int64 }

func (c *fakeClock) Now() int64 { return c.ns }

// listen opens a receiver on loopback, or skips when none can be had.
func listen(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no UDP socket on loopback: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newTap(t *testing.T, to *net.UDPConn, slots int) *Tap {
	t.Helper()
	tp, err := New(Config{
		Address: to.LocalAddr().(*net.UDPAddr).AddrPort(), Slots: slots, Clock: &fakeClock{ns: 5e9},
		Descriptor: payload.Descriptor{Link: "arm", RateHz: 1000, Measure: []payload.Field{{Name: "q", Unit: "rad", Len: 2}}, Command: []payload.Field{{Name: "u", Unit: "rad", Len: 1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func tick(n uint64) *bridge.TickRecord {
	return &bridge.TickRecord{
		N: n, Deadline: 5e9 + int64(n)*1e6, Sent: 5e9 + int64(n)*1e6 + 20_000, Status: simulink.OKNoDelay, State: bridge.Running,
		Seq: int64(n), ReplyLatency: 90_000, CommandApplied: true,
		Measurement: []float64{float64(n), -float64(n)}, Command: []float64{0.5}, Applied: []float64{0.5},
	}
}

// read takes n packets from c.
func read(t *testing.T, c *net.UDPConn, n int) []rtp.Packet {
	t.Helper()
	var out []rtp.Packet
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for len(out) < n {
		k, err := c.Read(buf)
		if err != nil {
			t.Fatalf("after %d packets: %v", len(out), err)
		}
		var p rtp.Packet
		if err := p.Unmarshal(append([]byte(nil), buf[:k]...)); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// Every recorded tick arrives as one RTP packet: consecutive sequence
// numbers, the timestamp on the 1 MHz tick grid, one SSRC, the marker and
// a descriptor on the first, and the tick's fields in the payload.
func TestTapSendsEveryTick(t *testing.T) {
	rx := listen(t)
	tp := newTap(t, rx, 64)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { tp.Serve(ctx) })
	for n := range uint64(10) {
		tp.RecordTick(tick(n))
	}
	pkts := read(t, rx, 10)
	cancel()
	wg.Wait()
	var r payload.Record
	for i, p := range pkts {
		if p.Version != 2 || p.PayloadType != DefaultPayloadType || p.SSRC != tp.SSRC() ||
			p.SequenceNumber != pkts[0].SequenceNumber+uint16(i) || p.Timestamp != uint32((5e9+int64(i)*1e6)/1e3) {
			t.Errorf("packet %d: header %+v", i, p.Header)
		}
		if p.Marker != (i == 0) {
			t.Errorf("packet %d: marker %v", i, p.Marker)
		}
		if err := r.Unmarshal(p.Payload); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if r.Tick != uint64(i) || r.Seq != int64(i) || r.Status != uint8(simulink.OKNoDelay) || r.State != uint8(bridge.Running) ||
			r.Lateness != 20_000 || r.ReplyLatency != 90_000 || r.Flags&payload.FlagApplied == 0 || r.Measurement[0] != float64(i) || r.Applied[0] != 0.5 {
			t.Errorf("packet %d: %+v", i, r)
		}
		if (r.Flags&payload.FlagDescriptor != 0) != (i == 0) || (i == 0 && r.Descriptor.Link != "arm") {
			t.Errorf("packet %d: flags %b descriptor %+v", i, r.Flags, r.Descriptor)
		}
		if d := r.Sent - r.Deadline; d != 20_000 {
			t.Errorf("packet %d: sent %d ns after its deadline", i, d)
		}
	}
	if s := tp.Stats(); s.Sent != 10 || s.Dropped != 0 || s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
}

// A full ring drops the tick and counts it, and its sequence number is
// skipped: the receiver sees exactly the gap. Nothing waits.
func TestTapFullRingDrops(t *testing.T) {
	rx := listen(t)
	tp := newTap(t, rx, 4)
	for n := range uint64(10) { // nobody drains: 4 fit, 6 are dropped
		tp.RecordTick(tick(n))
	}
	if s := tp.Stats(); s.Dropped != 6 {
		t.Fatalf("dropped %d, want 6", s.Dropped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { tp.Serve(ctx) })
	first := read(t, rx, 4)
	tp.RecordTick(tick(10))
	last := read(t, rx, 1)[0]
	cancel()
	wg.Wait()
	for i, p := range first {
		if p.SequenceNumber != first[0].SequenceNumber+uint16(i) {
			t.Errorf("packet %d: seq %d", i, p.SequenceNumber)
		}
	}
	if gap := last.SequenceNumber - first[3].SequenceNumber; gap != 7 {
		t.Errorf("the 11th tick's sequence number is %d after the 4th's, want 7 (6 dropped)", gap)
	}
}

// Recording a tick on the loop thread allocates nothing.
func TestRecordTickAllocatesNothing(t *testing.T) {
	rx := listen(t)
	tp := newTap(t, rx, 8)
	r := tick(1)
	if n := testing.AllocsPerRun(100, func() { tp.RecordTick(r) }); n != 0 {
		t.Errorf("%v allocations per tick", n)
	}
}

// Serve stops with the context, after sending what the ring held.
func TestTapServeDrainsOnStop(t *testing.T) {
	rx := listen(t)
	tp := newTap(t, rx, 16)
	for n := range uint64(5) {
		tp.RecordTick(tick(n))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tp.Serve(ctx); err != nil {
		t.Fatal(err)
	}
	read(t, rx, 5)
}

func TestTapConfigRefused(t *testing.T) {
	ok := netip.MustParseAddrPort("127.0.0.1:5004")
	for name, cfg := range map[string]Config{
		"no address":   {Clock: &fakeClock{}},
		"port 0":       {Address: netip.MustParseAddrPort("127.0.0.1:0"), Clock: &fakeClock{}},
		"static PT":    {Address: ok, PayloadType: 8, Clock: &fakeClock{}},
		"one slot":     {Address: ok, Slots: 1, Clock: &fakeClock{}},
		"no clock":     {Address: ok},
		"long name":    {Address: ok, Clock: &fakeClock{}, Descriptor: payload.Descriptor{Link: string(make([]byte, 300))}},
		"huge measure": {Address: ok, Clock: &fakeClock{}, Descriptor: payload.Descriptor{Measure: []payload.Field{{Name: "x", Unit: "", Len: 5000}}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A tap nobody listens to yet loses nothing once someone does: the ICMP
// "port unreachable" of the datagrams nobody took fails no later send.
func TestTapToNobodyFirst(t *testing.T) {
	// Nobody there: the port is held, unreachable, until opened below.
	rx2, open := testutil.ClosedUDPPort(t)
	addr := rx2.LocalAddr().(*net.UDPAddr)
	tp, err := New(Config{Address: addr.AddrPort(), Clock: &fakeClock{ns: 5e9},
		Descriptor: payload.Descriptor{Link: "arm", RateHz: 1000, Measure: []payload.Field{{Name: "q", Unit: "rad", Len: 2}}, Command: []payload.Field{{Name: "u", Unit: "rad", Len: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { tp.Serve(ctx) })
	defer func() { cancel(); wg.Wait(); tp.Close() }()
	for n := range uint64(20) {
		tp.RecordTick(tick(n))
	}
	waitSent(t, tp, 20)
	open()
	for n := range uint64(20) {
		tp.RecordTick(tick(20 + n))
	}
	pkts := read(t, rx2, 20)
	for i, p := range pkts {
		if p.SequenceNumber != pkts[0].SequenceNumber+uint16(i) {
			t.Fatalf("packet %d: seq %d after %d: a send was lost", i, p.SequenceNumber, pkts[0].SequenceNumber)
		}
	}
	if s := tp.Stats(); s.Errors != 0 {
		t.Errorf("%d send errors", s.Errors)
	}
}

func waitSent(t *testing.T, tp *Tap, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); tp.Stats().Sent+tp.Stats().Errors < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sent %+v of %d", tp.Stats(), n)
		}
	}
}
