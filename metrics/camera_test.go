package metrics

import (
	"errors"
	"testing"
	"time"
)

func TestCameraMetrics(t *testing.T) {
	reg := NewRegistry()
	s, err := New(reg, BuildInfo{Version: "t"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Camera("emio", 33*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	c.ObserveUp(true)
	c.ObserveFrame(int64(800*time.Microsecond), 1, false)
	c.ObserveFrame(int64(900*time.Microsecond), 2, true)
	c.ObserveAge(int64(12 * time.Millisecond))
	fams := gather(t, reg)
	link := map[string]string{"link": "emio"}
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"bridge_camera_frames_total", 2},
		{"bridge_camera_held_frames_total", 1},
		{"bridge_camera_markers", 2},
		{"bridge_camera_up", 1},
		{"bridge_marker_age_last_seconds", 0.012},
	} {
		m := series(t, fams, tc.name, link)
		got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	if n := series(t, fams, "bridge_camera_track_seconds", link).GetHistogram().GetSampleCount(); n != 2 {
		t.Errorf("track histogram has %d samples, want 2", n)
	}
	if n := series(t, fams, "bridge_marker_age_seconds", link).GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("age histogram has %d samples, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		c.ObserveFrame(1000, 1, false)
		c.ObserveAge(1000)
		c.ObserveUp(true)
	}); n != 0 {
		t.Errorf("camera observers allocate %v times", n)
	}
	// The same link twice is refused, and leaves the first one intact.
	if _, err := s.Camera("emio", time.Second); !errors.Is(err, ErrRegister) {
		t.Errorf("second camera for a link: %v, want ErrRegister", err)
	}
	for _, bad := range []struct {
		name   string
		period time.Duration
	}{{"", time.Second}, {"x", 0}} {
		if _, err := s.Camera(bad.name, bad.period); !errors.Is(err, ErrInvalid) {
			t.Errorf("Camera(%q, %v): %v, want ErrInvalid", bad.name, bad.period, err)
		}
	}
}
