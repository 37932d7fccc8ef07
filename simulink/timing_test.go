package simulink

import (
	"math"
	"sync"
	"testing"

	"github.com/labbridge/bridge/internal/latency"
)

// within reports whether got is within rel (relative) of want.
func within(got, want int64, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*math.Abs(float64(want))
}

// TestDevHistogramError: every value from 0 to the histogram's range comes
// back from its bucket within 0.4 % (exact below 256 ns), and buckets are in
// order.
func TestDevHistogramError(t *testing.T) {
	prev := -1
	check := func(v int64) {
		t.Helper()
		i := devIndex(v)
		if i < prev || i >= devBuckets {
			t.Fatalf("devIndex(%d) = %d after %d", v, i, prev)
		}
		prev = i
		if got := devValue(i); v < 2*devSub && got != v || !within(got, v, 1.0/(2*devSub)) {
			t.Fatalf("value %d: bucket %d reads %d", v, i, got)
		}
	}
	for v := range int64(4096) {
		check(v)
	}
	for v := 4096.0; v < 1<<devMaxExp; v *= 1.0007 {
		check(int64(v))
	}
	for e := 8; e < devMaxExp; e++ { // both edges of every octave
		prev = -1
		check(int64(1)<<e - 1)
		check(int64(1) << e)
	}
	if i := devIndex(math.MaxInt64); i != devBuckets-1 {
		t.Errorf("devIndex(MaxInt64) = %d, want the last bucket %d", i, devBuckets-1)
	}
	if i := devIndex(-5); i != 0 {
		t.Errorf("devIndex(-5) = %d, want 0", i)
	}
}

func TestDevHistogramQuantiles(t *testing.T) {
	var h devHist
	if h.quantile(0.5) != 0 {
		t.Error("quantile of an empty histogram")
	}
	for v := int64(1); v <= 1000; v++ {
		h.record(v * 1000) // 1 µs … 1 ms
	}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 500_000}, {0.99, 990_000}, {0.999, 999_000}, {1, 1_000_000}} {
		if got := h.quantile(c.q); !within(got, c.want, 0.004) {
			t.Errorf("q%v = %d, want %d ± 0.4 %%", c.q, got, c.want)
		}
	}
	h.record(5_000_000_000_000) // beyond the last bucket's range: max stays exact
	if h.maxVal != 5_000_000_000_000 || h.quantile(1) != 5_000_000_000_000 {
		t.Errorf("max %d, q1 %d", h.maxVal, h.quantile(1))
	}
}

// timingRun feeds st the datagrams seq first, first+1, … at the given
// intervals, starting at time *ns, and advances *ns.
func timingRun(st *SendTiming, first int64, ns *int64, intervals []int64) {
	st.Record(first, *ns)
	for i, d := range intervals {
		*ns += d
		st.Record(first+int64(i)+1, *ns)
	}
}

// patterned returns n intervals (a multiple of 400) around period: in every
// 400, 390 of ±10 µs, 8 of ±100 µs and 2 of ±300 µs, in pairs so that the
// mean stays period. The deviations' p50 is 10 µs, p99 100 µs, p99.9 and max
// 300 µs.
func patterned(period float64, n int) []int64 {
	out := make([]int64, 0, n)
	pair := func(dev float64) {
		out = append(out, int64(math.Round(period+dev)), int64(math.Round(period-dev)))
	}
	for len(out) < n {
		for i := range 200 {
			switch {
			case i == 100:
				pair(300e3)
			case i%50 == 25:
				pair(100e3)
			default:
				pair(10e3)
			}
		}
	}
	return out
}

func TestSendTimingQuantiles(t *testing.T) {
	for _, c := range []struct {
		name   string
		period float64 // ns
	}{
		{"1kHz", 1e6},
		{"30Hz", 1e9 / 30},
		// A master clock 150 ppm fast (a crystal far out of spec): the
		// reference is its own mean, so the deviations do not carry the
		// offset (150 ns at 1 kHz, 5 µs at 30 Hz).
		{"1kHz+150ppm", 1e6 / (1 + 150e-6)},
		{"30Hz-150ppm", 1e9 / 30 / (1 - 150e-6)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var st SendTiming
			st.SetClock(ClockKernel)
			ns := int64(1_700_000_000) * 1e9
			iv := patterned(c.period, 100_000)
			timingRun(&st, 0, &ns, iv)
			s := st.Snapshot()
			if s.Clock != ClockKernel || s.Intervals != 100_000 || s.Deviations != 99_999 || s.Gaps != 0 || s.Backward != 0 || s.Missed != 0 {
				t.Fatalf("counts %+v", s)
			}
			for _, q := range []struct {
				name      string
				got, want int64
			}{{"p50", s.P50Ns, 10_000}, {"p99", s.P99Ns, 100_000}, {"p99.9", s.P999Ns, 300_000}, {"max", s.MaxNs, 300_000}} {
				if !within(q.got, q.want, 0.01) {
					t.Errorf("%s = %d ns, want %d ± 1 %%", q.name, q.got, q.want)
				}
			}
			var sum int64
			for _, d := range iv {
				sum += d
			}
			mean := float64(sum) / float64(len(iv))
			if s.MeanIntervalNs != mean || math.Abs(s.RateHz-1e9/mean) > 1e-9*s.RateHz {
				t.Errorf("mean %v ns, rate %v Hz; want %v ns, %v Hz", s.MeanIntervalNs, s.RateHz, mean, 1e9/mean)
			}
			// The slow average still moves by 1/refEWMA of the last
			// interval's ±10 µs: 10 ns.
			if math.Abs(s.PeriodNs-c.period) > 20e-6*c.period {
				t.Errorf("reference period %v ns, want %v (20 ppm)", s.PeriodNs, c.period)
			}
		})
	}
}

// TestSendTimingFollowsDrift: a master clock whose rate drifts by 100 ppm
// over the run, without jitter. The reference follows it, so the deviations
// stay far below the drift itself (100 ns at 1 kHz).
func TestSendTimingFollowsDrift(t *testing.T) {
	var st SendTiming
	const n = 200_000
	iv := make([]int64, n)
	for i := range iv {
		iv[i] = int64(math.Round(1e6 * (1 + 100e-6*float64(i)/n)))
	}
	ns := int64(0)
	timingRun(&st, 0, &ns, iv)
	s := st.Snapshot()
	if s.Intervals != n || s.MaxNs > 5 || s.P999Ns > 2 {
		t.Errorf("drift: %+v, want deviations of a few ns", s)
	}
	if math.Abs(s.PeriodNs-1e6*(1+100e-6)) > 2 {
		t.Errorf("reference %v ns, want ≈ %v", s.PeriodNs, 1e6*(1+100e-6))
	}
}

// TestSendTimingGaps: only consecutive seq make intervals; any other seq, a
// handshake or a restart (Break) counts one gap and starts a new chain.
func TestSendTimingGaps(t *testing.T) {
	var st SendTiming
	ns := int64(0)
	ms := func(n int) []int64 {
		iv := make([]int64, n)
		for i := range iv {
			iv[i] = 1e6
		}
		return iv
	}
	st.Break()                     // no chain yet: no gap
	timingRun(&st, 0, &ns, ms(9))  // 0..9: 9 intervals
	ns += 5e6                      //
	timingRun(&st, 15, &ns, ms(2)) // skipped 10..14: gap 1; 2 intervals
	ns += 1e6
	timingRun(&st, 3, &ns, ms(1)) // went back (a re-handshake restarts at 0): gap 2; 1 interval
	st.Break()                    // handshake: gap 3
	st.Break()                    // another handshake: still gap 3
	ns += 1e6
	timingRun(&st, 0, &ns, ms(2)) // 2 intervals
	ns += 1e6
	st.Record(2, ns) // a duplicate: gap 4, no interval
	ns += 1e6
	st.Record(3, ns) // continues from the duplicate
	st.Missed()      // no timestamp: the chain breaks, no gap
	ns += 1e6
	st.Record(4, ns)
	ns += 1e6
	st.Record(5, ns) // 1 interval
	s := st.Snapshot()
	want := SendTimingStats{Intervals: 9 + 2 + 1 + 2 + 1 + 1, Gaps: 4, Missed: 1}
	if s.Intervals != want.Intervals || s.Gaps != want.Gaps || s.Missed != want.Missed || s.Backward != 0 {
		t.Errorf("got %+v, want %d intervals, %d gaps, %d missed", s, want.Intervals, want.Gaps, want.Missed)
	}
	if s.MaxNs != 0 || s.MeanIntervalNs != 1e6 || s.RateHz != 1000 || s.PeriodNs != 1e6 {
		t.Errorf("every interval is 1 ms: %+v", s)
	}
}

// TestSendTimingBackward: a timestamp before the previous one (the realtime
// clock stepped back) is no interval; the chain goes on from it.
func TestSendTimingBackward(t *testing.T) {
	var st SendTiming
	st.Record(0, 10e6)
	st.Record(1, 11e6)
	st.Record(2, 5e6) // stepped back 6 ms
	st.Record(3, 6e6)
	s := st.Snapshot()
	if s.Intervals != 2 || s.Backward != 1 || s.Gaps != 0 || s.MeanIntervalNs != 1e6 {
		t.Errorf("%+v", s)
	}
}

// TestSendTimingReseed: the same partner timing a master at 1 kHz, then at
// 500 Hz without a gap. Intervals twice the reference are outliers; after
// refReseed of them in a row, the reference starts again from the new one.
func TestSendTimingReseed(t *testing.T) {
	var st SendTiming
	iv := make([]int64, 4000)
	for i := range iv {
		iv[i] = 1e6
		if i >= 2000 {
			iv[i] = 2e6
		}
	}
	ns := int64(0)
	timingRun(&st, 0, &ns, iv)
	s := st.Snapshot()
	if s.Intervals != 4000 || s.Deviations != 3999 || s.PeriodNs != 2e6 {
		t.Fatalf("%+v", s)
	}
	// 64 deviations of 1 ms (1.6 %), the rest 0.
	if s.P50Ns != 0 || s.P99Ns != 1e6 || s.MaxNs != 1e6 {
		t.Errorf("quantiles %+v, want p50 0, p99 and max 1 ms", s)
	}
	// A single stall moves nothing: one outlier, then the period again.
	var st2 SendTiming
	iv = iv[:3000]
	for i := range iv {
		iv[i] = 1e6
	}
	iv[2500] = 50e6
	ns = 0
	timingRun(&st2, 0, &ns, iv)
	if s := st2.Snapshot(); s.PeriodNs != 1e6 || s.MaxNs != 49e6 || s.P999Ns != 0 {
		t.Errorf("after one stall: %+v", s)
	}
}

// TestSendTimingClockChange: timestamps of two clocks never make an
// interval.
func TestSendTimingClockChange(t *testing.T) {
	var st SendTiming
	st.SetClock(ClockKernel)
	st.Record(0, 1_700_000_000e9)
	st.SetClock(ClockUser)
	st.Record(1, 5e6)
	st.Record(2, 6e6)
	st.SetClock(ClockUser) // the same source: the chain holds
	st.Record(3, 7e6)
	if s := st.Snapshot(); s.Intervals != 2 || s.Clock != ClockUser || s.Gaps != 0 || s.MeanIntervalNs != 1e6 {
		t.Errorf("%+v", s)
	}
}

func TestSendTimingEmpty(t *testing.T) {
	var st SendTiming
	if s := st.Snapshot(); s != (SendTimingStats{}) {
		t.Errorf("zero SendTiming: %+v", s)
	}
}

func TestSendTimingAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates for sync operations")
	}
	var st SendTiming
	seq, ns := int64(0), int64(0)
	if a := testing.AllocsPerRun(1000, func() {
		seq++
		ns += 1e6 + seq%7*1000
		st.Record(seq, ns)
		if seq%100 == 0 {
			st.Break()
		}
	}); a != 0 {
		t.Errorf("%v allocations per Record, want 0", a)
	}
}

// TestSendTimingConcurrent: Snapshot runs beside Record (the race detector
// checks the locking).
func TestSendTimingConcurrent(t *testing.T) {
	var st SendTiming
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				st.Snapshot()
			}
		}
	})
	for seq := range int64(20_000) {
		st.Record(seq, seq*1e6)
	}
	close(done)
	wg.Wait()
	if s := st.Snapshot(); s.Intervals != 19_999 {
		t.Errorf("%+v", s)
	}
}

// The deviation histogram is the module's one scale with devSubBits, up to
// 2^devMaxExp.
func TestDevBucketsAreTheScale(t *testing.T) {
	if want := latency.BucketsBelow(devMaxExp, devSubBits); devBuckets != want {
		t.Errorf("devBuckets %d, want %d", devBuckets, want)
	}
}
