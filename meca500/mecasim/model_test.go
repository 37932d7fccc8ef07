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
