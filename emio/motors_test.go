package emio_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/plant"
)

// rig is the Emio plant on four simulated servos over the in-memory port.
func rig(t testing.TB, edit func(*dxlsim.BusConfig)) (*emio.Motors, *dxlsim.Bus) {
	t.Helper()
	return rigWith(t, edit, nil)
}

// rigWith is rig with the plant's configuration edited too.
func rigWith(t testing.TB, edit func(*dxlsim.BusConfig), editCfg func(*emio.Config, *dxlsim.Bus)) (*emio.Motors, *dxlsim.Bus) {
	t.Helper()
	bc := dxlsim.DefaultBusConfig()
	if edit != nil {
		edit(&bc)
	}
	sb, err := dxlsim.NewBus(bc)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := sim.NewLinearMarkers(sim.DefaultEmio().Y0, sim.DefaultEmio().J, 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg := emio.Config{
		IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Markers: 1, Source: lm, Fast: true,
		Bus:  dynamixel.BusConfig{Baud: 1000000, LatencyTimer: time.Millisecond, Margin: 5 * time.Millisecond},
		Open: func() (dynamixel.Port, error) { return dxlsim.NewPipe(sb), nil },
	}
	if editCfg != nil {
		editCfg(&cfg, sb)
	}
	m, err := emio.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, sb
}

func TestOpenSetsUpTheServos(t *testing.T) {
	_, sb := rig(t, nil)
	for _, s := range sb.Servos() {
		if s.Value(dynamixel.ItemTorqueEnable) != 1 || s.Value(dynamixel.ItemOperatingMode) != 3 ||
			s.Value(dynamixel.ItemProfileVelocity) != 1000 || s.Value(dynamixel.ItemGoalPosition) != s.Value(dynamixel.ItemPresentPosition) {
			t.Errorf("servo %d: torque %d mode %d profile %d goal %d present %d", s.ID(),
				s.Value(dynamixel.ItemTorqueEnable), s.Value(dynamixel.ItemOperatingMode), s.Value(dynamixel.ItemProfileVelocity),
				s.Value(dynamixel.ItemGoalPosition), s.Value(dynamixel.ItemPresentPosition))
		}
	}
}

func TestMeasureAndCommand(t *testing.T) {
	m, sb := rig(t, nil)
	y := make([]float64, m.MeasureLen())
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
	// Pulse 2048 is 0 rad; the marker is then y0.
	if y[3] != 0 || y[0] != 2 || y[1] != -141 {
		t.Fatalf("measure %v", y)
	}
	u := []float64{0.5, -0.25, 0.1, 0}
	join(t, m, u) // the open held the servos where they stood: the goals rejoin the command
	for i, s := range sb.Servos() {
		want, _ := dynamixel.RadToPulse(u[i])
		if got := s.Value(dynamixel.ItemGoalPosition); got != int64(want) {
			t.Errorf("servo %d goal %d, want %d", i, got, want)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := m.Measure(y); err != nil {
			t.Fatal(err)
		}
		if math.Abs(y[3]-0.5) < 0.01 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("motor 0 at %v rad, never reached 0.5", y[3])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCommandRefusesNaNAndClamps(t *testing.T) {
	m, sb := rig(t, nil)
	if err := m.Command([]float64{math.NaN(), 0, 0, 0}); !errors.Is(err, dynamixel.ErrRange) {
		t.Fatalf("NaN: %v", err)
	}
	if g := sb.Servos()[0].Value(dynamixel.ItemGoalPosition); g != 2048 {
		t.Fatalf("a refused command moved the goal to %d", g)
	}
	// −4 rad is beyond pulse 4095 in position mode: clamped to the limit.
	join(t, m, []float64{-4, 4, 0, 0})
	if g0, g1 := sb.Servos()[0].Value(dynamixel.ItemGoalPosition), sb.Servos()[1].Value(dynamixel.ItemGoalPosition); g0 != 4095 || g1 != 0 {
		t.Fatalf("goals %d %d, want 4095 and 0", g0, g1)
	}
}

// A servo that refuses Fast Sync Read (old firmware) is read with Sync Read.
func TestOldFirmwareFallsBack(t *testing.T) {
	m, _ := rig(t, func(c *dxlsim.BusConfig) { c.Servo.Firmware = 38 })
	y := make([]float64, m.MeasureLen())
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
}

// A missing servo fails the measure (the link holds and degrades).
func TestMissingServo(t *testing.T) {
	m, sb := rig(t, nil)
	if err := sb.SetMissing(2, true); err != nil {
		t.Fatal(err)
	}
	y := make([]float64, m.MeasureLen())
	// Two misses hold the last positions; the third fails the device.
	for i := 0; i < 2; i++ {
		if err := m.Measure(y); err != nil {
			t.Fatalf("miss %d failed the measure: %v", i, err)
		}
	}
	if err := m.Measure(y); !errors.Is(err, dynamixel.ErrTimeout) {
		t.Fatalf("measure with ID 2 missing: %v", err)
	}
	if m.Missed() != 3 {
		t.Errorf("missed %d, want 3", m.Missed())
	}
}

// An overheat alert keeps the data and is recorded for the servo, whose
// torque is off as the firmware forces it; it latches a stop: the tick
// fails with plant.ErrStopLatched naming the servo, and no command is
// written any more.
func TestOverheatAlert(t *testing.T) {
	m, sb := rig(t, nil)
	if err := sb.ForceOverheat(1); err != nil {
		t.Fatal(err)
	}
	y := make([]float64, m.MeasureLen())
	y[3] = math.NaN()
	err := m.Measure(y)
	var se *emio.StopError
	if !errors.Is(err, plant.ErrStopLatched) || !errors.As(err, &se) || len(se.Servos) != 1 || se.Servos[0].ID != 1 {
		t.Fatalf("measure of a servo in alert: %v, want a stop of servo 1", err)
	}
	if y[3] != 0 {
		t.Errorf("positions not filled by the tick that stopped: %v", y)
	}
	st := m.Servos(nil)
	if !st[1].Alerting || st[1].Alerts == 0 || !st[1].Stopped || st[0].Alerting || st[0].Alerts != 0 || st[0].Stopped {
		t.Fatalf("status %+v", st)
	}
	if !m.Stopped() {
		t.Error("Stopped() false")
	}
	if sb.Servo(1).Value(dynamixel.ItemTorqueEnable) != 0 {
		t.Error("torque still on after overheating")
	}
	goals := sb.Servos()[0].Received().GoalWrites
	if err := m.Command([]float64{0.1, 0.1, 0.1, 0.1}); !errors.Is(err, plant.ErrStopLatched) {
		t.Fatalf("command while stopped: %v", err)
	}
	if n := sb.Servos()[0].Received().GoalWrites; n != goals {
		t.Errorf("a command reached servo 0 while stopped")
	}
}

func TestHaltTorqueOff(t *testing.T) {
	m, sb := rig(t, nil)
	if err := m.Halt(plant.HaltTorqueOff); err != nil {
		t.Fatal(err)
	}
	for _, s := range sb.Servos() {
		if s.Value(dynamixel.ItemTorqueEnable) != 0 {
			t.Errorf("servo %d torque on after halt", s.ID())
		}
	}
}

// Unplugged: Measure fails; plugged back: Reopen restores the plant.
func TestUnplugAndReopen(t *testing.T) {
	m, sb := rig(t, nil)
	sb.Unplug()
	y := make([]float64, m.MeasureLen())
	if err := m.Measure(y); err == nil {
		t.Fatal("measure worked on an unplugged adapter")
	}
	if err := m.Reopen(context.Background()); err == nil {
		t.Fatal("reopen worked while unplugged")
	}
	sb.Plug()
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
}

// The loop's tick on the servos allocates nothing.
func TestTickAllocs(t *testing.T) {
	m, _ := rig(t, nil)
	tickAllocs(t, m, "")
}

// join commands u until the goals have rejoined it (Rejoining is false).
func join(t testing.TB, m *emio.Motors, u []float64) {
	t.Helper()
	for range 10000 {
		if err := m.Command(u); err != nil {
			t.Fatal(err)
		}
		if !m.Rejoining() {
			return
		}
	}
	t.Fatalf("the goals never rejoined %v", u)
}

// tickAllocs fails the test when one tick (a measure and a command)
// allocates; what says which tick.
func tickAllocs(t *testing.T, m *emio.Motors, what string) {
	t.Helper()
	y, u := make([]float64, m.MeasureLen()), []float64{0.1, 0.2, 0.3, 0.4}
	if a := testing.AllocsPerRun(100, func() {
		if err := m.Measure(y); err != nil {
			t.Fatal(err)
		}
		if err := m.Command(u); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per tick %s", a, what)
	}
}

// BenchmarkSyncReadWrite is the software cost of one 4-servo read (Fast Sync
// Read) and sync write on the in-memory port, simulator included.
func BenchmarkSyncReadWrite(b *testing.B) {
	m, _ := rig(b, nil)
	y, u := make([]float64, m.MeasureLen()), []float64{0.1, 0.2, 0.3, 0.4}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Measure(y); err != nil {
			b.Fatal(err)
		}
		if err := m.Command(u); err != nil {
			b.Fatal(err)
		}
	}
}

// A reopen that finds the same servos still holding (a transient miss, a
// replugged adapter with the servos powered) leaves them holding: torque is
// never turned off, and the goal stays where the link left it.
func TestReopenKeepsHoldingServos(t *testing.T) {
	m, sb := rig(t, nil)
	u := []float64{0.3, -0.2, 0.1, 0}
	if err := m.Command(u); err != nil {
		t.Fatal(err)
	}
	goals := make([]int64, 4)
	for i, s := range sb.Servos() {
		goals[i] = s.Value(dynamixel.ItemGoalPosition)
	}
	for range 3 {
		if err := m.Reopen(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range sb.Servos() {
		if n := s.Releases(); n != 0 {
			t.Errorf("servo %d was released %d times by a reopen of a healthy bus", s.ID(), n)
		}
		if g := s.Value(dynamixel.ItemGoalPosition); g != goals[i] {
			t.Errorf("servo %d goal moved from %d to %d by a reopen", s.ID(), goals[i], g)
		}
	}
	y := make([]float64, m.MeasureLen())
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
}

// After a torque-off halt, a reopen holds the servos again where they are:
// torque on, goal = present position, so nothing jumps.
func TestReopenAfterTorqueOffHolds(t *testing.T) {
	m, sb := rig(t, nil)
	if err := m.Halt(plant.HaltTorqueOff); err != nil {
		t.Fatal(err)
	}
	// Someone moves the limp arm by hand.
	if err := sb.Servo(2).SetValue(dynamixel.ItemPresentPosition, 2300); err != nil {
		t.Fatalf("moving servo 2 by hand in the simulator: %v", err)
	}
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := sb.Servo(2).Value(dynamixel.ItemGoalPosition); g != 2300 {
		t.Errorf("servo 2 moved by hand to 2300 holds at %d after the reopen", g)
	}
	for _, s := range sb.Servos() {
		if s.Value(dynamixel.ItemTorqueEnable) != 1 {
			t.Errorf("servo %d still limp after the reopen", s.ID())
		}
		if g, p := s.Value(dynamixel.ItemGoalPosition), s.Value(dynamixel.ItemPresentPosition); g != p {
			t.Errorf("servo %d: goal %d, present %d: it would jump", s.ID(), g, p)
		}
	}
}
