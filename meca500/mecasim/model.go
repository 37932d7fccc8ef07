package mecasim

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labbridge/bridge/plant"
)

// ModelConfig is a Model's: the link's shape and the robot's velocity
// timeout.
type ModelConfig struct {
	// Cartesian: the commands are MoveLinVelWrf's (mm/s, °/s); else
	// MoveJointsVel's (°/s).
	Cartesian bool
	// Pose: the measurement carries the tool pose after the joints.
	Pose bool
	// VelTimeout is how long a velocity lasts without a newer one (0: the
	// robot's default, 50 ms).
	VelTimeout time.Duration
	// MeasureLen is the link's measurement length: the joints, the pose,
	// then values the model does not predict (left at 0).
	MeasureLen int
	Initial    [6]float64 // joints, °
}

// Model is the Meca500's motion without its wire or its states: the joints
// integrate the velocities the robot is given, stop at their limits and
// when a velocity times out, and the pose follows from the joints. It is
// the shadow twin's model of a streamed arm. It moves on the times it is
// told (StepTo), starts where Sync puts it, and is safe for concurrent use.
type Model struct {
	cfg ModelConfig

	mu        sync.Mutex
	q         [6]float64
	v         [6]float64
	until     int64 // the velocity's end
	now, last int64
	stepped   bool
	// seen are the robot's pose angles last shown (Follow): the model's are
	// given within 180° of them, the same orientation.
	seen     [3]float64
	haveSeen bool
}

// NewModel returns the model at cfg.Initial, at rest.
func NewModel(cfg ModelConfig) (*Model, error) {
	need, what := 6, "the joints"
	if cfg.Pose {
		need, what = 12, "the joints and the pose"
	}
	if cfg.MeasureLen < need {
		return nil, fmt.Errorf("mecasim: a model measuring %d values, want at least %d (%s)", cfg.MeasureLen, need, what)
	}
	if cfg.VelTimeout <= 0 {
		cfg.VelTimeout = defaultVelTimeout
	}
	return &Model{cfg: cfg, q: cfg.Initial}, nil
}

// MeasureLen implements plant.Plant.
func (m *Model) MeasureLen() int { return m.cfg.MeasureLen }

// CommandLen implements plant.Plant.
func (m *Model) CommandLen() int { return 6 }

// StepTo implements plant.Stepped: the model's time.
func (m *Model) StepTo(t int64) {
	m.mu.Lock()
	if !m.stepped {
		m.stepped, m.last = true, t
	}
	m.now = t
	m.mu.Unlock()
}

// advance integrates up to now, in the robot's steps.
func (m *Model) advance() {
	for m.last < m.now {
		end := min(m.now, m.last+int64(substep))
		if m.last >= m.until {
			m.v = [6]float64{}
			m.last = m.now
			break
		}
		end = min(end, m.until)
		dt := time.Duration(end - m.last).Seconds()
		if m.cfg.Cartesian {
			qd := cartesianToJoint(m.q, m.v)
			next := m.q
			stop := false
			for i := range next {
				next[i] += qd[i] * dt
				lo, hi := jointRange(i)
				stop = stop || next[i] < lo+limitMargin && qd[i] < 0 || next[i] > hi-limitMargin && qd[i] > 0
			}
			if !stop {
				m.q = next
			}
		} else {
			for i := range m.q {
				m.q[i], _ = towardLimit(i, m.q[i], m.v[i], dt)
			}
		}
		m.last = end
	}
}

// Measure implements plant.Plant: the joints, then the pose.
func (m *Model) Measure(dst []float64) error {
	if len(dst) != m.cfg.MeasureLen {
		return fmt.Errorf("mecasim: measure buffer of %d values, want %d", len(dst), m.cfg.MeasureLen)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	copy(dst, m.q[:])
	if m.cfg.Pose {
		f := forward(m.q)
		p := poseOf(f)
		if m.haveSeen {
			// The orientation is compared as a rotation, not angle by
			// angle: near β = ±90° (the zero pose is there) only α ± γ
			// is defined, and the robot's α and γ swing by tens of
			// degrees for a hair of motion; an angle and the same plus
			// 360° are one orientation too. The model's angles are given
			// as the robot's less the rotation, in the tool's axes and
			// degrees, that takes the robot's orientation to the model's,
			// so that robot − model is that rotation: zero for one
			// orientation however it is written, and as large as the
			// tool is turned away from the model otherwise.
			w := rotationVector(eulerXYZ(m.seen).transpose().mul(f.R))
			for i := range m.seen {
				p[3+i] = m.seen[i] - w[i]
			}
		}
		copy(dst[6:], p[:])
	}
	return nil
}

// Joints are the model's joint angles (°) now: what a controller reads
// without the pose Measure works out.
func (m *Model) Joints() [6]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	return m.q
}

// Follow implements the twin's Follower: the robot's pose angles, against
// which the model's orientation is given (Measure).
func (m *Model) Follow(measured []float64) {
	if !m.cfg.Pose || len(measured) < 12 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.seen {
		if x := measured[9+i]; !math.IsNaN(x) && !math.IsInf(x, 0) {
			m.seen[i] = x
		}
	}
	m.haveSeen = true
}

// Command implements plant.Plant: a velocity, until the timeout or the
// next. NaN and ±Inf are refused.
func (m *Model) Command(u []float64) error {
	if len(u) != 6 {
		return fmt.Errorf("mecasim: %d velocities, want 6", len(u))
	}
	for i, v := range u {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("mecasim: velocity %d is %v", i+1, v)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	copy(m.v[:], u)
	m.until = m.now + int64(m.cfg.VelTimeout)
	return nil
}

// Halt implements plant.Plant: the arm stops.
func (m *Model) Halt(plant.HaltPolicy) error {
	m.mu.Lock()
	m.advance()
	m.v = [6]float64{}
	m.mu.Unlock()
	return nil
}

// Sync puts the model's joints where measured says the robot's are, and
// takes its pose angles as Follow does.
func (m *Model) Sync(measured []float64) error {
	if len(measured) < 6 {
		return fmt.Errorf("mecasim: %d measured values, want the 6 joints first", len(measured))
	}
	for i, v := range measured[:6] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("mecasim: joint %d measured %v", i+1, v)
		}
	}
	m.mu.Lock()
	m.advance()
	copy(m.q[:], measured[:6])
	m.mu.Unlock()
	// The robot's orientation too, which the model's is given against: a
	// sync is a tick the twin does not Follow.
	m.Follow(measured)
	return nil
}
