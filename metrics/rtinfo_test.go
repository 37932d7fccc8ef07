package metrics

import (
	"testing"
	"time"
)

// The real-time settings are absent until the loop reports them, then one
// info series at a time, replaced when the loop reports again.
func TestRealTimeMetrics(t *testing.T) {
	reg, set := newSet(t)
	l, err := set.Link("emio", time.Second/30)
	if err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	for _, name := range []string{"bridge_realtime_info", "bridge_realtime_dma_latency_held", "bridge_realtime_memory_locked"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s exported before the loop's set-up", name)
		}
	}
	l.RealTime(RealTimeInfo{Policy: "SCHED_FIFO", Priority: 80, CPUs: "1", DMALatency: true, LockedMemory: true})
	fams = gather(t, reg)
	link := map[string]string{"link": "emio"}
	info := series(t, fams, "bridge_realtime_info", link)
	if got, want := labelsOf(info), map[string]string{"link": "emio", "policy": "SCHED_FIFO", "priority": "80", "cpus": "1"}; len(got) != len(want) || value(info) != 1 {
		t.Errorf("info %v = %v, want %v = 1", got, value(info), want)
	} else {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("info label %s = %q, want %q", k, got[k], v)
			}
		}
	}
	if v := value(series(t, fams, "bridge_realtime_dma_latency_held", link)); v != 1 {
		t.Errorf("dma latency held %v, want 1", v)
	}
	if v := value(series(t, fams, "bridge_realtime_memory_locked", link)); v != 1 {
		t.Errorf("memory locked %v, want 1", v)
	}

	l.RealTime(RealTimeInfo{Policy: "SCHED_OTHER"})
	fams = gather(t, reg)
	info = series(t, fams, "bridge_realtime_info", link) // exactly one
	if l := labelsOf(info); l["policy"] != "SCHED_OTHER" || l["priority"] != "0" || l["cpus"] != "" {
		t.Errorf("info after a second set-up: %v", l)
	}
	if v := value(series(t, fams, "bridge_realtime_dma_latency_held", link)); v != 0 {
		t.Errorf("dma latency held %v, want 0", v)
	}
	if v := value(series(t, fams, "bridge_realtime_memory_locked", link)); v != 0 {
		t.Errorf("memory locked %v, want 0", v)
	}
}
