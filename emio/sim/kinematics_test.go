package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestNewKinematicsValidation(t *testing.T) {
	y0 := []float64{2, -141, -6}
	j := DefaultEmio().J
	for _, tc := range []struct {
		name   string
		y0, j  []float64
		motors int
		want   string
	}{
		{"zero motors", y0, j, 0, "motors = 0"},
		{"too many motors", y0, make([]float64, 3*65), 65, "motors = 65"},
		{"no markers", nil, nil, 4, "y0 has 0 values"},
		{"partial marker", []float64{1, 2}, make([]float64, 8), 4, "y0 has 2 values"},
		{"short j", y0, j[:11], 4, "j has 11 values, want 12"},
		{"NaN y0", []float64{2, math.NaN(), -6}, j, 4, "y0[1] = NaN"},
		{"Inf j", y0, append(append([]float64{}, j[:5]...), append([]float64{math.Inf(-1)}, j[6:]...)...), 4, "j[5] (row 1, motor 1) = -Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewKinematics(tc.y0, tc.j, tc.motors)
			if k != nil || !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "sim:") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewKinematics = %v, %v; want ErrConfig naming %q", k, err, tc.want)
			}
		})
	}
}

// The model's Jacobian at q = 0 is J (central differences), and its value
// there is y0.
func TestKinematicsJacobianAtRest(t *testing.T) {
	cfg := DefaultEmio()
	y0 := []float64{2, -141, -6, -5, -191.5, 92.3}
	j := append(append([]float64{}, cfg.J...), 10, 20, -30, 5, -15, 25, 35, -45, 0, 12, -8, 4)
	k, err := NewKinematics(y0, j, 4)
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 6 || k.Motors() != 4 {
		t.Fatalf("Len %d Motors %d", k.Len(), k.Motors())
	}
	y := make([]float64, 6)
	k.Markers(make([]float64, 4), y)
	for r := range y {
		if y[r] != y0[r] {
			t.Errorf("marker value %d at rest = %v, want %v", r, y[r], y0[r])
		}
	}
	const h = 1e-6
	yp, ym := make([]float64, 6), make([]float64, 6)
	for c := range 4 {
		q := make([]float64, 4)
		q[c] = h
		k.Markers(q, yp)
		q[c] = -h
		k.Markers(q, ym)
		for r := range 6 {
			got := (yp[r] - ym[r]) / (2 * h)
			if want := j[r*4+c]; math.Abs(got-want) > 1e-6 {
				t.Errorf("dy%d/dq%d = %v, want %v", r, c, got, want)
			}
		}
	}
	// Away from rest the model bends: sin, not linear.
	k.Markers([]float64{math.Pi / 2, 0, 0, 0}, y)
	if want := y0[0] + j[0]; math.Abs(y[0]-want) > 1e-9 {
		t.Errorf("x at q0 = π/2 is %v, want y0 + J00 = %v", y[0], want)
	}
}

// Missing angles count as 0 and a short dst is filled as far as it goes, as
// LinearMarkers does; nothing panics.
func TestKinematicsShortBuffers(t *testing.T) {
	k, err := NewKinematics([]float64{1, 2, 3}, []float64{1, 0, 0, 1, 0, 0}, 2)
	if err != nil {
		t.Fatal(err)
	}
	dst := []float64{9, 9}
	k.Markers([]float64{math.Pi / 2}, dst)
	if dst[0] != 2 || dst[1] != 2 {
		t.Errorf("dst = %v, want [2 2]", dst)
	}
	k.Markers(nil, nil)
}

// A Jacobian controller with J⁺ of the rest pose, as the Simulink model runs
// it (docs/simulink-udp.md §9.2), converges on the nonlinear model.
func TestKinematicsJacobianControllerConverges(t *testing.T) {
	cfg := DefaultEmio()
	k, err := NewKinematics(cfg.Y0, cfg.J, cfg.Motors)
	if err != nil {
		t.Fatal(err)
	}
	// J's rows are orthogonal, so J⁺ = Jᵀ·diag(1/|row|²).
	jinv := make([]float64, 12)
	for r := range 3 {
		var n2 float64
		for c := range 4 {
			n2 += cfg.J[r*4+c] * cfg.J[r*4+c]
		}
		for c := range 4 {
			jinv[c*3+r] = cfg.J[r*4+c] / n2
		}
	}
	ref := []float64{cfg.Y0[0] + 20, cfg.Y0[1] - 15, cfg.Y0[2] + 25}
	u, y := make([]float64, 4), make([]float64, 3)
	const alpha = 0.05
	for range 2000 {
		k.Markers(u, y)
		for c := range 4 {
			var s float64
			for r := range 3 {
				s += jinv[c*3+r] * alpha * (ref[r] - y[r])
			}
			u[c] = max(-1.57, min(1.57, u[c]+s))
		}
	}
	k.Markers(u, y)
	for r := range 3 {
		if math.Abs(y[r]-ref[r]) > 1e-3 {
			t.Errorf("marker value %d = %v after 2000 steps, want %v", r, y[r], ref[r])
		}
	}
}

func TestKinematicsMarkersAllocs(t *testing.T) {
	cfg := DefaultEmio()
	k, err := NewKinematics(cfg.Y0, cfg.J, cfg.Motors)
	if err != nil {
		t.Fatal(err)
	}
	q, y := []float64{0.1, -0.2, 0.3, -0.4}, make([]float64, 3)
	if n := testing.AllocsPerRun(100, func() { k.Markers(q, y) }); n != 0 {
		t.Errorf("Markers allocates %v times", n)
	}
}
