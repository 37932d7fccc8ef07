package sim

import (
	"fmt"
	"math"
)

// LinearMarkers is the simulated lab's marker model: markers = Y0 + J·q (mm),
// with J of (3·markers)×motors, row major. It satisfies emio.MarkerSource.
type LinearMarkers struct {
	y0, j  []float64
	motors int
}

// NewLinearMarkers checks the sizes and values.
func NewLinearMarkers(y0, j []float64, motors int) (*LinearMarkers, error) {
	if motors < 1 || len(y0)%3 != 0 || len(j) != len(y0)*motors {
		return nil, fmt.Errorf("%w: y0 of %d values and j of %d for %d motors, want 3·markers and 3·markers·motors", ErrConfig, len(y0), len(j), motors)
	}
	for _, v := range append(append([]float64{}, y0...), j...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: marker model value %v", ErrConfig, v)
		}
	}
	return &LinearMarkers{y0: append([]float64(nil), y0...), j: append([]float64(nil), j...), motors: motors}, nil
}

// Markers fills dst (len(y0) values) from the motor angles q.
func (l *LinearMarkers) Markers(q, dst []float64) {
	for r := range l.y0 {
		v := l.y0[r]
		for c := 0; c < l.motors && c < len(q); c++ {
			v += l.j[r*l.motors+c] * q[c]
		}
		if r < len(dst) {
			dst[r] = v
		}
	}
}

// NoMarkers is a marker source for a model that does not predict the
// markers: it gives zeros.
type NoMarkers struct{}

// Markers implements emio.MarkerSource.
func (NoMarkers) Markers(_, dst []float64) { clear(dst) }
