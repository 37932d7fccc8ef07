package config

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/meca500"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/simulink"
)

const mecaDoc = "[[link]]\nname = \"arm\"\nrate_hz = 100\n[link.plant]\nkind = \"meca500\"\n"

// The Meca500 link of the embedded default: its own ports, the vectors of
// the README, a proportional partner on the joints.
func TestDefaultMeca500Link(t *testing.T) {
	c, err := ParseConfig(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	l := c.Links[1]
	p, ok := l.Plant.(*Meca500Plant)
	if !ok || l.Name != "meca500" || p.Address != "sim" || !p.Simulated() {
		t.Fatalf("second link %q: %T %+v", l.Name, l.Plant, l.Plant)
	}
	mc := l.MasterConfig()
	if mc.Remote.Port() != 25010 || mc.Bind.Port() != 9091 || mc.Listen.Port() != 25011 || mc.MeasureLen != 21 || mc.CommandLen != 6 {
		t.Errorf("master config %+v", mc)
	}
	lc := l.LinkConfig()
	if lc.Apply != bridge.ApplyImmediate || lc.Loop.Period != 10*time.Millisecond || len(lc.Limits) != 6 || lc.Limits[0].Max != 37.5 || lc.Limits[5].Max != 125 {
		t.Errorf("link config %+v", lc)
	}
	d := l.Dims()
	if d.Feature != (simulink.Span{Off: 0, Len: 6}) || d.Hold.Len != 0 {
		t.Errorf("dims %+v: the partner regulates the joints and holds with zero velocity", d)
	}
	if _, err := l.Controller(); err != nil {
		t.Errorf("partner controller: %v", err)
	}
	if !strings.Contains(p.Summary(), "simulated Meca500") {
		t.Errorf("summary %q", p.Summary())
	}
}

func TestMeca500PlantConfig(t *testing.T) {
	c, err := ParseConfig([]byte(mecaDoc))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Links[0].Plant.(*Meca500Plant)
	if p.Mode != "joint_velocity" || !*p.Pose || *p.ResetErrors || !*p.Activate || p.Watchdog.Duration != 250*time.Millisecond ||
		p.MonitoringInterval.Duration != 10*time.Millisecond || p.VelTimeout.Duration != 50*time.Millisecond {
		t.Errorf("defaults %+v", p)
	}
	// At 10 Hz the watchdog is 4 periods.
	c, err = ParseConfig([]byte(strings.Replace(mecaDoc, "rate_hz = 100", "rate_hz = 10", 1) + "vel_timeout = \"300ms\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Links[0].Plant.(*Meca500Plant); p.Watchdog.Duration != 400*time.Millisecond {
		t.Errorf("watchdog at 10 Hz: %v", p.Watchdog.Duration)
	}
	// Position mode: the command is the joints, which hold echoes back.
	c, err = ParseConfig([]byte(mecaDoc + "mode = \"joint_position\"\npose = false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Links[0].Dims(); d.MeasureLen != 15 || d.Hold != (simulink.Span{Off: 0, Len: 6}) || c.Links[0].LinkConfig().Limits[1].Min != -70 {
		t.Errorf("joint_position dims %+v", d)
	}
	for doc, want := range map[string]string{
		"mode = \"torque\"\n":              `plant.mode = "torque": want joint_velocity, cartesian_velocity or joint_position`,
		"speed_fraction = 1.5\n":           "plant.speed_fraction = 1.5: want 0 < f ≤ 1",
		"vel_timeout = \"5ms\"\n":          "plant.vel_timeout = 5ms: want longer than the link's period 10ms",
		"vel_timeout = \"2s\"\n":           "plant.vel_timeout = 2s: want 1ms..1s",
		"watchdog = \"15ms\"\n":            "plant.watchdog = 15ms: want 0 (off) or more than two periods (20ms)",
		"monitoring_interval = \"20ms\"\n": "plant.monitoring_interval = 20ms: want at most the link's period 10ms",
		"address = \"robot lab/1\"\n":      `plant.address = "robot lab/1"`,
		"[link.plant.sim]\ninitial = [0.0, 100.0, 0.0, 0.0, 0.0, 0.0]\n": "plant.sim.initial[1] = 100: want -70..90°",
		"[link.plant.sim]\nfirmware = \"nine\"\n":                        `plant.sim.firmware = "nine"`,
		"port = \"sim\"\n":   `plant.port: not a key of plant kind "meca500"; it belongs to kind "emio"`,
		"adress = \"sim\"\n": `(did you mean "address"?)`,
	} {
		_, err := ParseConfig([]byte(mecaDoc + doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant …%s…", doc, err, want)
		}
	}
	// A watchdog may be turned off.
	if _, err := ParseConfig([]byte(mecaDoc + "watchdog = \"0s\"\n")); err != nil {
		t.Errorf("watchdog off: %v", err)
	}
}

// The layout is the README's: joints, pose, the 2007 flags, the last error
// code and the sample's age; six velocities back.
func TestMeca500Layout(t *testing.T) {
	lay := meca500.Layout(meca500.JointVelocity, true)
	var names []string
	for _, f := range lay.Measure {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "joints,pose,status,error,age" || lay.MeasureLen() != 21 || lay.CommandLen() != 6 {
		t.Errorf("layout %+v", lay)
	}
	var _ plant.Deadman = (*meca500.Arm)(nil)
	var _ plant.Reopener = (*meca500.Arm)(nil)
	var _ plant.Readier = (*meca500.Arm)(nil)
}

// buildMeca500 builds the default's Meca500 link on free ports with its
// simulated robot and built-in partner.
func buildMeca500(t *testing.T, env Env, edit func(*Link, *Meca500Plant)) *Built {
	t.Helper()
	c, err := ParseConfig(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	l := &c.Links[1]
	l.Loop.Priority, l.Loop.DMALatency = 0, new(false)
	if edit != nil {
		edit(l, l.Plant.(*Meca500Plant))
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := l.Build(env)
	if err != nil {
		t.Fatal(err)
	}
	if b.Meca500 == nil || b.Partner == nil {
		t.Fatalf("built %+v", b)
	}
	return b
}

var mecaTarget = []float64{30, -20, 25, 0, 40, 45}

func jointsNear(q [6]float64, want []float64, tol float64) bool { return near(q[:], want, tol) }

// End to end over real sockets: the built-in partner's P controller drives
// the simulated Meca500 toward the target through the bridge. The partner
// stops mid-motion: the robot stops by itself (the first idle tick sends
// zero velocity; the velocity timeout would stop it anyway), the watchdog
// expires and drops the connection, the link reconnects; when the partner
// answers again, streaming resumes and the joints reach the target.
func TestMeca500EndToEnd(t *testing.T) {
	env := testEnv(t)
	faults := &simulink.Faults{}
	env.Faults = faults
	b := buildMeca500(t, env, nil)
	robot := b.Meca500
	serveBuilt(t, b)
	waitFor(t, "the robot on its way", func() bool {
		q := robot.Joints()
		return b.Link.State() == bridge.Running && q[0] > 3 && q[0] < 20
	})
	before := robot.Status().WatchdogExpiries
	faults.Pause()
	paused := time.Now()
	q, still := robot.Joints(), time.Now()
	waitFor(t, "the watchdog to expire", func() bool {
		if now := robot.Joints(); now != q {
			q, still = now, time.Now()
		}
		return robot.Status().WatchdogExpiries > before
	})
	t.Logf("the robot stopped %v after the partner did; the watchdog expired after %v", still.Sub(paused).Round(time.Millisecond), time.Since(paused).Round(time.Millisecond))
	if jointsNear(q, mecaTarget, 0.5) {
		t.Log("the robot reached the target before the partner stopped (a stalled machine): the stop was not shown mid-motion")
	}
	time.Sleep(100 * time.Millisecond) // two velocity timeouts: nothing moves
	if robot.Joints() != q {
		t.Errorf("the robot moved without commands: %v then %v", q, robot.Joints())
	}
	waitFor(t, "the link to reconnect", func() bool {
		st := robot.Status()
		return st.Connected && st.Activated && !st.Paused && b.Link.State() != bridge.Degraded
	})
	faults.Resume()
	waitFor(t, "the joints at the target", func() bool {
		return b.Link.State() == bridge.Running && jointsNear(robot.Joints(), mecaTarget, 0.5)
	})
	meas := make([]float64, b.Layout.MeasureLen())
	b.Link.Measurement(meas)
	if !near(meas[:6], mecaTarget, 1) || meas[12] != 1 || meas[13] != 1 || meas[15] != 0 || meas[16] != 0 {
		t.Errorf("measurement %v: want the target joints, activated, homed, no error, not paused", meas)
	}
}

// The simulator drops the socket mid-run: the link goes degraded, reconnects
// by itself and runs again, and its loop never stops ticking.
func TestMeca500DroppedSocket(t *testing.T) {
	b := buildMeca500(t, testEnv(t), nil)
	serveBuilt(t, b)
	waitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	b.Meca500.DropClient()
	waitFor(t, "degraded", func() bool { return b.Link.State() == bridge.Degraded || b.Link.Stale() > 0 })
	ticks := b.Link.Ticks()
	waitFor(t, "running again", func() bool { return b.Link.State() == bridge.Running && b.Meca500.Status().Connected })
	if b.Link.Ticks() <= ticks {
		t.Error("the loop stopped ticking while the robot was away")
	}
	applied := b.Link.Applied()
	waitFor(t, "commands again", func() bool { return b.Link.Applied() > applied+10 })
}

// A motion error with reset_errors = false is reported and held: the link
// degrades, the robot stays in error and does not move, and the bridge
// never resets it.
func TestMeca500MotionErrorHeld(t *testing.T) {
	b := buildMeca500(t, testEnv(t), nil)
	robot := b.Meca500
	serveBuilt(t, b)
	waitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	robot.MotionError()
	waitFor(t, "degraded", func() bool { return b.Link.State() == bridge.Degraded })
	q := robot.Joints()
	time.Sleep(300 * time.Millisecond) // several reopen attempts
	st := robot.Status()
	if !st.Error || st.ErrorCode != 3005 || robot.Joints() != q || b.Link.State() != bridge.Degraded {
		t.Errorf("status %+v, link %v: want the robot held in error", st, b.Link.State())
	}
	// The last measurement Simulink got says so: es = 1, code 3005.
	meas := make([]float64, b.Layout.MeasureLen())
	b.Link.Measurement(meas)
	if meas[15] != 1 || meas[19] != 3005 {
		t.Errorf("measurement %v: want es = 1 and error 3005", meas)
	}
}

// With reset_errors = true the same error is reset and streaming resumes.
func TestMeca500MotionErrorReset(t *testing.T) {
	b := buildMeca500(t, testEnv(t), func(_ *Link, p *Meca500Plant) { p.ResetErrors = new(true) })
	robot := b.Meca500
	serveBuilt(t, b)
	waitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	robot.MotionError()
	waitFor(t, "degraded", func() bool { return b.Link.State() == bridge.Degraded })
	waitFor(t, "reset and running", func() bool { return b.Link.State() == bridge.Running && !robot.Status().Error })
	waitFor(t, "the target", func() bool { return jointsNear(robot.Joints(), mecaTarget, 0.5) })
}

// The arm's Latch refreshes the status, the last error and the sample's
// age at the send: a robot that went into error while a tick waited for its
// send instant says so in that datagram; the joints stay as measured.
func TestMeca500LatchTakesTheNewestStatus(t *testing.T) {
	b := buildMeca500(t, testEnv(t), nil)
	arm, ok := b.Link.Plant().(interface {
		plant.Latcher
		Status() (meca500.Status, int)
	})
	if !ok {
		t.Fatalf("the Meca500 plant %T is not a Latcher", b.Link.Plant())
	}
	dst := make([]float64, b.Layout.MeasureLen())
	waitFor(t, "a measurement", func() bool { return b.Link.Plant().Measure(dst) == nil && dst[19] == 0 && !math.IsNaN(dst[0]) })
	joints := append([]float64(nil), dst[:6]...)
	b.Meca500.MotionError()
	waitFor(t, "the arm to hear of the error", func() bool { st, code := arm.Status(); return st.Error && code == 3005 })
	arm.Latch(dst)
	if dst[15] != 1 || dst[19] != 3005 || !slices.Equal(dst[:6], joints) {
		t.Fatalf("latched %v: want es = 1, error 3005 and the joints %v as measured", dst, joints)
	}
}
