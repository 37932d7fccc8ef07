package dxlsim

import (
	"errors"
	"sync"
	"time"

	"github.com/labbridge/bridge/dynamixel"
)

// partialTimeout drops the start of a packet whose rest does not follow, as
// a servo's receiver times out, so that one truncated packet cannot swallow
// the next good ones.
const partialTimeout = 100 * time.Millisecond

// stream is one client's connection to a bus: it parses the instruction
// bytes the client writes and queues the replies it will read.
type stream struct {
	bus *Bus
	out outQueue

	mu       sync.Mutex // serialises feed
	in       [2 * dynamixel.MaxPacket]byte
	n        int
	lastFeed int64 // bus clock
	line     int   // the client's line rate (bit/s); 0 is not modelled
}

func newStream(bus *Bus) *stream {
	st := &stream{bus: bus}
	st.out.init()
	return st
}

// feed takes bytes the client wrote, executes every complete instruction
// packet and queues the replies. Like a servo it skips bytes until a header,
// ignores packets with a bad CRC, and un-stuffs the rest.
func (st *stream) feed(p []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.feedLocked(p)
}

// feedAt is feed of bytes sent at line bit/s (0: not modelled): only the
// servos at that rate hear them.
func (st *stream) feedAt(p []byte, line int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.line = line
	st.feedLocked(p)
}

// setLine sets the line rate of the bytes fed from now on.
func (st *stream) setLine(line int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.line = line
}

// feedLocked is feed with st.mu held.
func (st *stream) feedLocked(p []byte) {
	b := st.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	// On the bus's clock, like the servos' own receive timeout.
	now := b.clock.Now()
	if st.n > 0 && now-st.lastFeed > int64(partialTimeout) {
		b.stats.Garbage += uint64(st.n)
		st.n = 0
	}
	st.lastFeed = now
	if b.echo.Load() {
		st.out.push(p, 0, &b.timing)
	}
	for len(p) > 0 {
		k := copy(st.in[st.n:], p)
		st.n += k
		p = p[k:]
		st.parse()
	}
}

// parse executes the complete packets at the start of st.in and keeps the
// rest. b.mu is held.
func (st *stream) parse() {
	b := st.bus
	for st.n > 0 {
		h := dynamixel.FindHeader(st.in[:st.n])
		if h < 0 {
			b.stats.Garbage += uint64(st.n)
			st.n = 0
			return
		}
		if h > 0 {
			b.stats.Garbage += uint64(h)
			st.drop(h)
		}
		pkt, used, err := dynamixel.ParsePacket(st.in[:st.n], true)
		if errors.Is(err, dynamixel.ErrIncomplete) {
			if st.n == len(st.in) {
				st.drop(1) // cannot happen with MaxPacket-long packets; never stall
				continue
			}
			return
		}
		if err != nil {
			// No reply to a corrupt packet: its ID cannot be trusted.
			// Resync after this header.
			b.stats.Corrupt++
			st.drop(1)
			continue
		}
		// The instruction's own bytes hold the half-duplex wire: its reply,
		// and the next instruction's, start only when it is all in.
		st.out.occupy(used, &b.timing)
		b.line = st.line
		b.handle(pkt, &st.out)
		st.drop(used)
	}
}

func (st *stream) drop(k int) {
	copy(st.in[:], st.in[k:st.n])
	st.n -= k
}

// reset forgets everything in flight in both directions.
func (st *stream) reset() {
	st.mu.Lock()
	st.n = 0
	st.mu.Unlock()
	st.out.reset()
}

// segment is a run of queued bytes released to the reader at one time.
type segment struct {
	n  int
	at int64 // on the queue's clock
}

// Queue sizes: far more than the replies to any one instruction.
const (
	queueBytes    = 64 << 10
	queueSegments = 4096
)

// outQueue holds the reply bytes a client has yet to read, each run with
// the time it reaches the client, so that Return Delay Time, byte time and
// USB batching are modelled without a goroutine per reply. Times are
// nanoseconds of the real monotonic clock since base.
type outQueue struct {
	mu     sync.Mutex
	base   time.Time
	buf    []byte
	r, w   int
	segs   []segment
	sr, sw int
	wire   int64 // when the last queued byte is off the wire
	// The USB packet being filled: its segment, start and size.
	batchOpen  bool
	batchSeg   int
	batchStart int64
	batchN     int
	// notify has a token whenever bytes were queued.
	notify chan struct{}
	// Dropped counts bytes lost to a full queue (a client that never reads).
	dropped uint64
}

func (q *outQueue) init() {
	q.base = time.Now()
	q.buf = make([]byte, queueBytes)
	q.segs = make([]segment, queueSegments)
	q.notify = make(chan struct{}, 1)
}

func (q *outQueue) now() int64 { return int64(time.Since(q.base)) }

// push queues b to reach the client gap after the wire is free, paced and
// batched as t says.
func (q *outQueue) push(b []byte, gap time.Duration, t *Timing) {
	if len(b) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.w+len(b) > len(q.buf) {
		copy(q.buf, q.buf[q.r:q.w])
		q.w -= q.r
		q.r = 0
	}
	if k := len(q.buf) - q.w; len(b) > k {
		q.dropped += uint64(len(b) - k)
		b = b[:k]
		if k == 0 {
			return
		}
	}
	copy(q.buf[q.w:], b)
	q.w += len(b)
	now := q.now()
	start := max(now, q.wire) + int64(gap)
	bt := t.byteTime()
	q.wire = start + int64(len(b))*bt
	switch {
	case t.Latency > 0:
		// FTDI: a byte joins the open USB packet unless its latency timer
		// expired first; the packet leaves when full or at expiry.
		lat := int64(t.Latency)
		for i := range b {
			arrive := start + int64(i+1)*bt
			if q.batchOpen && (arrive >= q.batchStart+lat || q.batchSeg < q.sr) {
				q.batchOpen = false
			}
			if !q.batchOpen {
				q.batchOpen, q.batchStart, q.batchN = true, arrive, 0
				q.batchSeg = q.addSegment(0, arrive+lat)
			}
			q.segs[q.batchSeg].n++
			q.batchN++
			if q.batchN == t.USBPacket {
				q.segs[q.batchSeg].at = arrive
				q.batchOpen = false
			}
		}
	case bt > 0:
		// Paced in chunks, each released when its last byte is in.
		const chunk = 16
		for off := 0; off < len(b); off += chunk {
			k := min(chunk, len(b)-off)
			q.addSegment(k, start+int64(off+k)*bt)
		}
	default:
		q.addSegment(len(b), start)
	}
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// occupy marks the wire busy with n bytes from the client, sent now or after
// what is already on it.
func (q *outQueue) occupy(n int, t *Timing) {
	bt := t.byteTime()
	if bt == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wire = max(q.now(), q.wire) + int64(n)*bt
}

// addSegment appends a segment, merging it into the last one when that
// releases at the same time or the table is full; it returns its index.
func (q *outQueue) addSegment(n int, at int64) int {
	if q.sw > q.sr && q.segs[q.sw-1].at == at && !(q.batchOpen && q.batchSeg == q.sw-1) {
		q.segs[q.sw-1].n += n
		return q.sw - 1
	}
	if q.sw == len(q.segs) && q.sr > 0 {
		copy(q.segs, q.segs[q.sr:q.sw])
		q.sw -= q.sr
		q.batchSeg -= q.sr
		q.sr = 0
	}
	if q.sw == len(q.segs) {
		last := &q.segs[q.sw-1]
		last.n += n
		last.at = max(last.at, at)
		return q.sw - 1
	}
	q.segs[q.sw] = segment{n: n, at: at}
	q.sw++
	return q.sw - 1
}

// take copies into p the bytes released by now. It returns how many, and
// when the next bytes are due (-1 for none queued).
func (q *outQueue) take(p []byte) (int, int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	n := 0
	for q.sr < q.sw && n < len(p) && q.segs[q.sr].at <= now {
		sg := &q.segs[q.sr]
		k := copy(p[n:], q.buf[q.r:q.r+min(sg.n, len(p)-n)])
		n += k
		q.r += k
		sg.n -= k
		if sg.n == 0 {
			q.sr++
		}
	}
	q.compact()
	if q.sr < q.sw {
		return n, q.segs[q.sr].at
	}
	return n, -1
}

// discard drops the bytes already released, as a flush of the input buffer
// does: bytes still on the wire or in the adapter arrive later.
func (q *outQueue) discard() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	for q.sr < q.sw && q.segs[q.sr].at <= now {
		q.r += q.segs[q.sr].n
		q.sr++
	}
	q.compact()
}

func (q *outQueue) compact() {
	if q.sr == q.sw {
		q.sr, q.sw = 0, 0
		q.batchOpen = false
	}
	if q.r == q.w {
		q.r, q.w = 0, 0
	}
}

// reset empties the queue.
func (q *outQueue) reset() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.r, q.w, q.sr, q.sw = 0, 0, 0, 0
	q.batchOpen = false
	q.wire = 0
}
