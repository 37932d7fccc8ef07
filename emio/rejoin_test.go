package emio_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
)

// maxStep is the largest goal step one Command may make while rejoining at
// speed (rad/s) with period, in whole pulses: speed·period, plus one pulse
// of rounding.
func maxStep(speed float64, period time.Duration) int64 {
	return int64(math.Floor(speed*period.Seconds()*dynamixel.PulsesPerRad)) + 1
}

// pulse is the goal the servos get for rad.
func pulse(t testing.TB, rad float64) int64 {
	t.Helper()
	p, err := dynamixel.RadToPulse(rad)
	if err != nil {
		t.Fatal(err)
	}
	return int64(p)
}

// checkSteps fails the test when a servo's goal ever moved more than limit
// pulses in one write with its torque on.
func checkSteps(t *testing.T, sb *dxlsim.Bus, limit int64) {
	t.Helper()
	var largest int64
	for _, s := range sb.Servos() {
		r := s.Received()
		largest = max(largest, r.MaxGoalStep)
		if r.MaxGoalStep > limit {
			t.Errorf("servo %d: its goal jumped %d pulses in one write (%.1f°), want at most %d", s.ID(), r.MaxGoalStep,
				float64(r.MaxGoalStep)/dynamixel.PulsesPerRad*180/math.Pi, limit)
		}
	}
	t.Logf("largest goal step with torque on: %d pulses (%.2f°), limit %d", largest, float64(largest)/dynamixel.PulsesPerRad*180/math.Pi, limit)
}

// The servos of a bus that lost power (the arm sagged meanwhile) come back
// held where they stand; the command far from there is then reached at
// rejoin speed, one step per tick, on the servos' side of the wire. The
// first open does the same.
func TestRejoinAfterPowerCycle(t *testing.T) {
	const period = time.Second / 30
	m, sb := rigWith(t, nil, func(c *emio.Config, _ *dxlsim.Bus) { c.Period = period })
	limit := maxStep(emio.DefaultRejoinSpeed, period)
	u := []float64{0.5, 0.5, -0.5, 0}
	if !m.Rejoining() {
		t.Fatal("the first open does not rejoin")
	}
	y := make([]float64, m.MeasureLen())
	run := func() int {
		t.Helper()
		n := 0
		for ; m.Rejoining(); n++ {
			if n > 10000 {
				t.Fatal("the goals never rejoined the command")
			}
			if err := m.Measure(y); err != nil {
				t.Fatal(err)
			}
			if err := m.Command(u); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range sb.Servos() {
			if g := s.Value(dynamixel.ItemGoalPosition); g != pulse(t, u[i]) {
				t.Errorf("servo %d: goal %d after the rejoin, want the command's %d", s.ID(), g, pulse(t, u[i]))
			}
		}
		return n
	}
	// 0.5 rad at 1 rad/s and 30 Hz: 15 ticks at least.
	if n := run(); n < 15 {
		t.Errorf("the first rejoin took %d commands, want 15 at least", n)
	}
	checkSteps(t, sb, limit)

	// The power goes; servos 1 and 2 sag 57° (1 rad) away from their goal.
	if err := sb.PowerOff(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []byte{1, 2} {
		s := sb.Servo(id)
		sag := 652 * (2*int64(id) - 3) // servo 1 down, servo 2 up
		if err := s.SetValue(dynamixel.ItemPresentPosition, s.Value(dynamixel.ItemGoalPosition)+sag); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Reopen(context.Background()); err == nil {
		t.Fatal("reopen worked on servos without power")
	}
	if err := sb.PowerOn(); err != nil {
		t.Fatal(err)
	}
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !m.Rejoining() {
		t.Fatal("no rejoin after a power cycle")
	}

	for _, s := range sb.Servos() {
		if s.Value(dynamixel.ItemTorqueEnable) != 1 {
			t.Errorf("servo %d not holding after the reopen", s.ID())
		}
	}
	// 1 rad at 1 rad/s and 30 Hz: 30 ticks at least.
	if n := run(); n < 30 {
		t.Errorf("the rejoin after the power cycle took %d commands, want 30 at least", n)
	}
	checkSteps(t, sb, limit)
	// Joined: commands pass straight through, as emioapi's do.
	u = []float64{-0.5, 0.5, -0.5, 0}
	if err := m.Command(u); err != nil {
		t.Fatal(err)
	}
	if g := sb.Servo(0).Value(dynamixel.ItemGoalPosition); g != pulse(t, -0.5) {
		t.Errorf("servo 0: goal %d after the rejoin, want the command's %d at once", g, pulse(t, -0.5))
	}
}

// A reopen that finds every servo still holding (a cable glitch) changes
// nothing: no rejoin once joined, and a rejoin under way goes on from
// where it was.
func TestReopenOfHoldingServosKeepsTheRejoin(t *testing.T) {
	m, sb := rig(t, nil)
	u := []float64{0.5, 0, 0, 0}
	if err := m.Command(u); err != nil {
		t.Fatal(err)
	}
	mid := sb.Servo(0).Value(dynamixel.ItemGoalPosition)
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !m.Rejoining() {
		t.Fatal("a reopen of holding servos ended the rejoin")
	}
	if g := sb.Servo(0).Value(dynamixel.ItemGoalPosition); g != mid {
		t.Fatalf("the reopen moved the goal from %d to %d", mid, g)
	}
	if err := m.Command(u); err != nil {
		t.Fatal(err)
	}
	if g := sb.Servo(0).Value(dynamixel.ItemGoalPosition); g >= mid || mid-g > maxStep(emio.DefaultRejoinSpeed, time.Second/30) {
		t.Errorf("goal %d after %d: the rejoin did not go on one step", g, mid)
	}
	join(t, m, u)
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m.Rejoining() {
		t.Error("a reopen of holding servos started a rejoin")
	}
	checkSteps(t, sb, maxStep(emio.DefaultRejoinSpeed, time.Second/30))
}

// The rejoin speed and the period are checked.
func TestRejoinConfig(t *testing.T) {
	for _, c := range []emio.Config{
		{RejoinSpeed: -1}, {RejoinSpeed: math.NaN()}, {RejoinSpeed: 11}, {RejoinSpeed: 0.01}, {Period: -time.Second},
	} {
		c.IDs, c.Mode, c.Port = []byte{0}, dynamixel.ModePosition, "auto"
		if _, err := emio.New(c); err == nil {
			t.Errorf("rejoin speed %v, period %v accepted", c.RejoinSpeed, c.Period)
		}
	}
}
