// Package sim is the virtual Emio lab: simulated devices that stand in for the
// real ones so the whole bridge runs on a machine with no hardware. Motors is
// the in-memory plant of N first-order position-controlled motors with a
// linear marker model (markers = Y0 + J·q, in mm), enough for a Simulink-style
// Jacobian controller to close the loop (docs/simulink-udp.md §9.2).
package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/plant"
)

// Clock gives monotonic nanoseconds.
type Clock interface{ Now() int64 }

var (
	// ErrUnplugged is returned while the simulated device is unplugged.
	ErrUnplugged = errors.New("sim: device unplugged")
	// ErrCommand is returned for a command of the wrong length or holding NaN/Inf.
	ErrCommand = errors.New("sim: bad command")
	// ErrConfig is returned for an invalid MotorsConfig.
	ErrConfig = errors.New("sim: invalid configuration")
)

// MotorsConfig describes the simulated motors and markers.
type MotorsConfig struct {
	// Motors is the number of motors (4 on the Emio).
	Motors int
	// TimeConstant is the first-order response of each motor to its goal.
	TimeConstant time.Duration
	// MaxSpeed bounds each motor's speed (rad/s; 0: unbounded), as a
	// servo's Profile Velocity does: with TimeConstant 0, a motor goes to
	// its goal at this speed (a Dynamixel's velocity profile).
	MaxSpeed float64
	// Initial is the starting angle of each motor (rad); nil = zeros.
	Initial []float64
	// Markers is the number of tracked markers (nb_markers).
	Markers int
	// Y0 is the marker vector at q = 0 (3·Markers values, mm).
	Y0 []float64
	// J maps motor angles to marker displacement: (3·Markers)×Motors, row
	// major, mm/rad.
	J []float64
	// Source, if set, gives the markers from the angles instead of Y0 and J
	// (the lab's Kinematics, for a twin of the simulated lab).
	Source emio.MarkerSource
}

// DefaultEmio is a 4-motor, 1-marker model. Its J has orthogonal rows, so its
// pseudo-inverse is exact and a Jacobian controller converges.
func DefaultEmio() MotorsConfig {
	return MotorsConfig{
		Motors:       4,
		TimeConstant: 60 * time.Millisecond,
		Markers:      1,
		Y0:           []float64{2, -141, -6},
		J: []float64{
			40, -40, 40, -40,
			30, 30, -30, -30,
			-50, -50, -50, -50,
		},
	}
}

func (c *MotorsConfig) validate() error {
	switch {
	case c.Motors < 1 || c.Motors > 64:
		return fmt.Errorf("%w: motors = %d, want 1..64", ErrConfig, c.Motors)
	case c.TimeConstant < 0 || c.TimeConstant > time.Minute:
		return fmt.Errorf("%w: time_constant = %v, want 0..1m", ErrConfig, c.TimeConstant)
	case !(c.MaxSpeed >= 0) || math.IsInf(c.MaxSpeed, 0):
		return fmt.Errorf("%w: max speed = %v rad/s, want 0 (unbounded) or more", ErrConfig, c.MaxSpeed)
	case c.Initial != nil && len(c.Initial) != c.Motors:
		return fmt.Errorf("%w: initial has %d values, want %d", ErrConfig, len(c.Initial), c.Motors)
	case c.Markers < 0 || c.Markers > 16:
		return fmt.Errorf("%w: markers = %d, want 0..16", ErrConfig, c.Markers)
	case c.Source != nil:
		// The source gives the markers; Y0 and J are not used.
	case c.Markers > 0 && len(c.Y0) != 3*c.Markers:
		return fmt.Errorf("%w: y0 has %d values, want %d", ErrConfig, len(c.Y0), 3*c.Markers)
	case c.Markers > 0 && len(c.J) != 3*c.Markers*c.Motors:
		return fmt.Errorf("%w: j has %d values, want %d", ErrConfig, len(c.J), 3*c.Markers*c.Motors)
	}
	for i, v := range append(append(append([]float64{}, c.Initial...), c.Y0...), c.J...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: value %d is %v", ErrConfig, i, v)
		}
	}
	return nil
}

// Motors is the in-memory plant. It satisfies plant.Plant and
// plant.Reopener. Measure and Command do not allocate.
type Motors struct {
	cfg   MotorsConfig
	clock Clock

	mu      sync.Mutex
	q, goal []float64
	last    int64
	// stepped: the link gives the time (StepTo), the tick's deadline;
	// now is it.
	stepped   bool
	now       int64
	torque    bool
	unplugged bool
	// stuck motors keep their goal whatever they are commanded: a servo
	// whose gear or horn jammed (a fault for the shadow twin to find).
	stuck    []bool
	commands uint64
	markers  emio.MarkerSource

	measureLen int
}

// NewMotors returns motors at their initial angles, torque on, holding there.
func NewMotors(cfg MotorsConfig, clock Clock) (*Motors, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Motors{cfg: cfg, clock: clock, q: make([]float64, cfg.Motors), goal: make([]float64, cfg.Motors), torque: true, stuck: make([]bool, cfg.Motors),
		measureLen: emio.Layout(cfg.Markers, cfg.Motors).MeasureLen()}
	if cfg.Markers > 0 && cfg.Source != nil {
		m.markers = cfg.Source
	} else if cfg.Markers > 0 {
		lm, err := NewLinearMarkers(cfg.Y0, cfg.J, cfg.Motors)
		if err != nil {
			return nil, err
		}
		m.markers = lm
	}
	copy(m.q, cfg.Initial)
	copy(m.goal, cfg.Initial)
	m.last = clock.Now()
	return m, nil
}

// Layout implements plant.Describer: the Emio's (emio.Layout), markers then
// angles.
func (m *Motors) Layout() plant.Layout { return emio.Layout(m.cfg.Markers, m.cfg.Motors) }

// MeasureLen implements plant.Plant.
func (m *Motors) MeasureLen() int { return m.measureLen }

// CommandLen implements plant.Plant.
func (m *Motors) CommandLen() int { return m.cfg.Motors }

// StepTo implements plant.Stepped: from the first call on, the motors move
// on the link's tick deadlines instead of the clock, so that the same
// commands on the same ticks give the same angles, bit for bit.
func (m *Motors) StepTo(deadline int64) {
	m.mu.Lock()
	if !m.stepped {
		// The angles have moved on the clock until now: go on from here.
		m.stepped, m.last = true, deadline
	}
	m.now = deadline
	m.mu.Unlock()
}

// advance integrates the first-order response up to now: the clock's, or
// the last tick's deadline once stepped.
func (m *Motors) advance() {
	now := m.clock.Now()
	if m.stepped {
		now = m.now
	}
	dt := now - m.last
	m.last = now
	if dt <= 0 || !m.torque {
		return
	}
	k := 0.0
	if tc := m.cfg.TimeConstant; tc > 0 {
		k = math.Exp(-float64(dt) / float64(tc))
	}
	step := m.cfg.MaxSpeed * float64(dt) / 1e9
	for i := range m.q {
		q := m.goal[i] + (m.q[i]-m.goal[i])*k
		if step > 0 {
			q = m.q[i] + max(-step, min(step, q-m.q[i]))
		}
		m.q[i] = q
	}
}

// Measure implements plant.Plant.
func (m *Motors) Measure(dst []float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unplugged {
		return ErrUnplugged
	}
	if len(dst) != m.MeasureLen() {
		return fmt.Errorf("sim: measure buffer of %d values, want %d", len(dst), m.MeasureLen())
	}
	m.advance()
	n := len(dst) - len(m.q) // the markers come first (emio.Layout)
	if m.markers != nil {
		m.markers.Markers(m.q, dst[:n])
	}
	copy(dst[n:], m.q)
	return nil
}

// Command implements plant.Plant: the goal angles. A NaN, ±Inf or a command
// of the wrong length is refused and the previous goal is kept.
func (m *Motors) Command(u []float64) error {
	if len(u) != m.cfg.Motors {
		return fmt.Errorf("%w: %d values, want %d", ErrCommand, len(u), m.cfg.Motors)
	}
	for i, v := range u {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: motor %d goal %v", ErrCommand, i, v)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unplugged {
		return ErrUnplugged
	}
	m.advance()
	for i, v := range u {
		if !m.stuck[i] {
			m.goal[i] = v
		}
	}
	m.torque = true
	m.commands++
	return nil
}

// Stick makes motor i (0-based) keep its goal whatever it is commanded,
// or, with stuck false, follow its commands again.
func (m *Motors) Stick(i int, stuck bool) error {
	if i < 0 || i >= len(m.q) {
		return fmt.Errorf("%w: motor %d of %d", ErrCommand, i+1, len(m.q))
	}
	m.mu.Lock()
	m.advance()
	// Stuck where it is now, not where it was going.
	m.goal[i], m.stuck[i] = m.q[i], stuck
	m.mu.Unlock()
	return nil
}

// Halt implements plant.Plant: hold keeps the goal, torque off lets go.
func (m *Motors) Halt(p plant.HaltPolicy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	if p == plant.HaltTorqueOff {
		m.torque = false
	}
	return nil
}

// Reopen implements plant.Reopener: it fails while unplugged.
func (m *Motors) Reopen(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unplugged {
		return ErrUnplugged
	}
	m.last = m.clock.Now()
	return nil
}

// Sync sets the angles to the ones in a measurement of the Emio's layout
// (the motors come last), holding there: a shadow twin starts from the real
// robot's state, and is put back on it after a divergence.
func (m *Motors) Sync(measured []float64) error {
	if len(measured) != m.MeasureLen() {
		return fmt.Errorf("sim: a measurement of %d values, want %d", len(measured), m.MeasureLen())
	}
	q := measured[len(measured)-len(m.q):]
	for i, v := range q {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: motor %d angle %v", ErrCommand, i, v)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	copy(m.q, q)
	copy(m.goal, q)
	return nil
}

// Unplug makes every access fail until Plug, as a pulled USB adapter does.
func (m *Motors) Unplug() { m.mu.Lock(); m.unplugged = true; m.mu.Unlock() }

// Plug ends Unplug.
func (m *Motors) Plug() { m.mu.Lock(); m.unplugged = false; m.mu.Unlock() }

// State copies the angles and goals, and reports torque and the number of
// commands applied.
func (m *Motors) State(q, goal []float64) (torque bool, commands uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	copy(q, m.q)
	copy(goal, m.goal)
	return m.torque, m.commands
}
