package config

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

const vrepDoc = "[[link]]\nname = \"wheels\"\nrate_hz = 20\n[link.plant]\nkind = \"vrep\"\n"

// The V-REP link of the embedded default: its own ports, the seed's
// vectors, a sine partner on the wheel speeds.

// A file that sets no key gets the driver's defaults for the link's period,
// protocol and mode: config owns no default of its own.
func TestVREPDefaultsAreTheDrivers(t *testing.T) {
	for _, extra := range []string{"", "protocol = \"zmq\"\n", "protocol = \"zmq\"\nmode = \"position\"\n"} {
		for _, rate := range []string{"20", "1000"} {
			c, err := Parse([]byte(strings.Replace(vrepDoc, "rate_hz = 20", "rate_hz = "+rate, 1) + extra))
			if err != nil {
				t.Fatal(err)
			}
			l := &c.Links[0]
			p := l.Plant.(*VREPPlant)
			got := p.sceneConfig()
			got.Period = linkPeriod(l)
			want := vrep.DefaultConfig(p.protocol, p.mode, l.Period())
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q at %s Hz:\n config %+v\n driver %+v", extra, rate, got, want)
			}
		}
	}
}

func TestDefaultVREPLink(t *testing.T) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	l := c.Links[2]
	p, ok := l.Plant.(*VREPPlant)
	if !ok || l.Name != "vrep" || !p.Simulated() || p.Timeout.Duration != 50*time.Millisecond {
		t.Fatalf("third link %q: %T %+v", l.Name, l.Plant, l.Plant)
	}
	mc := l.MasterConfig()
	if mc.Remote.Port() != 25020 || mc.Bind.Port() != 9092 || mc.Listen.Port() != 25021 || mc.MeasureLen != 3 || mc.CommandLen != 2 {
		t.Errorf("master config %+v", mc)
	}
	lay := l.Plant.Layout()
	if lay.Measure[0].Name != "sim_time" || lay.Measure[1] != (plant.Field{Name: "angles", Unit: "rad", Len: 2}) || lay.Command[0].Unit != "rad/s" {
		t.Errorf("layout %+v", lay)
	}
	if lc := l.LinkConfig(); lc.Apply != bridge.ApplyImmediate || len(lc.Limits) != 2 || lc.Limits[1].Max != 10 {
		t.Errorf("link config %+v", lc)
	}
	if _, err := l.Controller(); err != nil {
		t.Errorf("partner controller: %v", err)
	}
}

func TestVREPPlantConfig(t *testing.T) {
	c, err := Parse([]byte(vrepDoc))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Links[0].Plant.(*VREPPlant)
	if p.Protocol != "az" || p.Address != "127.0.0.1:33211" || p.Timeout.Duration != 50*time.Millisecond ||
		p.VelTimeout.Duration != 150*time.Millisecond || *p.MaxFailures != 3 || len(p.Measure) != 3 || p.Simulated() {
		t.Errorf("az defaults %+v", p)
	}
	c, err = Parse([]byte(vrepDoc + "protocol = \"zmq\"\njoints = [\"/a\", \"/b\", \"/c\"]\nmode = \"position\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	p = c.Links[0].Plant.(*VREPPlant)
	if p.Address != "127.0.0.1:23000" || !*p.Stepping || !*p.Start || p.Min[2] != -3.141592653589793 {
		t.Errorf("zmq defaults %+v", p)
	}
	if d := c.Links[0].Dims(); d.MeasureLen != 4 || d.CommandLen != 3 || d.Hold.Off != 1 || d.Hold.Len != 3 {
		t.Errorf("zmq position dims %+v: hold echoes the angles back", d)
	}
	for doc, want := range map[string]string{
		"protocol = \"udp\"\n":                       `plant.protocol = "udp": want "az"`,
		"measure = [\"sim_time\", \"left_angel\"]\n": `plant.measure[1] = "left_angel": want one of sim_time, left_angle, right_angle (did you mean "left_angle"?)`,
		"measure = [\"sim_time\", \"sim_time\"]\n":   `plant.measure[1] = "sim_time": want each element once`,
		"command = [\"left_speed\"]\n":               `plant.command = ["left_speed"]: want 2 of left_speed, right_speed`,
		"joints = [\"/MotorLeft\"]\n":                `plant.joints = set: want nothing with protocol = "az"`,
		"mode = \"position\"\n":                      `plant.mode = set: want nothing with protocol = "az"`,
		"vel_timeout = \"50ms\"\n":                   "plant.vel_timeout = 50ms: want longer than the link's period 50ms",
		"timeout = \"20s\"\n":                        "plant.timeout = 20s: want 100µs..10s",
		"max_failures = 0\n":                         "plant.max_failures = 0: want 1..1000",
		"min = [-1.0]\n":                             "plant.min/max = [-1] [10 10]: want 2 values each",
		"max = [1.0, 1e39]\n":                        "plant.min[1]/max[1] = -10 1e+39",
		"address = \"localhost\"\n":                  `plant.address = "localhost": want "sim", or host:port such as "127.0.0.1:33211"`,
		"stepping = \"yes\"\n":                       "stepping",
		"stepping = true\n":                          `plant.stepping = set: want nothing with protocol = "az"`,
		"client_timeout = \"2s\"\n":                  `plant.client_timeout = set: want nothing with protocol = "az"`,
		"port = \"sim\"\n":                           `plant.port: not a key of plant kind "vrep"; it belongs to kind "emio"`,
		"[link.plant.sim]\nstep = \"0s\"\n":          "",
	} {
		_, err := Parse([]byte(vrepDoc + doc))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", doc, err)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant …%s…", doc, err, want)
		}
	}
	if _, err := Parse([]byte(vrepDoc + "protocol = \"zmq\"\nmeasure = [\"sim_time\"]\n")); err == nil || !strings.Contains(err.Error(), "its vectors follow joints") {
		t.Errorf("measure with zmq: %v", err)
	}
}

// vrepEnv is testEnv with a registry the test reads.
func vrepEnv(t *testing.T) (Env, *prometheus.Registry) {
	reg := metrics.NewRegistry()
	set, err := metrics.New(reg, metrics.BuildInfo{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return Env{Logger: slog.New(slog.DiscardHandler), Metrics: set, Partner: true, Ephemeral: true, Home: t.TempDir()}, reg
}

// buildVREP builds the default's V-REP link on free ports with its built-in
// partner, and its simulated scene unless edit points it elsewhere.
func buildVREP(t *testing.T, env Env, edit func(*LinkTable, *VREPPlant)) *Built {
	t.Helper()
	return buildVREPFrom(t, env, string(defaultconfig.TOML()), edit)
}

func buildVREPFrom(t *testing.T, env Env, doc string, edit func(*LinkTable, *VREPPlant)) *Built {
	t.Helper()
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	l := &c.Links[2]
	l.Loop.Priority, l.Loop.DMALatency = 0, new(false)
	p := l.Plant.(*VREPPlant)
	p.Timeout.Duration = time.Second // a loaded machine is slow, not broken
	if edit != nil {
		edit(l, p)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := l.Build(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// failures is the count of the scene's failures for reason, or of all of
// them for "".
func failures(t *testing.T, reg prometheus.Gatherer, reason string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for _, f := range fams {
		if f.GetName() != "bridge_vrep_failures_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && (reason == "" || l.GetValue() == reason) {
					sum, found = sum+m.GetCounter().GetValue(), true
				}
			}
		}
	}
	if !found {
		t.Fatalf("no bridge_vrep_failures_total{reason=%q}", reason)
	}
	return sum
}

// End to end over real sockets: the built-in partner's speeds reach the
// simulated scene, the wheels turn, and the measurement Simulink gets is
// the scene's time and angles.
func TestVREPEndToEnd(t *testing.T) {
	env, _ := vrepEnv(t)
	b := buildVREP(t, env, nil)
	if b.VREP == nil || b.VREP.AZ == nil || b.Partner == nil {
		t.Fatalf("built %+v", b)
	}
	serveBuilt(t, b)
	world := b.VREP.World()
	testutil.WaitFor(t, "the wheels turning under the partner's command", func() bool {
		s := world.Snapshot()
		return b.Link.State() == bridge.Running && s.Angles[0] > 0.5 && s.Angles[1] > 0.5
	})
	meas := make([]float64, 3)
	b.Link.Measurement(meas)
	if !(meas[0] > 0 && meas[1] > 0 && meas[2] > 0) {
		t.Errorf("measurement %v: want the scene's time and angles", meas)
	}
	if st := b.Status(); len(st) != 1 || !strings.HasPrefix(st[0], "az rtt ") {
		t.Errorf("status %q", st)
	}
}

// The scene is not there when the bridge starts: the link starts degraded,
// keeps ticking, and runs as soon as the scene is started.
func TestVREPSceneDownAtStart(t *testing.T) {
	// The scene's port is held, refusing, until the scene starts on it.
	addr, listen := testutil.ClosedTCPPort(t)
	env, reg := vrepEnv(t)
	b := buildVREP(t, env, func(_ *LinkTable, p *VREPPlant) { p.Address = addr })
	if b.Link.State() != bridge.Starting && b.Link.State() != bridge.Degraded {
		t.Logf("state %v", b.Link.State())
	}
	serveBuilt(t, b)
	testutil.WaitFor(t, "degraded and ticking", func() bool { return b.Link.State() == bridge.Degraded && b.Link.Ticks() > 3 })
	if n := failures(t, reg, "refused"); n < 1 {
		t.Errorf("%v refusals counted", n)
	}
	scene, err := vrepsim.NewAZ(vrepsim.AZConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ln := listen()
	serveScene(t, func(ctx contextT) error { return scene.Serve(ctx, ln) })
	testutil.WaitFor(t, "running once the scene is up", func() bool {
		return b.Link.State() == bridge.Running && scene.World().Snapshot().Angles[0] > 0
	})
}

// Faults of the scene below max_failures: the link stays running, the
// failures are counted by reason; at max_failures in a row the link goes
// degraded, the wheels are stopped (StopMotion: a degraded link applies
// nothing, so nothing may keep moving), and it runs again by itself.
func TestVREPSceneFaults(t *testing.T) {
	env, reg := vrepEnv(t)
	b := buildVREP(t, env, func(_ *LinkTable, p *VREPPlant) { p.Sim.Step.Duration = 10 * time.Millisecond })
	serveBuilt(t, b)
	scene := b.VREP
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && scene.World().Snapshot().Speeds[0] > 0 })
	for _, f := range []struct {
		fault  vrepsim.Fault
		reason string
	}{{vrepsim.Short, "short"}, {vrepsim.BadMagic, "magic"}, {vrepsim.CloseEarly, "closed"}} {
		before, allBefore := failures(t, reg, f.reason), failures(t, reg, "")
		scene.Inject(f.fault, 1)
		testutil.WaitFor(t, f.reason+" counted", func() bool { return failures(t, reg, f.reason) == before+1 })
		// One fault alone leaves the link running; a busy machine may add
		// failures of its own (an exchange past its timeout), and three in
		// a row degrade it, as they should.
		if s := b.Link.State(); s != bridge.Running && failures(t, reg, "") == allBefore+1 {
			t.Errorf("one %s reply and no other failure: link %v, want running", f.reason, s)
		}
		testutil.WaitFor(t, "running again", func() bool { return b.Link.State() == bridge.Running })
	}
	degradedBefore := b.Link.Stale()
	scene.Inject(vrepsim.BadMagic, 3)
	testutil.WaitFor(t, "degraded after three wrong replies", func() bool { return b.Link.State() == bridge.Degraded || b.Link.Stale() > degradedBefore })
	testutil.WaitFor(t, "the wheels stopped by the degraded link", func() bool {
		sp := scene.World().Snapshot().Speeds
		return sp[0] == 0 && sp[1] == 0
	})
	ticks := b.Link.Ticks()
	testutil.WaitFor(t, "running again", func() bool { return b.Link.State() == bridge.Running && b.Link.Ticks() > ticks })
}

// A reply slower than the exchange's timeout: counted as a timeout, the
// loop never waits for it.
func TestVREPSlowScene(t *testing.T) {
	env, reg := vrepEnv(t)
	b := buildVREP(t, env, func(_ *LinkTable, p *VREPPlant) { p.Timeout.Duration = 20 * time.Millisecond })
	serveBuilt(t, b)
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running })
	ticks := b.Link.Ticks()
	b.VREP.AZ.Inject(vrepsim.Delay, 1)
	testutil.WaitFor(t, "a timeout counted", func() bool { return failures(t, reg, "timeout") >= 1 })
	testutil.WaitFor(t, "ticks while the scene was slow", func() bool { return b.Link.Ticks() > ticks+2 })
	testutil.WaitFor(t, "running after the slow reply", func() bool { return b.Link.State() == bridge.Running })
}

// A restart of the scene mid-run is counted; the link keeps running.
func TestVREPSceneRestarted(t *testing.T) {
	env, _ := vrepEnv(t)
	b := buildVREP(t, env, nil)
	serveBuilt(t, b)
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.VREP.World().Snapshot().Time > 0.2 })
	b.VREP.AZ.Restart()
	scene := b.Link.Plant().(*vrep.Scene)
	testutil.WaitFor(t, "the restart seen", func() bool { return scene.Stats().Restarts == 1 })
	if b.Link.State() != bridge.Running {
		t.Errorf("link %v after a scene restart", b.Link.State())
	}
}

// The ZMQ backend in the embedded default's place: lock step with the
// link, the simulated scene started by the bridge.
func TestVREPZMQEndToEnd(t *testing.T) {
	env, _ := vrepEnv(t)
	doc := string(defaultconfig.TOML())
	doc = strings.Replace(doc, `protocol = "az"`, `protocol = "zmq"`, 1)
	doc = regexp.MustCompile(`(?m)^(measure|command) = .*$`).ReplaceAllString(doc, "")
	b := buildVREPFrom(t, env, doc, nil)
	if b.VREP == nil || b.VREP.ZMQ == nil {
		t.Fatalf("built %+v", b)
	}
	serveBuilt(t, b)
	testutil.WaitFor(t, "the wheels turning", func() bool {
		s := b.VREP.World().Snapshot()
		return b.Link.State() == bridge.Running && s.Angles[0] > 0.5
	})
	if b.VREP.ZMQ.Stepping() != 1 {
		t.Errorf("%d stepping clients, want the bridge", b.VREP.ZMQ.Stepping())
	}
	scene := b.Link.Plant().(*vrep.Scene)
	// Lock step: every exchange the worker made is one step (the first,
	// Open's, reads without stepping).
	st, steps := scene.Stats(), b.VREP.World().Snapshot().Steps
	if steps > st.Exchanges || steps+2 < st.Exchanges {
		t.Errorf("%d steps for %d exchanges", steps, st.Exchanges)
	}
}

// A person stops the simulation: the link goes degraded, the wheels are
// stopped and the lock step released, a fault says what to
// do (the link's stopped fault, with the scene's message), and the bridge
// does not start the simulation again (start = true
// applies to the first open only); Play brings the link back.
func TestVREPZMQPersonStop(t *testing.T) {
	env, _ := vrepEnv(t)
	doc := string(defaultconfig.TOML())
	doc = strings.Replace(doc, `protocol = "az"`, `protocol = "zmq"`, 1)
	doc = regexp.MustCompile(`(?m)^(measure|command) = .*$`).ReplaceAllString(doc, "")
	b := buildVREPFrom(t, env, doc, nil)
	serveBuilt(t, b)
	sim := b.VREP.ZMQ
	testutil.WaitFor(t, "the wheels turning", func() bool { return b.Link.State() == bridge.Running && sim.World().Snapshot().Angles[0] > 0.2 })
	sim.Stop()
	testutil.WaitFor(t, "the stopped fault", func() bool { _, ok := activeFault(b, "stopped"); return ok })
	if a, _ := activeFault(b, "stopped"); !strings.Contains(a.Detail, "stopped in CoppeliaSim: press Play there") {
		t.Errorf("detail %q", a.Detail)
	}
	if b.Link.State() != bridge.Degraded || sim.State() != vrepsim.StateStopped || sim.Stepping() != 0 {
		t.Errorf("link %v, simulation state %d, %d stepping", b.Link.State(), sim.State(), sim.Stepping())
	}
	if sp := sim.World().Snapshot().Speeds; sp[0] != 0 || sp[1] != 0 {
		t.Errorf("speeds %v on the stopped simulation, want 0", sp)
	}
	sim.Play()
	testutil.WaitFor(t, "running after Play", func() bool { return b.Link.State() == bridge.Running && sim.Stepping() == 1 })
	testutil.WaitFor(t, "the stopped fault over", func() bool { _, ok := activeFault(b, "stopped"); return !ok })
}

type contextT = context.Context

// serveScene runs a simulated scene until the test ends.
func serveScene(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}
