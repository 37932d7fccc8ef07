package config

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/metrics"
)

func parseDefault(t *testing.T, edit func(*LinkTable, *EmioPlant)) *Config {
	t.Helper()
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&c.Links[0], c.Links[0].Plant.(*EmioPlant))
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// serveBuilt runs one built link under a supervisor until the test ends.
func serveBuilt(t *testing.T, b *Built) *bridge.Supervisor {
	t.Helper()
	sup, stop := startBuilt(t, b)
	t.Cleanup(func() {
		// A test's simulated device may stop before the bridge (cleanups
		// run last first), so the halt cannot reach it: that outcome is
		// the bridge package's to test, not a failure here.
		if err := stop(); errors.Is(err, bridge.ErrHalt) {
			t.Logf("stop: %v", err)
		} else if err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return sup
}

// startBuilt serves b's link, its dependencies and its partner under a
// supervisor; stop ends it as a signal does (its context ends) and returns
// what Serve returned.
func startBuilt(t *testing.T, b *Built) (*bridge.Supervisor, func() error) {
	t.Helper()
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Backoff: bridge.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Factor: 2}, Seed: 1})
	if err := sup.AddLink(b.Link, b.Observer(), b.Deps...); err != nil {
		t.Fatal(err)
	}
	if b.Partner != nil {
		if err := sup.Add("partner", b.Partner); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	return sup, func() error { cancel(); return <-done }
}

func testEnv(t *testing.T) Env {
	set, err := metrics.New(metrics.NewRegistry(), metrics.BuildInfo{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return Env{Logger: slog.New(slog.DiscardHandler), Metrics: set, Partner: true, Ephemeral: true, Home: t.TempDir()}
}

// The embedded default, built: simulated servos on a pseudo-terminal, the
// virtual camera, the built-in partner on free ports. The link runs, the
// camera streams, and the supervisor calls it healthy.
func TestBuildDefaultRuns(t *testing.T) {
	c := parseDefault(t, nil)
	b, err := c.Links[0].Build(testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if b.Simulated == nil || b.Partner == nil || b.Metrics == nil || b.Layout.MeasureLen() != 7 {
		t.Fatalf("built %+v", b)
	}
	var names []string
	for _, d := range b.Deps {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "camera,faults" {
		t.Errorf("dependencies %v, want the camera and the fault watcher", names)
	}
	serveBuilt(t, b)
	testutil.WaitFor(t, "running with the camera streaming", func() bool {
		st := b.Status()
		streaming := len(st) > 0 && strings.HasPrefix(st[0], "frame ") && !strings.Contains(st[0], "not streaming")
		return b.Link.State() == bridge.Running && b.Link.Applied() > 3 && streaming && healthyButBusy(b)
	})
	if st := b.Status(); len(st) != 2 || !strings.HasPrefix(st[0], "frame ") || !strings.HasPrefix(st[1], "lock ") {
		t.Errorf("status %q, want the camera's and its lock's", st)
	}
	// The loop closes: the Jacobian partner drives the tracked marker to its
	// target y0 + r = (-5, -135, 10) mm, with sin(q) = pinv(J)·r, so
	// q = asin(±0.25) = ±0.2527 on motors 1 and 2.
	wantCmd, wantMarker := []float64{0, 0.2527, -0.2527, 0}, []float64{-5, -135, 10}
	cmd, meas := make([]float64, 4), make([]float64, 7)
	testutil.WaitFor(t, "convergence", func() bool {
		b.Link.Command(cmd)
		b.Link.Measurement(meas)
		return near(cmd, wantCmd, 0.02) && near(meas[:3], wantMarker, 1.5)
	})
}

func near(got, want []float64, tol float64) bool {
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol {
			return false
		}
	}
	return true
}

// busyFaults are the faults a loaded test machine causes on a healthy link:
// a tick that overran, a servo reply that came too late.
var busyFaults = map[string]bool{"overruns": true, "servo_silent": true}

// healthyButBusy reports whether the link has no fault but those.
func healthyButBusy(b *Built) bool {
	for _, a := range b.Faults.Active() {
		if !busyFaults[a.Name] {
			return false
		}
	}
	return true
}

// A device that cannot be opened does not stop the build: the link starts
// degraded, and sends Simulink no made-up measurement.
func TestBuildAbsentDeviceStartsDegraded(t *testing.T) {
	c := parseDefault(t, func(l *LinkTable, p *EmioPlant) {
		p.Port, p.Camera.Kind, l.Clock = t.TempDir()+"/ttyUSB9", "none", "timer"
	})
	b, err := c.Links[0].Build(testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	serveBuilt(t, b)
	testutil.WaitFor(t, "ticks", func() bool { return b.Link.Ticks() > 20 })
	if s := b.Link.State(); s != bridge.Degraded {
		t.Errorf("state %v, want degraded", s)
	}
	if got := b.Partner.Stats().LastSeq; got >= 0 {
		t.Errorf("the partner saw seq %d: a measurement was sent without a device", got)
	}
}
