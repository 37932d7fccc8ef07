package simulink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// monoClock is a monotonic nanosecond clock for tests.
type monoClock struct{ base time.Time }

func newMonoClock() *monoClock                { return &monoClock{base: time.Now()} }
func (c *monoClock) Now() int64               { return int64(time.Since(c.base)) }
func (c *monoClock) in(d time.Duration) int64 { return c.Now() + int64(d) }

var loopback = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// datagram builds [seq, vals…] as raw bytes, NaN and all.
func datagram(seq float64, vals ...float64) []byte {
	b := make([]byte, 8*(1+len(vals)))
	binary.LittleEndian.PutUint64(b, math.Float64bits(seq))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*(i+1):], math.Float64bits(v))
	}
	return b
}

// received is one measurement the scripted peer saw.
type received struct {
	seq  float64
	vals []float64
	size int
	src  netip.AddrPort
	to   netip.AddrPort // where the peer's replies go
}

// scriptPeer plays the Simulink side from a script: for each measurement it
// receives, script returns the raw datagrams to send back to the master.
type scriptPeer struct {
	t      *testing.T
	conn   *net.UDPConn
	out    *net.UDPConn // replies leave from another socket, as Simulink's UDP Send does
	to     netip.AddrPort
	script func(r received) [][]byte

	mu      sync.Mutex
	seen    []received
	handled int // datagrams whose replies, if any, are sent
	wg      sync.WaitGroup
}

func newScriptPeer(t *testing.T, addr string, script func(r received) [][]byte) *scriptPeer {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		if netip.MustParseAddrPort(addr).Port() != 0 {
			// A fixed port (emioapi's) may be held by a bridge, emioapi or
			// Simulink running on this machine: not this test's failure.
			t.Skipf("port %s is taken on this machine (a running bridge, emioapi or Simulink?): %v", addr, err)
		}
		t.Fatalf("peer listen %s: %v", addr, err)
	}
	o, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	return &scriptPeer{t: t, conn: c, out: o, script: script}
}

func (p *scriptPeer) addr() netip.AddrPort { return p.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (p *scriptPeer) start(to netip.AddrPort) {
	p.to = to
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		buf := make([]byte, 2048)
		for {
			n, src, err := p.conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			r := received{size: n, src: src, to: p.to}
			if n >= 8 {
				r.seq = math.Float64frombits(binary.LittleEndian.Uint64(buf))
				for i := 8; i+8 <= n; i += 8 {
					r.vals = append(r.vals, math.Float64frombits(binary.LittleEndian.Uint64(buf[i:])))
				}
			}
			p.mu.Lock()
			p.seen = append(p.seen, r)
			script := p.script
			p.mu.Unlock()
			var out [][]byte
			if script != nil {
				out = script(r)
			}
			for _, d := range out {
				// A test may end, closing the sockets, while the peer still
				// answers its last measurement.
				if _, err := p.out.WriteToUDPAddrPort(d, p.to); err != nil && !errors.Is(err, net.ErrClosed) {
					p.t.Errorf("peer send: %v", err)
				}
			}
			p.mu.Lock()
			p.handled++
			p.mu.Unlock()
		}
	}()
}

func (p *scriptPeer) setScript(s func(r received) [][]byte) {
	p.mu.Lock()
	p.script = s
	p.mu.Unlock()
}

func (p *scriptPeer) received() []received {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]received(nil), p.seen...)
}

// peerWait bounds the waits for the peer's goroutine; it only matters when a
// test fails.
const peerWait = 5 * time.Second

// waitReceived waits until the peer has read n datagrams and returns them
// all: a datagram the master sent may still be in the peer's socket.
func (p *scriptPeer) waitReceived(n uint64) []received {
	p.t.Helper()
	for end := time.Now().Add(peerWait); ; time.Sleep(time.Millisecond) {
		if got := p.received(); uint64(len(got)) >= n {
			return got
		}
		if time.Now().After(end) {
			p.t.Fatalf("the peer read %d datagrams in %v, want %d", len(p.received()), peerWait, n)
		}
	}
}

// waitHandled waits until the peer has answered the first n datagrams.
func (p *scriptPeer) waitHandled(n uint64) {
	p.t.Helper()
	for end := time.Now().Add(peerWait); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		h := p.handled
		p.mu.Unlock()
		if uint64(h) >= n {
			return
		}
		if time.Now().After(end) {
			p.t.Fatalf("the peer answered %d datagrams in %v, want %d", h, peerWait, n)
		}
	}
}

func (p *scriptPeer) close() {
	p.conn.Close()
	p.out.Close()
	p.wg.Wait()
}

// echo answers like the shipped Simulink models: seq if seq > 0, else −1.
func echo(u ...float64) func(r received) [][]byte {
	return func(r received) [][]byte {
		s := r.seq
		if s <= 0 {
			s = -1
		}
		return [][]byte{datagram(s, u...)}
	}
}

// testConfig is the default configuration on ephemeral loopback ports, but
// for two intervals that would make the tests depend on the scheduler:
//   - RecvTimeout is the longest allowed, so that the deadline each tick
//     passes is its receive window (it is capped by RecvTimeout).
//   - HandshakeInterval outlasts any handshake, so that one seq −1 packet is
//     sent and no reply to an earlier one can turn up after the handshake.
//     Tests of the resends set it back.
func testConfig(remote netip.AddrPort) MasterConfig {
	c := DefaultMasterConfig(7, 4)
	c.Remote = remote
	c.Bind = netip.AddrPortFrom(loopback, 0)
	c.Listen = netip.AddrPortFrom(loopback, 0)
	c.RecvTimeout = 10 * time.Second
	c.HandshakeInterval = 10 * time.Second
	return c
}

type rig struct {
	t     *testing.T
	m     *Master
	peer  *scriptPeer
	clock *monoClock
	meas  []float64
	cmd   []float64
}

func newRig(t *testing.T, script func(r received) [][]byte, edit func(*MasterConfig)) *rig {
	t.Helper()
	p := newScriptPeer(t, "127.0.0.1:0", script)
	cfg := testConfig(p.addr())
	if edit != nil {
		edit(&cfg)
	}
	clock := newMonoClock()
	m, err := NewMaster(cfg, clock, nil)
	if err != nil {
		p.close()
		t.Fatal(err)
	}
	la, err := m.ListenAddr()
	if err != nil {
		t.Fatal(err)
	}
	p.start(la)
	r := &rig{t: t, m: m, peer: p, clock: clock,
		meas: make([]float64, cfg.MeasureLen), cmd: make([]float64, cfg.CommandLen)}
	t.Cleanup(func() { p.close(); m.Close() })
	return r
}

// tick runs one exchange with a receive window of w.
func (r *rig) tick(w time.Duration) Status {
	return r.m.Exchange(r.meas, r.cmd, r.clock.in(w))
}

// sync drives the handshake to completion.
func (r *rig) sync() {
	r.t.Helper()
	for i := 0; i < 50; i++ {
		if s := r.tick(100 * time.Millisecond); r.m.Synced() {
			if s != Handshaking && s != Reconnected {
				r.t.Fatalf("handshake completed with status %v", s)
			}
			r.drain()
			return
		}
	}
	r.t.Fatal("handshake did not complete in 50 ticks")
}

// drain waits until the peer has answered everything the master sent. After
// a handshake with resends, the replies to the earlier seq −1 packets are
// then queued ahead of seq 0, where they read as the −1 the model answers
// seq 0 with; coming any later they would be a DESYNC.
func (r *rig) drain() {
	r.t.Helper()
	r.peer.waitHandled(r.m.Stats().Sent)
}

// replyWait is the receive window of a tick whose reply must come: far more
// than a busy machine takes to schedule the peer. A tick whose reply answers
// seq−1 (OK) waits it out in full.
const replyWait = time.Second

func TestDefaultsAreEmioapis(t *testing.T) {
	c := DefaultMasterConfig(7, 4)
	if c.Remote.String() != "127.0.0.1:25000" || c.Bind.Port() != 9090 || c.Listen.Port() != 25001 {
		t.Errorf("endpoints: remote %v bind %v listen %v", c.Remote, c.Bind, c.Listen)
	}
	if c.RecvTimeout != 100*time.Millisecond || c.HandshakeInterval != 50*time.Millisecond ||
		c.MaxTimeouts != 3 || c.MaxDesyncs != 5 || c.MeasureLen != 7 || c.CommandLen != 4 {
		t.Errorf("defaults: %+v", c)
	}
}

// Requirement 1 and 2 on emioapi's own ports: measurements leave from source
// port 9090 to 127.0.0.1:25000, replies are taken on 25001 from any port.
func TestCompatEmioapiPorts(t *testing.T) {
	p := newScriptPeer(t, "127.0.0.1:25000", echo(0.1, 0.2, 0.3, 0.4))
	defer p.close()
	cfg := DefaultMasterConfig(7, 4)
	cfg.RecvTimeout = replyWait // the ports are the point, not the 0.1 s window
	m, err := NewMaster(cfg, newMonoClock(), nil)
	if err != nil {
		// These fixed ports are the point of the test: the shipped models
		// send from and to them and cannot be told others. A bridge,
		// emioapi or Simulink running here may hold them.
		t.Skipf("emioapi's ports are taken on this machine: %v", err)
	}
	defer m.Close()
	p.start(netip.MustParseAddrPort("127.0.0.1:25001"))
	r := &rig{t: t, m: m, peer: p, clock: newMonoClock(), meas: make([]float64, 7), cmd: make([]float64, 4)}
	r.sync()
	if s := r.tick(replyWait); s != OK {
		t.Fatalf("seq 0 status %v, want OK (the model answers −1 at seq 0)", s)
	}
	for _, rc := range p.received() {
		if rc.src.Port() != 9090 || rc.src.Addr() != loopback {
			t.Fatalf("measurement from %v, want 127.0.0.1:9090", rc.src)
		}
	}
	if r.cmd[3] != 0.4 {
		t.Errorf("command %v", r.cmd)
	}
}

// Requirement 3: bare little-endian float64 datagrams of exactly
// (3·nb_markers+5)·8 bytes out; replies of 40 bytes.
func TestCompatDatagramSizes(t *testing.T) {
	for _, nb := range []int{1, 2, 3} {
		r := newRig(t, echo(1, 2, 3, 4), func(c *MasterConfig) {
			*c = func() MasterConfig {
				d := DefaultMasterConfig(emioDims(nb, 4).MeasureLen, 4)
				d.Remote, d.Bind, d.Listen = c.Remote, c.Bind, c.Listen
				return d
			}()
		})
		r.sync()
		for i := range r.meas {
			r.meas[i] = float64(i + 1)
		}
		// Only what the peer reads is checked, not the replies: the windows
		// just pace the ticks.
		r.tick(100 * time.Millisecond)
		r.tick(100 * time.Millisecond)
		last := r.peer.waitReceived(r.m.Stats().Sent)
		for _, rc := range last {
			if want := (3*nb + 5) * 8; rc.size != want {
				t.Errorf("nb_markers %d: datagram of %d bytes, want %d", nb, rc.size, want)
			}
		}
		got := last[len(last)-1]
		if got.seq != 1 || got.vals[0] != 1 || got.vals[len(got.vals)-1] != float64(3*nb+4) {
			t.Errorf("nb_markers %d: last datagram %+v", nb, got)
		}
	}
}

// Requirement 4: the handshake is a normal-size datagram with seq −1.0 and a
// zero payload, resent every 50 ms (never faster) until any datagram arrives.
func TestCompatHandshake(t *testing.T) {
	r := newRig(t, nil, func(c *MasterConfig) { c.HandshakeInterval = DefaultHandshakeInterval })
	// Counted where they are sent: a master kept off the CPU sends fewer,
	// never more, so the bound is the time the ticks took, not their windows.
	start := time.Now()
	for r.m.Stats().Sent < 3 {
		if s := r.tick(220 * time.Millisecond); s != Handshaking {
			t.Fatalf("status %v while nobody answers, want HANDSHAKING", s)
		}
		if time.Since(start) > peerWait {
			t.Fatalf("%d handshake packets in %v, want them resent", r.m.Stats().Sent, peerWait)
		}
	}
	elapsed := time.Since(start)
	sent := r.m.Stats().Sent
	if most := uint64(elapsed/DefaultHandshakeInterval) + 1; sent > most {
		t.Fatalf("%d handshake packets in %v, want at most %d (one every 50 ms)", sent, elapsed, most)
	}
	got := r.peer.waitReceived(sent)
	if uint64(len(got)) != sent {
		t.Fatalf("the peer read %d datagrams, the master sent %d", len(got), sent)
	}
	for _, rc := range got {
		if rc.size != 64 || rc.seq != -1 {
			t.Fatalf("handshake datagram %+v, want 64 bytes with seq −1", rc)
		}
		for _, v := range rc.vals {
			if v != 0 {
				t.Fatalf("handshake payload %v, want zeros", rc.vals)
			}
		}
	}
	r.peer.setScript(echo(0, 0, 0, 0))
	r.sync()
	if r.m.Stats().Handshakes != 1 {
		t.Errorf("handshakes %d", r.m.Stats().Handshakes)
	}
}

// Requirement 5: seq starts at 0 after the handshake and goes up by 1 every
// tick, timeouts and desyncs included; seq−1 and seq are both accepted.
func TestCompatSeqRules(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	script := func(r received) [][]byte {
		switch r.seq {
		case -1, 0:
			return [][]byte{datagram(-1, 1, 1, 1, 1)} // OK at seq 0
		case 1:
			return [][]byte{datagram(1, 2, 2, 2, 2)} // OK_NO_DELAY
		case 2:
			return nil // TIMEOUT
		case 3:
			return [][]byte{datagram(17, 9, 9, 9, 9)} // DESYNC
		case 4:
			return [][]byte{datagram(4.9, 5, 5, 5, 5)} // truncated toward zero: 4
		}
		return nil
	}
	r := newRig(t, script, nil)
	r.sync()
	want := []struct {
		s   Status
		cmd float64
	}{{OK, 1}, {OKNoDelay, 2}, {Timeout, 2}, {Desync, 2}, {OKNoDelay, 5}}
	for i, w := range want {
		win := replyWait
		if w.s == Timeout {
			win = 50 * time.Millisecond
		}
		if s := r.tick(win); s != w.s || r.cmd[0] != w.cmd {
			t.Fatalf("tick %d: status %v command %v, want %v %v", i, s, r.cmd, w.s, w.cmd)
		}
	}
	var seqs []float64
	for _, rc := range r.peer.received() {
		if rc.seq >= 0 {
			seqs = append(seqs, rc.seq)
		}
	}
	for i, s := range seqs {
		if s != float64(i) {
			t.Fatalf("seqs sent %v, want 0,1,2,…", seqs)
		}
	}
}

// A partner one tick behind by design answers seq−1 every tick: OK, never late.
func TestOneTickDelayPartner(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	r := newRig(t, func(r received) [][]byte { return [][]byte{datagram(r.seq-1, r.seq, 0, 0, 0)} }, nil)
	r.sync()
	for i := 0; i < 5; i++ {
		if s := r.tick(replyWait); s != OK || r.cmd[0] != float64(i) {
			t.Fatalf("tick %d: %v %v", i, s, r.cmd)
		}
	}
	if st := r.m.Stats(); st.Late != 0 || st.Status[OK] != 5 {
		t.Errorf("late %d OK %d", st.Late, st.Status[OK])
	}
}

// Requirement 11 and improvement 1: three timeouts start a re-handshake of
// seq −1 packets of the normal size; seq restarts at 0; the command is held
// throughout, never zeroed.
func TestTimeoutsReconnectAndHold(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	// The first re-handshake packet goes out while the partner is away: only
	// a resend can be answered.
	r := newRig(t, echo(0.5, -0.5, 0.25, 1), func(c *MasterConfig) { c.HandshakeInterval = DefaultHandshakeInterval })
	r.sync()
	if s := r.tick(replyWait); s != OK || r.cmd[0] != 0.5 {
		t.Fatalf("seq 0: %v %v", s, r.cmd)
	}
	r.peer.setScript(nil) // the partner stops; nothing answers, short windows will do
	for i := 0; i < 3; i++ {
		if s := r.tick(30 * time.Millisecond); s != Timeout {
			t.Fatalf("timeout %d: %v", i, s)
		}
	}
	if r.m.Synced() {
		t.Fatal("still synced after 3 timeouts")
	}
	n := r.m.Stats().Sent
	if s := r.tick(30 * time.Millisecond); s != Handshaking {
		t.Fatalf("status %v, want HANDSHAKING", s)
	}
	after := r.peer.waitReceived(n + 1)[n:]
	if after[0].seq != -1 || after[0].size != 64 {
		t.Fatalf("re-handshake datagrams %+v", after)
	}
	if r.cmd[0] != 0.5 || r.cmd[3] != 1 {
		t.Fatalf("command %v changed while the partner was away", r.cmd)
	}
	r.peer.setScript(echo(0.75, 0, 0, 0)) // the partner comes back
	var s Status
	for i := 0; i < 50 && s != Reconnected; i++ {
		s = r.tick(100 * time.Millisecond)
		if s != Reconnected && s != Handshaking {
			t.Fatalf("status %v while reconnecting", s)
		}
		if r.cmd[0] != 0.5 {
			t.Fatalf("command %v changed during the handshake", r.cmd)
		}
	}
	if s != Reconnected {
		t.Fatal("never RECONNECTED")
	}
	r.drain()
	n = r.m.Stats().Sent
	if s := r.tick(replyWait); s != OK || r.cmd[0] != 0.75 {
		t.Fatalf("after reconnect: %v %v", s, r.cmd)
	}
	if first := r.peer.waitReceived(n + 1)[n]; first.seq != 0 {
		t.Errorf("first seq after reconnect %v, want 0", first.seq)
	}
}

// Improvement 2: five desyncs re-handshake; a DESYNC payload is never applied.
func TestDesyncsHoldAndReconnect(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	r := newRig(t, echo(0.1, 0.1, 0.1, 0.1), nil)
	r.sync()
	if s := r.tick(replyWait); s != OK {
		t.Fatalf("seq 0: %v", s)
	}
	r.peer.setScript(func(rc received) [][]byte { return [][]byte{datagram(rc.seq+100, 9, 9, 9, 9)} })
	for i := 0; i < 5; i++ {
		if s := r.tick(replyWait); s != Desync {
			t.Fatalf("desync %d: %v", i, s)
		}
		if r.cmd[0] != 0.1 {
			t.Fatalf("DESYNC payload applied: %v", r.cmd)
		}
	}
	if r.m.Synced() {
		t.Fatal("still synced after 5 desyncs")
	}
}

// A reply to a handshake packet that arrives after the handshake (the
// partner woke while the master resent them) is stale, not a desync: a model
// answers −1 only while not synchronised.
func TestLateHandshakeReplyIsStale(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	r := newRig(t, echo(0.1, 0.1, 0.1, 0.1), nil)
	r.sync()
	if s := r.tick(replyWait); s != OK {
		t.Fatalf("seq 0: %v", s)
	}
	r.peer.setScript(func(rc received) [][]byte {
		return [][]byte{datagram(-1, 9, 9, 9, 9), datagram(rc.seq, 0.2, 0.2, 0.2, 0.2)}
	})
	if s := r.tick(replyWait); s != OKNoDelay || r.cmd[0] != 0.2 {
		t.Fatalf("seq 1: %v, command %v: want the echo applied past the late −1", s, r.cmd)
	}
	if st := r.m.Stats(); st.Dropped[DropStale] != 1 || st.Status[Desync] != 0 {
		t.Errorf("dropped %v, statuses %v: want one stale drop and no desync", st.Dropped, st.Status)
	}
}

// Duplicated replies: the stale copy is a DESYNC, its payload is not applied.
func TestDuplicateReplies(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	r := newRig(t, func(rc received) [][]byte {
		s := rc.seq
		if s <= 0 {
			s = -1
		}
		d := datagram(s, rc.seq, 0, 0, 0)
		return [][]byte{d, d}
	}, nil)
	r.sync()
	// The peer sends both copies before it reads the next measurement, so a
	// copy left behind by an OK_NO_DELAY is always read first the next tick.
	var desync int
	for i := 0; i < 20; i++ {
		s := r.tick(replyWait)
		switch s {
		case OK, OKNoDelay:
			// The command is the reply to this tick, or to the previous one
			// read as late: never older.
			if seq := r.m.Stats().Seq - 1; r.cmd[0] < float64(seq-1) {
				t.Fatalf("tick %d: stale command %v applied at seq %d", i, r.cmd, seq)
			}
		case Desync:
			desync++
		case Timeout:
		default:
			t.Fatalf("tick %d: %v", i, s)
		}
	}
	if desync == 0 {
		t.Error("duplicates never classified DESYNC")
	}
}

// Improvement 3: once the partner echoes seq, a reply to seq−1 is late: it is
// counted and measured, and the on-time reply wins when it arrives.
func TestLateReplies(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	var mu sync.Mutex
	var held []byte
	r := newRig(t, echo(0, 0, 0, 0), nil)
	r.sync()
	if s := r.tick(replyWait); s != OK {
		t.Fatalf("seq 0: %v", s)
	}
	if s := r.tick(replyWait); s != OKNoDelay { // echo seen
		t.Fatalf("seq 1: %v", s)
	}
	// Hold back the reply to the next seq until the one after is measured:
	// past its window, however slow the machine.
	r.peer.setScript(func(rc received) [][]byte {
		mu.Lock()
		defer mu.Unlock()
		if held == nil {
			held = datagram(rc.seq, rc.seq, 0, 0, 0)
			return nil
		}
		out := [][]byte{held, datagram(rc.seq, rc.seq, 0, 0, 0)}
		held = []byte{}
		return out
	})
	if s := r.tick(30 * time.Millisecond); s != Timeout {
		t.Fatalf("held tick: %v", s)
	}
	if s := r.tick(replyWait); s != OKNoDelay || r.cmd[0] != 3 {
		t.Fatalf("after late: %v %v, want OK_NO_DELAY with seq 3's reply", s, r.cmd)
	}
	st := r.m.Stats()
	if st.Late != 1 {
		t.Errorf("late %d, want 1", st.Late)
	}
	if st.LastLatency <= 0 {
		t.Errorf("latency %v", st.LastLatency)
	}
}

// Improvement 4: wrong-size (both ways), foreign-source and NaN datagrams are
// dropped and counted; the exchange goes on with the good reply behind them.
func TestBadDatagramsDropped(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	foreign, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Skipf("127.0.0.2 not bindable: %v", err)
	}
	defer foreign.Close()
	r := newRig(t, func(rc received) [][]byte {
		s := rc.seq
		if s <= 0 {
			s = -1
		}
		if rc.seq >= 0 {
			if _, err := foreign.WriteToUDPAddrPort(datagram(s, 7, 7, 7, 7), rc.to); err != nil {
				t.Error(err)
			}
		}
		return [][]byte{
			datagram(s, 1, 2, 3),       // 32 bytes
			datagram(s, 1, 2, 3, 4, 5), // 48 bytes
			{1, 2, 3},                  // 3 bytes
			datagram(s, math.NaN(), 0, 0, 0),
			datagram(math.Inf(1), 0, 0, 0, 0),
			datagram(s, 0.5, 0.5, 0.5, 0.5),
		}
	}, func(c *MasterConfig) {
		// Room for a whole tick's burst while the master is off the CPU:
		// the kernel would drop what the default buffer cannot hold, good
		// reply included, and the drops are what this test counts.
		c.RecvBuffer = 1 << 16
	})
	r.sync()
	before := r.m.Stats()
	for i := 0; i < 3; i++ {
		if s := r.tick(replyWait); !s.Success() || r.cmd[0] != 0.5 {
			t.Fatalf("tick %d: %v %v", i, s, r.cmd)
		}
	}
	st := r.m.Stats()
	if d := st.Dropped[DropSize] - before.Dropped[DropSize]; d < 9 {
		t.Errorf("size drops %d, want ≥ 9", d)
	}
	if d := st.Dropped[DropNonFinite] - before.Dropped[DropNonFinite]; d < 6 {
		t.Errorf("non-finite drops %d, want ≥ 6", d)
	}
	if d := st.Dropped[DropSource]; d < 1 {
		t.Errorf("foreign drops %d, want ≥ 1", d)
	}
}

func TestMasterConfigErrors(t *testing.T) {
	good := testConfig(netip.MustParseAddrPort("127.0.0.1:25000"))
	cases := map[string]func(*MasterConfig){
		"remote":             func(c *MasterConfig) { c.Remote = netip.MustParseAddrPort("0.0.0.0:25000") },
		"remote port":        func(c *MasterConfig) { c.Remote = netip.AddrPortFrom(loopback, 0) },
		"measure_len":        func(c *MasterConfig) { c.MeasureLen = 0 },
		"recv_timeout":       func(c *MasterConfig) { c.RecvTimeout = 0 },
		"handshake_interval": func(c *MasterConfig) { c.HandshakeInterval = 0 },
		"max_timeouts":       func(c *MasterConfig) { c.MaxTimeouts = 0 },
		"max_desyncs":        func(c *MasterConfig) { c.MaxDesyncs = -1 },
	}
	for name, edit := range cases {
		c := good
		edit(&c)
		_, err := NewMaster(c, newMonoClock(), nil)
		if !errors.Is(err, ErrMasterConfig) {
			t.Errorf("%s: err %v, want ErrMasterConfig", name, err)
		}
	}
}

func TestBindConflictIsClear(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := testConfig(netip.MustParseAddrPort("127.0.0.1:25000"))
	cfg.Listen = c.LocalAddr().(*net.UDPAddr).AddrPort()
	if _, err := NewMaster(cfg, newMonoClock(), nil); err == nil {
		t.Fatal("bound a port already in use")
	}
}

// A tick with a reply allocates nothing, with the peer on real loopback.
func TestExchangeAllocs(t *testing.T) {
	// A raw echo peer that does not allocate either.
	p, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := testConfig(p.LocalAddr().(*net.UDPAddr).AddrPort())
	clock := newMonoClock()
	m, err := NewMaster(cfg, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	la, _ := m.ListenAddr()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 128)
		for {
			n, _, err := p.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if s := math.Float64frombits(binary.LittleEndian.Uint64(buf)); s <= 0 {
				binary.LittleEndian.PutUint64(buf, math.Float64bits(-1))
			}
			_ = n
			p.WriteToUDPAddrPort(buf[:40], la)
		}
	}()
	meas, cmd := make([]float64, 7), make([]float64, 4)
	for !m.Synced() {
		m.Exchange(meas, cmd, clock.in(100*time.Millisecond))
	}
	m.Exchange(meas, cmd, clock.in(replyWait))
	allocs := testing.AllocsPerRun(200, func() {
		if s := m.Exchange(meas, cmd, clock.in(replyWait)); s != OKNoDelay {
			t.Fatalf("status %v", s)
		}
	})
	if allocs != 0 {
		t.Errorf("Exchange allocates %v per tick", allocs)
	}
	p.Close()
	<-done
}

// One slow reply right after the handshake must not lock the link one tick
// behind: the tick's own reply wins when it comes within the window.
func TestNoLockInAfterOneSlowReply(t *testing.T) {
	t.Parallel() // on its own ports; mostly waiting out receive windows
	// Seq 1's reply is held until seq 2 is measured, so it comes after seq
	// 1's window whatever the scheduler does, and just ahead of seq 2's own
	// reply (a reply slept on for a while could still be read on time by a
	// master that was itself kept waiting).
	var held []byte // the peer's goroutine only
	r := newRig(t, func(rc received) [][]byte {
		s := rc.seq
		if s <= 0 {
			s = -1
		}
		d := datagram(s, rc.seq, 0, 0, 0)
		switch rc.seq {
		case 1:
			held = d
			return nil
		case 2:
			return [][]byte{held, d}
		}
		return [][]byte{d}
	}, nil)
	r.sync()
	var got []Status
	for i := range 10 {
		w := replyWait
		if i == 1 {
			w = 40 * time.Millisecond // nothing comes in seq 1's window
		}
		got = append(got, r.tick(w))
	}
	if got[1] != Timeout {
		t.Fatalf("statuses %v: seq 1 answered in its window", got)
	}
	for _, s := range got[len(got)-5:] {
		if s != OKNoDelay {
			t.Fatalf("statuses %v: the link stayed one tick behind", got)
		}
	}
	if r.m.Stats().Late == 0 {
		t.Errorf("the slow reply was not counted late: %v", got)
	}
}

// After a handshake the master accepts replies only from the source port
// that completed it: another program on the Simulink host, answering with
// the right seq and size, is dropped as foreign and never applied, until
// the next handshake. PinPartner = false keeps emioapi's rule (any port of
// the host), under which the stray reply wins.
func TestPinnedPartner(t *testing.T) {
	for _, pin := range []bool{true, false} {
		t.Run(fmt.Sprintf("pin=%v", pin), func(t *testing.T) {
			stray, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			defer stray.Close()
			var strayOn atomic.Bool
			r := newRig(t, func(rc received) [][]byte {
				if strayOn.Load() && rc.seq >= 0 {
					// The stray answers first, and well.
					if _, err := stray.WriteToUDPAddrPort(datagram(float64(rc.seq), 9, 9, 9, 9), rc.to); err != nil {
						t.Error(err)
					}
					time.Sleep(20 * time.Millisecond)
				}
				s := rc.seq
				if s <= 0 {
					s = -1
				}
				return [][]byte{datagram(float64(s), 0.5, 0.5, 0.5, 0.5)}
			}, func(c *MasterConfig) { c.PinPartner = pin })
			r.sync()
			strayOn.Store(true)
			before := r.m.Stats().Dropped[DropForeign]
			ticks := 3
			if !pin {
				ticks = 1 // the model's own reply then arrives late: emioapi's rule has no good answer
			}
			for i := range ticks {
				s := r.tick(replyWait)
				want := 0.5
				if !pin {
					want = 9
				}
				if !s.Success() || r.cmd[0] != want {
					t.Fatalf("tick %d: %v %v, want the command %v", i, s, r.cmd, want)
				}
			}
			foreign := r.m.Stats().Dropped[DropForeign] - before
			if pin && foreign < 3 {
				t.Errorf("%d foreign drops, want one per tick (3)", foreign)
			}
			if !pin && foreign != 0 {
				t.Errorf("%d foreign drops without pinning, want 0", foreign)
			}
		})
	}
}
