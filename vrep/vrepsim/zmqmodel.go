package vrepsim

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labbridge/bridge/plant"
)

// ZMQModelConfig is a ZMQModel's: the scene's step and joints' speed bound
// (ZMQConfig's), how the link drives it, and where each value of the
// link's vectors comes from.
type ZMQModelConfig struct {
	Step     time.Duration
	MaxSpeed float64 // rad/s, a joint under position control
	Joints   int
	// Position: the commands are target positions (else velocities).
	Position bool
	// Stepping: the link steps the scene once per exchange (sim.step);
	// else the scene runs on its own clock, a step every Step.
	Stepping bool
	// VelTimeout: in velocity mode, a tick without a command holds the
	// velocities this long, then commands zero, as the link's driver does.
	VelTimeout time.Duration
	// Measure is, per measured value, 0 for the simulation time or j+1
	// for joint j's angle; Command, per command value, its joint.
	Measure, Command []int
}

// ZMQModel is a CoppeliaSim scene over the ZMQ remote API as the bridge
// drives it, without its socket: the ZMQ scene's world (World, the same
// dynamics) and the link's exchange (set the targets, step when stepping,
// read). It is the shadow twin's model of a ZMQ scene: it moves on the
// ticks it is told (StepTo), starts where Sync puts it, and is safe for
// concurrent use.
type ZMQModel struct {
	cfg ZMQModelConfig
	w   *World

	mu        sync.Mutex
	held      []float64 // the driver's targets, by joint
	haveHeld  bool
	stopped   bool      // velocity mode: zeroed past the timeout
	reply     []float64 // the newest read: time, then the angles
	have      bool
	fresh     int64 // the last command's tick
	now       int64 // this tick's
	origin    int64 // non-stepping: the tick the world's time counts from
	ticked    bool
	commanded bool
}

// NewZMQModel returns the scene at rest at time 0.
func NewZMQModel(cfg ZMQModelConfig) (*ZMQModel, error) {
	switch {
	case cfg.Joints < 1:
		return nil, fmt.Errorf("vrepsim: zmq model: %d joints: want at least one", cfg.Joints)
	case cfg.Step <= 0:
		return nil, fmt.Errorf("vrepsim: zmq model: step %v: want a positive duration", cfg.Step)
	case !(cfg.MaxSpeed > 0):
		return nil, fmt.Errorf("vrepsim: zmq model: max speed %v: want a positive speed (rad/s)", cfg.MaxSpeed)
	}
	for _, k := range cfg.Measure {
		if k < 0 || k > cfg.Joints {
			return nil, fmt.Errorf("vrepsim: zmq model: measured value %d: want 0 (time) or a joint, 1..%d", k, cfg.Joints)
		}
	}
	for _, j := range cfg.Command {
		if j < 0 || j >= cfg.Joints {
			return nil, fmt.Errorf("vrepsim: zmq model: command for joint %d: want 0..%d", j, cfg.Joints-1)
		}
	}
	names := make([]string, cfg.Joints)
	for j := range names {
		names[j] = fmt.Sprintf("joint%d", j+1)
	}
	return &ZMQModel{cfg: cfg, w: newWorld(names, cfg.Step, cfg.MaxSpeed),
		held: make([]float64, cfg.Joints), reply: make([]float64, cfg.Joints+1)}, nil
}

// MeasureLen implements plant.Plant.
func (m *ZMQModel) MeasureLen() int { return len(m.cfg.Measure) }

// CommandLen implements plant.Plant.
func (m *ZMQModel) CommandLen() int { return len(m.cfg.Command) }

// exchange is one tick's call of the scene; mu is held.
func (m *ZMQModel) exchange(set bool) {
	w := m.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if set {
		for j, x := range m.held {
			if m.cfg.Position {
				w.p[j], w.position[j] = x, true
			} else {
				w.v[j], w.position[j] = x, false
			}
		}
	}
	if m.cfg.Stepping {
		w.advance()
	}
	m.reply[0] = w.t
	copy(m.reply[1:], w.q)
	m.have = true
}

// idle is the exchange of a tick without a command, as the driver makes
// it (vrep.Scene.Idle); mu is held.
func (m *ZMQModel) idle() {
	switch {
	case m.cfg.Position || m.stopped:
		m.exchange(m.haveHeld)
	case m.haveHeld && m.now-m.fresh <= int64(m.cfg.VelTimeout):
		m.exchange(true)
	default:
		clear(m.held)
		m.stopped = true
		m.exchange(m.haveHeld)
	}
}

// StepTo implements plant.Stepped: a new tick. The tick before, if it had
// no command, made the driver's idle exchange; a scene on its own clock
// has run the steps of the time since.
func (m *ZMQModel) StepTo(at int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ticked && !m.commanded {
		m.idle()
	}
	if !m.cfg.Stepping {
		if !m.ticked {
			m.origin = at
		}
		m.w.mu.Lock()
		due := uint64(max(at-m.origin, 0) / int64(m.cfg.Step))
		for n := 0; m.w.steps < due && n < maxRun; n++ {
			m.w.advance()
		}
		m.w.mu.Unlock()
	}
	m.ticked, m.commanded, m.now = true, false, at
}

// maxRun bounds the steps a scene on its own clock runs in one tick: a
// twin fed after a long pause is put back on the real state, not run.
const maxRun = 1 << 12

// Measure implements plant.Plant: the newest read; NaN before the first.
func (m *ZMQModel) Measure(dst []float64) error {
	if len(dst) != len(m.cfg.Measure) {
		return fmt.Errorf("vrepsim: zmq model: measure buffer of %d values, want %d", len(dst), len(m.cfg.Measure))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	readInto(dst, m.cfg.Measure, m.reply, m.have)
	return nil
}

// Command implements plant.Plant: the targets are exchanged at once.
func (m *ZMQModel) Command(u []float64) error {
	if len(u) != len(m.cfg.Command) {
		return fmt.Errorf("vrepsim: zmq model: %d command values, want %d", len(u), len(m.cfg.Command))
	}
	if err := finite("vrepsim: zmq model: command", u); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, j := range m.cfg.Command {
		m.held[j] = u[i]
	}
	m.haveHeld, m.stopped, m.fresh, m.commanded = true, false, m.now, true
	m.exchange(true)
	return nil
}

// Halt implements plant.Plant: velocities go to zero; positions are held.
func (m *ZMQModel) Halt(plant.HaltPolicy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.cfg.Position {
		clear(m.held)
		m.stopped = true
	}
	m.exchange(m.haveHeld)
	return nil
}

// Sync puts the model on a measurement of the real scene: its time and
// angles are the newest read, which the exchange makes after its step.
// A value the link does not measure keeps the model's.
func (m *ZMQModel) Sync(measured []float64) error {
	if len(measured) != len(m.cfg.Measure) {
		return fmt.Errorf("vrepsim: zmq model: %d measured values, want %d", len(measured), len(m.cfg.Measure))
	}
	if err := finite("vrepsim: zmq model: measured", measured); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range m.cfg.Measure {
		m.reply[k] = measured[i]
	}
	m.have = true
	w := m.w
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = m.reply[0]
	copy(w.q, m.reply[1:])
	if !m.cfg.Stepping {
		// The world's clock counts from here again.
		w.steps, m.origin = 0, m.now
	}
	return nil
}

// Follow implements the twin's Follower: a stepped scene whose time in
// measured is not the model's made more or fewer steps than the ticks (a
// post superseded, an exchange that failed): the model runs or takes back
// as many steps at the targets last set, so that a joint that slips still
// shows and a lost exchange does not.
func (m *ZMQModel) Follow(measured []float64) {
	if !m.cfg.Stepping {
		return // its own clock: the time is the model's to keep
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range m.cfg.Measure {
		if k != 0 || i >= len(measured) || !m.have || math.IsNaN(measured[i]) {
			continue
		}
		steps := math.Round((measured[i] - m.reply[0]) / m.cfg.Step.Seconds())
		if steps == 0 || math.Abs(steps) > maxFollow {
			return
		}
		w := m.w
		w.mu.Lock()
		if steps > 0 {
			for range int(steps) {
				w.advance()
			}
		} else {
			// Back: the steps not made, at the speeds they were made with
			// (a position's approach is not undone exactly; a step is
			// small).
			dt := -steps * w.dt
			for j := range w.q {
				if !w.position[j] {
					w.q[j] -= w.v[j] * dt * w.gain[j]
				}
			}
			w.t -= dt
		}
		m.reply[0] = w.t
		copy(m.reply[1:], w.q)
		w.mu.Unlock()
		return
	}
}
