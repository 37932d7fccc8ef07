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

// The model is in step with a scene whose clock reads its own, and not
// with one that made an exchange more.
func TestAZModelInStep(t *testing.T) {
	m, err := NewAZModel(AZModelConfig{Step: 50 * time.Millisecond, Measure: []int{0, 1, 2}, Command: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	m.StepTo(0)
	m.Command([]float64{1, 1})
	m.StepTo(int64(50 * time.Millisecond))
	m.Command([]float64{1, 1})
	if !m.InStep([]float64{0.05, 0.05, 0.05}) || m.InStep([]float64{0.1, 0.1, 0.1}) {
		t.Error("in step with the wrong scene time")
	}
}
