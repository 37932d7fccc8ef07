package latency

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exactQuantile is the nearest-rank quantile of sorted values, the definition
// Quantile approximates.
func exactQuantile(sorted []int64, q float64) int64 {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = max(rank, 1)
	rank = min(rank, len(sorted))
	return sorted[rank-1]
}

func TestQuantileAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		gen  func() int64
	}{
		{"uniform 0-100ns exact range", func() int64 { return rng.Int64N(100) }},
		{"uniform 100ns-1ms", func() int64 { return 100 + rng.Int64N(1_000_000) }},
		{"uniform 1ms-10s", func() int64 { return 1_000_000 + rng.Int64N(10_000_000_000) }},
		{"bimodal 2us and 5ms", func() int64 {
			if rng.IntN(10) < 9 {
				return 2_000 + rng.Int64N(200)
			}
			return 5_000_000 + rng.Int64N(500_000)
		}},
		{"bimodal 150ns and 9s", func() int64 {
			if rng.IntN(2) == 0 {
				return 150 + rng.Int64N(10)
			}
			return 9_000_000_000 + rng.Int64N(1_000_000)
		}},
		{"exponential tail", func() int64 { return int64(rng.ExpFloat64() * 50_000) }},
	}
	quantiles := []float64{0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			vals := make([]int64, 100_000)
			for i := range vals {
				vals[i] = tt.gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			if h.Count() != uint64(len(vals)) {
				t.Fatalf("Count = %d, want %d", h.Count(), len(vals))
			}
			if h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
				t.Fatalf("Min, Max = %d, %d, want %d, %d", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
			}
			var sum float64
			for _, v := range vals {
				sum += float64(v)
			}
			if mean := sum / float64(len(vals)); math.Abs(h.Mean()-mean) > 1e-9*mean {
				t.Errorf("Mean = %v, want %v", h.Mean(), mean)
			}
			for _, q := range quantiles {
				got, want := h.Quantile(q), exactQuantile(vals, q)
				tol := RelativeError * float64(want)
				if want < subCount {
					tol = 0 // exact buckets
				}
				if math.Abs(float64(got-want)) > tol {
					t.Errorf("Quantile(%v) = %d, want %d ± %.1f", q, got, want, tol)
				}
			}
		})
	}
}

func TestBucketLayout(t *testing.T) {
	// Every value maps to a bucket whose bounds contain it, and the bucket's
	// width respects the documented error.
	vals := []int64{0, 1, 127, 128, 129, 255, 256, 1000, 123_456, 1 << 30, MaxTrackable - 1, MaxTrackable}
	for _, v := range vals {
		i := bucketOf(v)
		lo, w := bucketBounds(i)
		if v < lo || v >= lo+w {
			t.Errorf("value %d in bucket %d [%d, %d)", v, i, lo, lo+w)
		}
		if v >= subCount && float64(w)/2 > RelativeError*float64(lo) {
			t.Errorf("bucket %d [%d, %d) too wide for %v relative error", i, lo, lo+w, RelativeError)
		}
	}
	if got := bucketOf(MaxTrackable); got != numBuckets-1 {
		t.Errorf("bucketOf(MaxTrackable) = %d, want top bucket %d", got, numBuckets-1)
	}
	// Buckets tile the range with no gap or overlap.
	next := int64(0)
	for i := range numBuckets {
		lo, w := bucketBounds(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		next = lo + w
	}
	if next != MaxTrackable+1 {
		t.Fatalf("buckets end at %d, want %d", next, MaxTrackable+1)
	}
}

func TestEdgeCases(t *testing.T) {
	tests := []struct {
		name                      string
		record                    []int64
		wantMin, wantMax, wantP50 int64
		wantMean                  float64
	}{
		{"empty", nil, 0, 0, 0, 0},
		{"negative counts as zero", []int64{-5, -1}, 0, 0, 0, 0},
		{"single", []int64{42}, 42, 42, 42, 42},
		{"beyond range keeps exact max", []int64{math.MaxInt64}, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"huge sum does not overflow", []int64{math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64}, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New()
			for _, v := range tt.record {
				h.Record(v)
			}
			if h.Count() != uint64(len(tt.record)) {
				t.Errorf("Count = %d, want %d", h.Count(), len(tt.record))
			}
			if h.Min() != tt.wantMin || h.Max() != tt.wantMax || h.Quantile(0.5) != tt.wantP50 {
				t.Errorf("Min, Max, P50 = %d, %d, %d, want %d, %d, %d", h.Min(), h.Max(), h.Quantile(0.5), tt.wantMin, tt.wantMax, tt.wantP50)
			}
			if math.Abs(h.Mean()-tt.wantMean) > 1e-12*math.Abs(tt.wantMean) {
				t.Errorf("Mean = %v, want %v", h.Mean(), tt.wantMean)
			}
		})
	}
}

func TestQuantileOutOfRange(t *testing.T) {
	var h Histogram
	for v := int64(1); v <= 1000; v++ {
		h.Record(v * 1000)
	}
	tests := []struct {
		q    float64
		want int64
	}{
		{math.NaN(), 1000},
		{-1, 1000},
		{0, 1000},
		{1, 1_000_000},
		{2, 1_000_000},
		{math.Inf(1), 1_000_000},
	}
	for _, tt := range tests {
		if got := h.Quantile(tt.q); got != tt.want {
			t.Errorf("Quantile(%v) = %d, want %d", tt.q, got, tt.want)
		}
	}
}

func TestMergeAndReset(t *testing.T) {
	var a, b, all Histogram
	for v := range int64(1000) {
		a.Record(v * 7)
		all.Record(v * 7)
		b.Record(v*13 + 5_000)
		all.Record(v*13 + 5_000)
	}
	a.Merge(&b)
	a.Merge(nil)
	a.Merge(new(Histogram))
	if a != all {
		t.Fatalf("merged histogram differs: %+v vs %+v", a.Summary(), all.Summary())
	}
	// Merging into an empty histogram takes the other's min.
	var e Histogram
	e.Merge(&b)
	if e.Min() != b.Min() || e.Count() != b.Count() {
		t.Errorf("empty.Merge: min %d count %d, want %d %d", e.Min(), e.Count(), b.Min(), b.Count())
	}
	// Self-merge doubles every count.
	s := a.Summary()
	a.Merge(&a)
	if got := a.Summary(); got.Count != 2*s.Count || got.P50 != s.P50 || got.Mean != s.Mean || got.Min != s.Min || got.Max != s.Max {
		t.Errorf("self merge: %+v, from %+v", got, s)
	}
	a.Reset()
	if a != (Histogram{}) {
		t.Errorf("Reset left %+v", a.Summary())
	}
}

func TestSummaryJSON(t *testing.T) {
	var h Histogram
	h.Record(100)
	b, err := json.Marshal(h.Summary())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"count":1,"min_ns":100,"p50_ns":100,"p99_ns":100,"p99_9_ns":100,"max_ns":100,"mean_ns":100}`
	if string(b) != want {
		t.Errorf("JSON = %s, want %s", b, want)
	}
}

func TestRecordAllocs(t *testing.T) {
	h := New()
	v := int64(1)
	allocs := testing.AllocsPerRun(1000, func() {
		h.Record(v)
		v = v*3 + 1
	})
	if allocs != 0 {
		t.Errorf("Record allocates %v times per call", allocs)
	}
}

func FuzzRecord(f *testing.F) {
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(nil, math.MaxUint64))
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1<<63), 12345))
	f.Fuzz(func(t *testing.T, data []byte) {
		var h Histogram
		var n uint64
		lo, hi := int64(math.MaxInt64), int64(0)
		for len(data) >= 8 {
			v := int64(binary.LittleEndian.Uint64(data))
			data = data[8:]
			h.Record(v)
			n++
			v = max(v, 0)
			lo, hi = min(lo, v), max(hi, v)
		}
		if h.Count() != n {
			t.Fatalf("Count = %d, want %d", h.Count(), n)
		}
		if n == 0 {
			return
		}
		if h.Min() != lo || h.Max() != hi {
			t.Fatalf("Min, Max = %d, %d, want %d, %d", h.Min(), h.Max(), lo, hi)
		}
		prev := h.Min()
		for _, q := range []float64{0.1, 0.5, 0.9, 0.99, 0.999, 1} {
			v := h.Quantile(q)
			if v < prev || v > h.Max() {
				t.Fatalf("Quantile(%v) = %d out of order (prev %d, max %d)", q, v, prev, h.Max())
			}
			prev = v
		}
	})
}

func BenchmarkRecord(b *testing.B) {
	h := New()
	v := int64(12345)
	for b.Loop() {
		h.Record(v)
		v = (v*1103515245 + 12345) & (1<<31 - 1)
	}
}

func BenchmarkSummary(b *testing.B) {
	h := New()
	for v := range int64(100_000) {
		h.Record(v * 100)
	}
	for b.Loop() {
		_ = h.Summary()
	}
}
