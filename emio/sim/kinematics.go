package sim

import (
	"fmt"
	"math"
)

// maxKinematicsMotors bounds the motors so Markers can keep sin(q) in a stack
// array and allocate nothing.
const maxKinematicsMotors = 64

// Kinematics is a smooth nonlinear marker model: marker = y0 + J·sin(q) (mm),
// with J of (3·markers)×motors, row major, and q the motor angles in rad.
// Its Jacobian at q = 0 is J, so a Jacobian controller identified or tuned
// around the rest pose (docs/simulink-udp.md §9.2) converges, while the
// curvature away from it is what a linear model cannot show. It satisfies
// emio.MarkerSource, is read-only after construction and safe for concurrent
// use.
type Kinematics struct {
	y0, j  []float64
	motors int
}

// NewKinematics checks the sizes and values and copies y0 and j.
func NewKinematics(y0, j []float64, motors int) (*Kinematics, error) {
	switch {
	case motors < 1 || motors > maxKinematicsMotors:
		return nil, fmt.Errorf("%w: kinematics motors = %d, want 1..%d", ErrConfig, motors, maxKinematicsMotors)
	case len(y0) == 0 || len(y0)%3 != 0:
		return nil, fmt.Errorf("%w: kinematics y0 has %d values, want 3 per marker", ErrConfig, len(y0))
	case len(j) != len(y0)*motors:
		return nil, fmt.Errorf("%w: kinematics j has %d values, want %d (3·%d markers × %d motors)", ErrConfig, len(j), len(y0)*motors, len(y0)/3, motors)
	}
	for i, v := range y0 {
		if !finite(v) {
			return nil, fmt.Errorf("%w: kinematics y0[%d] = %v", ErrConfig, i, v)
		}
	}
	for i, v := range j {
		if !finite(v) {
			return nil, fmt.Errorf("%w: kinematics j[%d] (row %d, motor %d) = %v", ErrConfig, i, i/motors, i%motors, v)
		}
	}
	return &Kinematics{y0: append([]float64(nil), y0...), j: append([]float64(nil), j...), motors: motors}, nil
}

// Len is the number of marker values (3 per marker).
func (k *Kinematics) Len() int { return len(k.y0) }

// Motors is the number of motor angles the model reads.
func (k *Kinematics) Motors() int { return k.motors }

// Markers fills dst with the marker positions at the motor angles q, in the
// same way as LinearMarkers: missing angles count as 0, extra ones and extra
// dst values are left alone. It does not allocate.
func (k *Kinematics) Markers(q, dst []float64) {
	var s [maxKinematicsMotors]float64
	for c := 0; c < k.motors && c < len(q); c++ {
		s[c] = math.Sin(q[c])
	}
	for r := 0; r < len(k.y0) && r < len(dst); r++ {
		v := k.y0[r]
		row := k.j[r*k.motors : (r+1)*k.motors]
		for c, jc := range row {
			v += jc * s[c]
		}
		dst[r] = v
	}
}

// finite reports whether v is neither NaN nor ±Inf.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
