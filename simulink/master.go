package simulink

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Clock gives monotonic nanoseconds on the clock the loop sleeps on
// (realtime.Clock satisfies it).
type Clock interface {
	Now() int64
}

// emioapi's defaults (docs/simulink-udp.md §7).
const (
	DefaultRemotePort        = 25000
	DefaultLocalPort         = 25001
	DefaultBindPort          = 9090
	DefaultRecvTimeout       = 100 * time.Millisecond
	DefaultHandshakeInterval = 50 * time.Millisecond
	DefaultMaxTimeouts       = 3
	DefaultMaxDesyncs        = 5
	// DefaultRecvBuffer holds about a hundred small replies: a burst after
	// a stall of the bridge (80 ms at 1 kHz) is read, not lost, while a
	// flood still overflows it, and is counted (DropKernel); stale replies
	// that are read are dropped by seq (docs/realtime.md §7.2).
	DefaultRecvBuffer = 64 << 10
)

// sendRing is how many past send times are kept to measure the latency of
// replies that answer an older seq.
const sendRing = 64

// ErrMasterConfig is the sentinel of every invalid MasterConfig.
var ErrMasterConfig = errors.New("simulink: invalid master configuration")

// MasterConfig configures the clock-master side of a link.
type MasterConfig struct {
	// Remote is where measurements go (Simulink's UDP Receive, 127.0.0.1:25000).
	// Replies are accepted only from its address, from any source port.
	Remote netip.AddrPort
	// Bind is the source of measurements (0.0.0.0:9090): the shipped models
	// accept only from port 9090.
	Bind netip.AddrPort
	// Listen is where replies arrive (0.0.0.0:25001).
	Listen netip.AddrPort
	// MeasureLen is send_size, the values after seq: the plant's
	// measurement length (7 on the Emio with one marker).
	MeasureLen int
	// CommandLen is recv_size: the plant's command length (4 on the Emio).
	CommandLen int
	// RecvTimeout bounds the wait for a reply (0.1 s); the window never runs
	// past the deadline passed to Exchange.
	RecvTimeout time.Duration
	// HandshakeInterval is how often seq −1 packets are resent (50 ms).
	HandshakeInterval time.Duration
	// MaxTimeouts and MaxDesyncs are the consecutive counts that start a
	// re-handshake (3 and 5).
	MaxTimeouts, MaxDesyncs int
	// RecvBuffer is the receive buffer of the reply socket in bytes (0 =
	// the system's). It is asked with SO_RCVBUFFORCE where the process may
	// (root, CAP_NET_ADMIN), else with SO_RCVBUF, which net.core.rmem_max
	// caps; ReplySocket tells what the kernel granted. Datagrams that find
	// it full are dropped and counted as DropKernel.
	RecvBuffer int
	// PinPartner accepts, after a handshake, replies only from the source
	// port that completed it, until the next handshake: another program on
	// the Simulink host cannot complete a handshake meant for the model and
	// command the robot. false keeps emioapi's rule, any port of the host.
	// A model restarted on a new port times out and handshakes again.
	PinPartner bool
}

// DefaultMasterConfig returns emioapi's endpoints and thresholds for
// vectors of the given lengths (the plant's).
func DefaultMasterConfig(measureLen, commandLen int) MasterConfig {
	return MasterConfig{
		Remote:            netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), DefaultRemotePort),
		Bind:              netip.AddrPortFrom(netip.IPv4Unspecified(), DefaultBindPort),
		Listen:            netip.AddrPortFrom(netip.IPv4Unspecified(), DefaultLocalPort),
		MeasureLen:        measureLen,
		CommandLen:        commandLen,
		RecvTimeout:       DefaultRecvTimeout,
		HandshakeInterval: DefaultHandshakeInterval,
		MaxTimeouts:       DefaultMaxTimeouts,
		MaxDesyncs:        DefaultMaxDesyncs,
		RecvBuffer:        DefaultRecvBuffer,
		PinPartner:        true,
	}
}

func (c *MasterConfig) validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s = %v, want %s", ErrMasterConfig, field, v, want)
	}
	switch {
	case !c.Remote.IsValid() || c.Remote.Port() == 0 || c.Remote.Addr().IsUnspecified():
		return bad("remote", c.Remote, "a host address and a port in 1..65535")
	case !c.Bind.IsValid():
		return bad("bind", c.Bind, "an address and port (port 0 = ephemeral)")
	case !c.Listen.IsValid():
		return bad("listen", c.Listen, "an address and port (port 0 = ephemeral)")
	case c.MeasureLen < 1 || c.MeasureLen > 1000:
		return bad("measure_len", c.MeasureLen, "1..1000")
	case c.CommandLen < 1 || c.CommandLen > 1000:
		return bad("command_len", c.CommandLen, "1..1000")
	case c.RecvTimeout <= 0 || c.RecvTimeout > 10*time.Second:
		return bad("recv_timeout", c.RecvTimeout, "0 < t ≤ 10s")
	case c.HandshakeInterval < time.Millisecond || c.HandshakeInterval > 10*time.Second:
		return bad("handshake_interval", c.HandshakeInterval, "1ms..10s")
	case c.MaxTimeouts < 1 || c.MaxTimeouts > 1000000:
		return bad("max_timeouts", c.MaxTimeouts, "1..1000000")
	case c.MaxDesyncs < 1 || c.MaxDesyncs > 1000000:
		return bad("max_desyncs", c.MaxDesyncs, "1..1000000")
	case c.RecvBuffer < 0 || c.RecvBuffer > 64<<20:
		return bad("recv_buffer", c.RecvBuffer, "0..64MiB")
	}
	return nil
}

// MasterStats is a snapshot of a master's counters, safe to read from any
// goroutine while the loop runs.
type MasterStats struct {
	Seq          int64
	Synced       bool
	Sent         uint64
	SendErrors   uint64
	Handshakes   uint64 // completed handshakes, the first included
	Status       [NumStatus]uint64
	Dropped      [NumDropReason]uint64
	Late         uint64
	LastLatency  time.Duration
	LastStatus   Status
	Consecutive  int64 // current run of timeouts or desyncs
	ReceiveError uint64
	// Received counts the datagrams read from the reply socket, used or
	// dropped; Received + Dropped[DropKernel] is what reached the host.
	Received uint64
}

// ReplySocket is what the kernel granted the reply socket, read once when
// the master opens it.
type ReplySocket struct {
	// BufferAsked is MasterConfig.RecvBuffer (0: the system's default).
	BufferAsked int
	// Buffer is the receive buffer in bytes as getsockopt(SO_RCVBUF) reads
	// it: the kernel caps the value asked at net.core.rmem_max (unless
	// Forced) and doubles it for its bookkeeping (socket(7)), so 4096 asked
	// reads 8192. It bounds the bytes queued, overhead included.
	Buffer int
	// Forced is true when SO_RCVBUFFORCE set it, past net.core.rmem_max.
	Forced bool
	// KernelDrops is true when the kernel reports its drops (SO_RXQ_OVFL),
	// counted as DropKernel.
	KernelDrops bool
}

// Master is the clock-master side of the emioapi protocol (docs/simulink-udp.md
// §3–§6, §14): the side that owns seq. It is driven by one goroutine, the loop,
// through Exchange; Stats may be read concurrently.
//
// It keeps emioapi's wire behaviour exactly and improves what Simulink cannot
// see: the last good command is held on TIMEOUT, DESYNC and RECONNECTED; late
// replies are measured and counted; datagrams of the wrong size, from another
// host or holding NaN/Inf are dropped and counted; the receive window never
// runs past the caller's deadline.
type Master struct {
	cfg   MasterConfig
	clock Clock
	obs   Observer
	dropN DropCounter // obs, when it takes many drops at once

	tx, rx     *rawSocket
	remoteSA   unix.Sockaddr
	remoteAddr netip.Addr

	out     []byte    // one measurement datagram
	in      []byte    // one reply datagram, plus one byte to see oversize
	hsPkt   []byte    // the handshake datagram: seq −1 and zeros
	vals    []float64 // decoded reply payload
	pending []float64 // a late reply kept while waiting for the on-time one

	synced     bool
	everSynced bool
	pinned     bool   // replies are accepted from pinPort only
	pinPort    uint16 // the source port that completed the handshake
	seq        int64
	last       Exchange // what the last Exchange did, for LastExchange
	lastAcc    int64    // highest seq whose reply was accepted since the handshake
	echo       bool     // the partner answered seq with seq at least once
	timeouts   int
	desyncs    int
	nextHS     int64
	sendTimes  [sendRing]int64
	kernelSeen uint32 // the kernel's drop count the last datagram carried

	st struct {
		seq, latency, consec             atomic.Int64
		synced                           atomic.Bool
		sent, sendErr, hs, late, recvErr atomic.Uint64
		received                         atomic.Uint64
		last                             atomic.Uint32
		status                           [NumStatus]atomic.Uint64
		dropped                          [NumDropReason]atomic.Uint64
	}
}

// NewMaster validates cfg and binds both sockets. obs may be nil.
func NewMaster(cfg MasterConfig, clock Clock, obs Observer) (*Master, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if obs == nil {
		obs = NopObserver{}
	}
	v6 := cfg.Remote.Addr().Unmap().Is6()
	tx, err := openSocket(cfg.Bind, v6, false, 0)
	if err != nil {
		return nil, err
	}
	rx, err := openSocket(cfg.Listen, v6, true, cfg.RecvBuffer)
	if err != nil {
		tx.close()
		return nil, err
	}
	m := &Master{
		cfg: cfg, clock: clock, obs: obs, tx: tx, rx: rx,
		remoteSA:   sockaddr(cfg.Remote, v6),
		remoteAddr: cfg.Remote.Addr().Unmap(),
		out:        make([]byte, DatagramSize(cfg.MeasureLen)),
		in:         make([]byte, DatagramSize(cfg.CommandLen)+1),
		hsPkt:      make([]byte, DatagramSize(cfg.MeasureLen)),
		vals:       make([]float64, cfg.CommandLen),
		pending:    make([]float64, cfg.CommandLen),
	}
	m.dropN, _ = obs.(DropCounter)
	zeros := make([]float64, cfg.MeasureLen)
	if _, err := MarshalTo(m.hsPkt, HandshakeSeq, zeros); err != nil {
		m.Close()
		return nil, err
	}
	m.st.seq.Store(HandshakeSeq)
	return m, nil
}

// Close releases both sockets. Exchange must not run concurrently with Close.
func (m *Master) Close() error {
	return errors.Join(m.tx.close(), m.rx.close())
}

// SetRemote points the master at another partner: measurements go to
// remote, replies are accepted from its address only, and the next Exchange
// handshakes. It lets a partner be told the master's bound ports (ports the
// kernel picked for port 0) before its own port is known, so that no port is
// ever released between choosing and binding it. remote must be of the
// family of the first Remote, whose sockets stay. It must not run
// concurrently with Exchange.
func (m *Master) SetRemote(remote netip.AddrPort) error {
	if !remote.IsValid() || remote.Port() == 0 || remote.Addr().IsUnspecified() {
		return fmt.Errorf("%w: remote = %v, want a host address and a port in 1..65535", ErrMasterConfig, remote)
	}
	if !m.tx.v6 && !remote.Addr().Unmap().Is4() {
		return fmt.Errorf("%w: remote = %v, want an IPv4 address like the first remote %v, whose sockets are IPv4", ErrMasterConfig, remote, m.cfg.Remote)
	}
	m.cfg.Remote = remote
	m.remoteSA = sockaddr(remote, m.tx.v6)
	m.remoteAddr = remote.Addr().Unmap()
	m.lose()
	return nil
}

// LocalAddr returns the bound source address of measurements.
func (m *Master) LocalAddr() (netip.AddrPort, error) { return m.tx.localAddr() }

// ListenAddr returns the bound address replies arrive on.
func (m *Master) ListenAddr() (netip.AddrPort, error) { return m.rx.localAddr() }

// ReplySocket returns what the kernel granted the reply socket: the
// receive buffer and whether its drops are counted. Safe from any goroutine.
func (m *Master) ReplySocket() ReplySocket {
	return ReplySocket{BufferAsked: m.cfg.RecvBuffer, Buffer: m.rx.rcvbuf, Forced: m.rx.forced, KernelDrops: m.rx.rxqOvfl}
}

// Lens returns the payload lengths of measurements and commands.
func (m *Master) Lens() (measure, command int) { return m.cfg.MeasureLen, m.cfg.CommandLen }

// Config returns the master's configuration.
func (m *Master) Config() MasterConfig { return m.cfg }

// Exchange is what the last Exchange sent and received, for a tap.
type Exchange struct {
	// Seq is the seq sent (HandshakeSeq during the handshake); Sent is
	// when it left on the master's clock, 0 when no datagram left.
	Seq, Sent int64
	// Latency is the accepted reply's, from the send of the seq it
	// answers, ns; −1 without one. Late: it came after its tick's window.
	Latency int64
	Late    bool
}

// LastExchange is what the last Exchange did; on the loop thread, after it.
func (m *Master) LastExchange() Exchange { return m.last }

// Synced reports whether a handshake has completed and exchanges run.
func (m *Master) Synced() bool { return m.synced }

// Exchange runs one tick of the protocol. deadline (monotonic ns) is when the
// receive window must close at the latest: the next tick's deadline less a
// margin. measure holds MeasureLen values. command is written only when the
// status is OK or OK_NO_DELAY; otherwise it is left as it was, so the caller
// holds the last good command. It never allocates.
func (m *Master) Exchange(measure, command []float64, deadline int64) Status {
	var s Status
	if !m.synced {
		s = m.handshake(deadline)
	} else {
		s = m.exchange(measure, command, deadline)
	}
	m.st.status[s].Add(1)
	m.st.last.Store(uint32(s))
	m.obs.Exchanged(s)
	return s
}

// handshake sends seq −1 packets every HandshakeInterval until any valid
// datagram arrives or the window closes (docs/simulink-udp.md §4).
func (m *Master) handshake(deadline int64) Status {
	m.last = Exchange{Seq: HandshakeSeq, Latency: -1}
	for {
		now := m.clock.Now()
		if now >= m.nextHS {
			m.last.Sent = now
			m.send(m.hsPkt)
			m.nextHS = now + int64(m.cfg.HandshakeInterval)
		}
		until := min(m.nextHS, deadline)
		if m.await(until - now) {
			for {
				n, ok := m.next()
				if !ok {
					break
				}
				if _, good := m.decode(n); good {
					if m.cfg.PinPartner {
						m.pinned, m.pinPort = true, m.rx.fromPort()
					}
					return m.synchronised()
				}
			}
		}
		if m.clock.Now() >= deadline {
			return Handshaking
		}
	}
}

func (m *Master) synchronised() Status {
	// Unlike emioapi, replies to earlier handshake packets are flushed so that
	// they cannot be read as answers to seq 0 and 1.
	m.flush()
	m.synced = true
	m.seq = 0
	m.lastAcc = HandshakeSeq - 1
	m.echo = false
	m.timeouts, m.desyncs = 0, 0
	m.nextHS = 0
	m.st.hs.Add(1)
	m.st.synced.Store(true)
	m.st.seq.Store(0)
	m.st.consec.Store(0)
	if m.everSynced {
		return Reconnected
	}
	m.everSynced = true
	return Handshaking
}

func (m *Master) exchange(measure, command []float64, deadline int64) Status {
	seq := m.seq
	if _, err := MarshalTo(m.out, seq, measure); err != nil {
		// A measure of the wrong length is a wiring bug; never send another size.
		return m.finish(Timeout)
	}
	sent := m.clock.Now()
	m.last = Exchange{Seq: seq, Sent: sent, Latency: -1}
	m.send(m.out)
	m.sendTimes[seq%sendRing] = sent
	closeAt := min(sent+int64(m.cfg.RecvTimeout), deadline)

	// A reply to seq−1 is kept as a candidate while the window stays open:
	// from a partner one tick behind by design it is the answer (OK), but
	// from an echoing partner it is the previous tick's reply arriving late,
	// and this tick's own reply may still come. Returning at the first seq−1
	// reply would lock the link one tick behind forever after a single slow
	// reply, the latency emioapi hides (docs/simulink-udp.md §6, §14.2.3).
	havePending := false
	var pendingLat int64 = -1
	for {
		now := m.clock.Now()
		if !m.await(closeAt - now) {
			if m.clock.Now() >= closeAt {
				break
			}
			continue
		}
		for {
			n, ok := m.next()
			if !ok {
				break
			}
			back, good := m.decode(n)
			if !good {
				continue
			}
			switch {
			case back == seq:
				if havePending {
					// The candidate answered the previous tick after its
					// window: late, and superseded by this one.
					m.reply(pendingLat, true)
				}
				m.lastAcc = back
				m.last.Latency = m.latency(back)
				m.reply(m.last.Latency, false)
				copy(command, m.vals)
				m.echo = true
				return m.finish(OKNoDelay)
			case back == seq-1 && back > m.lastAcc && !havePending:
				m.lastAcc = back
				pendingLat = m.latency(back)
				copy(m.pending, m.vals)
				havePending = true
			case havePending, back == HandshakeSeq && seq > 0:
				// Superseded, or the answer to a handshake packet sent
				// before the partner woke, arriving after the handshake: a
				// model answers −1 only while not synchronised, never to a
				// seq it has seen. Stale, not a desync.
				m.drop(DropStale)
			default:
				// The first reply of the tick answers neither seq nor seq−1:
				// hold, flush and count, never apply its payload.
				m.flush()
				return m.finish(Desync)
			}
		}
	}
	if havePending {
		// An echoing partner's reply to seq−1 is late; a delayed partner's
		// is on time.
		m.reply(pendingLat, m.echo)
		m.last.Latency, m.last.Late = pendingLat, m.echo
		copy(command, m.pending)
		return m.finish(OK)
	}
	return m.finish(Timeout)
}

// latency returns the time since the send of back, or −1 when unknown.
func (m *Master) latency(back int64) int64 {
	if back < 0 || m.seq-back >= sendRing {
		return -1
	}
	return m.clock.Now() - m.sendTimes[back%sendRing]
}

// reply records an accepted reply's latency.
func (m *Master) reply(lat int64, late bool) {
	if late {
		m.st.late.Add(1)
	}
	if lat < 0 {
		return
	}
	m.st.latency.Store(lat)
	m.obs.Reply(lat, late)
}

// finish applies the counters of emioapi's send_and_receive: seq advances
// after every exchange, consecutive timeouts or desyncs start a re-handshake.
func (m *Master) finish(s Status) Status {
	switch s {
	case OK, OKNoDelay:
		m.timeouts, m.desyncs = 0, 0
	case Desync:
		m.timeouts = 0
		m.desyncs++
		if m.desyncs >= m.cfg.MaxDesyncs {
			m.lose()
		}
	case Timeout:
		m.timeouts++
		if m.timeouts >= m.cfg.MaxTimeouts {
			m.lose()
		}
	}
	m.seq++
	m.st.seq.Store(m.seq)
	m.st.consec.Store(int64(max(m.timeouts, m.desyncs)))
	return s
}

func (m *Master) lose() {
	m.synced = false
	m.pinned = false
	m.nextHS = 0
	m.st.synced.Store(false)
}

func (m *Master) send(b []byte) {
	if err := m.tx.send(b, m.remoteSA); err != nil {
		m.st.sendErr.Add(1)
		return
	}
	m.st.sent.Add(1)
}

// await waits up to ns for the reply socket to be readable.
func (m *Master) await(ns int64) bool {
	ok, err := m.rx.wait(ns)
	if err != nil {
		m.st.recvErr.Add(1)
	}
	return ok
}

// next reads one queued datagram into m.in; ok is false when none is queued.
// Datagrams from other hosts are dropped here.
func (m *Master) next() (int, bool) {
	for {
		n, match, ok, err := m.recv()
		if err != nil {
			m.st.recvErr.Add(1)
			return 0, false
		}
		if !ok {
			return 0, false
		}
		if !match {
			m.drop(DropSource)
			continue
		}
		if m.pinned && m.rx.fromPort() != m.pinPort {
			m.drop(DropForeign)
			continue
		}
		return n, true
	}
}

// decode checks one datagram of n bytes and decodes it into m.vals.
func (m *Master) decode(n int) (int64, bool) {
	if n > len(m.in) {
		n = len(m.in) // oversized: MSG_TRUNC reported the real length
	}
	back, err := Unmarshal(m.in[:n], m.vals)
	switch {
	case err == nil:
		return back, true
	case errors.Is(err, ErrNonFinite):
		m.drop(DropNonFinite)
	case errors.Is(err, ErrSeq):
		m.drop(DropSeq)
	default:
		m.drop(DropSize)
	}
	return 0, false
}

func (m *Master) drop(r DropReason) {
	m.st.dropped[r].Add(1)
	m.obs.Dropped(r)
}

// dropMany counts n drops at once: one call for the observer whatever n.
func (m *Master) dropMany(r DropReason, n uint64) {
	m.st.dropped[r].Add(n)
	if m.dropN != nil {
		m.dropN.DroppedN(r, n)
		return
	}
	for range min(n, MaxDroppedCalls) {
		m.obs.Dropped(r)
	}
}

// recv reads one queued datagram into m.in and counts it, with the drops
// the kernel reports alongside.
func (m *Master) recv() (n int, match, ok bool, err error) {
	n, match, ok, err = m.rx.recv(m.in, m.remoteAddr)
	if !ok {
		return n, match, ok, err
	}
	m.st.received.Add(1)
	if c, has := rxqOverflow(m.rx.control()); has {
		// The count is the socket's total: the step since the last one
		// is new. uint32 arithmetic carries it across a wrap.
		if d := c - m.kernelSeen; d != 0 {
			m.kernelSeen = c
			m.dropMany(DropKernel, uint64(d))
		}
	}
	return n, match, ok, err
}

// flush discards every queued datagram.
func (m *Master) flush() {
	for {
		_, _, ok, err := m.recv()
		if err != nil || !ok {
			return
		}
		m.drop(DropFlushed)
	}
}

// Stats returns a snapshot of the counters; safe from any goroutine.
func (m *Master) Stats() MasterStats {
	var s MasterStats
	s.Seq = m.st.seq.Load()
	s.Synced = m.st.synced.Load()
	s.Sent = m.st.sent.Load()
	s.SendErrors = m.st.sendErr.Load()
	s.Handshakes = m.st.hs.Load()
	s.Late = m.st.late.Load()
	s.LastLatency = time.Duration(m.st.latency.Load())
	s.LastStatus = Status(m.st.last.Load())
	s.Consecutive = m.st.consec.Load()
	s.ReceiveError = m.st.recvErr.Load()
	s.Received = m.st.received.Load()
	for i := range s.Status {
		s.Status[i] = m.st.status[i].Load()
	}
	for i := range s.Dropped {
		s.Dropped[i] = m.st.dropped[i].Load()
	}
	return s
}
