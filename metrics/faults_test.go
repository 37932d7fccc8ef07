package metrics

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestFaultMetrics(t *testing.T) {
	reg, set := newSet(t)
	f, err := set.Faults("emio", []string{"no_partner", "camera_down"})
	if err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	for _, name := range []string{"no_partner", "camera_down"} {
		l := map[string]string{"link": "emio", "fault": name}
		if v := value(series(t, fams, "bridge_fault_active", l)); v != 0 {
			t.Errorf("fault_active%v = %v before anything, want 0", l, v)
		}
		if v := value(series(t, fams, "bridge_faults_total", l)); v != 0 {
			t.Errorf("faults_total%v = %v before anything, want 0", l, v)
		}
	}
	f.Started("camera_down")
	f.Set("camera_down", true)
	f.Set("camera_down", false)
	f.Started("camera_down")
	f.Set("camera_down", true)
	f.Started("servo_hot") // not declared: counted all the same
	f.Set("servo_hot", true)
	fams = gather(t, reg)
	for _, c := range []struct {
		name, fault string
		want        float64
	}{
		{"bridge_fault_active", "camera_down", 1},
		{"bridge_faults_total", "camera_down", 2},
		{"bridge_fault_active", "no_partner", 0},
		{"bridge_faults_total", "no_partner", 0},
		{"bridge_fault_active", "servo_hot", 1},
		{"bridge_faults_total", "servo_hot", 1},
	} {
		if v := value(series(t, fams, c.name, map[string]string{"link": "emio", "fault": c.fault})); v != c.want {
			t.Errorf("%s{fault=%s} = %v, want %v", c.name, c.fault, v, c.want)
		}
	}

	// The watcher's goroutine and others may call at once.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				f.Started("no_partner")
				f.Set("no_partner", true)
				f.Set("other", false)
			}
		})
	}
	wg.Wait()
	if v := value(series(t, gather(t, reg), "bridge_faults_total", map[string]string{"fault": "no_partner"})); v != 400 {
		t.Errorf("no_partner started %v times, want 400", v)
	}

	if _, err := set.Faults("emio", nil); !errors.Is(err, ErrRegister) {
		t.Errorf("a second Faults for a link: %v, want ErrRegister", err)
	}
	for _, bad := range []struct {
		link  string
		names []string
	}{{"", nil}, {"x", []string{"a", ""}}, {"x", []string{"a", "b\xff"}}, {"x", []string{"a", "b", "a"}}} {
		_, err := set.Faults(bad.link, bad.names)
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "metrics: ") {
			t.Errorf("Faults(%q, %q): %v, want ErrInvalid", bad.link, bad.names, err)
		}
	}
	// A refused call leaves the link free.
	if _, err := set.Faults("x", []string{"a"}); err != nil {
		t.Errorf("Faults(x) after refusals: %v", err)
	}
}
