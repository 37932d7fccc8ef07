package config

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/meca500"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/simulink"
)

const mecaDoc = "[[link]]\nname = \"arm\"\nrate_hz = 100\n[link.plant]\nkind = \"meca500\"\n"

// The Meca500 link of the embedded default: its own ports, the vectors of
// the README, a proportional partner on the joints.
func TestDefaultMeca500Link(t *testing.T) {
	c, err := Parse(defaultconfig.TOML())
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
	c, err := Parse([]byte(mecaDoc))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Links[0].Plant.(*Meca500Plant)
	if p.Mode != "joint_velocity" || !*p.Pose || *p.ResetErrors || p.RestartAfterStop || !*p.Activate || p.Watchdog.Duration != 250*time.Millisecond ||
		p.MonitoringInterval.Duration != 10*time.Millisecond || p.VelTimeout.Duration != 50*time.Millisecond {
		t.Errorf("defaults %+v", p)
	}
	// At 10 Hz the watchdog is 4 periods.
	c, err = Parse([]byte(strings.Replace(mecaDoc, "rate_hz = 100", "rate_hz = 10", 1) + "vel_timeout = \"300ms\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Links[0].Plant.(*Meca500Plant); p.Watchdog.Duration != 400*time.Millisecond {
		t.Errorf("watchdog at 10 Hz: %v", p.Watchdog.Duration)
	}
	// Position mode: the command is the joints, which hold echoes back.
	c, err = Parse([]byte(mecaDoc + "mode = \"joint_position\"\npose = false\n"))
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
		_, err := Parse([]byte(mecaDoc + doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant …%s…", doc, err, want)
		}
	}
	// A watchdog may be turned off.
	if _, err := Parse([]byte(mecaDoc + "watchdog = \"0s\"\n")); err != nil {
		t.Errorf("watchdog off: %v", err)
	}
}

// A file that sets no key gets the driver's defaults for the link's period:
// config owns no default of its own.
func TestMeca500DefaultsAreTheDrivers(t *testing.T) {
	for _, rate := range []string{"50", "100", "1000"} {
		c, err := Parse([]byte(strings.Replace(mecaDoc, "rate_hz = 100", "rate_hz = "+rate, 1)))
		if err != nil {
			t.Fatal(err)
		}
		l := &c.Links[0]
		got := l.Plant.(*Meca500Plant).driverConfig(l)
		want := meca500.DefaultConfig(l.Period())
		got.Address, got.Link = want.Address, want.Link
		if !reflect.DeepEqual(got, want) {
			t.Errorf("rate %s Hz:\n config %+v\n driver %+v", rate, got, want)
		}
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
	var _ plant.Stopper = (*meca500.Arm)(nil)
	var _ plant.Resumer = (*meca500.Arm)(nil)
	var _ plant.Ager = (*meca500.Arm)(nil)
	var _ plant.Reopener = (*meca500.Arm)(nil)
	var _ plant.Readier = (*meca500.Arm)(nil)
}

// buildMeca500 builds the default's Meca500 link on free ports with its
// simulated robot and built-in partner.
func buildMeca500(t *testing.T, env Env, edit func(*LinkTable, *Meca500Plant)) *Built {
	t.Helper()
	c, err := Parse(defaultconfig.TOML())
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
// stops mid-motion: the first idle tick sends the robot zero velocity, and
// the robot keeps its connection, since the idle ticks keep refreshing the
// watchdog: no 3086, no reconnection. When the partner answers again,
// streaming resumes and the joints reach the target.
func TestMeca500EndToEnd(t *testing.T) {
	env := testEnv(t)
	faults := &simulink.Faults{}
	env.Faults = faults
	// A watchdog no stall of a loaded machine reaches: the idle ticks'
	// refreshes are what this test is about, not the robot's own dead-man.
	const watchdog = 2 * time.Second
	b := buildMeca500(t, env, func(_ *LinkTable, p *Meca500Plant) { p.Watchdog = &Duration{watchdog} })
	robot := b.Meca500
	serveBuilt(t, b)
	testutil.WaitFor(t, "the robot on its way", func() bool {
		q := robot.Joints()
		return b.Link.State() == bridge.Running && q[0] > 3 && q[0] < 20
	})
	expiries := robot.Status().WatchdogExpiries
	faults.Pause()
	testutil.WaitFor(t, "the robot to stop", func() bool { return !robot.Status().Moving })
	if jointsNear(robot.Joints(), mecaTarget, 0.5) {
		t.Log("the robot reached the target before the partner stopped (a stalled machine): the stop was not shown mid-motion")
	}
	// The idle ticks refresh the watchdog: the robot receives refreshes
	// while nothing else moves it.
	q := robot.Joints()
	refreshes := robot.Status().WatchdogRefreshes
	testutil.WaitFor(t, "watchdog refreshes from idle ticks", func() bool {
		st := robot.Status()
		if st.Moving {
			t.Fatalf("robot %+v moves while the partner is silent", st)
		}
		return st.WatchdogRefreshes >= refreshes+20
	})
	if robot.Joints() != q {
		t.Errorf("the robot moved without commands: %v then %v", q, robot.Joints())
	}
	// The dead-man, in ticks as the robot received them: every tick, fresh
	// or idle, ends with one ConnectionWatchdog, which numbers the ticks.
	// The last velocity command is zero and came the tick after the last
	// fresh one: the first idle tick stopped the arm, and no idle tick
	// since sent another.
	if e, ok := robot.LastWatchdogExpiry(); robot.Status().WatchdogExpiries != expiries && ok {
		// A loop stalled past the watchdog: the robot's own dead-man
		// dropped the connection, and the zero velocity's tick with it.
		// It must have waited the whole watchdog since the last refresh.
		if d := e.Expired - e.Refreshed; d < watchdog-time.Microsecond || d > watchdog+time.Microsecond || e.Noticed < e.Expired {
			t.Errorf("watchdog expiry %+v: %v after the last refresh on the robot's clock, want %v", e, d, watchdog)
		}
		t.Logf("the watchdog expired %v after its last refresh: a loop stalled that long on this machine", e.Noticed-e.Refreshed)
	} else if v := robot.Velocities(); len(v) != 2 || v[1].V != ([6]float64{}) || v[1].Watchdogs != v[0].Watchdogs+1 {
		t.Errorf("velocity commands %+v: want the last one zero, one tick (watchdog command) after the last fresh one", v)
	}
	faults.Resume()
	testutil.WaitFor(t, "the joints at the target", func() bool {
		return b.Link.State() == bridge.Running && jointsNear(robot.Joints(), mecaTarget, 0.5)
	})
	meas := make([]float64, b.Layout.MeasureLen())
	b.Link.Measurement(meas)
	if !near(meas[:6], mecaTarget, 1) || meas[12] != 1 || meas[13] != 1 || meas[15] != 0 || meas[16] != 0 || meas[19] != 0 {
		t.Errorf("measurement %v: want the target joints, activated, homed, no error, not paused", meas)
	}
}

// An emergency stop under a supervisor: the link degrades, the stop's
// release and reset start nothing (the robot is never activated again by
// itself), /healthz says the robot is reachable and stopped and what the
// person must do, the link's stopped fault is on with the arm's words; a person's resume starts
// the arm, which streams to the target.
func TestMeca500EStopWaitsForAPerson(t *testing.T) {
	b := buildMeca500(t, testEnv(t), nil)
	robot := b.Meca500
	sup := serveBuilt(t, b)
	testutil.WaitFor(t, "the robot on its way", func() bool { return b.Link.State() == bridge.Running && robot.Joints()[0] > 3 })
	robot.EStop(true)
	testutil.WaitFor(t, "degraded", func() bool { return b.Link.State() == bridge.Degraded })
	robot.EStop(false)
	robot.ResetPowerSupply()
	const want = "the emergency stop is reset; the arm waits for a person: run `bridge resume meca500`"
	testutil.WaitFor(t, "health saying so", func() bool { return strings.Contains(fmt.Sprint(sup.Health()), want) })
	if h := fmt.Sprint(sup.Health()); strings.Contains(h, "unreachable") {
		t.Errorf("health %q: the robot is reachable", h)
	}
	testutil.WaitFor(t, "the stopped fault", func() bool {
		for _, a := range b.Faults.Active() {
			if a.Name == "stopped" && strings.Contains(a.Detail, want) {
				return true
			}
		}
		return false
	})
	// Several reopens (the test's backoff is at most 200 ms): nothing starts.
	q := robot.Joints()
	for start := time.Now(); time.Since(start) < time.Second; time.Sleep(10 * time.Millisecond) {
		if st := robot.Status(); st.Activated || st.Moving || b.Link.State() != bridge.Degraded {
			t.Fatalf("robot %+v, link %v: started without a person", st, b.Link.State())
		}
	}
	if robot.Joints() != q {
		t.Fatal("the robot moved")
	}
	b.Link.Plant().(plant.Resumer).Resume()
	testutil.WaitFor(t, "running after the resume", func() bool { return b.Link.State() == bridge.Running && robot.Status().Activated })
	testutil.WaitFor(t, "the joints at the target", func() bool { return jointsNear(robot.Joints(), mecaTarget, 0.5) })
}

// Motion commands refused with 1000 are a fault, while the link runs.
func TestMeca500BufferFullFault(t *testing.T) {
	b := buildMeca500(t, testEnv(t), nil)
	serveBuilt(t, b)
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	b.Meca500.BufferFull(50)
	testutil.WaitFor(t, "the buffer_full fault", func() bool {
		for _, a := range b.Faults.Active() {
			if a.Name == "buffer_full" && a.Events > 0 {
				return true
			}
		}
		return false
	})
}

// The simulator drops the socket mid-run: the link goes degraded, reconnects
// by itself and runs again, and its loop never stops ticking.
func TestMeca500DroppedSocket(t *testing.T) {
	b := buildMeca500(t, testEnv(t), nil)
	serveBuilt(t, b)
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	b.Meca500.DropClient()
	testutil.WaitFor(t, "degraded", func() bool { return b.Link.State() == bridge.Degraded || b.Link.Stale() > 0 })
	ticks := b.Link.Ticks()
	testutil.WaitFor(t, "running again", func() bool { return b.Link.State() == bridge.Running && b.Meca500.Status().Connected })
	if b.Link.Ticks() <= ticks {
		t.Error("the loop stopped ticking while the robot was away")
	}
	applied := b.Link.Applied()
	testutil.WaitFor(t, "commands again", func() bool { return b.Link.Applied() > applied+10 })
}

// A motion error with reset_errors = false is reported and held: the link
// degrades, the robot stays in error and does not move, and the bridge
// never resets it.
func TestMeca500MotionErrorHeld(t *testing.T) {
	b := buildMeca500(t, testEnv(t), nil)
	robot := b.Meca500
	serveBuilt(t, b)
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	robot.MotionError()
	testutil.WaitFor(t, "degraded", func() bool { return b.Link.State() == bridge.Degraded })
	q := robot.Joints()
	time.Sleep(300 * time.Millisecond) // several reopen attempts
	st := robot.Status()
	if !st.Error || st.ErrorCode != 3005 || robot.Joints() != q || b.Link.State() != bridge.Degraded {
		t.Errorf("status %+v, link %v: want the robot held in error", st, b.Link.State())
	}
}

// recording is a partner's controller that keeps the newest measurement
// Simulink received.
type recording struct {
	simulink.Controller
	mu sync.Mutex
	y  []float64
}

func (r *recording) Step(seq int64, y, u []float64) {
	r.mu.Lock()
	r.y = append(r.y[:0], y...)
	r.mu.Unlock()
	r.Controller.Step(seq, y, u)
}

func (r *recording) last() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]float64(nil), r.y...)
}

// What Simulink receives while the Meca500 link is degraded is not frozen:
// after a motion error es = 1 and error = 3005 and the age keeps growing;
// after the connection is lost the robot reads paused with error 3086.
func TestMeca500StaleMeasurementAges(t *testing.T) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	l := &c.Links[1]
	l.Loop.Priority, l.Loop.DMALatency = 0, new(false)
	ctl, err := l.Controller()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t)
	// Our partner: the master binds port 0 and the partner is told the
	// bound ports, then the master is pointed at the partner's.
	env.Partner = false
	b, err := l.Build(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() }) // idempotent: serveBuilt closes it too
	from, err1 := b.Master.LocalAddr()
	listen, err2 := b.Master.ListenAddr()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	rec := &recording{Controller: ctl}
	partner, err := simulink.NewPartner(simulink.PartnerConfig{
		Listen: netip.AddrPortFrom(listen.Addr(), 0), Accept: from, ReplyTo: listen,
		MeasureLen: l.Plant.Layout().MeasureLen(), CommandLen: 6, Controller: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { partner.Close() })
	if err := b.Master.SetRemote(partner.Addr()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { partner.Serve(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	serveBuilt(t, b)
	robot := b.Meca500
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	robot.MotionError()
	var first float64
	testutil.WaitFor(t, "es = 1 and error 3005 at Simulink", func() bool {
		y := rec.last()
		first = y[20]
		return b.Link.State() == bridge.Degraded && y[15] == 1 && y[19] == 3005
	})
	testutil.WaitFor(t, "the age growing at Simulink", func() bool { return rec.last()[20] > first+0.2 })
	t.Logf("Simulink reads %v", rec.last()[12:])
}

// With restart_after_stop and reset_errors the same error is reset without
// a person and streaming resumes.
func TestMeca500MotionErrorReset(t *testing.T) {
	b := buildMeca500(t, testEnv(t), func(_ *LinkTable, p *Meca500Plant) { p.ResetErrors, p.RestartAfterStop = new(true), true })
	robot := b.Meca500
	serveBuilt(t, b)
	testutil.WaitFor(t, "running", func() bool { return b.Link.State() == bridge.Running && b.Link.Applied() > 10 })
	robot.MotionError()
	testutil.WaitFor(t, "degraded", func() bool { return b.Link.State() == bridge.Degraded })
	testutil.WaitFor(t, "reset and running", func() bool { return b.Link.State() == bridge.Running && !robot.Status().Error })
	testutil.WaitFor(t, "the target", func() bool { return jointsNear(robot.Joints(), mecaTarget, 0.5) })
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
	testutil.WaitFor(t, "a measurement", func() bool { return b.Link.Plant().Measure(dst) == nil && dst[19] == 0 && !math.IsNaN(dst[0]) })
	joints := append([]float64(nil), dst[:6]...)
	b.Meca500.MotionError()
	testutil.WaitFor(t, "the arm to hear of the error", func() bool { st, code := arm.Status(); return st.Error && code == 3005 })
	arm.Latch(dst)
	if dst[15] != 1 || dst[19] != 3005 || !slices.Equal(dst[:6], joints) {
		t.Fatalf("latched %v: want es = 1, error 3005 and the joints %v as measured", dst, joints)
	}
}
