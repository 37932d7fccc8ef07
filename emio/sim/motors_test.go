package sim

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/plant"
)

// fakeClock is advanced by hand.
type fakeClock struct{ t int64 }

func (c *fakeClock) Now() int64 { return c.t }

func TestFirstOrderResponseAndMarkers(t *testing.T) {
	c := &fakeClock{}
	m, err := NewMotors(DefaultEmio(), c)
	if err != nil {
		t.Fatal(err)
	}
	if m.MeasureLen() != 7 || m.CommandLen() != 4 {
		t.Fatalf("lens %d %d", m.MeasureLen(), m.CommandLen())
	}
	if err := m.Command([]float64{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	c.t += int64(60 * time.Millisecond) // one time constant
	y := make([]float64, 7)
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
	want := 1 - math.Exp(-1)
	if math.Abs(y[3]-want) > 1e-12 {
		t.Errorf("q0 after one time constant %v, want %v", y[3], want)
	}
	// markers = y0 + J·q
	wantY := []float64{2 + 40*want, -141 + 30*want, -6 - 50*want}
	for i := range wantY {
		if math.Abs(y[i]-wantY[i]) > 1e-9 {
			t.Errorf("marker %d = %v, want %v", i, y[i], wantY[i])
		}
	}
}

func TestCommandRefusesBadValues(t *testing.T) {
	m, _ := NewMotors(DefaultEmio(), &fakeClock{})
	for _, u := range [][]float64{{math.NaN(), 0, 0, 0}, {0, math.Inf(1), 0, 0}, {0, 0, 0}} {
		if err := m.Command(u); !errors.Is(err, ErrCommand) {
			t.Errorf("%v: %v", u, err)
		}
	}
	q, g := make([]float64, 4), make([]float64, 4)
	if _, n := m.State(q, g); n != 0 || g[0] != 0 {
		t.Errorf("a refused command changed the goal: %v (%d commands)", g, n)
	}
}

func TestUnplugAndReopen(t *testing.T) {
	m, _ := NewMotors(DefaultEmio(), &fakeClock{})
	m.Unplug()
	if err := m.Measure(make([]float64, 7)); !errors.Is(err, ErrUnplugged) {
		t.Errorf("measure while unplugged: %v", err)
	}
	if err := m.Reopen(context.Background()); !errors.Is(err, ErrUnplugged) {
		t.Errorf("reopen while unplugged: %v", err)
	}
	m.Plug()
	if err := m.Reopen(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Measure(make([]float64, 7)); err != nil {
		t.Fatal(err)
	}
}

func TestHaltTorqueOffStopsMotion(t *testing.T) {
	c := &fakeClock{}
	m, _ := NewMotors(DefaultEmio(), c)
	m.Command([]float64{1, 1, 1, 1})
	m.Halt(plant.HaltTorqueOff)
	c.t += int64(time.Second)
	q, g := make([]float64, 4), make([]float64, 4)
	if torque, _ := m.State(q, g); torque || q[0] != 0 {
		t.Errorf("torque %v q %v after torque off", torque, q)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, edit := range []func(*MotorsConfig){
		func(c *MotorsConfig) { c.Motors = 0 },
		func(c *MotorsConfig) { c.Y0 = []float64{1} },
		func(c *MotorsConfig) { c.J = c.J[:5] },
		func(c *MotorsConfig) { c.Initial = []float64{0, 0, math.NaN(), 0} },
		func(c *MotorsConfig) { c.TimeConstant = -1 },
	} {
		c := DefaultEmio()
		edit(&c)
		if _, err := NewMotors(c, &fakeClock{}); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestMeasureCommandAllocs(t *testing.T) {
	c := &fakeClock{}
	m, _ := NewMotors(DefaultEmio(), c)
	y, u := make([]float64, 7), []float64{0.1, 0.2, 0.3, 0.4}
	if a := testing.AllocsPerRun(100, func() {
		c.t += 1e6
		m.Measure(y)
		m.Command(u)
	}); a != 0 {
		t.Errorf("%v allocations per tick", a)
	}
}

// Stepped (plant.Stepped), the motors move on the ticks' deadlines: the
// same commands on the same ticks give the same angles bit for bit,
// however late each Measure and Command ran on the clock.
func TestMotorsStepped(t *testing.T) {
	run := func(jitter func(k int) int64) []float64 {
		c := &fakeClock{t: 5_000_000}
		m, err := NewMotors(DefaultEmio(), c)
		if err != nil {
			t.Fatal(err)
		}
		var _ plant.Stepped = m
		y := make([]float64, m.MeasureLen())
		var out []float64
		for k := range 50 {
			deadline := int64(1_000_000_000 + k*10_000_000)
			c.t = deadline - 300_000 + jitter(k) // woken a lead early, give or take
			m.StepTo(deadline)
			if err := m.Measure(y); err != nil {
				t.Fatal(err)
			}
			out = append(out, y...)
			c.t += jitter(k + 1)
			u := []float64{0.1 * float64(k%7), -0.2, 0.3, float64(k) / 100}
			if err := m.Command(u); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	a := run(func(int) int64 { return 0 })
	b := run(func(k int) int64 { return int64(k*7919%1000) * 1000 })
	if !slices.Equal(a, b) {
		t.Error("the angles depend on when the thread woke")
	}
	if a[len(a)-1] == a[DefaultEmio().Motors-1] {
		t.Error("the motors never moved")
	}
}

// Sync puts the motors on a measurement's angles, holding there; a
// measurement of another length or with a NaN is refused and changes
// nothing.
func TestMotorsSync(t *testing.T) {
	m, _ := NewMotors(DefaultEmio(), &fakeClock{})
	y := make([]float64, m.MeasureLen())
	copy(y[len(y)-4:], []float64{0.1, -0.2, 0.3, -0.4})
	if err := m.Sync(y); err != nil {
		t.Fatal(err)
	}
	q, g := make([]float64, 4), make([]float64, 4)
	m.State(q, g)
	if !slices.Equal(q, []float64{0.1, -0.2, 0.3, -0.4}) || !slices.Equal(g, q) {
		t.Fatalf("q %v goal %v", q, g)
	}
	y[len(y)-1] = math.NaN()
	if err := m.Sync(y); err == nil {
		t.Error("a NaN angle was taken")
	}
	if err := m.Sync(y[:3]); err == nil {
		t.Error("a short measurement was taken")
	}
	m.State(q, g)
	if q[3] != -0.4 {
		t.Errorf("a refused Sync moved the motors: %v", q)
	}
}

// A stuck motor stays where it stuck whatever it is commanded; freed, it
// follows its commands again; the others follow all along.
func TestMotorsStick(t *testing.T) {
	c := &fakeClock{}
	m, _ := NewMotors(DefaultEmio(), c)
	y := make([]float64, m.MeasureLen())
	step := func(u []float64) []float64 {
		c.t += 1_000_000_000 // long past the time constant
		if err := m.Command(u); err != nil {
			t.Fatal(err)
		}
		c.t += 1_000_000_000
		if err := m.Measure(y); err != nil {
			t.Fatal(err)
		}
		return y[len(y)-4:]
	}
	step([]float64{0.2, 0.2, 0.2, 0.2})
	if err := m.Stick(1, true); err != nil {
		t.Fatal(err)
	}
	if q := step([]float64{0.5, 0.5, 0.5, 0.5}); math.Abs(q[1]-0.2) > 1e-6 || math.Abs(q[0]-0.5) > 1e-6 {
		t.Fatalf("stuck: %v", q)
	}
	m.Stick(1, false)
	if q := step([]float64{0.5, 0.5, 0.5, 0.5}); math.Abs(q[1]-0.5) > 1e-6 {
		t.Fatalf("freed: %v", q)
	}
	if err := m.Stick(4, true); err == nil {
		t.Error("motor 5 of 4 stuck")
	}
}

// MaxSpeed moves a motor at that speed toward its goal, as a servo's
// velocity profile does, and with TimeConstant 0 reaches it exactly.
func TestMotorsMaxSpeed(t *testing.T) {
	cfg := DefaultEmio()
	cfg.TimeConstant, cfg.MaxSpeed = 0, 2 // rad/s
	c := &fakeClock{}
	m, err := NewMotors(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float64, m.MeasureLen())
	if err := m.Command([]float64{1, -1, 0.1, 0}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   int64
		want []float64
	}{
		{100_000_000, []float64{0.2, -0.2, 0.1, 0}},
		{400_000_000, []float64{0.8, -0.8, 0.1, 0}},
		{600_000_000, []float64{1, -1, 0.1, 0}},
	} {
		c.t = tc.at
		if err := m.Measure(y); err != nil {
			t.Fatal(err)
		}
		for i, w := range tc.want {
			if q := y[len(y)-4+i]; math.Abs(q-w) > 1e-9 {
				t.Errorf("at %d ms motor %d at %g, want %g", tc.at/1_000_000, i+1, q, w)
			}
		}
	}
	cfg.MaxSpeed = math.NaN()
	if _, err := NewMotors(cfg, c); err == nil || !strings.Contains(err.Error(), "max speed = NaN") {
		t.Errorf("a NaN speed: %v", err)
	}
}
