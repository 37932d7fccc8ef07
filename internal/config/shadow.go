package config

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/internal/shadow"
	"github.com/labbridge/bridge/metrics"
)

// ShadowTable is [link.shadow]: the link's simulator beside its real plant
// (docs/architecture.md "The shadow twin").
type ShadowTable struct {
	Enabled bool `toml:"enabled"`
	// Hold is how long a divergence must last (and end) to start (and
	// end) a fault.
	Hold Duration `toml:"hold"`
	// Clear is how long a value must be back with the model to end its
	// fault, when the twin starts again from the robot's state.
	Clear Duration `toml:"clear"`
	// Threshold is, per measured field of the plant (its layout's names),
	// the divergence real − model past which a value is watched, in the
	// field's unit; the plant's kind gives defaults.
	Threshold map[string]float64 `toml:"threshold"`
}

// twinned is a plant kind whose simulator can stand beside its real plant
// as the shadow twin.
type twinned interface {
	// twinThresholds are the kind's thresholds by measured field; nil:
	// no model for the plant as configured.
	twinThresholds() map[string]float64
	// twin builds the model (it starts where the real plant is: the twin
	// puts it there) and says which measured fields it does not predict,
	// which integrate the commands, and what a fault means in a lab's
	// words.
	twin(b *builder) (twinSpec, error)
}

// twinSpec is what a kind gives its twin (shadow.Config's fields).
type twinSpec struct {
	model             shadow.Model
	skip, integrating []string
	settling          func() bool
	words             func(shadow.Fault) string
}

// hasTwin: the plant's kind, as configured, has a model.
func hasTwin(p Plant) bool {
	tw, ok := p.(twinned)
	return ok && tw.twinThresholds() != nil
}

func (l *LinkTable) shadowDefaults() {
	s := &l.Shadow
	if s.Hold.Duration == 0 {
		s.Hold.Duration = shadow.DefaultHold
	}
	if s.Clear.Duration == 0 {
		s.Clear.Duration = shadow.DefaultClear
	}
	tw, ok := l.Plant.(twinned)
	if !ok || tw.twinThresholds() == nil {
		return
	}
	for name, v := range tw.twinThresholds() {
		if _, set := s.Threshold[name]; !set {
			if s.Threshold == nil {
				s.Threshold = map[string]float64{}
			}
			s.Threshold[name] = v
		}
	}
}

// SetShadow turns on the shadow twin of every link whose plant kind has a
// model (`-shadow`), and says which links have none.
func (c *Config) SetShadow(w io.Writer) {
	for i := range c.Links {
		l := &c.Links[i]
		if hasTwin(l.Plant) {
			l.Shadow.Enabled = true
		} else {
			fmt.Fprintf(w, "link %s: no shadow twin: plant kind %q has no model to run beside it here yet\n", l.Name, l.Plant.Kind())
		}
	}
}

// maxShadowHold bounds hold: a divergence held for minutes is no longer a
// fault the twin finds in time.
const maxShadowHold = time.Minute

func (l *LinkTable) validateShadow(v *validator) {
	s := l.Shadow
	if s.Enabled && !hasTwin(l.Plant) {
		v.bad("shadow.enabled", true, fmt.Sprintf("false: plant kind %q has no model to run beside it here yet (the twin models kinds emio, sim, meca500 and vrep)", l.Plant.Kind()))
	}
	if h := s.Hold.Duration; h < 0 || h > maxShadowHold {
		v.bad("shadow.hold", quote(h.String()), `0s..1m, like "500ms"; remove the key for the default, 500ms`)
	}
	if h := s.Clear.Duration; h < 0 || h > maxShadowHold {
		v.bad("shadow.clear", quote(h.String()), `0s..1m, like "2s"; remove the key for the default, 2s`)
	}
	var fields, units []string
	for _, f := range l.Plant.Layout().Measure {
		fields, units = append(fields, f.Name), append(units, f.Unit)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Threshold)) {
		x := s.Threshold[name]
		if !slices.Contains(fields, name) {
			want := "a measured field of the plant: " + strings.Join(fields, ", ")
			if c := Closest(name, fields); c != "" {
				want += fmt.Sprintf(" (did you mean %q?)", c)
			}
			v.bad("shadow.threshold."+name, x, want)
			continue
		}
		if !(x > 0) || math.IsInf(x, 0) {
			v.bad("shadow.threshold."+name, x, "a positive number of "+units[slices.Index(fields, name)])
		}
	}
}

// newTwin builds the link's shadow twin and its fault probe.
func (l *LinkTable) newTwin(b *builder, out bridge.TickRecorder) (*shadow.Twin, fault.Probe, error) {
	tw := l.Plant.(twinned)
	spec, err := tw.twin(b)
	if err != nil {
		return nil, fault.Probe{}, fmt.Errorf("shadow twin: %w", err)
	}
	t, err := shadow.New(shadow.Config{Model: spec.model, Layout: l.Plant.Layout(), Threshold: l.Shadow.Threshold,
		Hold: l.Shadow.Hold.Duration, Clear: l.Shadow.Clear.Duration, Skip: spec.skip, Integrating: spec.integrating, Settling: spec.settling, Words: spec.words, Out: out})
	if err != nil {
		return nil, fault.Probe{}, err
	}
	var open []string
	probe := fault.Probe{
		Name: "shadow_divergence", Title: "the robot does not do what its model does",
		Advice: "look at the robot: a jammed joint, an occluded marker, a load it was not built for; the twin follows the robot again once it is back with the model",
		Level: func() (bool, string) {
			open = t.Open(open[:0]) // the watcher polls from one goroutine
			return len(open) > 0, strings.Join(open, "; ")
		},
	}
	return t, probe, nil
}

// emioWords says an Emio-shaped twin's fault in a lab's words; ids are the
// servos' (nil: motors by number). An ended fault is said by its largest.
func emioWords(ids []byte) func(shadow.Fault) string {
	return func(f shadow.Fault) string {
		d := f.Last
		if f.Ended {
			d = f.Size
		}
		return emio.DescribeDivergence(f.Field, f.Index, d, f.Size, f.For, ids)
	}
}

// twinValues names the twin's values for its metrics.
func twinValues(t *shadow.Twin) []metrics.ShadowValue {
	names, index, units, _ := t.Fields()
	out := make([]metrics.ShadowValue, len(names))
	for i := range names {
		out[i] = metrics.ShadowValue{Field: names[i], Index: index[i], Unit: units[i]}
	}
	return out
}

// twinReading reads the twin for a scrape: a value not modelled is NaN.
func twinReading(t *shadow.Twin) func(*metrics.ShadowReading) {
	var snap shadow.Snapshot
	_, _, _, modelled := t.Fields()
	return func(r *metrics.ShadowReading) {
		t.Divergences(&snap) // the collector serialises its reads
		r.Divergence = append(r.Divergence[:0], snap.Divergence...)
		r.MaxAbs = append(r.MaxAbs[:0], snap.MaxAbs...)
		for j, m := range modelled {
			if !m {
				r.MaxAbs[j] = math.NaN()
			}
		}
		r.Ticks, r.Dropped = snap.Ticks, snap.Dropped
	}
}
