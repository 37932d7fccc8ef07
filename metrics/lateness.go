package metrics

import (
	"math"
	"time"
)

// Lateness is the send lateness of a link's last minute of ticks: the
// window that bridge_loop_lateness_quantile_seconds and
// bridge_loop_lateness_max_seconds export, read the same way.
type Lateness struct {
	// P50, P99 and P999 are within 1.6 % (the window's bins) and never
	// above Max, which is exact.
	P50, P99, P999, Max time.Duration
	// Ticks is how many ticks the window holds; with none, the quantiles
	// are zero and mean nothing.
	Ticks uint64
}

// Lateness reads the lateness window for a person (the status page). Like a
// scrape it only reads, on any goroutine, so the loop's tick path is the
// same with or without readers.
func (l *Link) Lateness() Lateness {
	var s windowSnapshot
	l.coll.window.snapshot(&s)
	d := func(perMille uint64) time.Duration {
		q := s.quantile(perMille)
		if math.IsNaN(q) {
			return 0
		}
		return time.Duration(math.Round(q * 1e9))
	}
	return Lateness{P50: d(500), P99: d(990), P999: d(999), Max: time.Duration(s.max), Ticks: s.n}
}
