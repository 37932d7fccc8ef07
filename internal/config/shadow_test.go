package config

import (
	"context"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/internal/record"
	"github.com/labbridge/bridge/internal/shadow"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/simulink"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// sineEmio is the embedded default's Emio with its twin on and a partner
// that keeps the legs moving, so that a servo that stops is seen to stop.
func sineEmio(t *testing.T, markerMM float64) *Built {
	t.Helper()
	c := parseDefault(t, func(l *LinkTable, _ *EmioPlant) {
		l.Shadow.Enabled = true
		// Legs 1 and 2 together: the marker swings ±43 mm in y.
		l.Partner.Controller = simulink.ControllerSpec{Kind: "sine", Amplitude: []float64{0.8, 0.8, 0.2, 0}, Frequency: []float64{0.4, 0.4, 0.4, 0.4}}
		l.Shadow.Threshold["markers"] = markerMM
	})
	b, err := c.Links[0].Build(testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if b.Shadow == nil {
		t.Fatal("no twin built")
	}
	serveBuilt(t, b)
	return b
}

// shadowFault is the twin's fault in the watcher, if active.
func shadowFault(b *Built) (fault.Active, bool) {
	for _, a := range b.Faults.Active() {
		if a.Name == "shadow_divergence" {
			return a, true
		}
	}
	return fault.Active{}, false
}

// The twin of the simulated Emio follows it; a servo jammed in the
// simulator (what the device does, not what the bridge was told) is a
// fault naming the servo; freed, the fault ends and the twin is back on the
// robot.
func TestShadowFindsAJammedServo(t *testing.T) {
	b := sineEmio(t, emio.TwinMarker)
	var s shadow.Snapshot
	testutil.WaitFor(t, "the twin to follow a moving robot", func() bool {
		b.Shadow.Snapshot(&s)
		return b.Link.State() == bridge.Running && s.Ticks > 60
	})
	if _, on := shadowFault(b); on || len(s.Faults) > 0 {
		t.Fatalf("a fault before any was injected: %v", s.Faults)
	}
	if _, err := Control([]*Built{b}, strings.Fields("emio servo 2 stall")); err != nil {
		t.Fatal(err)
	}
	var a fault.Active
	testutil.WaitFor(t, "the jammed servo found", func() bool {
		var on bool
		a, on = shadowFault(b)
		return on
	})
	if !strings.HasPrefix(a.Detail, "servo 2 does not follow its goal (") {
		t.Errorf("fault %q, want servo 2 named", a.Detail)
	}
	t.Logf("found: %s", a)
	// The page shows it, with the angle past its threshold.
	pg := b.Page().Shadow
	if pg == nil || len(pg.Faults) == 0 || pg.Faults[0].Ended || !strings.HasPrefix(pg.Faults[0].Message, "servo 2 does not follow its goal") {
		t.Errorf("the page's twin: %+v", pg)
	} else if pg.Threshold[1].Values[2] != emio.TwinAngle || pg.MaxAbs[1].Values[2] <= emio.TwinAngle {
		t.Errorf("the page's servo 2: largest %v, threshold %v", pg.MaxAbs[1].Values, pg.Threshold[1].Values)
	}
	if _, err := Control([]*Built{b}, strings.Fields("emio servo 2 free")); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the fault to end", func() bool {
		_, on := shadowFault(b)
		return !on
	})
	b.Shadow.Snapshot(&s)
	if len(s.Faults) == 0 || !s.Faults[len(s.Faults)-1].Ended {
		t.Errorf("faults %v, want the servo's ended", s.Faults)
	}
}

// A marker hidden from the virtual camera is a fault naming it: the
// tracker holds its last place, which the moving leg leaves. (The threshold
// is below the default for the swing to pass it for the hold time.)
func TestShadowFindsAHiddenMarker(t *testing.T) {
	b := sineEmio(t, 15)
	var s shadow.Snapshot
	testutil.WaitFor(t, "the twin to follow", func() bool {
		b.Shadow.Snapshot(&s)
		return b.Link.State() == bridge.Running && s.Ticks > 60
	})
	if _, err := Control([]*Built{b}, strings.Fields("emio marker 1 hide")); err != nil {
		t.Fatal(err)
	}
	var a fault.Active
	testutil.WaitFor(t, "the hidden marker found", func() bool {
		var on bool
		a, on = shadowFault(b)
		return on
	})
	if !strings.HasPrefix(a.Detail, "marker 1 ") {
		t.Errorf("fault %q, want marker 1 named", a.Detail)
	}
	t.Logf("found: %s", a)
	b.Shadow.Snapshot(&s)
	for j, d := range s.Divergence[3:] {
		if math.IsNaN(d) {
			t.Errorf("angle %d not compared", j+1)
		}
	}
}

// The simulated Meca500's twin follows the arm while a partner sways its
// joints; a payload injected into the simulator (the robot reports
// nothing) slows the arm, and the twin names the joint that left it.
func TestShadowFindsAPayload(t *testing.T) {
	for _, tc := range []struct {
		mode            string
		amplitude, freq float64 // of joints 1 and 6: °/s or ° (joint_position), Hz
		jointsThreshold float64 // °; 0: the kind's
	}{
		{"joint_velocity", 3, 0.05, 0},
		// The built-in partner's sine stays within ±π, here in °: the arm's
		// P controller (kp 2/s) hides most of what a 40 % payload costs so
		// small a motion, about 0.9° at 0.5 Hz; a lab moves further.
		{"joint_position", 3, 0.5, 0.5},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			b := buildMeca500(t, testEnv(t), func(l *LinkTable, p *Meca500Plant) {
				p.Mode = tc.mode
				l.Shadow.Enabled = true
				if tc.jointsThreshold > 0 {
					l.Shadow.Threshold["joints"] = tc.jointsThreshold
				}
				f := tc.freq
				l.Partner.Controller = simulink.ControllerSpec{Kind: "sine", Amplitude: []float64{tc.amplitude, 0, 0, 0, 0, tc.amplitude}, Frequency: []float64{f, f, f, f, f, f}}
			})
			findsAPayload(t, b)
		})
	}
}

func findsAPayload(t *testing.T, b *Built) {
	if b.Shadow == nil {
		t.Fatal("no twin built")
	}
	serveBuilt(t, b)
	var s shadow.Snapshot
	testutil.WaitFor(t, "the twin to follow the arm", func() bool {
		b.Shadow.Snapshot(&s)
		return b.Link.State() == bridge.Running && s.Ticks > 200
	})
	if _, on := shadowFault(b); on || len(s.Faults) > 0 {
		t.Fatalf("a fault before any was injected: %v", s.Faults)
	}
	if _, err := Control([]*Built{b}, strings.Fields("meca500 payload 40")); err != nil {
		t.Fatal(err)
	}
	var a fault.Active
	// The tool's pose leaves the model first, then the joints that move.
	testutil.WaitFor(t, "the slowed joint found", func() bool {
		var on bool
		a, on = shadowFault(b)
		return on && strings.Contains(a.Detail, "the arm's joint 1 is ")
	})
	t.Logf("found: %s", a)
	b.Shadow.Snapshot(&s)
	for _, f := range s.Faults {
		if f.Field == "joints" && f.Index != 1 && f.Index != 6 {
			t.Errorf("joint %d, which does not move, left the model: %s", f.Index, f.Message)
		}
	}
}

// The simulated scene's twin follows the two wheels the partner sways; a
// drive that slips in the scene (the scene says nothing) is named.
func TestShadowFindsASlippingWheel(t *testing.T) {
	b := buildVREP(t, testEnv(t), func(l *LinkTable, _ *VREPPlant) { l.Shadow.Enabled = true })
	findsASlip(t, b, "30", "right_angle is ")
}

// zmqDoc is the embedded default with its V-REP link over the ZMQ remote
// API, extra added to its [link.plant].
func zmqDoc(extra string) string {
	doc := string(defaultconfig.TOML())
	doc = strings.Replace(doc, `protocol = "az"`, `protocol = "zmq"`+"\n"+extra, 1)
	return regexp.MustCompile(`(?m)^(measure|command) = .*$`).ReplaceAllString(doc, "")
}

// A ZMQ scene's twin (the simulated scene's world, driven as the link
// drives the scene) follows its joints in each way the link can drive
// them, with no fault, and names a joint whose drive slips in the scene.
func TestShadowFindsASlippingZMQJoint(t *testing.T) {
	for _, tc := range []struct{ name, extra, slip string }{
		{"velocity, lock step", "", "30"},
		{"velocity, free-running", "stepping = false\n", "30"},
		// A joint under position control still reaches a target that
		// moves slower than it can: the partner's sine asks up to 0.47
		// rad/s, so this drive keeps 5 % of its 2 rad/s.
		{"position, lock step", "mode = \"position\"\n", "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := buildVREPFrom(t, testEnv(t), zmqDoc(tc.extra), func(l *LinkTable, _ *VREPPlant) { l.Shadow.Enabled = true })
			if b.VREP == nil || b.VREP.ZMQ == nil {
				t.Fatal("no ZMQ scene built")
			}
			findsASlip(t, b, tc.slip, "joint "+vrep.DefaultJoints[1]+" is ")
		})
	}
}

// findsASlip serves b's scene with its twin, checks that no fault comes
// while the twin follows, slips joint 2 to pct % of its target and waits
// for the fault, whose detail must begin with named.
func findsASlip(t *testing.T, b *Built, pct, named string) {
	t.Helper()
	if b.Shadow == nil {
		t.Fatal("no twin built")
	}
	serveBuilt(t, b)
	var s shadow.Snapshot
	testutil.WaitFor(t, "the twin to follow the scene", func() bool {
		b.Shadow.Snapshot(&s)
		return b.Link.State() == bridge.Running && s.Ticks > 60
	})
	if _, on := shadowFault(b); on || len(s.Faults) > 0 {
		t.Fatalf("a fault before any was injected: %v", s.Faults)
	}
	if _, err := Control([]*Built{b}, strings.Fields("vrep slip 2 "+pct)); err != nil {
		t.Fatal(err)
	}
	var a fault.Active
	testutil.WaitFor(t, "the slipping joint found", func() bool {
		var on bool
		a, on = shadowFault(b)
		return on
	})
	if !strings.HasPrefix(a.Detail, named) {
		t.Errorf("fault %q, want it to begin %q", a.Detail, named)
	}
	t.Logf("found: %s", a)
}

// With the link's tap on, the twin sends its divergence as a stream of its
// own, which bridge record writes beside the link's: one row per compared
// tick, a column per measured value, in its unit.
func TestShadowTapIsRecorded(t *testing.T) {
	conn, err := record.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no loopback UDP port for the tap: %v", err)
	}
	defer conn.Close()
	c, err := Parse([]byte(`
[[link]]
name = "arm"
rate_hz = 100
[link.loop]
priority = 0
[link.plant]
kind = "sim"
motors = 2
nb_markers = 1
y0 = [0.0, 0.0, 250.0]
j = [10.0, 0.0, 0.0, 10.0, 1.0, 1.0]
[link.partner.controller]
kind = "sine"
amplitude = [0.5, 0.3]
frequency = [2.0, 3.0]
[link.shadow]
enabled = true
[link.tap]
address = "` + conn.LocalAddr().String() + `"
`))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run.csv")
	rec, err := record.New(record.Config{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	recDone := make(chan error, 1)
	go func() { recDone <- rec.Serve(ctx, conn, nil) }()
	b, err := c.Links[0].Build(testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	serveBuilt(t, b)
	testutil.WaitFor(t, "both streams recorded", func() bool {
		st, _ := rec.Streams()
		return len(st) == 2 && st[0].Rows > 50 && st[1].Rows > 50
	})
	cancel()
	<-recDone
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(out), "run.arm_shadow.csv"))
	if err != nil {
		t.Fatal(err)
	}
	head, rows, _ := strings.Cut(string(data), "\n")
	for _, col := range []string{"meas_markers_1_mm", "meas_angles_2_rad"} {
		if !strings.Contains(head, col) {
			t.Errorf("the twin's columns %q lack %s", head, col)
		}
	}
	if strings.Contains(head, "cmd_") || strings.Count(rows, "\n") < 50 {
		t.Errorf("the twin's file: %q and %d rows", head, strings.Count(rows, "\n"))
	}
	// The in-memory plant and its model move on the same tick grid: the
	// divergence is nil.
	cols := strings.Split(head, ",")
	for _, row := range strings.Split(strings.TrimSpace(rows), "\n") {
		for i, v := range strings.Split(row, ",") {
			if !strings.HasPrefix(cols[i], "meas_") {
				continue
			}
			if x, err := strconv.ParseFloat(v, 64); err != nil || math.Abs(x) > 1e-9 {
				t.Fatalf("%s = %q in %q", cols[i], v, row)
			}
		}
	}
}

// The twin drives only its own model: a velocity-commanded robot stopped
// with its twin running (what SIGINT, SIGTERM and SIGHUP do to the
// supervisor: its context ends) is left stopped as without one, seen on
// the device: the scene's last speeds are zero, and nothing is written to
// it after that halt. With a fault open too.
func TestShadowLeavesTheStopToTheLink(t *testing.T) {
	for _, tc := range []struct {
		name         string
		twin, faulty bool
	}{{"no twin", false, false}, {"twin", true, false}, {"twin with a fault open", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			b := buildVREP(t, testEnv(t), func(l *LinkTable, _ *VREPPlant) { l.Shadow.Enabled = tc.twin })
			if (b.Shadow != nil) != tc.twin {
				t.Fatalf("twin built: %v, want %v", b.Shadow != nil, tc.twin)
			}
			_, stop := startBuilt(t, b)
			defer b.Close()
			world := b.VREP.World()
			testutil.WaitFor(t, "the wheels turning under the partner's command", func() bool {
				s := world.Snapshot()
				return b.Link.State() == bridge.Running && (s.Speeds[0] != 0 || s.Speeds[1] != 0)
			})
			if tc.faulty {
				if _, err := Control([]*Built{b}, strings.Fields("vrep slip 2 30")); err != nil {
					t.Fatal(err)
				}
				testutil.WaitFor(t, "the slipping wheel found", func() bool { _, on := shadowFault(b); return on })
			}
			if err := stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			after := world.Snapshot()
			if !slices.Equal(after.Speeds, []float64{0, 0}) {
				t.Fatalf("the wheels' speeds after the stop: %v, want 0", after.Speeds)
			}
			time.Sleep(300 * time.Millisecond)
			if later := world.Snapshot(); later.Steps != after.Steps || !slices.Equal(later.Speeds, []float64{0, 0}) {
				t.Errorf("the scene was written to after the halt: %d steps then %d, speeds %v", after.Steps, later.Steps, later.Speeds)
			}
		})
	}
}

// A device fault with the twin running: three wrong replies of the scene
// degrade the link, and the scene's wheels stop, seen on the scene, as they
// do without a twin (TestVREPSceneFaults); the twin's own fault does not
// keep them turning.
func TestShadowLeavesADegradedLinkStopped(t *testing.T) {
	env, _ := vrepEnv(t)
	b := buildVREP(t, env, func(l *LinkTable, p *VREPPlant) {
		l.Shadow.Enabled = true
		p.Sim.Step.Duration = 10 * time.Millisecond
	})
	serveBuilt(t, b)
	world := b.VREP.World()
	testutil.WaitFor(t, "the wheels turning", func() bool {
		s := world.Snapshot()
		return b.Link.State() == bridge.Running && (s.Speeds[0] != 0 || s.Speeds[1] != 0)
	})
	stale := b.Link.Stale()
	b.VREP.Inject(vrepsim.BadMagic, 3)
	testutil.WaitFor(t, "degraded after three wrong replies", func() bool { return b.Link.State() == bridge.Degraded || b.Link.Stale() > stale })
	testutil.WaitFor(t, "the wheels stopped by the degraded link", func() bool {
		sp := world.Snapshot().Speeds
		return sp[0] == 0 && sp[1] == 0
	})
}
