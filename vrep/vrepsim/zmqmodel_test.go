package vrepsim

import (
	"math"
	"testing"
	"time"
)

const zstep = 50 * time.Millisecond

func newZMQModel(t *testing.T, cfg ZMQModelConfig) *ZMQModel {
	t.Helper()
	if cfg.Step == 0 {
		cfg.Step = zstep
	}
	if cfg.MaxSpeed == 0 {
		cfg.MaxSpeed = 2
	}
	m, err := NewZMQModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tick(k int) int64 { return int64(k) * int64(zstep) }

// A stepped scene in velocity mode: each exchange sets the velocities,
// steps, then reads; a tick without a command holds them for the velocity
// timeout, then commands zero, as the driver does (vrep.Scene.Idle).
func TestZMQModelVelocityStepped(t *testing.T) {
	m := newZMQModel(t, ZMQModelConfig{Joints: 2, Stepping: true, VelTimeout: 100 * time.Millisecond,
		Measure: []int{0, 1, 2}, Command: []int{0, 1}})
	got := make([]float64, 3)
	want := [3]float64{}
	dt := zstep.Seconds()
	for k := range 12 {
		m.StepTo(tick(k))
		if err := m.Measure(got); err != nil {
			t.Fatal(err)
		}
		if k > 0 && (math.Abs(got[0]-want[0]) > 1e-9 || math.Abs(got[1]-want[1]) > 1e-9 || math.Abs(got[2]-want[2]) > 1e-9) {
			t.Fatalf("tick %d: model %v, want %v", k, got, want)
		}
		var v [2]float64
		switch {
		case k < 4: // commanded
			v = [2]float64{1, -0.5}
			if err := m.Command(v[:]); err != nil {
				t.Fatal(err)
			}
		case k <= 6: // held while within 100 ms of the last command (ticks 4 and 5), then zero
			if tick(k)-tick(3) <= int64(100*time.Millisecond) {
				v = [2]float64{1, -0.5}
			}
		}
		// The exchange of this tick (the model makes an idle one at the
		// next StepTo).
		want[0] += dt
		want[1] += v[0] * dt
		want[2] += v[1] * dt
	}
}

// In position mode a joint approaches its target at the scene's speed
// bound, and the target is held on ticks without a command.
func TestZMQModelPosition(t *testing.T) {
	m := newZMQModel(t, ZMQModelConfig{Joints: 1, Position: true, Stepping: true, MaxSpeed: 1,
		Measure: []int{1}, Command: []int{0}})
	got := make([]float64, 1)
	m.StepTo(tick(0))
	if err := m.Command([]float64{0.2}); err != nil {
		t.Fatal(err)
	}
	for k, want := range []float64{0.05, 0.1, 0.15, 0.2, 0.2} {
		m.StepTo(tick(k + 1))
		if err := m.Measure(got); err != nil {
			t.Fatal(err)
		}
		if math.Abs(got[0]-want) > 1e-9 {
			t.Fatalf("after %d exchanges: %v, want %v", k+1, got[0], want)
		}
	}
}

// A scene on its own clock steps with the ticks' time, not with the
// exchanges: two exchanges in one step's time move it once.
func TestZMQModelOwnClock(t *testing.T) {
	m := newZMQModel(t, ZMQModelConfig{Joints: 1, VelTimeout: time.Second, Measure: []int{0, 1}, Command: []int{0}})
	got := make([]float64, 2)
	half := int64(zstep / 2)
	for k := range 6 {
		m.StepTo(int64(k) * half)
		if err := m.Command([]float64{2}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Measure(got); err != nil {
		t.Fatal(err)
	}
	// Ticks at 0..125 ms: steps at 50 and 100 ms.
	if math.Abs(got[0]-0.1) > 1e-9 || math.Abs(got[1]-0.2) > 1e-9 {
		t.Errorf("after 125 ms: time %v angle %v, want 0.1 s and 0.2 rad", got[0], got[1])
	}
}

// Sync puts the model on the real scene, and Follow moves it by the steps
// the real scene made more or fewer than the ticks.
func TestZMQModelSyncFollow(t *testing.T) {
	m := newZMQModel(t, ZMQModelConfig{Joints: 1, Stepping: true, VelTimeout: time.Second, Measure: []int{0, 1}, Command: []int{0}})
	got := make([]float64, 2)
	m.StepTo(tick(0))
	if err := m.Command([]float64{1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync([]float64{3, 0.7}); err != nil {
		t.Fatal(err)
	}
	if err := m.Measure(got); err != nil || got[0] != 3 || got[1] != 0.7 {
		t.Fatalf("after Sync: %v %v, want [3 0.7]", got, err)
	}
	// The real scene made two steps where the model made none.
	m.Follow([]float64{3.1, 0.8})
	if err := m.Measure(got); err != nil || math.Abs(got[0]-3.1) > 1e-9 || math.Abs(got[1]-0.8) > 1e-9 {
		t.Fatalf("after Follow: %v %v, want [3.1 0.8]", got, err)
	}
	if err := m.Sync([]float64{math.NaN(), 0}); err == nil {
		t.Error("Sync with NaN: nil error")
	}
}

// A slipping joint of the real scene leaves the model: the model is the
// scene's world without the slip.
func TestZMQModelSeesASlip(t *testing.T) {
	m := newZMQModel(t, ZMQModelConfig{Joints: 1, Stepping: true, VelTimeout: time.Second, Measure: []int{1}, Command: []int{0}})
	real := newWorld([]string{"j"}, zstep, 2)
	if err := real.Slip(1, 50); err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 1)
	for k := range 10 {
		m.StepTo(tick(k))
		if err := m.Command([]float64{1}); err != nil {
			t.Fatal(err)
		}
		real.v[0] = 1
		real.advance()
	}
	if err := m.Measure(got); err != nil {
		t.Fatal(err)
	}
	if d := got[0] - real.q[0]; math.Abs(d-0.25) > 1e-9 {
		t.Errorf("model − slipping scene after 10 steps = %v rad, want 0.25", d)
	}
}

func TestZMQModelConfigRefused(t *testing.T) {
	for _, cfg := range []ZMQModelConfig{
		{Joints: 0, Step: zstep, MaxSpeed: 1},
		{Joints: 1, Step: 0, MaxSpeed: 1},
		{Joints: 1, Step: zstep, MaxSpeed: 0},
		{Joints: 1, Step: zstep, MaxSpeed: 1, Measure: []int{2}},
		{Joints: 1, Step: zstep, MaxSpeed: 1, Command: []int{1}},
	} {
		if _, err := NewZMQModel(cfg); err == nil {
			t.Errorf("NewZMQModel(%+v) = nil error", cfg)
		}
	}
}
