package metrics

import (
	"errors"
	"math"
	"sync"
	"testing"
)

// The servos' metrics are read at scrape time: a temperature not read yet is
// absent rather than NaN, each error bit has its series, the counters exist
// at 0, and a servo listed twice is reported once.
func TestServoMetrics(t *testing.T) {
	reg, set := newSet(t)
	var mu sync.Mutex
	readings := []ServoReading{
		{ID: 1, TemperatureC: 41, LimitC: 72, HardwareError: 1<<2 | 1<<5, Alerts: 3, MissedReads: 7},
		{ID: 2, TemperatureC: math.NaN(), LimitC: math.NaN()},
		{ID: 1, TemperatureC: 99}, // a duplicate: ignored
	}
	calls := 0
	read := func(dst []ServoReading) []ServoReading {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return append(dst, readings...)
	}
	if err := set.Servos("emio", read); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Errorf("read called %d times before a scrape", calls)
	}
	fams := gather(t, reg)
	s1 := map[string]string{"link": "emio", "servo": "1"}
	s2 := map[string]string{"link": "emio", "servo": "2"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"bridge_servo_temperature_celsius", s1, 41},
		{"bridge_servo_temperature_limit_celsius", s1, 72},
		{"bridge_servo_alerts_total", s1, 3},
		{"bridge_servo_missed_reads_total", s1, 7},
		{"bridge_servo_alerts_total", s2, 0},
		{"bridge_servo_missed_reads_total", s2, 0},
	} {
		if got := value(series(t, fams, c.name, c.labels)); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for _, name := range []string{"bridge_servo_temperature_celsius", "bridge_servo_temperature_limit_celsius"} {
		for _, m := range fams[name].GetMetric() {
			if labelsOf(m)["servo"] != "1" {
				t.Errorf("%s%v exported, want nothing for a servo not read yet", name, labelsOf(m))
			}
		}
	}
	want1 := map[string]float64{"input_voltage": 0, "overheating": 1, "encoder": 0, "electrical_shock": 0, "overload": 1}
	for e, w := range want1 {
		if got := value(series(t, fams, "bridge_servo_hardware_error", map[string]string{"servo": "1", "error": e})); got != w {
			t.Errorf("servo 1 %s = %v, want %v", e, got, w)
		}
		if got := value(series(t, fams, "bridge_servo_hardware_error", map[string]string{"servo": "2", "error": e})); got != 0 {
			t.Errorf("servo 2 %s = %v, want 0", e, got)
		}
	}
	if n := len(fams["bridge_servo_hardware_error"].GetMetric()); n != 10 {
		t.Errorf("%d hardware error series, want 5 per servo", n)
	}

	// A reading taken later shows at the next scrape.
	mu.Lock()
	readings[1].TemperatureC = 38.5
	mu.Unlock()
	if got := value(series(t, gather(t, reg), "bridge_servo_temperature_celsius", s2)); got != 38.5 {
		t.Errorf("servo 2 temperature %v, want 38.5", got)
	}

	if err := set.Servos("emio", read); !errors.Is(err, ErrRegister) {
		t.Errorf("a second Servos for a link: %v, want ErrRegister", err)
	}
	if err := set.Servos("", read); !errors.Is(err, ErrInvalid) {
		t.Errorf("no name: %v, want ErrInvalid", err)
	}
	if err := set.Servos("x", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("no read: %v, want ErrInvalid", err)
	}
}
