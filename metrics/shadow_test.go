package metrics

import (
	"errors"
	"math"
	"testing"
)

// The twin's divergence is read at scrape time, one series per value the
// model predicts, with the field's unit as a label.
func TestShadowMetrics(t *testing.T) {
	reg, set := newSet(t)
	values := []ShadowValue{{"markers", 1, "mm"}, {"angles", 1, "rad"}, {"angles", 2, "rad"}}
	read := func(r *ShadowReading) {
		r.Divergence = append(r.Divergence[:0], math.NaN(), 0.02, -0.2)
		r.MaxAbs = append(r.MaxAbs[:0], math.NaN(), 0.05, 0.25)
		r.Ticks, r.Dropped = 900, 2
	}
	if err := set.Shadow("emio", values, read); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	a2 := map[string]string{"link": "emio", "field": "angles", "index": "2", "unit": "rad"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"bridge_shadow_divergence", a2, -0.2},
		{"bridge_shadow_divergence_max", a2, 0.25},
		{"bridge_shadow_ticks_total", map[string]string{"link": "emio"}, 900},
		{"bridge_shadow_dropped_ticks_total", map[string]string{"link": "emio"}, 2},
	} {
		if got := value(series(t, fams, c.name, c.labels)); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(fams["bridge_shadow_divergence"].GetMetric()); n != 2 {
		t.Errorf("%d divergence series, want 2: none for a value not modelled", n)
	}
	if err := set.Shadow("emio", values, read); !errors.Is(err, ErrRegister) {
		t.Errorf("a second twin for the link: %v, want ErrRegister", err)
	}
	if err := set.Shadow("", values, read); !errors.Is(err, ErrInvalid) {
		t.Errorf("no link name: %v", err)
	}
}
