package vrepsim

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// azCall is one exchange with the scene, as the seed's client makes it.
func azCall(s *AZ, left, right float64) (t, l, r float64) {
	var in [10]byte
	in[0], in[1] = 'A', 'Z'
	binary.LittleEndian.PutUint32(in[2:], math.Float32bits(float32(left)))
	binary.LittleEndian.PutUint32(in[6:], math.Float32bits(float32(right)))
	out := s.exchange(in)
	f := func(o int) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(out[o:]))) }
	return f(2), f(6), f(10)
}

// The model answers as the scene does, tick for tick: an exchange per
// command, the held speeds on a tick without one until the velocity
// timeout, zero after it; and a slipping joint in the scene leaves it.
func TestAZModelIsTheScene(t *testing.T) {
	scene, err := NewAZ(AZConfig{Step: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewAZModel(AZModelConfig{Step: 50 * time.Millisecond, VelTimeout: 150 * time.Millisecond, Measure: []int{0, 1, 2}, Command: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	var held [2]float64
	var fresh int64
	got := make([]float64, 3)
	var last [3]float64
	for k := range 40 {
		at := int64(k) * int64(50*time.Millisecond)
		m.StepTo(at)
		if err := m.Measure(got); err != nil {
			t.Fatal(err)
		}
		same := math.Abs(got[0]-last[0]) < 1e-6 && math.Abs(got[1]-last[1]) < 1e-5 && math.Abs(got[2]-last[2]) < 1e-5
		switch {
		case k > 0 && k <= 31 && !same:
			t.Fatalf("tick %d: the model answers %v, the scene %v", k, got, last)
		case k >= 33 && same:
			t.Fatalf("tick %d: the slipping joint is where the model has it (%v)", k, last)
		case k >= 33:
			return
		}
		if k == 30 {
			scene.World().Slip(1, 50)
		}
		switch {
		case k%10 < 6: // a command
			held = [2]float64{math.Sin(float64(k) / 5), 1}
			fresh = at
			m.Command(held[:])
			last[0], last[1], last[2] = azCall(scene, held[0], held[1])
		case at-fresh <= int64(150*time.Millisecond): // held
			last[0], last[1], last[2] = azCall(scene, held[0], held[1])
		default: // past the timeout: zero
			last[0], last[1], last[2] = azCall(scene, 0, 0)
		}
	}
}

// A scene that made an exchange fewer than the ticks (a post superseded)
// is followed: the model moves back a step at the speeds last set, and
// then answers as the scene does.
func TestAZModelFollows(t *testing.T) {
	m, err := NewAZModel(AZModelConfig{Step: 50 * time.Millisecond, Measure: []int{0, 1, 2}, Command: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 3)
	for k := range 4 {
		m.StepTo(int64(k) * int64(50*time.Millisecond))
		m.Command([]float64{1, 2})
	}
	m.StepTo(int64(4 * 50 * time.Millisecond))
	m.Measure(got)
	if math.Abs(got[0]-0.15) > 1e-9 || math.Abs(got[1]-0.15) > 1e-9 || math.Abs(got[2]-0.3) > 1e-9 {
		t.Fatalf("after 4 exchanges: %v", got)
	}
	// The scene made 3: its answer is one step behind.
	m.Follow([]float64{0.1, 0.1, 0.2})
	m.Measure(got)
	if math.Abs(got[0]-0.1) > 1e-9 || math.Abs(got[1]-0.1) > 1e-9 || math.Abs(got[2]-0.2) > 1e-9 {
		t.Errorf("followed: %v, want the scene's [0.1 0.1 0.2]", got)
	}
	m.Command([]float64{1, 2})
	m.StepTo(int64(5 * 50 * time.Millisecond))
	m.Measure(got)
	if math.Abs(got[0]-0.15) > 1e-9 || math.Abs(got[1]-0.15) > 1e-9 {
		t.Errorf("the next answer %v, want the scene's time 0.15 and left angle 0.15", got)
	}
}
