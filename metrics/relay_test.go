package metrics

import (
	"errors"
	"math"
	"testing"
)

// The relay's metrics carry the link and what the robot said: its flags,
// errors and safety stops by code, reconnections after the first start-up,
// watchdog refreshes, a full queue and the sample age.
func TestRelayMetrics(t *testing.T) {
	reg := NewRegistry()
	set, err := New(reg, BuildInfo{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	age := 0.004
	r, err := set.Relay("arm", func() float64 { return age })
	if err != nil {
		t.Fatal(err)
	}
	r.RobotState(true, true, false, true)
	r.RobotError(3005)
	r.RobotError(3005)
	r.SafetyStop(3070, 1)
	r.SafetyStop(3070, 2) // released: not a new stop
	r.Connected()
	r.Connected()
	r.WatchdogRefreshed()
	r.BufferFull()
	fams := gather(t, reg)
	value := func(name string, labels ...string) float64 {
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
	next:
		for _, m := range f.GetMetric() {
			l := labelsOf(m)
			for i := 0; i+1 < len(labels); i += 2 {
				if l[labels[i]] != labels[i+1] {
					continue next
				}
			}
			if l["link"] != "arm" {
				t.Errorf("%s: link %q", name, l["link"])
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
		t.Fatalf("no %s%v", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"bridge_relay_errors_total", []string{"code", "3005"}, 2},
		{"bridge_relay_safety_stops_total", []string{"code", "3070"}, 1},
		{"bridge_relay_reconnects_total", nil, 1},
		{"bridge_relay_robot_state", []string{"flag", "activated"}, 1},
		{"bridge_relay_robot_state", []string{"flag", "homed"}, 1},
		{"bridge_relay_robot_state", []string{"flag", "error"}, 0},
		{"bridge_relay_robot_state", []string{"flag", "paused"}, 1},
		{"bridge_relay_sample_age_seconds", nil, 0.004},
		{"bridge_relay_watchdog_refreshes_total", nil, 1},
		{"bridge_relay_buffer_full_total", nil, 1},
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, r.WatchdogRefreshed); n != 0 {
		t.Errorf("WatchdogRefreshed: %.1f allocations", n)
	}
	if _, err := set.Relay("arm", func() float64 { return math.NaN() }); !errors.Is(err, ErrRegister) {
		t.Errorf("a second relay of one link: %v", err)
	}
	if _, err := set.Relay("", func() float64 { return 0 }); !errors.Is(err, ErrInvalid) {
		t.Errorf("no name: %v", err)
	}
}
