package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/simulink"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// agreement is what a person reads of a link that does not run, wherever
// they look: the state (the terminal and the page draw it), /healthz and
// STATUS= (the supervisor's Health), the active faults (the page's list),
// and bridge_link_state.
type agreement struct {
	state  bridge.State
	health []string // each in Health's text
	not    []string // none in it: advice for another cause
	fault  string   // active
}

// check waits until the built link shows a and then checks every view.
func (a agreement) check(t *testing.T, b *Built, sup *bridge.Supervisor, reg *prometheus.Registry) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("state %v, lack %v, faults %v, health %v", b.Link.State(), b.Link.Lack(), b.Faults.Active(), sup.Health())
		}
	})
	// Every word awaited: a cause (the camera's library) may be known a
	// moment after the state it explains, later still on a loaded machine.
	testutil.WaitFor(t, "state "+a.state.String()+" with "+a.fault, func() bool {
		h := fmt.Sprint(sup.Health())
		for _, w := range a.health {
			if !strings.Contains(h, strings.ReplaceAll(w, "{link}", b.Link.Name())) {
				return false
			}
		}
		// The gauge is set when the change is announced, a moment after
		// the state itself.
		return b.Link.State() == a.state && faultActive(b, a.fault) &&
			linkStateGauge(t, reg, b.Link.Name()) == a.state.String()
	})
	h := fmt.Sprint(sup.Health())
	for _, w := range a.health {
		w = strings.ReplaceAll(w, "{link}", b.Link.Name())
		if !strings.Contains(h, w) {
			t.Errorf("health %q lacks %q", h, w)
		}
	}
	for _, w := range a.not {
		if strings.Contains(h, w) {
			t.Errorf("health %q says %q, advice for another cause", h, w)
		}
	}
	if got := linkStateGauge(t, reg, b.Link.Name()); got != a.state.String() {
		t.Errorf("bridge_link_state says %q, the link %v", got, a.state)
	}
}

func faultActive(b *Built, name string) bool {
	for _, f := range b.Faults.Active() {
		if f.Name == name {
			return true
		}
	}
	return false
}

// linkStateGauge is the state bridge_link_state sets to 1 for link.
func linkStateGauge(t *testing.T, reg *prometheus.Registry, link string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var on []string
	for _, mf := range mfs {
		if mf.GetName() != "bridge_link_state" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["link"] == link && m.GetGauge().GetValue() == 1 {
				on = append(on, labels["state"])
			}
		}
	}
	if len(on) != 1 {
		t.Fatalf("bridge_link_state of %s: %v set, want exactly one", link, on)
	}
	return on[0]
}

// envWithRegistry is testEnv with the registry kept, to read the metrics.
func envWithRegistry(t *testing.T) (Env, *prometheus.Registry) {
	reg := metrics.NewRegistry()
	set, err := metrics.New(reg, metrics.BuildInfo{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return Env{Logger: slog.New(slog.DiscardHandler), Metrics: set, Partner: true, Ephemeral: true, Home: t.TempDir()}, reg
}

// goalWrites is how many goal positions the simulated servos received.
func goalWrites(b *Built) uint64 {
	var n uint64
	for _, s := range b.Simulated.Servos() {
		n += s.Received().GoalWrites
	}
	return n
}

// An Emio whose camera never delivers a frame is not running: it is
// degraded, says why in the words that fit the cause (a library to install
// is not a cable to check), sends Simulink nothing and moves no servo.
func TestEmioWithoutFramesIsDegraded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		serial string
		lib    string // REALSENSE_LIB; "" leaves the search as it is
		want   agreement
	}{
		{
			name: "no library", lib: "/nonexistent/librealsense2.so.2",
			want: agreement{state: bridge.Degraded, fault: "no_measurement",
				health: []string{"link {link} is degraded: no fresh measurement to send", "camera emio: waiting for the camera's first frame", "librealsense2 not found", "pip install pyrealsense2"},
				not:    []string{"USB"}},
		},
		{
			name: "no camera", serial: "no-such-camera",
			want: agreement{state: bridge.Degraded, fault: "no_measurement",
				health: []string{"link {link} is degraded: no fresh measurement to send", "camera emio: waiting for the camera's first frame", "no such device", "plug the camera into a USB 3 port"},
				not:    []string{"pip install"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.lib != "" {
				t.Setenv(realsense.EnvLibrary, tc.lib)
			} else if _, err := realsense.LoadAny(t.Context()); err != nil {
				testutil.RequirePeer(t, "librealsense2", "pip install pyrealsense2", err)
			}
			c := parseDefault(t, func(l *LinkTable, p *EmioPlant) {
				p.Camera.Kind, p.Camera.Serial, l.Clock = "realsense", tc.serial, "timer"
				p.Camera.ClockErrorPPM, p.Camera.Jitter.Duration = 0, 0 // the virtual camera's only
			})
			env, reg := envWithRegistry(t)
			b, err := c.Links[0].Build(env)
			if err != nil {
				t.Fatal(err)
			}
			sup := serveBuilt(t, b)
			tc.want.check(t, b, sup, reg)
			if err := b.Link.Lack(); !errors.Is(err, bridge.ErrIncomplete) && !strings.Contains(fmt.Sprint(err), "first frame") {
				t.Errorf("lack %v", err)
			}
			if n := b.Link.Applied(); n != 0 {
				t.Errorf("%d commands applied without a measurement", n)
			}
			if seq := b.Partner.Stats().LastSeq; seq >= 0 {
				t.Errorf("the partner saw seq %d: a made-up measurement was sent", seq)
			}
		})
	}
}

// An Emio whose camera is unplugged mid-run leaves running once its hold
// has passed: the servos keep their last goal (nothing is written to them
// while degraded), and /healthz, the faults and the metrics say the camera
// sends no frames and what to check. Plugged back, it runs again.
func TestEmioCameraUnpluggedMidRun(t *testing.T) {
	c := parseDefault(t, nil)
	env, reg := envWithRegistry(t)
	b, err := c.Links[0].Build(env)
	if err != nil {
		t.Fatal(err)
	}
	if b.LabCamera == nil {
		t.Fatal("the default's virtual camera is not exposed")
	}
	sup := serveBuilt(t, b)
	testutil.WaitFor(t, "running with commands applied", func() bool {
		return b.Link.State() == bridge.Running && b.Link.Applied() > 10
	})
	b.LabCamera.Unplug()
	agreement{state: bridge.Degraded, fault: "no_measurement",
		health: []string{"link {link} is degraded: no fresh measurement to send", "camera emio: no frames from the camera", "check the camera's USB 3 cable"},
		not:    []string{"pip install"}}.check(t, b, sup, reg)
	// The device side: once degraded, no goal reaches a servo. A write of
	// the last running tick may still be on the line, so count from a
	// few ticks later.
	ticks := b.Link.Ticks()
	testutil.WaitFor(t, "ticks while degraded", func() bool { return b.Link.Ticks() > ticks+5 })
	before, stale := goalWrites(b), b.Link.Stale()
	ticks = b.Link.Ticks()
	testutil.WaitFor(t, "more ticks while degraded", func() bool { return b.Link.Ticks() > ticks+30 })
	if st := b.Link.State(); st != bridge.Degraded {
		t.Fatalf("state %v while the camera is unplugged", st)
	}
	if n := goalWrites(b) - before; n != 0 {
		t.Errorf("%d goal writes reached the servos while the markers were held", n)
	}
	if b.Link.Stale() == stale {
		t.Error("no stale measurement counted while the markers were held")
	}
	b.LabCamera.Plug()
	// The gauge is set when the change is announced, a moment after the
	// state itself: wait for both.
	testutil.WaitFor(t, "running again with goals written and bridge_link_state running", func() bool {
		return b.Link.State() == bridge.Running && goalWrites(b) > before &&
			linkStateGauge(t, reg, "emio") == "running"
	})
}

// Every link kind, for each way it stops running, says the same thing
// wherever a person looks: the state, /healthz and STATUS= (Health), the
// page's faults and bridge_link_state.
func TestEveryViewSaysWhyALinkIsNotRunning(t *testing.T) {
	emio := func(t *testing.T, env Env) *Built {
		b, err := parseDefault(t, nil).Links[0].Build(env)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	meca := func(t *testing.T, env Env) *Built { return buildMeca500(t, env, nil) }
	scene := func(t *testing.T, env Env) *Built { return buildVREP(t, env, nil) }
	silent := func(b *Built, f *simulink.Faults) { f.Pause() }
	for _, tc := range []struct {
		name   string
		build  func(*testing.T, Env) *Built
		inject func(*Built, *simulink.Faults)
		want   agreement
	}{
		{"emio/partner silent", emio, silent, agreement{state: bridge.Handshaking, fault: "no_partner", health: []string{"link {link}: no Simulink host answers"}}},
		{"meca500/partner silent", meca, silent, agreement{state: bridge.Handshaking, fault: "no_partner", health: []string{"link {link}: no Simulink host answers"}}},
		{"vrep/partner silent", scene, silent, agreement{state: bridge.Handshaking, fault: "no_partner", health: []string{"link {link}: no Simulink host answers"}}},
		{"emio/servos unplugged", emio, func(b *Built, _ *simulink.Faults) { b.Simulated.Unplug() },
			agreement{state: bridge.Degraded, fault: "device_down", health: []string{"link {link} is degraded: the robot's device is down"}}},
		{"emio/camera unplugged", emio, func(b *Built, _ *simulink.Faults) { b.LabCamera.Unplug() },
			agreement{state: bridge.Degraded, fault: "no_measurement", health: []string{"link {link} is degraded: no fresh measurement to send", "USB 3 cable"}}},
		{"meca500/emergency stop", meca, func(b *Built, _ *simulink.Faults) { b.Meca500.EStop(true) },
			agreement{state: bridge.Degraded, fault: "stopped", health: []string{"link {link} is degraded: the robot is stopped and waits for a person"}}},
		{"vrep/scene gone", scene, func(b *Built, _ *simulink.Faults) { b.VREP.Inject(vrepsim.Refuse, 1<<30) },
			agreement{state: bridge.Degraded, fault: "device_down", health: []string{"link {link} is degraded: the robot's device is down"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, reg := envWithRegistry(t)
			env.Faults = &simulink.Faults{}
			b := tc.build(t, env)
			sup := serveBuilt(t, b)
			testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 5 })
			tc.inject(b, env.Faults)
			tc.want.check(t, b, sup, reg)
		})
	}
}
