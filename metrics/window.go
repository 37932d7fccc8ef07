package metrics

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/internal/latency"
)

// The lateness window: the largest send lateness and its quantiles over the
// last minute of ticks, for bridge_loop_lateness_max_seconds and
// bridge_loop_lateness_quantile_seconds.
//
// It is counted in ticks, not wall-clock time: the window of a link whose
// period is p holds N = ⌈60 s / p⌉ ticks, so no clock is read on the tick
// and a scrape never changes it. It is made of windowBlocks blocks of
// ⌈N / windowBlocks⌉ ticks, each with its maximum and a log-linear
// histogram; a scrape merges the current block with the windowBlocks−1
// complete ones before it, so it covers the last 5/6·N to N ticks (50 to
// 60 s). A loop that stops ticking leaves its last minute of ticks in place.
const (
	windowSpan   = time.Minute
	windowBlocks = 6
	// One more block than the window: the one after the current block,
	// cleared a few bins per tick so that no tick pays for a whole block.
	ringBlocks = windowBlocks + 1
)

// Histogram bins over nanoseconds, on the scale of latency.Bucket: one per
// value below 64 ns, then binSub per octave up to 2^36 ns (≈ 69 s), then one bin for anything
// longer. A bin of octave [2^e, 2^(e+1)) is 2^(e−5) ns wide and answers
// its middle, so a quantile is off by less than 1/64 (1.6 %) of its value;
// it is never above the window's maximum, which is exact.
const (
	binSubBits = 5
	binSub     = 1 << binSubBits
	binTopExp  = 35                                       // the last octave is [2^35, 2^36) ns
	numBins    = (binTopExp-binSubBits+2)<<binSubBits + 1 // latency.BucketsBelow(binTopExp+1, binSubBits) + 1
)

// binOf returns the bin of v ≥ 0 ns.
func binOf(v int64) int { return min(latency.Bucket(v, binSubBits), numBins-1) }

// binValue is the value, in ns, that bin b stands for: the middle of its
// range (exact for the one-nanosecond bins), +Inf for the last bin.
func binValue(b int) float64 {
	if b >= numBins-1 {
		return math.Inf(1)
	}
	lo, width := latency.BucketBounds(b, binSubBits)
	return float64(lo) + float64(width-1)/2
}

// windowBlock is the maximum and histogram of one block of ticks. Every
// field is an atomic because scrapes read the blocks while the loop writes
// the current one and clears the next.
type windowBlock struct {
	max  atomic.Int64
	bins [numBins]atomic.Uint32
}

// latenessWindow is written by one goroutine at a time, the loop's (observe),
// and read by any number of scrapes (snapshot), without a lock.
type latenessWindow struct {
	blockLen int // ticks per block
	clearPer int // bins of the next block to clear per tick
	pos      int // ticks in the current block; only the writer touches it
	cur      atomic.Uint32
	blocks   [ringBlocks]windowBlock
}

func newLatenessWindow(period time.Duration) *latenessWindow {
	n := int64(windowSpan / period)
	if windowSpan%period != 0 {
		n++
	}
	// A block's counts are uint32: more ticks per block would need a loop
	// faster than 2 ns.
	b := min((n+windowBlocks-1)/windowBlocks, math.MaxUint32)
	return &latenessWindow{blockLen: int(b), clearPer: (numBins + int(b) - 1) / int(b)}
}

// ticks is how many ticks the window holds at most (N).
func (w *latenessWindow) ticks() int { return windowBlocks * w.blockLen }

// observe records one tick's lateness in ns (negative counts as 0). It
// allocates nothing and takes no lock.
func (w *latenessWindow) observe(ns int64) {
	v := max(ns, 0)
	c := w.cur.Load()
	if w.pos == w.blockLen {
		// The block after the current one was cleared during it: zero its
		// maximum, then publish it, so that a scrape that sees it current
		// sees it empty.
		c = (c + 1) % ringBlocks
		w.blocks[c].max.Store(0)
		w.cur.Store(c)
		w.pos = 0
	}
	b := &w.blocks[c]
	// The maximum before the bin: a scrape reads the bins before the
	// maximum, so a value it counts is never above the maximum it reports.
	if v > b.max.Load() {
		b.max.Store(v)
	}
	b.bins[binOf(v)].Add(1)
	// Most bins are empty, and a load is much cheaper than a store (a
	// locked instruction on amd64).
	next := &w.blocks[(c+1)%ringBlocks]
	for i, end := w.pos*w.clearPer, min((w.pos+1)*w.clearPer, numBins); i < end; i++ {
		if next.bins[i].Load() != 0 {
			next.bins[i].Store(0)
		}
	}
	w.pos++
}

// windowSnapshot is a scrape's merge of the window.
type windowSnapshot struct {
	max  int64 // ns
	n    uint64
	bins [numBins]uint64
}

// snapshot merges the current block and the complete blocks before it.
//
// The loop may move on while it reads. Reading the current index and then
// the blocks one by one, a slow scrape can see the oldest block of its window
// half cleared (the loop clears the block after its current one, which is
// the oldest of a scrape that still holds the previous index), or a block
// that became current and holds newer ticks. Every count and maximum it
// reads is still that of a real tick of the last N + 2 blocks, and n is the
// sum of the counts it read, not a separate field, so the ranks stay within
// what it read: a torn read gives a slightly stale or slightly thinner
// window, never a value no tick had.
func (w *latenessWindow) snapshot(s *windowSnapshot) { w.snapshotFrom(int(w.cur.Load()), s) }

// snapshotFrom merges the window whose current block is c.
func (w *latenessWindow) snapshotFrom(c int, s *windowSnapshot) {
	for k := range windowBlocks {
		b := &w.blocks[(c+ringBlocks-k)%ringBlocks]
		for i := range b.bins {
			x := uint64(b.bins[i].Load())
			s.bins[i] += x
			s.n += x
		}
		s.max = max(s.max, b.max.Load())
	}
}

// quantile returns the nearest-rank quantile perMille/1000 of the snapshot in
// seconds, within the bin resolution and at most the maximum; NaN for an
// empty window.
func (s *windowSnapshot) quantile(perMille uint64) float64 {
	if s.n == 0 {
		return math.NaN()
	}
	rank := max((perMille*s.n+999)/1000, 1) // ⌈q·n⌉ without rounding errors
	var seen uint64
	for b, x := range s.bins {
		if seen += x; seen >= rank {
			return min(binValue(b), float64(s.max)) / 1e9
		}
	}
	return float64(s.max) / 1e9 // not reached: seen ends at n
}
