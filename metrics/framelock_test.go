package metrics

import (
	"errors"
	"testing"
)

func TestFrameLockMetrics(t *testing.T) {
	reg := NewRegistry()
	s, err := New(reg, BuildInfo{Version: "t"})
	if err != nil {
		t.Fatal(err)
	}
	reading := LockReading{State: "locked", States: []string{"locking", "locked", "lost"}, RateHz: 30.003, PPM: 100,
		Phase: 0.0002, Jitter: 0.0005, Offset: 0.004, Relocks: 2}
	if err := s.FrameLock("emio", func() LockReading { return reading }); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	link := map[string]string{"link": "emio"}
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"bridge_camera_rate_hz", 30.003},
		{"bridge_camera_clock_error_ppm", 100},
		{"bridge_camera_phase_error_seconds", 0.0002},
		{"bridge_camera_arrival_jitter_seconds", 0.0005},
		{"bridge_camera_tick_offset_seconds", 0.004},
		{"bridge_camera_relocks_total", 2},
	} {
		if got := value(series(t, fams, tc.name, link)); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, st := range reading.States {
		want := 0.0
		if st == "locked" {
			want = 1
		}
		if got := value(series(t, fams, "bridge_camera_lock_state", map[string]string{"link": "emio", "state": st})); got != want {
			t.Errorf("lock_state{state=%q} = %v, want %v", st, got, want)
		}
	}
	if err := s.FrameLock("emio", func() LockReading { return reading }); !errors.Is(err, ErrRegister) {
		t.Errorf("a second lock for the link: %v, want ErrRegister", err)
	}
	if err := s.FrameLock("", func() LockReading { return reading }); !errors.Is(err, ErrInvalid) {
		t.Errorf("no name: %v, want ErrInvalid", err)
	}
	if err := s.FrameLock("x", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("no reading: %v, want ErrInvalid", err)
	}
}
