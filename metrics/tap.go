package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Tap counts what a link's telemetry tap does (docs/tap.md): it satisfies
// tap.Observer. Its series exist only for links whose tap is on.
type Tap struct {
	sent, dropped, errs prometheus.Counter
}

// Tap returns the tap counters of link, created at 0.
func (s *Set) Tap(link string) (*Tap, error) {
	var t Tap
	var err error
	for _, c := range []struct {
		dst *prometheus.Counter
		vec *prometheus.CounterVec
	}{{&t.sent, s.tapSent}, {&t.dropped, s.tapDropped}, {&t.errs, s.tapErrors}} {
		if *c.dst, err = c.vec.GetMetricWithLabelValues(link); err != nil {
			return nil, fmt.Errorf("%w: tap of link %q: %w", ErrRegister, link, err)
		}
	}
	return &t, nil
}

// TapSent counts a packet sent.
func (t *Tap) TapSent() { t.sent.Inc() }

// TapDropped counts a tick dropped on a full ring; on the loop thread, it
// allocates nothing.
func (t *Tap) TapDropped() { t.dropped.Inc() }

// TapError counts a packet that could not be sent.
func (t *Tap) TapError(error) { t.errs.Inc() }
