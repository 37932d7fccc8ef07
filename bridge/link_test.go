package bridge_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

var lo = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// emioDims is the shape of the in-memory Emio (one marker, four motors).
var emioDims = simulink.Dims{MeasureLen: 7, CommandLen: 4, Hold: simulink.Span{Off: 3, Len: 4}, Feature: simulink.Span{Off: 0, Len: 3}}

// rig is a link on real loopback UDP against a simulink.Partner, on the in-memory
// plant, driven tick by tick by the test (or by its loop with Serve).
type rig struct {
	t       *testing.T
	clock   *realtime.Clock
	partner *simulink.Partner
	faults  *simulink.Faults
	master  *simulink.Master
	plant   *sim.Motors
	link    *bridge.Link
	ti      bridge.TickInfo
	period  time.Duration
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newRig(t *testing.T, ctl simulink.ControllerSpec, faults *simulink.Faults, period time.Duration) *rig {
	t.Helper()
	r := &rig{t: t, clock: realtime.NewClock(), faults: faults, period: period}
	// The master binds port 0 first, the partner is told the master's bound
	// ports and binds its own on port 0, and the master is pointed at it: no
	// port is free between choosing and binding it.
	mc := simulink.DefaultMasterConfig(7, 4)
	mc.Bind, mc.Listen = netip.AddrPortFrom(lo, 0), netip.AddrPortFrom(lo, 0)
	var err error
	if r.master, err = simulink.NewMaster(mc, r.clock, nil); err != nil {
		t.Fatal(err)
	}
	from, err := r.master.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	replyTo, err := r.master.ListenAddr()
	if err != nil {
		t.Fatal(err)
	}
	c, err := simulink.NewController(ctl, emioDims, float64(time.Second/period))
	if err != nil {
		r.master.Close()
		t.Fatal(err)
	}
	r.partner, err = simulink.NewPartner(simulink.PartnerConfig{
		Listen: netip.AddrPortFrom(lo, 0), Accept: from, ReplyTo: replyTo,
		MeasureLen: 7, CommandLen: 4, Controller: c, Faults: faults,
	})
	if err != nil {
		r.master.Close()
		t.Fatal(err)
	}
	if err := r.master.SetRemote(r.partner.Addr()); err != nil {
		r.partner.Close()
		r.master.Close()
		t.Fatal(err)
	}
	if r.plant, err = sim.NewMotors(sim.DefaultEmio(), r.clock); err != nil {
		t.Fatal(err)
	}
	lim := []bridge.Limit{{Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}}
	r.link, err = bridge.NewLink(bridge.LinkConfig{Name: "emio", Loop: bridge.LoopConfig{Period: period, CPU: -1}, Limits: lim},
		r.plant, r.master, r.clock, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Go(func() {
		if err := r.partner.Serve(ctx); err != nil {
			t.Errorf("partner: %v", err)
		}
	})
	t.Cleanup(func() {
		cancel()
		r.wg.Wait()
		r.partner.Close()
		r.master.Close()
	})
	return r
}

// tick runs one tick by hand with a receive window of one period.
func (r *rig) tick() simulink.Status {
	now := r.clock.Now()
	r.ti.Deadline, r.ti.Wake = now, now
	r.ti.Next = now + int64(r.period)
	r.link.Tick(&r.ti)
	r.ti.N++
	return r.master.Stats().LastStatus
}

// untilRunning ticks until the handshake completes.
func (r *rig) untilRunning() {
	r.t.Helper()
	for i := 0; i < 200; i++ {
		r.tick()
		if r.link.State() == bridge.Running {
			return
		}
	}
	r.t.Fatalf("link never running: %v", r.master.Stats())
}

func (r *rig) goal() []float64 {
	q, g := make([]float64, 4), make([]float64, 4)
	r.plant.State(q, g)
	return g
}

func TestTickAllocatesNothing(t *testing.T) {
	r := newRig(t, simulink.ControllerSpec{Kind: "sine", Amplitude: []float64{.1, .1, .1, .1}, Frequency: []float64{1, 1, 1, 1}}, nil, 50*time.Millisecond)
	r.untilRunning()
	for range 5 {
		r.tick()
	}
	// Each tick measured alone (AllocsPerRun divides by the runs, so one
	// allocation in a tick of many would round to 0), until 20 ticks that
	// exchanged are covered: a busy machine's timeouts only take longer.
	exchanged := 0
	for i := 0; i < 2000 && exchanged < 20; i++ {
		var ok bool
		allocs := testing.AllocsPerRun(1, func() { ok = r.tick().Success() })
		if allocs != 0 {
			t.Fatalf("a tick (exchanged: %v) allocates %v times", ok, allocs)
		}
		if ok {
			exchanged++
		}
	}
	if exchanged == 0 {
		t.Fatal("no tick of 2000 exchanged: the measure covered no real exchange")
	}
}

// Emioapi's order: the reply of tick k reaches the plant at the start of tick
// k+1, and the measurement is read before it is applied.
func TestApplyPreviousOrder(t *testing.T) {
	r := newRig(t, simulink.ControllerSpec{Kind: "constant", U: []float64{0.3, 0.2, 0.1, 0}}, nil, 20*time.Millisecond)
	r.untilRunning()
	if s := r.tick(); !s.Success() {
		t.Fatalf("status %v", s)
	}
	if g := r.goal(); g[0] != 0 {
		t.Fatalf("goal %v applied in the tick it arrived", g)
	}
	r.tick()
	if g := r.goal(); g[0] != 0.3 || g[2] != 0.1 {
		t.Fatalf("goal %v after the next tick, want the reply", g)
	}
}

// The partner stops and comes back: TIMEOUT, then RECONNECTED, then OK, and
// the command is held throughout.
func TestPartnerStopsAndComesBack(t *testing.T) {
	f := &simulink.Faults{}
	r := newRig(t, simulink.ControllerSpec{Kind: "constant", U: []float64{0.4, -0.4, 0.2, -0.2}}, f, 20*time.Millisecond)
	r.untilRunning()
	for range 3 {
		r.tick()
	}
	held := r.goal()
	if held[0] != 0.4 {
		t.Fatalf("goal %v", held)
	}
	f.Pause()
	var seen []simulink.Status
	for i := 0; i < 10; i++ {
		seen = append(seen, r.tick())
		if g := r.goal(); g[0] != held[0] || g[1] != held[1] {
			t.Fatalf("goal moved to %v while the partner was away", g)
		}
	}
	if r.link.State() != bridge.Handshaking {
		t.Fatalf("state %v, want handshaking", r.link.State())
	}
	f.Resume()
	for i := 0; i < 100 && r.link.State() != bridge.Running; i++ {
		seen = append(seen, r.tick())
	}
	for range 3 {
		seen = append(seen, r.tick())
	}
	// The statuses run TIMEOUT…, HANDSHAKING…, RECONNECTED, then successes.
	order := []simulink.Status{simulink.Timeout, simulink.Handshaking, simulink.Reconnected}
	k := 0
	for _, s := range seen {
		if k < len(order) && s == order[k] {
			k++
		}
	}
	if k != len(order) || !seen[len(seen)-1].Success() {
		t.Fatalf("statuses %v, want TIMEOUT, HANDSHAKING, RECONNECTED, then OK", seen)
	}
	if g := r.goal(); g[0] != 0.4 {
		t.Fatalf("goal %v after reconnection", g)
	}
}

// Duplicated and reordered replies: DESYNC is counted and nothing stale ever
// reaches the plant.
func TestDuplicatesAndReorderingApplyNothingStale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults *simulink.Faults
	}{
		{"duplicate", &simulink.Faults{Duplicate: 0.5, Seed: 3}},
		{"reorder", &simulink.Faults{Reorder: 0.3, Seed: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The sine makes every reply distinct: the command says which
			// seq it answers.
			r := newRig(t, simulink.ControllerSpec{Kind: "sine", Amplitude: []float64{1, 0, 0, 0}, Frequency: []float64{0.01, 0, 0, 0}}, tc.faults, 20*time.Millisecond)
			r.untilRunning()
			prev := math.Inf(-1)
			for i := 0; i < 150; i++ {
				r.tick()
				time.Sleep(200 * time.Microsecond) // lets a duplicate queue up
				g := r.goal()[0]
				// The sine rises over these ticks: a stale command would go back.
				if g < prev {
					t.Fatalf("tick %d: goal went back from %v to %v: a stale reply was applied", i, prev, g)
				}
				prev = g
			}
			if st := r.master.Stats(); st.Status[simulink.Desync] == 0 {
				t.Errorf("no DESYNC counted: %+v", st.Status)
			}
		})
	}
}

// Wrong-size and foreign-source datagrams are dropped and counted; the loop
// goes on exchanging.
func TestWrongSizeAndForeignDatagrams(t *testing.T) {
	r := newRig(t, simulink.ControllerSpec{Kind: "constant", U: []float64{0.1, 0.1, 0.1, 0.1}}, nil, 20*time.Millisecond)
	r.untilRunning()
	foreign, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 3)})
	if err != nil {
		t.Skip(err)
	}
	defer foreign.Close()
	local, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	to, _ := r.master.ListenAddr()
	to = netip.AddrPortFrom(lo, to.Port())
	ok := 0
	for i := 0; i < 20; i++ {
		seq := float64(r.master.Stats().Seq)
		foreign.WriteToUDPAddrPort(raw(seq, 9, 9, 9, 9), to)
		local.WriteToUDPAddrPort(raw(seq, 9, 9, 9), to)
		local.WriteToUDPAddrPort(raw(seq, 9, 9, 9, 9, 9, 9), to)
		if r.tick().Success() {
			ok++
		}
		if g := r.goal(); g[0] == 9 {
			t.Fatalf("a bad datagram reached the plant: %v", g)
		}
	}
	st := r.master.Stats()
	// The wrong sizes come from another port of the partner's host: after
	// the handshake that is foreign before it is the wrong size.
	if st.Dropped[simulink.DropSize]+st.Dropped[simulink.DropForeign] < 40 || st.Dropped[simulink.DropSource] < 10 {
		t.Errorf("drops %v", st.Dropped)
	}
	if ok < 15 {
		t.Errorf("only %d of 20 ticks succeeded beside the bad traffic", ok)
	}
}

func raw(vals ...float64) []byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

// fakeExchanger returns a scripted reply, NaN included, as if it had passed
// the wire.
type fakeExchanger struct {
	reply  []float64
	status simulink.Status
}

func (f *fakeExchanger) Exchange(_, command []float64, _ int64) simulink.Status {
	if f.status.Success() {
		copy(command, f.reply)
	}
	return f.status
}
func (f *fakeExchanger) Synced() bool { return true }

type countingObserver struct{ nonfinite, clamped, stale int }

func (c *countingObserver) RejectedNonFinite() { c.nonfinite++ }
func (c *countingObserver) Clamped()           { c.clamped++ }
func (c *countingObserver) StaleMeasurement()  { c.stale++ }

// A NaN or Inf command never reaches a motor; out-of-range values are clamped.
func TestNaNNeverApplied(t *testing.T) {
	clock := realtime.NewClock()
	plant, _ := sim.NewMotors(sim.DefaultEmio(), clock)
	ex := &fakeExchanger{status: simulink.OKNoDelay, reply: []float64{0.5, 0.5, 0.5, 0.5}}
	obs := &countingObserver{}
	lim := []bridge.Limit{{-1, 1}, {-1, 1}, {-1, 1}, {-1, 1}}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "x", Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: lim},
		plant, ex, clock, nil, obs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ti bridge.TickInfo
	goal := func() []float64 {
		q, g := make([]float64, 4), make([]float64, 4)
		plant.State(q, g)
		return g
	}
	l.Tick(&ti)
	l.Tick(&ti)
	if g := goal(); g[0] != 0.5 {
		t.Fatalf("goal %v", g)
	}
	for _, bad := range [][]float64{{math.NaN(), 0, 0, 0}, {0, math.Inf(1), 0, 0}, {0, 0, 0, math.Inf(-1)}} {
		ex.reply = bad
		l.Tick(&ti)
		l.Tick(&ti)
		if g := goal(); g[0] != 0.5 || g[1] != 0.5 || g[3] != 0.5 {
			t.Fatalf("goal %v after %v: the last good command was not held", g, bad)
		}
	}
	if obs.nonfinite != 6 {
		t.Errorf("non-finite rejections %d, want 6", obs.nonfinite)
	}
	ex.reply = []float64{2, -3, 0.25, 1}
	l.Tick(&ti)
	l.Tick(&ti)
	if g := goal(); g[0] != 1 || g[1] != -1 || g[2] != 0.25 || obs.clamped < 2 {
		t.Fatalf("goal %v clamped %d", g, obs.clamped)
	}
	// A TIMEOUT holds too.
	ex.status = simulink.Timeout
	l.Tick(&ti)
	if g := goal(); g[0] != 1 {
		t.Fatalf("goal %v after a timeout", g)
	}
}

// The supervisor runs a real loop; the adapter is unplugged and plugged back:
// the link goes degraded, recovers by itself, and the loop never stops.
func TestDeviceUnplugDegradesAndRecovers(t *testing.T) {
	r := newRig(t, simulink.ControllerSpec{Kind: "constant", U: []float64{0.2, 0.2, 0.2, 0.2}}, nil, 5*time.Millisecond)
	var mu sync.Mutex
	var events []bridge.Event
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{
		Backoff: bridge.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Factor: 2, Jitter: 0.2},
		OnEvent: func(ev bridge.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() },
		Seed:    1,
	})
	if err := sup.AddLink(r.link, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	testutil.WaitFor(t, "running", func() bool { return r.link.State() == bridge.Running && r.link.Applied() > 0 })
	r.plant.Unplug()
	testutil.WaitFor(t, "degraded", func() bool { return r.link.State() == bridge.Degraded })
	t0 := r.link.Ticks()
	testutil.WaitFor(t, "ticks while degraded", func() bool { return r.link.Ticks() > t0+20 })
	// Simulink meanwhile receives the last measurement again: counted stale.
	testutil.WaitFor(t, "a stale measurement counted", func() bool { return r.link.Stale() > 0 })
	r.plant.Plug()
	testutil.WaitFor(t, "recovered", func() bool { return r.link.State() == bridge.Running })
	a0 := r.link.Applied()
	testutil.WaitFor(t, "commands again", func() bool { return r.link.Applied() > a0+5 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.link.State() != bridge.Stopped {
		t.Errorf("state %v after stop", r.link.State())
	}
	mu.Lock()
	defer mu.Unlock()
	// A reply late on a busy machine makes the master handshake again
	// (running, handshaking, running): not what this test is about, so a
	// handshake after the first one is left out of the path.
	var path []bridge.State
	var degraded *bridge.Event
	for i, ev := range events {
		if ev.To == bridge.Handshaking && i > 0 || len(path) > 0 && path[len(path)-1] == ev.To {
			continue
		}
		path = append(path, ev.To)
		if ev.To == bridge.Degraded && degraded == nil {
			degraded = &events[i]
		}
	}
	want := []bridge.State{bridge.Handshaking, bridge.Running, bridge.Degraded, bridge.Running, bridge.Stopped}
	if !slices.Equal(path, want) {
		t.Fatalf("states %v (all: %v), want %v", path, events, want)
	}
	if degraded.Err == nil || degraded.Cause != bridge.CauseDeviceError {
		t.Errorf("degraded event %+v", *degraded)
	}
}

// recordingPlant logs the order of calls.
type recordingPlant struct{ calls []string }

func (p *recordingPlant) MeasureLen() int             { return 7 }
func (p *recordingPlant) CommandLen() int             { return 4 }
func (p *recordingPlant) Measure([]float64) error     { p.calls = append(p.calls, "measure"); return nil }
func (p *recordingPlant) Command([]float64) error     { p.calls = append(p.calls, "command"); return nil }
func (p *recordingPlant) Halt(plant.HaltPolicy) error { p.calls = append(p.calls, "halt"); return nil }

// fourMotorLink is a 1 kHz link of four commands limited to ±1.
func fourMotorLink(t *testing.T, mode bridge.ApplyMode, p plant.Plant, ex bridge.Exchanger) *bridge.Link {
	t.Helper()
	lim := []bridge.Limit{{-1, 1}, {-1, 1}, {-1, 1}, {-1, 1}}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "x", Apply: mode, Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: lim},
		p, ex, realtime.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Requirement 7: each tick reads the motors first, then writes the previous
// tick's command, then exchanges; with apply = "immediate" the reply is
// written as soon as it arrives.
func TestTickOrder(t *testing.T) {
	for _, tc := range []struct {
		mode bridge.ApplyMode
		want string
	}{
		{bridge.ApplyPrevious, "measure measure command measure command"},
		{bridge.ApplyImmediate, "measure command measure command measure command"},
	} {
		p := &recordingPlant{}
		l := fourMotorLink(t, tc.mode, p, &fakeExchanger{status: simulink.OK, reply: []float64{0.1, 0.1, 0.1, 0.1}})
		var ti bridge.TickInfo
		for range 3 {
			l.Tick(&ti)
		}
		if got := strings.Join(p.calls, " "); got != tc.want {
			t.Errorf("%v: calls %q, want %q", tc.mode, got, tc.want)
		}
	}
}

// Requirement 6: one measurement datagram per tick, never more.
func TestOneDatagramPerTick(t *testing.T) {
	r := newRig(t, simulink.ControllerSpec{Kind: "hold"}, nil, 10*time.Millisecond)
	r.untilRunning()
	before := r.partner.Stats().Received
	for range 50 {
		r.tick()
	}
	testutil.WaitFor(t, "the partner to read every datagram", func() bool { return r.partner.Stats().Received >= before+50 })
	time.Sleep(20 * time.Millisecond)
	if got := r.partner.Stats().Received - before; got != 50 {
		t.Errorf("%d datagrams for 50 ticks", got)
	}
}

// A plant whose vectors do not fit the datagrams is refused at wiring time.
func TestLinkRefusesMismatchedLengths(t *testing.T) {
	clock := realtime.NewClock()
	mc := simulink.DefaultMasterConfig(10, 4) // two markers
	mc.Remote, mc.Bind, mc.Listen = netip.AddrPortFrom(lo, 9), netip.AddrPortFrom(lo, 0), netip.AddrPortFrom(lo, 0)
	m, err := simulink.NewMaster(mc, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	plant, _ := sim.NewMotors(sim.DefaultEmio(), clock) // 7 measured values
	lim := []bridge.Limit{{Min: -1, Max: 1}, {Min: -1, Max: 1}, {Min: -1, Max: 1}, {Min: -1, Max: 1}}
	_, err = bridge.NewLink(bridge.LinkConfig{Name: "x", Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: lim},
		plant, m, clock, nil, nil, nil)
	if !errors.Is(err, bridge.ErrConfig) || !strings.Contains(err.Error(), "10 measured and 4 command values, the plant 7 and 4") {
		t.Fatalf("%v", err)
	}
}

// warmingPlant is not ready for its first ticks (a camera before its first
// frame).
type warmingPlant struct {
	recordingPlant
	ready bool
}

func (p *warmingPlant) Ready() bool { return p.ready }

type countingExchanger struct {
	fakeExchanger
	n        int
	unsynced bool
}

func (c *countingExchanger) Exchange(m, cmd []float64, d int64) simulink.Status {
	c.n++
	if c.unsynced {
		return simulink.Handshaking
	}
	return c.fakeExchanger.Exchange(m, cmd, d)
}

func (c *countingExchanger) Synced() bool { return !c.unsynced }

// Until the plant's measurement is complete, the link reads it but sends
// nothing, so Simulink never sees made-up markers.
func TestNotReadyPlantSendsNothing(t *testing.T) {
	p := &warmingPlant{}
	ex := &countingExchanger{fakeExchanger: fakeExchanger{status: simulink.OK, reply: []float64{0.1, 0.1, 0.1, 0.1}}}
	l := fourMotorLink(t, bridge.ApplyPrevious, p, ex)
	var ti bridge.TickInfo
	for range 3 {
		l.Tick(&ti)
	}
	if ex.n != 0 || l.Applied() != 0 || strings.Join(p.calls, " ") != "measure measure measure" {
		t.Fatalf("not ready: %d exchanges, %d applied, calls %v", ex.n, l.Applied(), p.calls)
	}
	// Before synchronisation the handshake runs (its packets carry no
	// measurement).
	ex.unsynced = true
	l.Tick(&ti)
	if ex.n != 1 || l.Applied() != 0 {
		t.Fatalf("handshake while not ready: %d exchanges, %d applied", ex.n, l.Applied())
	}
	ex.unsynced, ex.n = false, 0
	p.ready = true
	for range 2 {
		l.Tick(&ti)
	}
	if ex.n != 2 || l.Applied() != 1 {
		t.Fatalf("ready: %d exchanges, %d applied, want 2 and 1", ex.n, l.Applied())
	}
}

// deadmanPlant is a velocity-streaming robot: it must hear of every tick
// without a fresh command.
type deadmanPlant struct{ recordingPlant }

func (p *deadmanPlant) Idle() error { p.calls = append(p.calls, "idle"); return nil }

// scriptedExchanger answers each tick with the next status of a script.
type scriptedExchanger struct {
	fakeExchanger
	script []simulink.Status
}

func (s *scriptedExchanger) Exchange(m, cmd []float64, d int64) simulink.Status {
	s.status, s.script = s.script[0], s.script[1:]
	return s.fakeExchanger.Exchange(m, cmd, d)
}

// A Deadman plant gets each received command once, and Idle on every tick
// that brought none (a timeout, a desync), in either apply
// mode; a plain plant gets the last good command every tick.
func TestDeadmanGetsOnlyFreshCommands(t *testing.T) {
	script := []simulink.Status{simulink.OK, simulink.Timeout, simulink.Desync, simulink.OKNoDelay, simulink.OK}
	for _, tc := range []struct {
		name    string
		mode    bridge.ApplyMode
		deadman bool
		want    string
	}{
		{"previous, deadman", bridge.ApplyPrevious, true,
			"measure idle | measure command | measure idle | measure idle | measure command"},
		{"immediate, deadman", bridge.ApplyImmediate, true,
			"measure command | measure idle | measure idle | measure command | measure command"},
		{"previous, plain", bridge.ApplyPrevious, false,
			"measure | measure command | measure command | measure command | measure command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p interface {
				plant.Plant
				log() *[]string
			}
			if tc.deadman {
				p = &deadmanLog{}
			} else {
				p = &plainLog{}
			}
			ex := &scriptedExchanger{fakeExchanger: fakeExchanger{reply: []float64{0.1, 0.1, 0.1, 0.1}}, script: slices.Clone(script)}
			l := fourMotorLink(t, tc.mode, p, ex)
			var ti bridge.TickInfo
			var ticks []string
			for range script {
				*p.log() = nil
				l.Tick(&ti)
				ticks = append(ticks, strings.Join(*p.log(), " "))
			}
			if got := strings.Join(ticks, " | "); got != tc.want {
				t.Errorf("calls\n %q\nwant\n %q", got, tc.want)
			}
		})
	}
}

type deadmanLog struct{ deadmanPlant }

func (p *deadmanLog) log() *[]string { return &p.calls }

type plainLog struct{ recordingPlant }

func (p *plainLog) log() *[]string { return &p.calls }

// latchingPlant is a recordingPlant whose last value a goroutine would keep
// newest: Latch writes it, and the exchanger records what it was sent.
type latchingPlant struct {
	recordingPlant
	newest float64
}

func (p *latchingPlant) Latch(dst []float64) {
	p.calls = append(p.calls, "latch")
	dst[len(dst)-1] = p.newest
}

type sentRecorder struct {
	fakeExchanger
	calls *[]string
	sent  []float64
}

func (s *sentRecorder) Exchange(measure, command []float64, deadline int64) simulink.Status {
	*s.calls = append(*s.calls, "exchange")
	s.sent = append(s.sent[:0], measure...)
	return s.fakeExchanger.Exchange(measure, command, deadline)
}

// A Latcher's values are taken after measuring and applying, right before
// the exchange, and they are what the datagram carries and the status view
// shows.
func TestLatchRightBeforeTheExchange(t *testing.T) {
	p := &latchingPlant{newest: 42}
	ex := &sentRecorder{fakeExchanger: fakeExchanger{status: simulink.OK, reply: []float64{0.1, 0.1, 0.1, 0.1}}, calls: &p.calls}
	l := fourMotorLink(t, bridge.ApplyPrevious, p, ex)
	var ti bridge.TickInfo
	l.Tick(&ti)
	p.newest = 43
	l.Tick(&ti)
	if got, want := strings.Join(p.calls, " "), "measure latch exchange measure command latch exchange"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	meas := make([]float64, 7)
	if ex.sent[6] != 43 || !l.Measurement(meas) || meas[6] != 43 {
		t.Fatalf("sent %v, shown %v: want the latched 43 last", ex.sent, meas)
	}
}

// lackingPlant says what its measurement lacks (a camera's first frame,
// frames that stopped), as plant.Lacker.
type lackingPlant struct {
	warmingPlant
	lack error
}

func (p *lackingPlant) Lack() error { return p.lack }

var errNoFrames = errors.New("camera x: no frames")

// A link is running only while measurements leave: one whose handshake is
// done before its first whole measurement is degraded at once, saying what
// is missing; one whose measurement stops lacking runs again; one whose
// measurement lacks for the hold is degraded, applies nothing and sends the
// last measurement as stale.
func TestLackingMeasurementIsNotRunning(t *testing.T) {
	p := &lackingPlant{lack: bridge.ErrIncomplete}
	ex := &countingExchanger{fakeExchanger: fakeExchanger{status: simulink.OK, reply: []float64{0.1, 0.1, 0.1, 0.1}}, unsynced: true}
	var states []string
	lim := []bridge.Limit{{-1, 1}, {-1, 1}, {-1, 1}, {-1, 1}}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "x", Hold: 2 * time.Second, Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: lim},
		p, ex, realtime.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	drain := func() {
		for {
			select {
			case ev := <-l.Events():
				states = append(states, ev.To.String()+"/"+ev.Cause)
			default:
				return
			}
		}
	}
	var ti bridge.TickInfo
	tick := func(at time.Duration) { ti.Deadline = int64(at); ti.Next = int64(at + time.Millisecond); l.Tick(&ti) }
	tick(0) // handshaking, nothing measured whole
	ex.unsynced = false
	tick(time.Millisecond) // the handshake is done: nothing to send
	drain()
	if st := l.State(); st != bridge.Degraded || !errors.Is(l.Lack(), bridge.ErrIncomplete) {
		t.Fatalf("synced without a whole measurement: %v, lack %v; want degraded, ErrIncomplete", st, l.Lack())
	}
	if slices.Contains(states, "running/"+bridge.CauseHandshake) {
		t.Errorf("running before the first whole measurement: %v", states)
	}
	p.lack, p.ready = nil, true
	tick(2 * time.Millisecond)
	drain()
	if l.State() != bridge.Running || l.Lack() != nil {
		t.Fatalf("whole: %v, lack %v", l.State(), l.Lack())
	}
	// Frames stop: within the hold the link still runs; past it, degraded,
	// with nothing applied and the measurement sent stale.
	p.lack = errNoFrames
	tick(time.Second)
	if l.State() != bridge.Running {
		t.Fatalf("within the hold: %v", l.State())
	}
	tick(4 * time.Second)
	drain()
	if l.State() != bridge.Degraded || !errors.Is(l.Lack(), errNoFrames) {
		t.Fatalf("past the hold: %v, lack %v", l.State(), l.Lack())
	}
	applied, stale, sent := l.Applied(), l.Stale(), ex.n
	for i := range 5 {
		tick(4*time.Second + time.Duration(i+1)*time.Millisecond)
	}
	if l.Applied() != applied || l.Stale() != stale+5 || ex.n != sent+5 {
		t.Errorf("while lacking: applied %d→%d (want none), stale %d→%d, sent %d→%d (want 5 each)", applied, l.Applied(), stale, l.Stale(), sent, ex.n)
	}
	p.lack = nil
	tick(5 * time.Second)
	drain()
	if l.State() != bridge.Running || l.Lack() != nil {
		t.Errorf("frames back: %v, lack %v", l.State(), l.Lack())
	}
	want := []string{"degraded/" + bridge.CauseIncomplete, "running/" + bridge.CauseComplete, "degraded/" + bridge.CauseIncomplete, "running/" + bridge.CauseComplete}
	if got := states[len(states)-4:]; !slices.Equal(got, want) {
		t.Errorf("transitions %v, want ... %v", states, want)
	}
}

// The state and the instant it was entered are read together: from the
// link's start, and after each transition, at that transition's time.
func TestStateSince(t *testing.T) {
	r := newRig(t, simulink.ControllerSpec{Kind: "hold"}, nil, 5*time.Millisecond)
	st, at := r.link.StateSince()
	if st != r.link.State() || at <= 0 || at > r.clock.Now() {
		t.Fatalf("new link: %v since %d (now %d)", st, at, r.clock.Now())
	}
	before := r.clock.Now()
	r.untilRunning()
	st, at = r.link.StateSince()
	if st != bridge.Running || at < before/1000*1000 || at > r.clock.Now() {
		t.Errorf("running since %d, want between %d and %d", at, before, r.clock.Now())
	}
	if d := time.Until(r.clock.Time(at)); d > time.Millisecond || d < -time.Minute {
		t.Errorf("the wall-clock time of the transition is %v from now", d)
	}
}

// steppedPlant notes the deadline each Measure was told of.
type steppedPlant struct {
	*sim.Motors
	told, measuredAt []int64
}

func (p *steppedPlant) StepTo(d int64) { p.told = append(p.told, d); p.Motors.StepTo(d) }
func (p *steppedPlant) Measure(dst []float64) error {
	p.measuredAt = append(p.measuredAt, p.told[len(p.told)-1])
	return p.Motors.Measure(dst)
}

// A plant.Stepped plant is told each tick's deadline before its Measure.
func TestSteppedPlantToldTheDeadline(t *testing.T) {
	clock := realtime.NewClock()
	m, _ := sim.NewMotors(sim.DefaultEmio(), clock)
	p := &steppedPlant{Motors: m}
	ex := &fakeExchanger{status: simulink.OKNoDelay, reply: []float64{0.5, 0.5, 0.5, 0.5}}
	lim := []bridge.Limit{{-1, 1}, {-1, 1}, {-1, 1}, {-1, 1}}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "x", Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: lim},
		p, ex, clock, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		ti := bridge.TickInfo{N: uint64(k), Deadline: int64(1000 + k)}
		l.Tick(&ti)
	}
	if !slices.Equal(p.told, []int64{1000, 1001, 1002}) || !slices.Equal(p.measuredAt, p.told) {
		t.Errorf("told %v, measured at %v", p.told, p.measuredAt)
	}
}

// givingPlant keeps the commands it is given.
type givingPlant struct {
	recordingPlant
	got [][]float64
}

func (p *givingPlant) Command(u []float64) error { p.got = append(p.got, slices.Clone(u)); return nil }

// lastRecord keeps the tick record it was handed last.
type lastRecord struct{ given, applied []float64 }

func (r *lastRecord) RecordTick(t *bridge.TickRecord) {
	r.given, r.applied = slices.Clone(t.Given), slices.Clone(t.Applied)
	if !t.CommandApplied {
		r.given = nil
	}
}

// The record's Given is what the plant was given on its tick: in emioapi's
// order the reply of the tick before, while Applied is this tick's reply,
// for the next.
func TestRecordGivenIsWhatThePlantGot(t *testing.T) {
	for _, mode := range []bridge.ApplyMode{bridge.ApplyPrevious, bridge.ApplyImmediate} {
		p := &givingPlant{}
		ex := &fakeExchanger{status: simulink.OK}
		rec := &lastRecord{}
		lim := []bridge.Limit{{-1, 1}, {-1, 1}, {-1, 1}, {-1, 1}}
		l, err := bridge.NewLink(bridge.LinkConfig{Name: "x", Apply: mode, Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: lim, Recorder: rec},
			p, ex, realtime.NewClock(), nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ti bridge.TickInfo
		for k := range 4 {
			v := 0.1 * float64(k+1)
			ex.reply = []float64{v, v, v, v}
			l.Tick(&ti)
			if len(p.got) == 0 {
				if rec.given != nil {
					t.Errorf("%v tick %d: given %v, nothing reached the plant", mode, k, rec.given)
				}
				continue
			}
			if last := p.got[len(p.got)-1]; !slices.Equal(rec.given, last) {
				t.Errorf("%v tick %d: the record says %v given, the plant got %v", mode, k, rec.given, last)
			}
			if mode == bridge.ApplyPrevious && rec.applied[0] != v {
				t.Errorf("%v tick %d: applied %v, want this tick's reply %v", mode, k, rec.applied, v)
			}
		}
	}
}
