package simulink

import (
	"math"
	"sync"

	"github.com/labbridge/bridge/internal/latency"
)

// Clock sources of the receive timestamps in SendTimingStats.Clock.
const (
	// ClockKernel: the kernel stamped each datagram as it arrived
	// (SO_TIMESTAMPNS, CLOCK_REALTIME), before any scheduling delay of the
	// receiving goroutine.
	ClockKernel = "kernel"
	// ClockUser: the receiving goroutine read the monotonic clock after the
	// read returned; its own wake-up jitter is in the figures.
	ClockUser = "user"
)

// Reference period tracking.
const (
	// refWarmup intervals are averaged cumulatively: the master's clock may be
	// a few ppm off the nominal rate, and nothing but its own mean tells.
	refWarmup = 1000
	// refEWMA is the weight (1/refEWMA) of an interval in the reference after
	// the warm-up: slow enough that jitter barely moves it, fast enough to
	// follow a drift of the master's clock.
	refEWMA = 1000
	// refOutlier: an interval farther than this fraction of the reference
	// from it (a stall, a burst catching up) does not move the reference.
	refOutlier = 0.5
	// refReseed consecutive outliers mean the period itself changed (another
	// run at another rate on the same partner): the reference starts again.
	refReseed = 64
)

// Deviation histogram: log-linear buckets, exact below 2·devSub ns, then
// devSub buckets per power of two. A bucket reported by its midpoint is off
// by at most 1/(2·devSub) ≈ 0.4 % of the value.
const (
	devSubBits = 7
	devSub     = 1 << devSubBits
	// devMaxExp: values up to 2^36 ns (≈ 69 s) have their own bucket; larger
	// ones go into the last (MaxNs stays exact).
	devMaxExp  = 36
	devBuckets = (devMaxExp - devSubBits + 1) << devSubBits // latency.BucketsBelow(devMaxExp, devSubBits)
)

// devHist is a fixed histogram of non-negative ns values; it never allocates.
type devHist struct {
	n      [devBuckets]uint64
	count  uint64
	maxVal int64
}

func devIndex(v int64) int { return min(latency.Bucket(v, devSubBits), devBuckets-1) }

// devValue is the midpoint of bucket i.
func devValue(i int) int64 {
	lo, width := latency.BucketBounds(i, devSubBits)
	return lo + width/2
}

func (h *devHist) record(v int64) {
	h.n[devIndex(v)]++
	h.count++
	h.maxVal = max(h.maxVal, v)
}

// quantile returns the value at quantile q (0 < q ≤ 1): the midpoint of the
// bucket holding the ⌈q·count⌉-th smallest value, never above the maximum;
// the maximum itself for the largest.
func (h *devHist) quantile(q float64) int64 {
	if h.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	rank = min(max(rank, 1), h.count)
	if rank == h.count {
		return h.maxVal // exact, even beyond the last bucket's range
	}
	var seen uint64
	for i, c := range h.n {
		if seen += c; seen >= rank {
			return min(devValue(i), h.maxVal)
		}
	}
	return h.maxVal
}

// SendTiming records the timing of a master's sends as the partner receives
// them: the interval between datagrams of consecutive seq, and its deviation
// from the reference period (the running mean interval). Record, Break and
// Missed allocate nothing and hold the lock for a few ns; Snapshot may run
// on another goroutine at any time. The zero value is ready to use.
type SendTiming struct {
	mu sync.Mutex

	clock   string
	chained bool // lastSeq and lastNs belong to the previous datagram
	lastSeq int64
	lastNs  int64

	intervals, gaps, backward, missed uint64
	sumNs                             int64

	ref      float64 // reference period, ns; 0 until the first interval
	refN     int     // intervals averaged into ref during the warm-up
	outliers int     // consecutive intervals too far from ref to update it

	hist devHist
}

// SendTimingStats is a snapshot of a SendTiming. Deviations are
// |interval − reference period|.
type SendTimingStats struct {
	// Clock is ClockKernel or ClockUser; "" if never set.
	Clock string
	// Intervals is the number of intervals timed: pairs of datagrams of
	// consecutive seq.
	Intervals uint64
	// Gaps counts breaks of the chain of consecutive seq: a seq that skipped
	// ahead, went back or repeated, a handshake, a restart of the model.
	Gaps uint64
	// Backward counts timestamps earlier than the previous one (the kernel's
	// CLOCK_REALTIME stepped back); they are not intervals.
	Backward uint64
	// Missed counts measurements that arrived without a timestamp.
	Missed uint64
	// Deviations is the number of deviation samples: every interval but the
	// first, which only seeds the reference.
	Deviations uint64
	// P50Ns, P99Ns, P999Ns: quantiles of the deviation (within 0.4 %); MaxNs
	// is exact.
	P50Ns, P99Ns, P999Ns, MaxNs int64
	// MeanIntervalNs is the sum of the intervals over their number.
	MeanIntervalNs float64
	// PeriodNs is the reference period the deviations are taken against.
	PeriodNs float64
	// RateHz is the achieved send rate: Intervals over their sum.
	RateHz float64
}

// SetClock names the source of the timestamps that follow. A change of
// source breaks the chain: timestamps of two clocks do not subtract.
func (t *SendTiming) SetClock(source string) {
	t.mu.Lock()
	if source != t.clock {
		t.clock = source
		t.chained = false
	}
	t.mu.Unlock()
}

// Record takes a measurement of seq ≥ 0 received at ns.
func (t *SendTiming) Record(seq, ns int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.chained || seq != t.lastSeq+1 {
		if t.chained {
			t.gaps++
		}
		t.chained, t.lastSeq, t.lastNs = true, seq, ns
		return
	}
	d := ns - t.lastNs
	t.lastSeq, t.lastNs = seq, ns
	if d < 0 {
		t.backward++
		return
	}
	t.intervals++
	t.sumNs += d
	t.observe(float64(d))
}

// observe records the deviation of interval x (ns) and updates the reference.
func (t *SendTiming) observe(x float64) {
	if t.refN == 0 {
		t.ref, t.refN = x, 1
		return
	}
	dev := math.Abs(x - t.ref)
	t.hist.record(int64(math.Round(dev)))
	if dev > refOutlier*t.ref {
		if t.outliers++; t.outliers >= refReseed {
			t.ref, t.refN, t.outliers = x, 1, 0
		}
		return
	}
	t.outliers = 0
	if t.refN < refWarmup {
		t.refN++
		t.ref += (x - t.ref) / float64(t.refN)
	} else {
		t.ref += (x - t.ref) / refEWMA
	}
}

// Break ends the chain of consecutive seq (a handshake, a restart of the
// model): the next measurement starts a new one. It counts a gap if a chain
// was open.
func (t *SendTiming) Break() {
	t.mu.Lock()
	if t.chained {
		t.gaps++
		t.chained = false
	}
	t.mu.Unlock()
}

// Missed counts a measurement that arrived without a timestamp; the chain
// restarts after it, without a gap (the seq did not skip).
func (t *SendTiming) Missed() {
	t.mu.Lock()
	t.missed++
	t.chained = false
	t.mu.Unlock()
}

// Snapshot returns the statistics so far. It copies the histogram under the
// lock (a few µs at most) and computes the quantiles outside it.
func (t *SendTiming) Snapshot() SendTimingStats {
	h := new(devHist)
	t.mu.Lock()
	*h = t.hist
	s := SendTimingStats{
		Clock: t.clock, Intervals: t.intervals, Gaps: t.gaps, Backward: t.backward, Missed: t.missed,
		PeriodNs: t.ref,
	}
	sum := t.sumNs
	t.mu.Unlock()
	if s.Intervals > 0 && sum > 0 {
		s.MeanIntervalNs = float64(sum) / float64(s.Intervals)
		s.RateHz = 1e9 / s.MeanIntervalNs
	}
	s.Deviations = h.count
	s.P50Ns, s.P99Ns, s.P999Ns, s.MaxNs = h.quantile(0.5), h.quantile(0.99), h.quantile(0.999), h.maxVal
	return s
}
