package bridge

import "github.com/labbridge/bridge/internal/latency"

// quantileWindow estimates a high quantile of the last size to 2·size
// samples (durations in ns) without allocating: two log-linear histograms,
// the current window and the one before it, swapped every size samples. It
// is how the loop learns its lead (docs/realtime.md §15): a running quantile
// that follows a device that became slower within one window and forgets an
// old outlier after two.
type quantileWindow struct {
	cur, prev [windowBuckets]uint32
	n, size   int
	total     int // samples in cur and prev
}

// Buckets, on the scale of latency.Bucket: one per value below 8 ns, then 8
// per octave up to 2^30 ns (≈ 1.07 s), and one above. The quantile answers
// the bucket's upper bound, so it errs late by at most 1/8 of the value:
// the lead is never short because of the histogram.
const (
	windowSubBits = 3
	windowTopExp  = 30
	windowBuckets = (windowTopExp-windowSubBits+1)<<windowSubBits + 1 // latency.BucketsBelow(windowTopExp, windowSubBits) + 1
)

func windowBucket(v int64) int { return min(latency.Bucket(v, windowSubBits), windowBuckets-1) }

// windowUpper is the largest value of bucket b (the first value of the next).
func windowUpper(b int) int64 {
	if b >= windowBuckets-1 {
		return 1 << (windowTopExp + 1)
	}
	lo, width := latency.BucketBounds(b, windowSubBits)
	return lo + width
}

func newQuantileWindow(size int) quantileWindow { return quantileWindow{size: max(size, 1)} }

func (w *quantileWindow) add(v int64) {
	if w.n == w.size {
		w.total -= w.sum(&w.prev)
		w.prev, w.cur = w.cur, [windowBuckets]uint32{}
		w.n = 0
	}
	w.cur[windowBucket(max(v, 0))]++
	w.n++
	w.total++
}

func (w *quantileWindow) sum(h *[windowBuckets]uint32) int {
	s := 0
	for _, c := range h {
		s += int(c)
	}
	return s
}

// count is how many samples the estimate rests on.
func (w *quantileWindow) count() int { return w.total }

// quantile returns an upper bound of the q-quantile (nearest rank) of the
// samples in the window; 0 when it is empty.
func (w *quantileWindow) quantile(q float64) int64 {
	if w.total == 0 {
		return 0
	}
	// Rank from the top: the ⌈(1−q)·n⌉-th largest, at least the largest.
	above := int(float64(w.total) * (1 - q))
	for b := windowBuckets - 1; b >= 0; b-- {
		above -= int(w.cur[b]) + int(w.prev[b])
		if above < 0 {
			return windowUpper(b)
		}
	}
	return windowUpper(0)
}
