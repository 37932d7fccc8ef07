package emio_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/plant"
)

// named gives the plant its link's name, for the messages.
func named(c *emio.Config, _ *dxlsim.Bus) { c.Link = "emio" }

// snapshot is what every servo received and holds, to compare later.
type snapshot struct {
	rx       []dxlsim.Received
	releases []uint64
	goals    []int64
}

func snap(sb *dxlsim.Bus) snapshot {
	var s snapshot
	for _, sv := range sb.Servos() {
		s.rx = append(s.rx, sv.Received())
		s.releases = append(s.releases, sv.Releases())
		s.goals = append(s.goals, sv.Value(dynamixel.ItemGoalPosition))
	}
	return s
}

// untouched fails the test when anything reached the servos since before:
// a torque-on write, a reboot, a goal write, a release (the stopped servo's
// own shutdown aside) or a goal moved.
func untouched(t *testing.T, sb *dxlsim.Bus, before snapshot, stopped byte) {
	t.Helper()
	now := snap(sb)
	for i, sv := range sb.Servos() {
		b, a := before.rx[i], now.rx[i]
		if a.TorqueOnWrites != b.TorqueOnWrites || a.Reboots != b.Reboots || a.GoalWrites != b.GoalWrites {
			t.Errorf("servo %d received %+v, before %+v: something was written while stopped", sv.ID(), a, b)
		}
		if now.goals[i] != before.goals[i] {
			t.Errorf("servo %d: goal moved from %d to %d while stopped", sv.ID(), before.goals[i], now.goals[i])
		}
		if sv.ID() == stopped {
			continue
		}
		if now.releases[i] != before.releases[i] || sv.Value(dynamixel.ItemTorqueEnable) != 1 {
			t.Errorf("servo %d was released while another one stopped", sv.ID())
		}
	}
}

// An overload on servo 2: the tick stops, the other servos hold their goal,
// and no reopen writes anything (no torque on, no reboot, no goal) until a
// person resumes; each says which servo, the error in words and what to
// do. After Resume one reopen reboots the servo, which holds where it
// stands and rejoins the command; the others were never released.
func TestHardwareErrorStaysStoppedUntilResume(t *testing.T) {
	m, sb := rigWith(t, nil, named)
	u := []float64{0.3, -0.3, 0.2, -0.2}
	join(t, m, u)
	y := make([]float64, m.MeasureLen())
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
	m.Resume() // nothing is stopped: a request now must not count later
	if err := sb.ForceHardwareError(2, dynamixel.HWOverload); err != nil {
		t.Fatal(err)
	}
	before := snap(sb)
	before.releases[2]++ // the servo's own shutdown
	if err := m.Measure(y); !errors.Is(err, plant.ErrStopLatched) {
		t.Fatalf("measure after an overload: %v, want plant.ErrStopLatched", err)
	}
	if err := m.Command(u); !errors.Is(err, plant.ErrStopLatched) {
		t.Fatalf("command after an overload: %v, want plant.ErrStopLatched", err)
	}
	for range 5 {
		err := m.Reopen(context.Background())
		var se *emio.StopError
		if !errors.Is(err, plant.ErrStopLatched) || !errors.As(err, &se) {
			t.Fatalf("reopen while stopped: %v, want a *emio.StopError", err)
		}
		if len(se.Servos) != 1 || se.Servos[0].ID != 2 || se.Servos[0].Error != dynamixel.HWOverload || se.Servos[0].Torque != 0 {
			t.Fatalf("stop %+v, want servo 2 in overload with its torque off", se.Servos)
		}
		const want = "emio: servo 2: overload: the servo shut its torque off; remove the load, then run `bridge resume emio`, which reboots it"
		if err.Error() != want {
			t.Fatalf("reopen says\n%q\nwant\n%q", err, want)
		}
	}
	untouched(t, sb, before, 2)
	if st := m.Servos(nil); !st[2].Stopped || st[2].HardwareError != dynamixel.HWOverload || st[0].Stopped {
		t.Errorf("status %+v", st)
	}

	m.Resume()
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatalf("reopen after resume: %v", err)
	}
	s2 := sb.Servo(2)
	if r := s2.Received(); r.Reboots != 1 {
		t.Errorf("servo 2 rebooted %d times, want once", r.Reboots)
	}
	if s2.Value(dynamixel.ItemTorqueEnable) != 1 || s2.Value(dynamixel.ItemHardwareErrorStatus) != 0 {
		t.Errorf("servo 2 after the resume: torque %d, error %d", s2.Value(dynamixel.ItemTorqueEnable), s2.Value(dynamixel.ItemHardwareErrorStatus))
	}
	if g, p := s2.Value(dynamixel.ItemGoalPosition), s2.Value(dynamixel.ItemPresentPosition); g != p {
		t.Errorf("servo 2 after its reboot: goal %d, present %d: it would jump", g, p)
	}
	for _, i := range []int{0, 1, 3} {
		sv := sb.Servos()[i]
		if sv.Releases() != before.releases[i] || sv.Received().Reboots != 0 {
			t.Errorf("servo %d released or rebooted by the resume of servo 2", sv.ID())
		}
	}
	if m.Stopped() || !m.Rejoining() {
		t.Fatalf("after the resume: stopped %v, rejoining %v", m.Stopped(), m.Rejoining())
	}
	join(t, m, u)
	checkSteps(t, sb, maxStep(emio.DefaultRejoinSpeed, time.Second/30))
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
}

// A resume that cannot start the servos (the servo is still too hot: its
// error comes back after the reboot) spends the request: the next reopen
// reboots nothing until a person asks again.
func TestResumeOfAServoStillInError(t *testing.T) {
	m, sb := rigWith(t, nil, named)
	if err := sb.ForceOverheat(1); err != nil {
		t.Fatal(err)
	}
	// Far above its limit: it overheats again as soon as it boots.
	if err := sb.Servo(1).Poke(dynamixel.AddrPresentTemperature, []byte{120}); err != nil {
		t.Fatal(err)
	}
	if err := m.Measure(make([]float64, m.MeasureLen())); !errors.Is(err, plant.ErrStopLatched) {
		t.Fatal(err)
	}
	before := sb.Servo(1).Received()
	m.Resume()
	err := m.Reopen(context.Background())
	if !errors.Is(err, plant.ErrStopLatched) || !strings.Contains(err.Error(), "the last resume did not start the servos") ||
		!strings.Contains(err.Error(), "overheating") || !strings.Contains(err.Error(), "let it cool") {
		t.Fatalf("resume of a hot servo: %v", err)
	}
	if n := sb.Servo(1).Received().Reboots; n != 1 {
		t.Fatalf("%d reboots, want 1", n)
	}
	for range 3 {
		if err := m.Reopen(context.Background()); !errors.Is(err, plant.ErrStopLatched) {
			t.Fatalf("reopen after a failed resume: %v", err)
		}
	}
	if r := sb.Servo(1).Received(); r.Reboots != 1 || r.TorqueOnWrites != before.TorqueOnWrites {
		t.Errorf("servo 1 received %+v after the failed resume: a reopen rebooted or enabled it on its own", r)
	}
}

// A servo already in error when the bridge opens: nothing is written to any
// servo, and the open says so.
func TestOpenFindsAServoInError(t *testing.T) {
	sb, err := dxlsim.NewBus(dxlsim.DefaultBusConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.ForceHardwareError(3, dynamixel.HWElectricalShock); err != nil {
		t.Fatal(err)
	}
	m, err := emio.New(emio.Config{IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Link: "arm",
		Bus:  dynamixel.BusConfig{Baud: 1000000, LatencyTimer: time.Millisecond, Margin: 5 * time.Millisecond},
		Open: func() (dynamixel.Port, error) { return dxlsim.NewPipe(sb), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	err = m.Open(context.Background())
	if !errors.Is(err, plant.ErrStopLatched) ||
		err.Error() != "emio: servo 3: electrical shock: the servo shut its torque off; check its cable and the power supply, then run `bridge resume arm`, which reboots it" {
		t.Fatalf("open with servo 3 in error: %v", err)
	}
	for _, sv := range sb.Servos() {
		if r := sv.Received(); r.TorqueOnWrites != 0 || r.GoalWrites != 0 || r.Reboots != 0 {
			t.Errorf("servo %d received %+v", sv.ID(), r)
		}
	}
	// Halt with torque off still reaches the servos.
	if err := m.Halt(plant.HaltTorqueOff); err != nil {
		t.Errorf("halt while stopped: %v", err)
	}
}

// A stopped servo that lost power meanwhile no longer reports its error:
// the stop stays all the same, and the resume sets it up without a reboot.
func TestStoppedServoPowerCycled(t *testing.T) {
	m, sb := rigWith(t, nil, named)
	if err := sb.ForceHardwareError(0, dynamixel.HWOverload); err != nil {
		t.Fatal(err)
	}
	if err := m.Measure(make([]float64, m.MeasureLen())); !errors.Is(err, plant.ErrStopLatched) {
		t.Fatal(err)
	}
	if err := sb.PowerCycle(0); err != nil {
		t.Fatal(err)
	}
	err := m.Reopen(context.Background())
	if !errors.Is(err, plant.ErrStopLatched) || !strings.Contains(err.Error(), "no longer reported") ||
		!strings.Contains(err.Error(), "until you run `bridge resume emio`") {
		t.Fatalf("reopen of a stopped servo that was power-cycled: %v", err)
	}
	if v := sb.Servo(0).Value(dynamixel.ItemTorqueEnable); v != 0 {
		t.Fatal("the power-cycled servo was enabled while stopped")
	}
	m.Resume()
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := sb.Servo(0).Received(); r.Reboots != 0 || sb.Servo(0).Value(dynamixel.ItemTorqueEnable) != 1 {
		t.Errorf("servo 0 after the resume: %+v, torque %d", r, sb.Servo(0).Value(dynamixel.ItemTorqueEnable))
	}
}

// A resume covers the errors the person was told of: a servo whose error
// began after the request is not rebooted with the others; a latched
// reopen names it; the next resume reboots both.
func TestResumeCoversWhatWasSaid(t *testing.T) {
	m, sb := rigWith(t, nil, named)
	if err := sb.ForceOverheat(1); err != nil {
		t.Fatal(err)
	}
	if err := m.Measure(make([]float64, m.MeasureLen())); !errors.Is(err, plant.ErrStopLatched) {
		t.Fatal(err)
	}
	if err := m.Reopen(context.Background()); err == nil || strings.Contains(err.Error(), "servo 2") {
		t.Fatalf("reopen with servo 1 stopped: %v", err)
	}
	m.Resume()
	if err := sb.ForceHardwareError(2, dynamixel.HWOverload|dynamixel.HWInputVoltage); err != nil {
		t.Fatal(err)
	}
	err := m.Reopen(context.Background())
	const says = "emio: servo 1: overheating: the servo shut its torque off; let it cool (about 20 minutes) and lighten its load; " +
		"servo 2: input voltage and overload: the servo shut its torque off; remove the load, check the supply voltage (12 V); " +
		"then run `bridge resume emio`, which reboots them"
	if !errors.Is(err, plant.ErrStopLatched) || !strings.HasPrefix(err.Error(), says) ||
		!strings.Contains(err.Error(), "servo 2 reported a hardware error after the resume was asked; nothing was rebooted") {
		t.Fatalf("resume with a new error:\n%v\nwant\n%s (…)", err, says)
	}
	for _, id := range []byte{1, 2} {
		if n := sb.Servo(id).Received().Reboots; n != 0 {
			t.Errorf("servo %d rebooted by a resume asked before servo 2's error", id)
		}
	}
	if err := m.Reopen(context.Background()); !errors.Is(err, plant.ErrStopLatched) || !strings.HasPrefix(err.Error(), says) {
		t.Fatalf("latched reopen: %v", err)
	}
	m.Resume()
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []byte{1, 2} {
		if n := sb.Servo(id).Received().Reboots; n != 1 {
			t.Errorf("servo %d rebooted %d times, want once", id, n)
		}
	}
}
