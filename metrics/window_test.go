package metrics

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/labbridge/bridge/internal/latency"
)

// Each bin holds one range of values, the ranges follow each other, and the
// value a bin answers is within 1/64 of every value in it (exact below 64 ns).
func TestLatenessBins(t *testing.T) {
	prev := -1
	check := func(v int64) {
		t.Helper()
		b := binOf(v)
		if b < prev || b > prev+1 || b >= numBins {
			t.Fatalf("binOf(%d) = %d after %d", v, b, prev)
		}
		prev = b
		if b == numBins-1 {
			if !math.IsInf(binValue(b), 1) {
				t.Fatalf("last bin's value %v, want +Inf", binValue(b))
			}
			return
		}
		got := binValue(b)
		if v < 2*binSub && got != float64(v) {
			t.Fatalf("binValue(binOf(%d)) = %v, want exact", v, got)
		}
		if math.Abs(got-float64(v)) > float64(v)/64 {
			t.Fatalf("binValue(binOf(%d)) = %v: off by more than 1/64", v, got)
		}
	}
	// Every value up to 2^14, then the edges of every bin up to the top.
	for v := range int64(1 << 14) {
		check(v)
	}
	for e := 14; e <= binTopExp+1; e++ {
		for sub := range int64(binSub) {
			lo := (binSub + sub) << (e - binSubBits)
			check(lo - 1)
			check(lo)
		}
	}
	check(math.MaxInt64)
	if prev != numBins-1 {
		t.Errorf("largest value in bin %d, want the last, %d", prev, numBins-1)
	}
}

func windowLink(t *testing.T, period time.Duration) (*prometheus.Registry, *Link) {
	t.Helper()
	reg, s := newSet(t)
	l, err := s.Link("w", period)
	if err != nil {
		t.Fatal(err)
	}
	return reg, l
}

// lateness returns the max and the quantiles of link "w" as one scrape sees
// them, and the summary.
func lateness(t *testing.T, reg prometheus.Gatherer) (float64, map[float64]float64, *dto.Summary) {
	t.Helper()
	fams := gather(t, reg)
	w := map[string]string{"link": "w"}
	maxV := value(series(t, fams, "bridge_loop_lateness_max_seconds", w))
	sum := series(t, fams, "bridge_loop_lateness_quantile_seconds", w).GetSummary()
	if sum == nil {
		t.Fatal("bridge_loop_lateness_quantile_seconds is not a summary")
	}
	q := map[float64]float64{}
	for _, x := range sum.GetQuantile() {
		q[x.GetQuantile()] = x.GetValue()
	}
	if len(q) != 3 {
		t.Fatalf("quantiles %v, want 0.5, 0.99, 0.999", q)
	}
	return maxV, q, sum
}

// Two scrapers gathering in turn both see the largest lateness: a scrape
// only reads the window.
func TestLatenessMaxSeveralScrapers(t *testing.T) {
	reg, l := windowLink(t, time.Millisecond)
	if m, q, _ := lateness(t, reg); m != 0 || !math.IsNaN(q[0.5]) {
		t.Errorf("before a tick: max %v, p50 %v; want 0 and NaN", m, q[0.5])
	}
	scrapers := [2]prometheus.Gatherer{reg, prometheus.Gatherers{reg}}
	l.ObserveTick(170_000, 1)
	l.ObserveTick(10_700_000, 1) // the minute's worst
	for i := range 1000 {
		l.ObserveTick(int64(i%200)*1000, 1)
		if i%100 == 0 {
			for j, g := range scrapers {
				if m, _, _ := lateness(t, g); m != 10.7e-3 {
					t.Fatalf("scraper %d after %d ticks: max %v, want 10.7e-3", j, i, m)
				}
			}
		}
	}
}

// A lateness leaves the window N ticks after it happened at the latest,
// and stays at least 5/6 of N ticks.
func TestLatenessMaxLeavesWindow(t *testing.T) {
	for _, period := range []time.Duration{time.Millisecond, time.Second / 30, 7 * time.Millisecond, 10 * time.Second, 2 * time.Minute} {
		reg, l := windowLink(t, period)
		w := l.coll.window
		n := w.ticks()
		if want := int((time.Minute + period - 1) / period); n < want || n >= want+windowBlocks {
			t.Fatalf("period %v: window of %d ticks, want ⌈60 s / period⌉ = %d rounded up to %d blocks", period, n, want, windowBlocks)
		}
		// A spike on a block's first tick stays exactly N ticks.
		for range 3 * w.blockLen { // mid-ring
			l.ObserveTick(1000, 1)
		}
		l.ObserveTick(5_000_000, 1)
		for range n - 1 {
			l.ObserveTick(1000, 1)
		}
		if m, _, _ := lateness(t, reg); m != 5e-3 {
			t.Errorf("period %v: max %v after %d ticks, want the spike, 5e-3", period, m, n)
		}
		l.ObserveTick(1000, 1)
		if m, _, _ := lateness(t, reg); m != 1e-6 {
			t.Errorf("period %v: max %v after %d ticks, want 1e-6: the spike left", period, m, n+1)
		}
		// A spike on a block's last tick leaves sooner, but not before
		// 5/6 of N.
		for range w.blockLen - 1 - w.pos {
			l.ObserveTick(1000, 1)
		}
		l.ObserveTick(6_000_000, 1)
		for range n * 5 / 6 {
			l.ObserveTick(1000, 1)
		}
		if m, _, _ := lateness(t, reg); m != 6e-3 {
			t.Errorf("period %v: max %v %d ticks after a spike, want 6e-3", period, m, n*5/6)
		}
		for range n / 6 {
			l.ObserveTick(1000, 1)
		}
		if m, _, _ := lateness(t, reg); m != 1e-6 {
			t.Errorf("period %v: max %v %d ticks after a spike, want 1e-6", period, m, n)
		}
	}
}

// The quantiles of a known distribution, to the bin resolution; the
// summary's count and sum are the lateness histogram's.
func TestLatenessQuantiles(t *testing.T) {
	reg, l := windowLink(t, time.Millisecond)
	n := l.coll.window.ticks() // 60 000: 60 rounds of 1 … 1000 µs
	var sum float64
	for i := range n + 123 { // and a bit, so that the window starts mid-round
		v := int64(i%1000+1) * 1000
		l.ObserveTick(v, 1)
		sum += float64(v) / 1e9
	}
	m, q, s := lateness(t, reg)
	if m != 1e-3 {
		t.Errorf("max %v, want 1e-3", m)
	}
	// Every block of the window holds whole rounds of 1 … 1000 µs (10 000
	// ticks each), so the nearest-rank quantiles are those of one round.
	for _, want := range []struct{ q, v float64 }{{0.5, 500e-6}, {0.99, 990e-6}, {0.999, 999e-6}} {
		if got := q[want.q]; math.Abs(got-want.v) > want.v/64 {
			t.Errorf("p%v = %v, want %v within 1/64", want.q*100, got, want.v)
		}
	}
	if s.GetSampleCount() != uint64(n+123) || math.Abs(s.GetSampleSum()-sum) > 1e-9 {
		t.Errorf("summary count %d sum %v, want %d %v", s.GetSampleCount(), s.GetSampleSum(), n+123, sum)
	}
	h := series(t, gather(t, reg), "bridge_loop_wakeup_lateness_seconds", map[string]string{"link": "w"}).GetHistogram()
	if h.GetSampleCount() != s.GetSampleCount() || h.GetSampleSum() != s.GetSampleSum() {
		t.Errorf("summary count %d sum %v, histogram's %d %v", s.GetSampleCount(), s.GetSampleSum(), h.GetSampleCount(), h.GetSampleSum())
	}

	// Small values are exact; a quantile is never above the maximum.
	reg, l = windowLink(t, time.Millisecond)
	for i := range 1000 {
		l.ObserveTick(int64(i%10), 1) // 0 … 9 ns
	}
	l.ObserveTick(1_000_001, 1) // one large tick in a bin wider than 1 ns
	m, q, _ = lateness(t, reg)
	if q[0.5] != 5e-9 || q[0.99] != 9e-9 || q[0.999] != 9e-9 || m != 1.000001e-3 {
		t.Errorf("p50 %v p99 %v p99.9 %v max %v, want 5, 9, 9 ns and 1.000001 ms", q[0.5], q[0.99], q[0.999], m)
	}
	for range 1000 {
		l.ObserveTick(1_000_001, 1)
	}
	if _, q, _ = lateness(t, reg); q[0.999] != 1.000001e-3 {
		t.Errorf("p99.9 %v, want the maximum 1.000001e-3 (the bin's middle is above it)", q[0.999])
	}
}

// The loop writes while two scrapers read: no race, and every value a scrape
// reports is one the loop recorded, even as blocks rotate under it.
func TestLatenessWindowConcurrent(t *testing.T) {
	// 1 s: blocks of 10 ticks, so the window rotates all the time.
	reg, l := windowLink(t, time.Second)
	values := []int64{1000, 2000, 50_000, 3_000_000}
	const top = 3e-3
	var done sync.WaitGroup
	var scrapes atomic.Int64
	stop := make(chan struct{})
	for range 2 {
		done.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mfs, err := reg.Gather()
				if err != nil {
					t.Error(err)
					return
				}
				scrapes.Add(1)
				for _, mf := range mfs {
					switch mf.GetName() {
					case "bridge_loop_lateness_max_seconds":
						if v := mf.GetMetric()[0].GetGauge().GetValue(); v < 0 || v > top {
							t.Errorf("max %v, want within [0, %v]", v, top)
						}
					case "bridge_loop_lateness_quantile_seconds":
						for _, q := range mf.GetMetric()[0].GetSummary().GetQuantile() {
							if v := q.GetValue(); !math.IsNaN(v) && (v < 1e-6*(1-1.0/64) || v > top) {
								t.Errorf("p%v = %v, want within [1 µs, %v]", q.GetQuantile()*100, v, top)
							}
						}
					}
				}
			}
		})
	}
	// Enough ticks for thousands of rotations, and enough scrapes to have
	// overlapped them.
	for i := 0; i < 50_000 || scrapes.Load() < 100; i++ {
		l.ObserveTick(values[i%len(values)], 1)
	}
	close(stop)
	done.Wait()
}

// A scrape that read the current block's index and then lost the CPU while
// the loop went on for up to two blocks reads a window that is stale or
// thinner, but every value it reports is one the loop recorded.
func TestLatenessWindowTornRead(t *testing.T) {
	w := newLatenessWindow(time.Second) // blocks of 10 ticks
	tick := 0
	observe := func() {
		// Block by block: 1 µs, 2 µs, …, 9 µs, then 1 µs again; one tick
		// in each block is 100 times larger.
		v := int64(tick/w.blockLen%9+1) * 1000
		if tick%w.blockLen == 3 {
			v *= 100
		}
		w.observe(v)
		tick++
	}
	for range 5 * w.ticks() {
		observe()
	}
	for lag := range 2*w.blockLen + 1 {
		for start := range w.blockLen {
			for range start {
				observe()
			}
			stale := int(w.cur.Load())
			for range lag {
				observe()
			}
			var s windowSnapshot
			w.snapshotFrom(stale, &s)
			if s.n == 0 || s.n > uint64(w.ticks()+w.blockLen) {
				t.Fatalf("lag %d: %d ticks in the window", lag, s.n)
			}
			if s.max%100_000 != 0 || s.max < 100_000 || s.max > 900_000 {
				t.Fatalf("lag %d: max %d ns, want one of the blocks' largest", lag, s.max)
			}
			for _, x := range quantiles {
				q := s.quantile(x.perMille) * 1e9
				if q < 1000*(1-1.0/64) || q > 900_000 {
					t.Fatalf("lag %d: p%v = %v ns, outside what the loop recorded", lag, x.q*100, q)
				}
			}
		}
	}
}

// The lateness window's scrape: what Collect adds to a link's.
func BenchmarkLatenessSnapshot(b *testing.B) {
	w := newLatenessWindow(time.Millisecond)
	for i := range 100_000 {
		w.observe(int64(i%1000) * 1000)
	}
	for b.Loop() {
		var s windowSnapshot
		w.snapshot(&s)
		_ = s.quantile(999)
	}
}

// The bins are the module's one scale with binSubBits, and one more bin
// for everything from 2^(binTopExp+1) on.
func TestBinsAreTheScale(t *testing.T) {
	if want := latency.BucketsBelow(binTopExp+1, binSubBits) + 1; numBins != want {
		t.Errorf("numBins %d, want %d", numBins, want)
	}
}
