package metrics

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Faults holds the fault metrics of a link. Its methods are safe from any
// goroutine; the fault watcher calls them, off the loop thread.
type Faults struct {
	activeVec *prometheus.GaugeVec
	startsVec *prometheus.CounterVec
	// Resolved once for the names given to Set.Faults, and never written
	// after, so that concurrent calls can read them.
	active map[string]prometheus.Gauge
	starts map[string]prometheus.Counter
}

// Faults registers the fault metrics of the link called name, with a series
// from the start for each of names (the fault watcher's probes):
//
//   - bridge_fault_active{fault}: 1 while the fault is active, else 0;
//   - bridge_faults_total{fault}: times the fault started.
//
// It fails with ErrInvalid for an empty or non-UTF-8 link or fault name, or
// a fault named twice, and with ErrRegister if the link has fault metrics
// already.
func (s *Set) Faults(name string, names []string) (*Faults, error) {
	if name == "" || !utf8.ValidString(name) {
		return nil, fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	f := &Faults{
		activeVec: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "fault_active",
			Help: "1 while the fault is active, else 0 (docs/faults.md).", ConstLabels: prometheus.Labels{"link": name}}, []string{"fault"}),
		startsVec: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "faults_total",
			Help: "Times the fault started.", ConstLabels: prometheus.Labels{"link": name}}, []string{"fault"}),
		active: make(map[string]prometheus.Gauge, len(names)),
		starts: make(map[string]prometheus.Counter, len(names)),
	}
	for _, n := range names {
		switch {
		case n == "" || !utf8.ValidString(n):
			return nil, fmt.Errorf("%w: link %q: fault name %q (want non-empty UTF-8)", ErrInvalid, name, n)
		case f.active[n] != nil:
			return nil, fmt.Errorf("%w: link %q: fault %q named twice", ErrInvalid, name, n)
		}
		f.active[n] = f.activeVec.WithLabelValues(n)
		f.starts[n] = f.startsVec.WithLabelValues(n)
	}
	if err := s.reg.Register(f.activeVec); err != nil {
		return nil, fmt.Errorf("%w: faults of link %q: %w", ErrRegister, name, err)
	}
	if err := s.reg.Register(f.startsVec); err != nil {
		s.reg.Unregister(f.activeVec)
		return nil, fmt.Errorf("%w: faults of link %q: %w", ErrRegister, name, err)
	}
	return f, nil
}

// Set says whether the named fault is active. A name not given to
// Set.Faults gets its series now rather than being lost.
func (f *Faults) Set(name string, active bool) {
	g, ok := f.active[name]
	if !ok {
		var err error
		if g, err = f.activeVec.GetMetricWithLabelValues(strings.ToValidUTF8(name, "\uFFFD")); err != nil {
			return // cannot happen: one label, valid UTF-8
		}
	}
	g.Set(boolValue(active))
}

// Started counts one start of the named fault. A name not given to
// Set.Faults gets its series now rather than being lost.
func (f *Faults) Started(name string) {
	c, ok := f.starts[name]
	if !ok {
		var err error
		if c, err = f.startsVec.GetMetricWithLabelValues(strings.ToValidUTF8(name, "\uFFFD")); err != nil {
			return // cannot happen: one label, valid UTF-8
		}
	}
	c.Inc()
}
