// Package tap mirrors every tick of a link as one RTP packet (RFC 3550,
// through github.com/pion/rtp) to a unicast or multicast address, for
// `bridge record`, `bridge report` and Wireshark (docs/tap.md). The payload
// is tap/payload's; this package is the sender: the loop thread fills a
// slot of a ring, and the tap's goroutine sends it.
package tap

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/tap/payload"
)

// ClockRate is the RTP timestamp's clock: µs of the tick grid
// (docs/tap.md §2).
const ClockRate = 1_000_000

// DefaultPayloadType is the dynamic RTP payload type of the tap.
const DefaultPayloadType = 96

// DefaultSlots is the ring's size: a second at 1 kHz.
const DefaultSlots = 1024

// ErrConfig is a tap configuration that cannot work.
var ErrConfig = errors.New("tap: bad configuration")

// Clock is the loop's monotonic clock, ns.
type Clock interface{ Now() int64 }

// Observer counts what the tap does, on its own goroutine except Dropped,
// which the loop thread calls and which must not allocate.
type Observer interface {
	TapSent()
	TapDropped()
	TapError(err error)
}

// Config says where a link's tap sends and what its vectors are.
type Config struct {
	// Address is a unicast or multicast UDP address.
	Address netip.AddrPort
	// PayloadType is the RTP payload type, 96..127; 0 = 96.
	PayloadType uint8
	// Slots is the ring's size; 0 = DefaultSlots.
	Slots int
	// Descriptor names the link and its values; its field lengths are the
	// vectors' (docs/tap.md §4).
	Descriptor payload.Descriptor
	// Clock is the loop's clock (the deadlines are on it); its offset to
	// Unix time is taken once, at New.
	Clock Clock
	// Observer may be nil.
	Observer Observer
}

// slot is one tick in the ring, with vectors made at New.
type slot struct {
	rec bridge.TickRecord
	seq uint16
	// its own storage, which rec's vectors point into
	meas, cmd, applied []float64
}

// Tap mirrors a link's ticks as RTP packets. RecordTick runs on the loop
// thread and only copies into the ring; Serve, on its own goroutine,
// packs and sends.
type Tap struct {
	cfg     Config
	conn    *net.UDPConn
	ring    []slot
	head    atomic.Uint64 // records written (the loop thread's)
	tail    atomic.Uint64 // records sent or given up (Serve's)
	wake    chan struct{}
	nextSeq uint16 // the loop thread's: the next tick's RTP sequence number
	ssrc    uint32
	offset  int64 // Unix ns less the clock's ns
	m, c    int
	dropped atomic.Uint64
	sent    atomic.Uint64
	errs    atomic.Uint64
}

type nopObserver struct{}

func (nopObserver) TapSent()       {}
func (nopObserver) TapDropped()    {}
func (nopObserver) TapError(error) {}

// New opens the tap's socket and makes its ring.
func New(cfg Config) (*Tap, error) {
	if !cfg.Address.IsValid() || cfg.Address.Port() == 0 {
		return nil, fmt.Errorf("%w: address %v: want host:port, like 239.0.0.1:5004", ErrConfig, cfg.Address)
	}
	if cfg.PayloadType == 0 {
		cfg.PayloadType = DefaultPayloadType
	}
	if cfg.PayloadType < 96 || cfg.PayloadType > 127 {
		return nil, fmt.Errorf("%w: payload type %d: want a dynamic type, 96..127", ErrConfig, cfg.PayloadType)
	}
	if cfg.Slots == 0 {
		cfg.Slots = DefaultSlots
	}
	if cfg.Slots < 2 || cfg.Slots > 1<<20 {
		return nil, fmt.Errorf("%w: %d slots: want 2..1048576", ErrConfig, cfg.Slots)
	}
	if cfg.Clock == nil {
		return nil, fmt.Errorf("%w: no clock", ErrConfig)
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	d := &cfg.Descriptor
	m, c := 0, 0
	for _, f := range d.Measure {
		m += f.Len
	}
	for _, f := range d.Command {
		c += f.Len
	}
	if m > payload.MaxValues || c > payload.MaxValues {
		return nil, fmt.Errorf("%w: %d measured and %d commanded values (at most %d)", ErrConfig, m, c, payload.MaxValues)
	}
	if _, err := d.MarshalTo(make([]byte, d.MarshalSize())); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// Unconnected: on a connected socket, the ICMP "port unreachable" of a
	// datagram nobody received fails the next send, so a tap nobody
	// records yet would lose every other packet once someone does.
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, fmt.Errorf("tap: send to %v: %w", cfg.Address, err)
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	t := &Tap{
		cfg: cfg, conn: conn, ring: make([]slot, cfg.Slots), wake: make(chan struct{}, 1),
		nextSeq: binary.BigEndian.Uint16(r[:2]), ssrc: binary.BigEndian.Uint32(r[2:]),
		offset: time.Now().UnixNano() - cfg.Clock.Now(), m: m, c: c,
	}
	for i := range t.ring {
		s := &t.ring[i]
		s.meas, s.cmd, s.applied = make([]float64, m), make([]float64, c), make([]float64, c)
	}
	return t, nil
}

// SSRC is the tap's RTP synchronisation source.
func (t *Tap) SSRC() uint32 { return t.ssrc }

// RecordTick copies a tick into the ring: on the loop thread, without
// blocking or allocating. A full ring drops the tick and counts it; its
// RTP sequence number is skipped, so the receiver sees the gap.
func (t *Tap) RecordTick(r *bridge.TickRecord) {
	seq := t.nextSeq
	t.nextSeq++ // used up even by a dropped tick: the receiver sees the gap
	h := t.head.Load()
	if h-t.tail.Load() >= uint64(len(t.ring)) {
		t.dropped.Add(1)
		t.cfg.Observer.TapDropped()
		return
	}
	s := &t.ring[h%uint64(len(t.ring))]
	s.rec = *r
	s.rec.Measurement = s.meas[:copy(s.meas, r.Measurement)]
	s.rec.Command = s.cmd[:copy(s.cmd, r.Command)]
	s.rec.Applied = s.applied[:copy(s.applied, r.Applied)]
	s.seq = seq
	t.head.Store(h + 1)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Serve sends what the ring holds until ctx ends, then sends what is
// left. It may be called again after it returns (a supervisor's restart);
// Close closes the socket.
func (t *Tap) Serve(ctx context.Context) error {
	buf := make([]byte, 12+payload.HeaderSize+8*(t.m+2*t.c)+t.cfg.Descriptor.MarshalSize())
	var rec payload.Record
	rec.Descriptor = &t.cfg.Descriptor
	rate := max(t.cfg.Descriptor.RateHz, 1)
	every := uint64(rate + 0.5) // a descriptor about once a second
	first := true
	var sinceDesc uint64
	for {
		for tail := t.tail.Load(); tail < t.head.Load(); tail++ {
			s := &t.ring[tail%uint64(len(t.ring))]
			desc := first || sinceDesc+1 >= every
			n, err := t.pack(buf, s, &rec, desc)
			t.tail.Store(tail + 1) // the slot is free once packed
			if err != nil {
				t.errs.Add(1)
				t.cfg.Observer.TapError(err)
				continue
			}
			if _, err := t.conn.WriteToUDPAddrPort(buf[:n], t.cfg.Address); err != nil {
				t.errs.Add(1)
				t.cfg.Observer.TapError(err)
				continue
			}
			first = false
			if desc {
				sinceDesc = 0
			} else {
				sinceDesc++
			}
			t.sent.Add(1)
			t.cfg.Observer.TapSent()
		}
		select {
		case <-ctx.Done():
			if t.tail.Load() < t.head.Load() {
				continue // the last ticks first
			}
			return nil
		case <-t.wake:
		}
	}
}

// pack writes slot s as an RTP packet into buf.
func (t *Tap) pack(buf []byte, s *slot, rec *payload.Record, desc bool) (int, error) {
	r := &s.rec
	h := rtp.Header{
		Version: 2, Marker: desc, PayloadType: t.cfg.PayloadType,
		SequenceNumber: s.seq, Timestamp: uint32(r.Deadline / (1e9 / ClockRate)), SSRC: t.ssrc,
	}
	n, err := h.MarshalTo(buf)
	if err != nil {
		return 0, fmt.Errorf("tap: RTP header: %w", err)
	}
	*rec = payload.Record{
		Status: uint8(r.Status), State: uint8(r.State), Seq: r.Seq, Tick: r.N,
		Deadline: r.Deadline + t.offset, ReplyLatency: payload.Saturate32(r.ReplyLatency),
		Measurement: r.Measurement, Command: r.Command, Applied: r.Applied, Descriptor: rec.Descriptor,
	}
	if r.Sent != 0 {
		rec.Sent = r.Sent + t.offset
		rec.Lateness = payload.Saturate32(r.Sent - r.Deadline)
	}
	if r.ReplyLatency < 0 {
		rec.ReplyLatency = -1
	}
	for _, f := range [...]struct {
		on  bool
		bit uint8
	}{{r.Late, payload.FlagLate}, {r.CommandApplied, payload.FlagApplied}, {r.Stale, payload.FlagStale}, {r.Skipped > 0, payload.FlagOverrun}, {desc, payload.FlagDescriptor}} {
		if f.on {
			rec.Flags |= f.bit
		}
	}
	k, err := rec.MarshalTo(buf[n:])
	if err != nil {
		return 0, err
	}
	return n + k, nil
}

// Close closes the tap's socket, after its last Serve.
func (t *Tap) Close() error { return t.conn.Close() }

// Stats are the tap's counters.
type Stats struct {
	Sent, Dropped, Errors uint64
}

// Stats reads the counters, on any goroutine.
func (t *Tap) Stats() Stats {
	return Stats{Sent: t.sent.Load(), Dropped: t.dropped.Load(), Errors: t.errs.Load()}
}
