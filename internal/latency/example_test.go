package latency_test

import (
	"fmt"

	"github.com/labbridge/bridge/internal/latency"
)

func Example() {
	var h latency.Histogram
	// 1000 ticks woke 1..1000 µs late.
	for us := int64(1); us <= 1000; us++ {
		h.Record(us * 1000)
	}
	s := h.Summary()
	fmt.Println("count", s.Count)
	fmt.Println("min", s.Min, "max", s.Max)
	fmt.Println("p50", s.P50, "p99", s.P99) // exact: 500000 and 990000, within 0.39 %
	fmt.Printf("mean %.0f\n", s.Mean)
	// Output:
	// count 1000
	// min 1000 max 1000000
	// p50 500736 p99 989184
	// mean 500500
}
