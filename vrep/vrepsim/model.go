package vrepsim

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labbridge/bridge/plant"
)

// AZModelConfig is an AZModel's: the scene's step, the link's velocity
// timeout, and where each value of the link's vectors comes from.
type AZModelConfig struct {
	Step, VelTimeout time.Duration
	// Measure is, per measured value, 0 for the simulation time or j+1
	// for joint j's angle; Command, per command value, its joint.
	Measure, Command []int
}

// AZModel is the seed's two-wheel scene as the bridge drives it, without
// its socket: each tick's exchange sets the wheels' speeds, answers the
// angles before the step, then steps; the link measures the newest answer.
// A tick without a command exchanges the held speeds until the velocity
// timeout, then zero, as the driver does. It is the shadow twin's model of
// an AZ scene: it moves on the ticks it is told (StepTo), starts where Sync
// puts it, and is safe for concurrent use.
type AZModel struct {
	cfg AZModelConfig

	mu           sync.Mutex
	t            float64    // the scene's time
	q, v, held   [2]float64 // angles, speeds set, the driver's held command
	reply        [3]float64 // the newest answer: time, left, right
	now, fresh   int64
	lastTick     int64
	commanded    bool // a command was exchanged this tick
	ticked, have bool
}

// NewAZModel returns the scene at rest at time 0.
func NewAZModel(cfg AZModelConfig) (*AZModel, error) {
	for _, k := range cfg.Measure {
		if k < 0 || k > 2 {
			return nil, fmt.Errorf("vrepsim: model: measured value %d: want 0 (time) or a joint, 1 or 2", k)
		}
	}
	for _, j := range cfg.Command {
		if j < 0 || j > 1 {
			return nil, fmt.Errorf("vrepsim: model: command for joint %d: want 0 or 1", j)
		}
	}
	if cfg.Step <= 0 {
		return nil, fmt.Errorf("vrepsim: model: step %v: want a positive duration", cfg.Step)
	}
	return &AZModel{cfg: cfg}, nil
}

// MeasureLen implements plant.Plant.
func (m *AZModel) MeasureLen() int { return len(m.cfg.Measure) }

// CommandLen implements plant.Plant.
func (m *AZModel) CommandLen() int { return len(m.cfg.Command) }

// exchange is one call of the scene; mu is held.
func (m *AZModel) exchange(speeds [2]float64) {
	m.v = speeds
	m.reply = [3]float64{m.t, m.q[0], m.q[1]}
	m.have = true
	dt := m.cfg.Step.Seconds()
	for j := range m.q {
		m.q[j] += m.v[j] * dt
	}
	m.t += dt
}

// StepTo implements plant.Stepped: a new tick. The tick before, if it
// exchanged no command, exchanged the held speeds (zero past the timeout).
func (m *AZModel) StepTo(at int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ticked && !m.commanded {
		speeds := m.held
		if m.lastTick-m.fresh > int64(m.cfg.VelTimeout) {
			speeds = [2]float64{}
		}
		m.exchange(speeds)
	}
	m.ticked, m.commanded, m.lastTick, m.now = true, false, at, at
}

// Measure implements plant.Plant: the newest answer; NaN before the first.
func (m *AZModel) Measure(dst []float64) error {
	if len(dst) != len(m.cfg.Measure) {
		return fmt.Errorf("vrepsim: model: measure buffer of %d values, want %d", len(dst), len(m.cfg.Measure))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	readInto(dst, m.cfg.Measure, m.reply[:], m.have)
	return nil
}

// Command implements plant.Plant: the speeds are exchanged at once.
func (m *AZModel) Command(u []float64) error {
	if len(u) != len(m.cfg.Command) {
		return fmt.Errorf("vrepsim: model: %d command values, want %d", len(u), len(m.cfg.Command))
	}
	if err := finite("vrepsim: model: command", u); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, j := range m.cfg.Command {
		m.held[j] = u[i]
	}
	m.fresh, m.commanded = m.now, true
	m.exchange(m.held)
	return nil
}

// Halt implements plant.Plant: the wheels stop.
func (m *AZModel) Halt(plant.HaltPolicy) error {
	m.mu.Lock()
	m.held = [2]float64{}
	m.exchange(m.held)
	m.mu.Unlock()
	return nil
}

// Sync puts the model on a measurement of the real scene: its time and
// angles (the answer), and the angles after the step that answer began,
// at the speeds last set.
func (m *AZModel) Sync(measured []float64) error {
	if len(measured) != len(m.cfg.Measure) {
		return fmt.Errorf("vrepsim: model: %d measured values, want %d", len(measured), len(m.cfg.Measure))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := finite("vrepsim: model: measured", measured); err != nil {
		return err
	}
	for i, k := range m.cfg.Measure {
		m.reply[k] = measured[i]
	}
	m.have = true
	dt := m.cfg.Step.Seconds()
	m.t = m.reply[0] + dt
	for j := range m.q {
		m.q[j] = m.reply[j+1] + m.v[j]*dt
	}
	return nil
}

// Follow implements the twin's Follower: a scene whose time in measured
// is not the model's made more or fewer exchanges than the ticks (a post
// superseded, an exchange that failed, or one answered a tick late): the
// model moves its time and angles by as many steps at the speeds last set,
// so that a joint that slips still shows and a lost exchange does not.
func (m *AZModel) Follow(measured []float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range m.cfg.Measure {
		if k != 0 || i >= len(measured) || !m.have || math.IsNaN(measured[i]) {
			continue
		}
		dt := m.cfg.Step.Seconds()
		steps := math.Round((measured[i] - m.reply[0]) / dt)
		if steps == 0 || math.Abs(steps) > maxFollow {
			return
		}
		m.t += steps * dt
		m.reply[0] += steps * dt
		for j := range m.q {
			m.q[j] += m.v[j] * steps * dt
			m.reply[j+1] += m.v[j] * steps * dt
		}
		return
	}
}

// maxFollow bounds the steps Follow moves by: a scene restarted or far off
// is the twin's to find, not to follow.
const maxFollow = 20

// readInto fills dst from reply by index (0 the time, j+1 joint j): the
// newest read, or NaN before the first.
func readInto(dst []float64, measure []int, reply []float64, have bool) {
	for i, k := range measure {
		dst[i] = math.NaN()
		if have {
			dst[i] = reply[k]
		}
	}
}

// finite refuses a NaN or an infinite value, naming what and where.
func finite(what string, v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%s value %d is %v", what, i, x)
		}
	}
	return nil
}
