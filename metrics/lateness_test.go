package metrics

import (
	"testing"
	"time"
)

// Lateness reads the window the metrics export: the same p50, p99, p99.9
// and maximum as a scrape, and reading it changes nothing.
func TestLatenessAccessor(t *testing.T) {
	reg, l := windowLink(t, time.Millisecond)
	if got := l.Lateness(); got != (Lateness{}) {
		t.Fatalf("before any tick: %+v, want zeros", got)
	}
	for i := range 5000 {
		l.ObserveTick(int64(i%1000+1)*1000, 1) // 1 … 1000 µs
	}
	l.ObserveTick(3_000_000, 1) // one 3 ms tick
	got := l.Lateness()
	m, q, _ := lateness(t, reg)
	sec := func(d time.Duration) float64 { return d.Seconds() }
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	if got.Ticks != 5001 || !near(sec(got.Max), m) || !near(sec(got.P50), q[0.5]) ||
		!near(sec(got.P99), q[0.99]) || !near(sec(got.P999), q[0.999]) {
		t.Errorf("Lateness() = %+v; the scrape: max %v quantiles %v", got, m, q)
	}
	if got.Max != 3*time.Millisecond {
		t.Errorf("max %v, want 3ms", got.Max)
	}
	if again := l.Lateness(); again != got {
		t.Errorf("a second read %+v differs from the first %+v", again, got)
	}
}

// Reading the window does not allocate (the page reads it twice a second
// per link), and the tick path stays free of allocations with a reader.
func TestLatenessAccessorAllocs(t *testing.T) {
	_, l := windowLink(t, time.Millisecond)
	l.ObserveTick(1000, 1)
	if n := testing.AllocsPerRun(20, func() { _ = l.Lateness() }); n != 0 {
		t.Errorf("Lateness allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { l.ObserveTick(2000, 1) }); n != 0 {
		t.Errorf("ObserveTick allocates %v times", n)
	}
}
