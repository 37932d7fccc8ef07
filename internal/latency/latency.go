// Package latency is an allocation-free, log-linear (HDR-style) histogram of
// durations in nanoseconds, used by benchmarks and the CLI to report p50, p99,
// p99.9 and max of loop timings as the measurement tables of docs/realtime.md §4
// and §7 do (cyclictest-style nearest-rank percentiles).
//
// Layout: values below 128 ns each have their own bucket (exact). Above, every
// power of two [2^e, 2^(e+1)) is split into 128 equal sub-buckets, so a bucket
// is at most 1/128 of its lower bound wide and its midpoint is within 1/256
// (0.39 %) of any value it holds. The range is exact-to-0.39 % up to
// MaxTrackable (about 17.2 s); larger values are counted in the top bucket, while
// Max, Min and Mean stay exact.
package latency

import (
	"math"
	"math/bits"
)

const (
	subBits  = 7
	subCount = 1 << subBits // linear sub-buckets per power of two
	topExp   = 33           // highest tracked power of two: [2^33, 2^34)

	numBuckets = (topExp - subBits + 2) << subBits // BucketsBelow(topExp+1, subBits)
)

// MaxTrackable is the largest value, in nanoseconds, recorded with full
// precision; larger values fall into the top bucket.
const MaxTrackable int64 = 1<<(topExp+1) - 1

// RelativeError is the largest relative error of Quantile for a value between
// 128 ns and MaxTrackable (below 128 ns quantiles are exact).
const RelativeError = 1.0 / (2 * subCount)

// Histogram counts durations in nanoseconds. The zero value is ready to use.
// It is meant for a single writer: Record takes no lock, so concurrent use needs
// external synchronisation (readers included).
type Histogram struct {
	counts       [numBuckets]uint64
	count        uint64
	min, max     int64
	sumHi, sumLo uint64 // 128-bit sum: never overflows, so Mean stays exact
}

// New returns an empty histogram (the zero value works as well).
func New() *Histogram { return new(Histogram) }

// bucketOf returns the bucket index of v (v >= 0).
func bucketOf(v int64) int { return min(Bucket(v, subBits), numBuckets-1) }

// bucketBounds returns the lowest value of bucket i and its width.
func bucketBounds(i int) (lo, width int64) { return BucketBounds(i, subBits) }

// Record adds one value. Negative values (a clock stepping back) count as 0.
// It never allocates.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.counts[bucketOf(ns)]++
	if h.count == 0 || ns < h.min {
		h.min = ns
	}
	if ns > h.max {
		h.max = ns
	}
	h.count++
	var c uint64
	h.sumLo, c = bits.Add64(h.sumLo, uint64(ns), 0)
	h.sumHi += c
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.count }

// Min returns the smallest recorded value (exact), or 0 when empty.
func (h *Histogram) Min() int64 { return h.min }

// Max returns the largest recorded value (exact, even beyond MaxTrackable), or
// 0 when empty.
func (h *Histogram) Max() int64 { return h.max }

// Mean returns the exact arithmetic mean (up to float64 rounding), or 0 when
// empty.
func (h *Histogram) Mean() float64 {
	if h.count == 0 {
		return 0
	}
	sum := float64(h.sumHi)*(1<<64) + float64(h.sumLo)
	return sum / float64(h.count)
}

// Quantile returns the nearest-rank q-quantile: the value of rank ⌈q·n⌉ among
// the n recorded values, represented by the midpoint of its bucket and clamped to
// [Min, Max]. It is exact below 128 ns and within RelativeError up to
// MaxTrackable. Quantile(0) is Min and Quantile(1) is Max, both exact. q is
// clamped to [0, 1]; NaN counts as 0. An empty histogram returns 0.
func (h *Histogram) Quantile(q float64) int64 {
	if h.count == 0 {
		return 0
	}
	if !(q > 0) { // also catches NaN
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	if rank < 1 {
		rank = 1
	}
	if rank > h.count {
		rank = h.count
	}
	var cum uint64
	for i := range h.counts {
		cum += h.counts[i]
		if cum >= rank {
			lo, w := bucketBounds(i)
			v := lo + w/2
			return min(max(v, h.min), h.max)
		}
	}
	return h.max // unreachable while counts sum to count
}

// Reset empties the histogram.
func (h *Histogram) Reset() { *h = Histogram{} }

// Merge adds every value of other to h. other may be h itself; nil is a no-op.
func (h *Histogram) Merge(other *Histogram) {
	if other == nil || other.count == 0 {
		return
	}
	if h.count == 0 || other.min < h.min {
		h.min = other.min
	}
	if other.max > h.max {
		h.max = other.max
	}
	for i := range h.counts {
		h.counts[i] += other.counts[i]
	}
	var c uint64
	h.sumLo, c = bits.Add64(h.sumLo, other.sumLo, 0)
	h.sumHi += other.sumHi + c
	h.count += other.count
}

// Summary is a plain snapshot of a histogram, in nanoseconds.
type Summary struct {
	Count uint64  `json:"count"`
	Min   int64   `json:"min_ns"`
	P50   int64   `json:"p50_ns"`
	P99   int64   `json:"p99_ns"`
	P999  int64   `json:"p99_9_ns"`
	Max   int64   `json:"max_ns"`
	Mean  float64 `json:"mean_ns"`
}

// Summary returns count, min, p50, p99, p99.9, max and mean.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.count,
		Min:   h.min,
		P50:   h.Quantile(0.50),
		P99:   h.Quantile(0.99),
		P999:  h.Quantile(0.999),
		Max:   h.max,
		Mean:  h.Mean(),
	}
}
