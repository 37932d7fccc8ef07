package tap_test

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
	"github.com/labbridge/bridge/tap"
	"github.com/labbridge/bridge/tap/payload"
)

var lo = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// A whole tick of a link on loopback UDP, with the tap on, allocates
// nothing; the tap sends each exchanged tick with the seq, status and
// vectors the link had.
func TestTickWithTapAllocatesNothing(t *testing.T) {
	clock := realtime.NewClock()
	dims := simulink.Dims{MeasureLen: 7, CommandLen: 4, Hold: simulink.Span{Off: 3, Len: 4}, Feature: simulink.Span{Off: 0, Len: 3}}
	period := 20 * time.Millisecond
	// The master binds port 0 first, the partner is told the master's bound
	// ports and binds its own on port 0, and the master is pointed at it: no
	// port is free between choosing and binding it.
	mc := simulink.DefaultMasterConfig(7, 4)
	mc.Bind, mc.Listen = netip.AddrPortFrom(lo, 0), netip.AddrPortFrom(lo, 0)
	master, err := simulink.NewMaster(mc, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	from, err := master.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	replyTo, err := master.ListenAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := simulink.NewController(simulink.ControllerSpec{Kind: "constant", U: []float64{0.1, 0.2, 0.3, 0.4}}, dims, 50)
	if err != nil {
		t.Fatal(err)
	}
	partner, err := simulink.NewPartner(simulink.PartnerConfig{
		Listen: netip.AddrPortFrom(lo, 0), Accept: from, ReplyTo: replyTo, MeasureLen: 7, CommandLen: 4, Controller: ctl,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer partner.Close()
	if err := master.SetRemote(partner.Addr()); err != nil {
		t.Fatal(err)
	}
	motors, err := sim.NewMotors(sim.DefaultEmio(), clock)
	if err != nil {
		t.Fatal(err)
	}
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no UDP socket on loopback: %v", err)
	}
	defer rx.Close()
	tp, err := tap.New(tap.Config{
		Address: rx.LocalAddr().(*net.UDPAddr).AddrPort(), Clock: clock,
		Descriptor: payload.Descriptor{Link: "emio", RateHz: 50, Measure: []payload.Field{{Name: "markers", Unit: "mm", Len: 3}, {Name: "angles", Unit: "rad", Len: 4}},
			Command: []payload.Field{{Name: "angles", Unit: "rad", Len: 4}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim := []bridge.Limit{{Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}}
	link, err := bridge.NewLink(bridge.LinkConfig{Name: "emio", Loop: bridge.LoopConfig{Period: period, CPU: -1}, Limits: lim, Recorder: tp},
		motors, master, clock, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { partner.Serve(ctx) })
	wg.Go(func() { tp.Serve(ctx) })
	defer func() { cancel(); wg.Wait() }()

	var ti bridge.TickInfo
	tick := func() {
		now := clock.Now()
		ti.Deadline, ti.Wake, ti.Next = now, now, now+int64(period)
		link.Tick(&ti)
		ti.N++
	}
	for i := 0; i < 200 && link.State() != bridge.Running; i++ {
		tick()
	}
	if link.State() != bridge.Running {
		t.Fatalf("the link never ran: %+v", master.Stats())
	}
	for range 5 {
		tick()
	}
	if n := testing.AllocsPerRun(100, tick); n != 0 {
		t.Errorf("a tick with the tap on allocates %v times", n)
	}
	// Every tick the link ran was recorded: the packets carry tick indexes
	// 0..N-1 in order (none dropped here: the ring holds a second).
	want := int(ti.N)
	buf := make([]byte, 2048)
	var r payload.Record
	rx.SetReadDeadline(time.Now().Add(30 * time.Second))
	running := 0
	for i := range want {
		n, err := rx.Read(buf)
		if err != nil {
			t.Fatalf("packet %d of %d: %v (tap %+v)", i, want, err, tp.Stats())
		}
		var p rtp.Packet
		if err := p.Unmarshal(buf[:n]); err != nil {
			t.Fatal(err)
		}
		if err := r.Unmarshal(p.Payload); err != nil {
			t.Fatal(err)
		}
		if r.Tick != uint64(i) || len(r.Measurement) != 7 || len(r.Command) != 4 {
			t.Fatalf("packet %d: tick %d, %d and %d values", i, r.Tick, len(r.Measurement), len(r.Command))
		}
		if r.State == uint8(bridge.Running) && r.Status == uint8(simulink.OKNoDelay) {
			running++
			if r.Command[3] != 0.4 || r.ReplyLatency <= 0 || r.Sent == 0 {
				t.Errorf("packet %d: command %v latency %d sent %d", i, r.Command, r.ReplyLatency, r.Sent)
			}
		}
	}
	if running == 0 {
		t.Error("no packet of a running exchange")
	}
}
