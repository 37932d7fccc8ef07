package metrics

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// ShadowValue names one measured value a shadow twin compares: its field,
// its 1-based index in the field and the field's unit.
type ShadowValue struct {
	Field string
	Index int
	Unit  string
}

// ShadowReading is a twin's state when it is scraped. Divergence and
// MaxAbs hold one value per ShadowValue; NaN is a value not compared.
type ShadowReading struct {
	Divergence, MaxAbs []float64
	Ticks, Dropped     uint64
}

// Shadow exports link's shadow twin, read at each scrape (off the loop):
//
//   - bridge_shadow_divergence{field,index,unit}: real − model, the last
//     compared tick's, in the field's unit (a plant's fields differ in
//     unit, so the unit is a label).
//   - bridge_shadow_divergence_max{field,index,unit}: its largest magnitude
//     since the start.
//   - bridge_shadow_ticks_total, bridge_shadow_dropped_ticks_total: the ticks
//     the model ran, and those the twin could not keep up with.
//
// A value the model does not predict has no series.
func (s *Set) Shadow(name string, values []ShadowValue, read func(*ShadowReading)) error {
	if name == "" || !utf8.ValidString(name) {
		return fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	if read == nil {
		return fmt.Errorf("%w: link %q: no twin reading", ErrInvalid, name)
	}
	labels := prometheus.Labels{"link": name}
	vars := []string{"field", "index", "unit"}
	c := &shadowCollector{
		read: read, values: values,
		div:     prometheus.NewDesc("bridge_shadow_divergence", "Measured minus the shadow twin's model, at the last compared tick, in the field's unit.", vars, labels),
		max:     prometheus.NewDesc("bridge_shadow_divergence_max", "The largest magnitude of measured minus model since the start, in the field's unit.", vars, labels),
		ticks:   prometheus.NewDesc("bridge_shadow_ticks_total", "Ticks the shadow twin's model ran and compared.", nil, labels),
		dropped: prometheus.NewDesc("bridge_shadow_dropped_ticks_total", "Ticks the shadow twin could not keep up with and dropped.", nil, labels),
	}
	for _, v := range values {
		c.lvs = append(c.lvs, []string{v.Field, strconv.Itoa(v.Index), v.Unit})
	}
	if err := s.reg.Register(c); err != nil {
		return fmt.Errorf("%w: shadow twin of link %q: %w", ErrRegister, name, err)
	}
	return nil
}

type shadowCollector struct {
	read                     func(*ShadowReading)
	values                   []ShadowValue
	lvs                      [][]string
	div, max, ticks, dropped *prometheus.Desc

	// mu guards r, reused across scrapes, which may overlap.
	mu sync.Mutex
	r  ShadowReading
}

// Describe implements prometheus.Collector.
func (c *shadowCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.div, c.max, c.ticks, c.dropped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *shadowCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read(&c.r)
	for i, lv := range c.lvs {
		if i < len(c.r.Divergence) && !math.IsNaN(c.r.Divergence[i]) {
			ch <- constMetric(c.div, c.r.Divergence[i], lv...)
		}
		if i < len(c.r.MaxAbs) && !math.IsNaN(c.r.MaxAbs[i]) {
			ch <- constMetric(c.max, c.r.MaxAbs[i], lv...)
		}
	}
	ch <- counterMetric(c.ticks, float64(c.r.Ticks))
	ch <- counterMetric(c.dropped, float64(c.r.Dropped))
}
