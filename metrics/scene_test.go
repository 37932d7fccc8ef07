package metrics

import (
	"errors"
	"math"
	"testing"
	"time"
)

// A scene's metrics: every failure reason has a series from the start, the
// round trip lands in the histogram, the simulation time is NaN before a
// reply.
func TestSceneMetrics(t *testing.T) {
	reg := NewRegistry()
	set, err := New(reg, BuildInfo{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := set.Scene("wheels", 50*time.Millisecond, []string{"other", "refused", "timeout"})
	if err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	if g := fams["bridge_vrep_sim_time_seconds"].GetMetric()[0].GetGauge().GetValue(); !math.IsNaN(g) {
		t.Errorf("sim time before a reply: %v", g)
	}
	if n := len(fams["bridge_vrep_failures_total"].GetMetric()); n != 3 {
		t.Errorf("%d failure series before any failure, want 3", n)
	}
	sc.Exchanged(80*time.Microsecond, 12.5)
	sc.Exchanged(90*time.Microsecond, 12.55)
	sc.Failed(1)
	sc.Failed(1)
	sc.Failed(99)
	sc.Reconnected()
	sc.Restarted()
	sc.Superseded()
	sc.DeadmanStop()
	fams = gather(t, reg)
	h := fams["bridge_vrep_exchange_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || math.Abs(h.GetSampleSum()-170e-6) > 1e-12 {
		t.Errorf("histogram: %d samples, sum %v", h.GetSampleCount(), h.GetSampleSum())
	}
	if g := fams["bridge_vrep_sim_time_seconds"].GetMetric()[0].GetGauge().GetValue(); g != 12.55 {
		t.Errorf("sim time %v", g)
	}
	for _, m := range fams["bridge_vrep_failures_total"].GetMetric() {
		want := map[string]float64{"other": 1, "refused": 2, "timeout": 0}[labelsOf(m)["reason"]]
		if m.GetCounter().GetValue() != want || labelsOf(m)["link"] != "wheels" {
			t.Errorf("%v: %v, want %v", labelsOf(m), m.GetCounter().GetValue(), want)
		}
	}
	for _, name := range []string{"bridge_vrep_reconnects_total", "bridge_vrep_restarts_total", "bridge_vrep_superseded_total", "bridge_vrep_deadman_stops_total"} {
		if v := fams[name].GetMetric()[0].GetCounter().GetValue(); v != 1 {
			t.Errorf("%s = %v", name, v)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		sc.Exchanged(time.Millisecond, 1)
		sc.Failed(2)
		sc.Superseded()
		sc.DeadmanStop()
	}); n != 0 {
		t.Errorf("%v allocations per exchange", n)
	}
	if _, err := set.Scene("wheels", time.Second, nil); !errors.Is(err, ErrRegister) {
		t.Errorf("twice: %v", err)
	}
	if _, err := set.Scene("", time.Second, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("no name: %v", err)
	}
}
