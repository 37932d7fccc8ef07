package mecasim

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// The model integrates each velocity until the next or its timeout, stops
// at a joint's limit, and gives the pose of its joints.
func TestModelMoves(t *testing.T) {
	m, err := NewModel(ModelConfig{Pose: true, MeasureLen: 21, Initial: [6]float64{0, 0, 0, 0, 0, 170}})
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float64, 21)
	ms := int64(time.Millisecond)
	m.StepTo(0)
	for k := range 100 { // 1 s of ticks at 100 Hz
		m.StepTo(int64(k) * 10 * ms)
		if err := m.Command([]float64{10, 0, 0, 0, 0, 20}); err != nil {
			t.Fatal(err)
		}
	}
	m.StepTo(1000 * ms)
	m.Measure(y)
	if math.Abs(y[0]-10) > 1e-9 || y[5] != 180-limitMargin {
		t.Errorf("joints %v, want J1 at 10° and J6 stopped at its limit", y[:6])
	}
	if p := poseOf(forward([6]float64{10, 0, 0, 0, 0, 180 - limitMargin})); math.Abs(y[6]-p[0]) > 1e-9 || math.Abs(y[11]-p[5]) > 1e-9 {
		t.Errorf("pose %v, want %v", y[6:12], p)
	}
	// No newer command: the last velocity (at 990 ms) lasts its timeout,
	// 50 ms: 40 ms more at 10°/s.
	m.StepTo(2000 * ms)
	m.Measure(y)
	if math.Abs(y[0]-10.4) > 1e-9 {
		t.Errorf("J1 at %v after the timeout, want 10.4°", y[0])
	}
	// Synced, it starts from the robot's joints.
	if err := m.Sync([]float64{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	m.Measure(y)
	if y[2] != 3 || y[5] != 6 {
		t.Errorf("after a sync %v", y[:6])
	}
	if m.Command([]float64{math.NaN(), 0, 0, 0, 0, 0}) == nil || m.Sync([]float64{1}) == nil {
		t.Error("a NaN velocity or a short measurement accepted")
	}
	if _, err := NewModel(ModelConfig{Pose: true, MeasureLen: 6}); err == nil {
		t.Error("a model with a pose in 6 values")
	}
}

// A payload slows the simulated arm; its velocity commands no longer take
// it where the model goes.
func TestPayloadSlowsTheArm(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Control([]string{"payload", "50"}); err != nil {
		t.Fatal(err)
	}
	if s := r.Status().Speed; s != 50 {
		t.Errorf("speed %v %%, want 50", s)
	}
	if !strings.Contains(r.StateLine(), "payload_speed=50%") {
		t.Errorf("state line %q", r.StateLine())
	}
	for _, bad := range []string{"0", "101", "x"} {
		if _, err := r.Control([]string{"payload", bad}); err == nil {
			t.Errorf("payload %s accepted", bad)
		}
	}
}

// Shown the robot's pose, the model gives its angles beside them: −179°
// and 181° are one orientation, no divergence.
func TestModelFollowsThePoseAngles(t *testing.T) {
	m, err := NewModel(ModelConfig{Pose: true, MeasureLen: 12})
	if err != nil {
		t.Fatal(err)
	}
	y := make([]float64, 12)
	m.StepTo(0)
	m.Measure(y)
	real := slices.Clone(y)
	for i := 9; i < 12; i++ {
		real[i] += 360
	}
	m.Follow(real)
	m.Measure(y)
	for i := 9; i < 12; i++ {
		if math.Abs(y[i]-real[i]) > 1e-9 {
			t.Errorf("pose angle %d: model %v, robot %v", i-8, y[i], real[i])
		}
	}
}

// At the zero pose (β = 90°) only α + γ is defined: a hair of motion swings
// the robot's α and γ by tens of degrees, and the twin must not call that a
// divergence. Robot − model is the rotation between the two orientations.
func TestModelComparesOrientationsAsRotations(t *testing.T) {
	m, err := NewModel(ModelConfig{Pose: true, MeasureLen: 12})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		real   [6]float64 // the robot's joints; the model's are 0
		within float64    // ° of each angle's divergence
	}{
		{"the same pose", [6]float64{}, 1e-9},
		{"a hair from the singularity", [6]float64{0.01, 0, 0, 0.02, 0.01, -0.01}, 0.05},
		{"wrapped angles", [6]float64{0, 0, 0, 0, 0, 0}, 1e-9},
	} {
		robot := poseOf(forward(c.real))
		if c.name == "wrapped angles" {
			robot[3], robot[5] = robot[3]+360, robot[5]-360
		}
		real := make([]float64, 12)
		copy(real, c.real[:])
		copy(real[6:], robot[:])
		m.Follow(real)
		y := make([]float64, 12)
		m.Measure(y)
		for i := 9; i < 12; i++ {
			if d := real[i] - y[i]; math.Abs(d) > c.within {
				t.Errorf("%s: pose angle %d: robot − model = %v°, want within %v°", c.name, i-8, d, c.within)
			}
		}
	}
	// Turned away from the model, the divergence is the turn: the robot's
	// wrist 10° further about its own axis.
	real := make([]float64, 12)
	q := [6]float64{30, -20, 25, 0, 40, 10}
	copy(real, q[:])
	robot := poseOf(forward(q))
	copy(real[6:], robot[:])
	m.Sync(append([]float64{30, -20, 25, 0, 40, 0}, make([]float64, 6)...))
	m.Follow(real)
	y := make([]float64, 12)
	m.Measure(y)
	var n float64
	for i := 9; i < 12; i++ {
		n += (real[i] - y[i]) * (real[i] - y[i])
	}
	if math.Abs(math.Sqrt(n)-10) > 1e-6 {
		t.Errorf("a 10° turn of joint 6: |robot − model| = %v°, want 10°", math.Sqrt(n))
	}
}

func TestRotationVector(t *testing.T) {
	for _, c := range []struct {
		R    mat3
		want vec3
	}{
		{rotX(0), vec3{}},
		{rotX(30), vec3{30, 0, 0}},
		{rotY(-45), vec3{0, -45, 0}},
		{rotZ(179.9), vec3{0, 0, 179.9}},
		{rotZ(180), vec3{0, 0, 180}},
	} {
		got := rotationVector(c.R)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-6 {
				t.Errorf("rotationVector = %v, want %v", got, c.want)
				break
			}
		}
	}
}

// A sync (the twin's first tick, or its first after the link was down) is
// not followed: the robot's orientation is taken from it, or the model's
// would be given against the one before the outage.
func TestModelSyncTakesThePoseAngles(t *testing.T) {
	m, err := NewModel(ModelConfig{Pose: true, MeasureLen: 12})
	if err != nil {
		t.Fatal(err)
	}
	before := make([]float64, 12)
	q := [6]float64{0.4, -0.3, 0.2, 0, 0.1, 0.4} // a hair from β = 90°
	copy(before, q[:])
	p := poseOf(forward(q))
	copy(before[6:], p[:])
	m.Follow(before)
	after := make([]float64, 12)
	q = [6]float64{-0.5, 0.3, -0.2, 0, -0.1, -0.5}
	copy(after, q[:])
	p = poseOf(forward(q))
	copy(after[6:], p[:])
	if err := m.Sync(after); err != nil {
		t.Fatal(err)
	}
	y := make([]float64, 12)
	m.Measure(y)
	for i := range y {
		if d := after[i] - y[i]; math.Abs(d) > 1e-6 {
			t.Errorf("value %d after a sync: robot − model = %v, want 0", i+1, d)
		}
	}
	if j := m.Joints(); !slices.Equal(j[:], after[:6]) {
		t.Errorf("Joints after a sync = %v, want %v", j, after[:6])
	}
}
