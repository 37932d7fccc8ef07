// Package emio is the Emio robot as a plant of the bridge loop: four
// XM430-W210 servos on a Dynamixel bus (docs/dynamixel.md §9: IDs 0–3,
// position mode, profile velocity 1000, emioapi's angle convention) and the
// marker vector that goes with them (docs/simulink-udp.md §2). Its Layout is
// the one place that says how an Emio measurement is laid out.
package emio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/plant"
)

// Layout is the Emio's measurement and command (docs/simulink-udp.md §2):
// 3 coordinates per marker (mm), then one angle per motor (rad); the command
// is one goal angle per motor (rad). emioapi's datagrams carry exactly this.
func Layout(markers, motors int) plant.Layout {
	return plant.Layout{
		Measure: []plant.Field{{Name: "markers", Unit: "mm", Len: 3 * markers}, {Name: "angles", Unit: "rad", Len: motors}},
		Command: []plant.Field{{Name: "angles", Unit: "rad", Len: motors}},
	}
}

// MarkerSource fills the marker part of a measurement (3 values per marker,
// mm). The simulated lab computes it from the motor angles q; a camera
// ignores q.
type MarkerSource interface {
	Markers(q, dst []float64)
}

// markerLatcher is a marker source that a goroutine keeps newest (a camera):
// Motors.Latch takes its vector at the send instant through LatchMarkers,
// which also records what was taken.
type markerLatcher interface {
	LatchMarkers(q, dst []float64)
}

// Config describes the servos.
type Config struct {
	// IDs of the motors, in measurement and command order (Emio: 0, 1, 2, 3).
	IDs []byte
	// Mode is position (3) or extended position (4).
	Mode dynamixel.OperatingMode
	// ProfileVelocity is written at open (emioapi writes 1000, ×0.229 rpm).
	ProfileVelocity int64
	// Markers is nb_markers; Source fills them (nil: zeros).
	Markers int
	Source  MarkerSource
	// Fast tries Fast Sync Read (firmware 45+), falling back to Sync Read.
	Fast bool
	// Bus is the line's timing; the return delay is read from the servos. A
	// zero LatencyTimer takes the adapter's (at least 1 ms), else 16 ms.
	Bus dynamixel.BusConfig
	// Port is the serial port spec (a path, a /dev/serial/by-id name,
	// usb:VID:PID[:SERIAL] or auto), resolved again at each open, so that an
	// adapter that comes back under another name is found.
	Port string
	// Open, if set, opens the port instead (simulated servos, tests).
	Open func() (dynamixel.Port, error)
	// MaxMisses is how many reads in a row may go unanswered before the
	// device counts as failed; meanwhile the last positions are held. A lone
	// late reply then costs a tick, not a reopen. 0 means 3.
	MaxMisses int
	// StatusEvery is how many ticks (Measure calls) pass between two status
	// reads, each one register of one servo after the group read: never
	// more than one extra transaction in a tick (see Servos). 0 means
	// max(1, 30/len(IDs)): each servo's temperature about once a second at
	// emioapi's 30 Hz (docs/simulink-udp.md §7); a link at another rate
	// wants rate/len(IDs). Negative turns status reads off.
	StatusEvery int
	// Period is the link's tick period: a rejoin (RejoinSpeed) moves each
	// goal at most RejoinSpeed·Period per Command. 0 means 1/30 s
	// (emioapi's rate).
	Period time.Duration
	// RejoinSpeed (rad/s) bounds how fast the goals go to the command after
	// a set-up that held servos where they stood (the first open, a power
	// cycle, a resume), until every goal has reached it (see Command). 0
	// means DefaultRejoinSpeed; else MinRejoinSpeed..MaxRejoinSpeed.
	RejoinSpeed float64
	// Link is the link's name, for the messages that tell a person what to
	// run (`bridge resume LINK`).
	Link string
	// Logger receives the open sequence (never the loop).
	Logger *slog.Logger
}

// The rejoin speed (rad/s) after a power cycle (docs/dynamixel.md §17).
const (
	// DefaultRejoinSpeed is about 57°/s: a 57° gap takes a second.
	DefaultRejoinSpeed = 1.0
	// MinRejoinSpeed and MaxRejoinSpeed bound Config.RejoinSpeed. There is
	// no "off": 10 rad/s is beyond what an XM430-W210 turns (about
	// 8 rad/s at 12 V), which rejoins as fast as the servo can.
	MinRejoinSpeed = 0.05
	MaxRejoinSpeed = 10.0
)

// ServoStatus is what the ticks learnt about one servo, for a watcher off
// the tick (Motors.Servos).
type ServoStatus struct {
	ID byte
	// TemperatureC is Present Temperature (address 146) and LimitC
	// Temperature Limit (address 31), in °C; NaN until read.
	TemperatureC, LimitC float64
	// HardwareError is Hardware Error Status (address 70), read when the
	// servo raises its Alert bit and again every round while it lasts (by
	// each Reopen while the servos are stopped); 0 once the Alert bit is
	// gone (it mirrors a non-zero status, docs/dynamixel.md §4).
	HardwareError dynamixel.HardwareError
	// Alerts counts the servo's replies that carried the Alert bit.
	Alerts uint64
	// MissedReads counts the position reads the servo spoilt: it was the
	// first of the group not to answer (those after it wait for it,
	// docs/dynamixel.md §6), or it answered with an error number. A failed
	// read that names no servo (a corrupt reply) counts for every servo.
	MissedReads uint64
	// StatusErrors counts the servo's status reads that failed; the values
	// read before are kept.
	StatusErrors uint64
	// Alerting is true while the servo's replies carry the Alert bit.
	Alerting bool
	// Stopped is true while the servo's hardware error keeps the Emio
	// stopped until a person resumes it (Motors.Resume).
	Stopped bool
}

// Hot reports whether the servo overheats: its hardware error says so, or
// its temperature has reached its limit.
func (s ServoStatus) Hot() bool {
	over := s.HardwareError&dynamixel.HWOverheating != 0
	atLimit := !math.IsNaN(s.TemperatureC) && !math.IsNaN(s.LimitC) && s.TemperatureC >= s.LimitC
	return over || atLimit
}

// Faults is the servo's hardware error besides overheating (which Hot
// says): what keeps it alerting.
func (s ServoStatus) Faults() dynamixel.HardwareError {
	return s.HardwareError &^ dynamixel.HWOverheating
}

// Temperature says the servo's temperature and limit as a person reads
// them: "52 °C, limit 80 °C", or that it is not read yet.
func (s ServoStatus) Temperature() string {
	switch {
	case math.IsNaN(s.TemperatureC):
		return "temperature not read yet"
	case math.IsNaN(s.LimitC):
		return fmt.Sprintf("%.0f °C", s.TemperatureC)
	}
	return fmt.Sprintf("%.0f °C, limit %.0f °C", s.TemperatureC, s.LimitC)
}

// servoState is one servo's ServoStatus, written by the tick and read from
// any goroutine.
type servoState struct {
	tempC, limitC  atomic.Int32 // -1 until read
	hw             atomic.Uint32
	alerts, missed atomic.Uint64
	statusErrs     atomic.Uint64
	alerting       atomic.Bool
}

var (
	// ErrConfig is an invalid Config.
	ErrConfig = errors.New("emio: invalid configuration")
	// ErrModel is a servo that is not the expected model.
	ErrModel = errors.New("emio: unexpected servo model")
	// ErrClosed is an access to motors that are not open.
	ErrClosed = errors.New("emio: motors not open")
)

// Motors is the plant: Measure reads present positions with one group read,
// Command writes goal positions with one sync write, both without
// allocating. It satisfies plant.Plant, plant.Reopener and plant.Resumer.
type Motors struct {
	cfg    Config
	log    *slog.Logger
	port   dynamixel.Port
	bus    *dynamixel.Bus
	group  *dynamixel.Group
	pulses []int32 // present positions, as last read
	goals  []int32 // Command's goal positions
	q      []float64
	minP   int32
	maxP   int32
	misses int
	missed atomic.Uint64
	ready  interface{ Ready() bool } // the marker source's, when it has one
	lacker plant.Lacker              // the marker source's, when it says what it lacks
	// latcher is the marker source's LatchMarkers, when it has one.
	latcher markerLatcher

	measureLen int

	// servos is what Servos reports, one per ID, in IDs order.
	servos []servoState
	// The status reads' schedule: the tick's own, no atomics.
	statusEvery int
	sinceStatus int
	rr          int    // the round robin's next servo
	limitRead   []bool // Temperature Limit read since open
	hwDue       []bool // Hardware Error Status to read
	alerting    []bool // the last reply carried the Alert bit
	reg         [1]byte

	// The rejoin after a set-up that held servos where they stood
	// (Command): each goal moves at most step pulses per Command from
	// rejoinGoal (fractional, so that a slow rejoin loses nothing to
	// rounding) until all have reached the command. The loop's, but for
	// rejoining, which watchers read.
	rejoin     bool
	rejoining  atomic.Bool
	step       float64
	rejoinGoal []float64
	// opened is set after the first set-up: a later one that finds every
	// servo holding leaves the rejoin as it was.
	opened bool

	// The stop a servo's hardware error latches (stop.go): bit i of
	// stopped is servo i; resume is a person's request to end it.
	stopped atomic.Uint32
	resume  atomic.Bool
	// stopErrs is each servo's error for a tick that finds it stopped,
	// made at New so that the tick allocates nothing.
	stopErrs []error
	// stopHW is the hardware error each stopped servo reported and
	// stopTorque its Torque Enable (-1 unread), for the message of a
	// latched Reopen; written by the tick or by Reopen, never at once.
	stopHW     []dynamixel.HardwareError
	stopTorque []int8
}

// The counts and ranges of an Emio-shaped arm.
const (
	// MaxServos bounds Config.IDs: one Dynamixel bus.
	MaxServos = 16
	// MaxMarkers bounds Config.Markers (the shipped models use 1 or 2).
	MaxMarkers = 16
	// MaxProfileVelocity is Profile Velocity's range (× 0.229 rpm).
	MaxProfileVelocity = 32767
	// DefaultMin and DefaultMax are the command range of each servo (rad)
	// that a link clamps to by default: a quarter turn either way of the
	// centre, the Emio's legs' travel.
	DefaultMin, DefaultMax = -math.Pi / 2, math.Pi / 2
)

// DefaultConfig is the Emio as emioapi drives it: servos 0–3 in position
// mode at profile velocity 1000 on a 1 Mbps bus found automatically, one
// marker, emioapi's 30 Hz. It is what the configuration file's keys
// default to; New takes the zero fields that have no meaning at zero
// (MaxMisses, StatusEvery, Period, RejoinSpeed) from it too.
func DefaultConfig() Config {
	bus := dynamixel.DefaultBusConfig()
	return Config{IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Markers: 1, Fast: true,
		Bus: dynamixel.BusConfig{Baud: bus.Baud}, Port: "auto", MaxMisses: 3, Period: time.Second / 30, RejoinSpeed: DefaultRejoinSpeed}
}

// Validate checks every field and returns one *plant.FieldError per bad value,
// joined (errors.Join), or nil.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: field, Value: v, Want: want})
	}
	if len(c.IDs) < 1 || len(c.IDs) > MaxServos {
		bad("ids", c.IDs, fmt.Sprintf("1 to %d servo IDs (the Emio: [0, 1, 2, 3])", MaxServos))
	} else {
		for i, id := range c.IDs {
			if id > dynamixel.MaxID || slices.Index(c.IDs, id) != i {
				bad("ids", c.IDs, fmt.Sprintf("distinct IDs in 0..%d", dynamixel.MaxID))
				break
			}
		}
	}
	if c.Mode != dynamixel.ModePosition && c.Mode != dynamixel.ModeExtendedPosition {
		bad("mode", c.Mode, "position or extended")
	}
	if x := c.ProfileVelocity; x < 0 || x > MaxProfileVelocity {
		bad("profile_velocity", x, fmt.Sprintf("0..%d (× 0.229 rpm; 0 = unlimited)", MaxProfileVelocity))
	}
	if x := c.RejoinSpeed; !(x >= MinRejoinSpeed && x <= MaxRejoinSpeed) {
		bad("rejoin_speed", x, fmt.Sprintf("%v..%v rad/s: how fast the servos go to the command after a power cycle (1 = 57°/s); "+
			"there is no off: %v rejoins as fast as the servos turn", MinRejoinSpeed, MaxRejoinSpeed, MaxRejoinSpeed))
	}
	if x := c.Markers; x < 0 || x > MaxMarkers {
		bad("nb_markers", x, fmt.Sprintf("0..%d (the shipped models use 1 or 2)", MaxMarkers))
	}
	if c.Bus.Baud != 0 {
		if _, err := dynamixel.BaudCode(c.Bus.Baud); err != nil {
			bad("baud", c.Bus.Baud, dynamixel.BaudList())
		}
	}
	if d := c.Bus.LatencyTimer; d < 0 || d > 255*time.Millisecond {
		bad("latency_timer", d, "0..255ms (0 = read it from the adapter, else 16ms)")
	}
	if c.Open == nil && c.Port == "" {
		bad("port", `""`, `a port spec such as "auto" or "/dev/ttyUSB0"`)
	}
	if c.Period <= 0 || c.Period > 10*time.Second {
		bad("period", c.Period, "0 < period ≤ 10s")
	}
	return errors.Join(errs...)
}

// New checks cfg (Validate) after filling its zero MaxMisses, StatusEvery,
// Period and RejoinSpeed from DefaultConfig; nothing is opened until Open.
func New(cfg Config) (*Motors, error) {
	d := DefaultConfig()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxMisses <= 0 {
		cfg.MaxMisses = d.MaxMisses
	}
	if cfg.StatusEvery == 0 {
		cfg.StatusEvery = max(1, 30/max(len(cfg.IDs), 1))
	}
	if cfg.Period == 0 {
		cfg.Period = d.Period
	}
	if cfg.RejoinSpeed == 0 {
		cfg.RejoinSpeed = d.RejoinSpeed
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := len(cfg.IDs)
	m := &Motors{cfg: cfg, log: cfg.Logger, pulses: make([]int32, n), goals: make([]int32, n), q: make([]float64, n),
		minP: 0, maxP: 4095, measureLen: Layout(cfg.Markers, n).MeasureLen(),
		servos: make([]servoState, n), statusEvery: cfg.StatusEvery,
		limitRead: make([]bool, n), hwDue: make([]bool, n), alerting: make([]bool, n),
		step:       cfg.RejoinSpeed * cfg.Period.Seconds() * dynamixel.PulsesPerRad,
		rejoinGoal: make([]float64, n),
		stopErrs:   make([]error, n), stopHW: make([]dynamixel.HardwareError, n), stopTorque: make([]int8, n)}
	for i := range m.servos {
		m.servos[i].tempC.Store(-1)
		m.servos[i].limitC.Store(-1)
		m.stopErrs[i] = &StopError{Link: cfg.Link, Servos: []StoppedServo{{ID: cfg.IDs[i], Torque: -1}}}
		m.stopTorque[i] = -1
	}
	if cfg.Mode == dynamixel.ModeExtendedPosition {
		m.minP, m.maxP = -1048575, 1048575
	}
	m.ready, _ = cfg.Source.(interface{ Ready() bool })
	m.lacker, _ = cfg.Source.(plant.Lacker)
	m.latcher, _ = cfg.Source.(markerLatcher)
	return m, nil
}

// Layout implements plant.Describer.
func (m *Motors) Layout() plant.Layout { return Layout(m.cfg.Markers, len(m.cfg.IDs)) }

// MeasureLen implements plant.Plant.
func (m *Motors) MeasureLen() int { return m.measureLen }

// CommandLen implements plant.Plant.
func (m *Motors) CommandLen() int { return len(m.cfg.IDs) }

// Open opens the port and runs emioapi's sequence, made safe: check each
// servo's model, read its return delay and firmware, torque off, operating
// mode, profile velocity, goal := present position (no jump), torque on.
// Servos found already holding, torque on in the right mode (the same robot
// after a transient fault or a replug), are left holding: nothing releases
// them. A servo in hardware error latches a stop (stop.go): nothing is
// written, and the error wraps plant.ErrStopLatched; while a stop is
// latched Open starts nothing until Resume. A port that is not there is an
// error wrapping plant.ErrAbsent.
func (m *Motors) Open(ctx context.Context) error {
	resuming := false
	if m.stopped.Load() != 0 {
		if !m.resume.Swap(false) {
			return m.stillStopped()
		}
		resuming = true
		m.log.Warn("emio: resuming after a servo's hardware error, as a person asked", "link", m.cfg.Link)
	}
	m.Close()
	err := m.open(ctx, resuming)
	if err != nil && resuming && !errors.Is(err, plant.ErrStopLatched) {
		// The request is spent: the stop stays until a person asks again.
		return m.stopError(err)
	}
	return err
}

func (m *Motors) open(ctx context.Context, resuming bool) error {
	port, bc, err := m.openPort()
	if err != nil {
		return err
	}
	if err := m.setup(ctx, port, bc, resuming); err != nil {
		if m.port == nil {
			port.Close()
		}
		return err
	}
	return nil
}

// openPort opens the line and settles its timing.
func (m *Motors) openPort() (dynamixel.Port, dynamixel.BusConfig, error) {
	bc := m.cfg.Bus
	if m.cfg.Open != nil {
		p, err := m.cfg.Open()
		if bc.LatencyTimer == 0 {
			bc.LatencyTimer = 16 * time.Millisecond
		}
		return p, bc, err
	}
	o, err := dynamixel.OpenSpec(m.cfg.Port, bc.Baud)
	if err != nil {
		if errors.Is(err, dynamixel.ErrNoPort) || dynamixel.IsDisconnect(err) {
			err = fmt.Errorf("%w: %w", plant.ErrAbsent, err)
		}
		return nil, bc, err
	}
	if advice := o.Advice(); advice != "" {
		m.log.Warn(advice)
	}
	return o.Port, o.Timing(bc), nil
}

// setup runs the open sequence on an open port. A servo in hardware error
// latches a stop and ends it before anything is written, the port kept
// open for the latched Reopens' status reads; resuming (a person asked)
// reboots the servos in error instead and goes on.
func (m *Motors) setup(ctx context.Context, port dynamixel.Port, bc dynamixel.BusConfig, resuming bool) error {
	seen := m.stopped.Load() // the stop the person resumes
	bus, err := dynamixel.NewBus(port, bc)
	if err != nil {
		return err
	}
	fast := m.cfg.Fast
	rdt := make([]byte, 1)
	var maxRDT byte
	for i, id := range m.cfg.IDs {
		if err := ctx.Err(); err != nil {
			return err
		}
		model, fw, err := bus.Ping(id)
		alert := errors.Is(err, dynamixel.ErrAlert)
		if err != nil && !alert {
			return fmt.Errorf("emio: ping motor %d: %w", id, err)
		}
		m.noteAlert(i, alert)
		if model != dynamixel.ModelXM430W210 {
			return fmt.Errorf("%w: ID %d is model %d, want XM430-W210 (%d)", ErrModel, id, model, dynamixel.ModelXM430W210)
		}
		if fw < 45 {
			fast = false
		}
		if err := bus.Read(id, dynamixel.AddrReturnDelayTime, rdt); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
			return fmt.Errorf("emio: read return delay of motor %d: %w", id, err)
		}
		maxRDT = max(maxRDT, rdt[0])
		m.log.Info("emio: motor found", "id", id, "model", model, "firmware", fw, "return_delay_us", 2*int(rdt[0]))
	}
	bc.ReturnDelay = time.Duration(maxRDT) * 2 * time.Microsecond
	if err := bus.SetConfig(bc); err != nil {
		return err
	}
	if stopped := m.stopped.Load(); stopped != 0 {
		if !resuming || stopped&^seen != 0 {
			// Nothing is written to any servo: a stop stays stopped, and
			// a person's resume covers only the errors they were told.
			m.port, m.bus, m.group = port, bus, nil
			err := m.stillStopped()
			if resuming {
				id := m.cfg.IDs[bits.TrailingZeros32(stopped&^seen)]
				err = m.stopError(fmt.Errorf("emio: servo %d reported a hardware error after the resume was asked; nothing was rebooted", id))
			}
			return err
		}
		if err := m.reboot(ctx, bus); err != nil {
			m.port, m.bus, m.group = port, bus, nil // for the latched Reopens' reads
			return err
		}
	}
	// Servos still holding (the same robot after a transient fault or a
	// replug) are taken over as they are: torque, mode and goal untouched.
	// Only the others are set up, so that one rebooted servo does not
	// release the rest.
	held := make([]bool, len(m.cfg.IDs))
	allHeld := true
	for i, id := range m.cfg.IDs {
		if held[i], err = m.holds(bus, id); err != nil {
			return err
		}
		allHeld = allHeld && held[i]
	}
	for i, id := range m.cfg.IDs {
		if held[i] {
			continue
		}
		if err := bus.Write(id, dynamixel.AddrTorqueEnable, []byte{0}); err != nil {
			return fmt.Errorf("emio: torque off motor %d: %w", id, err)
		}
		if err := bus.Write(id, dynamixel.AddrOperatingMode, []byte{byte(m.cfg.Mode)}); err != nil {
			return fmt.Errorf("emio: operating mode %v on motor %d: %w", m.cfg.Mode, id, err)
		}
	}
	g, err := bus.NewGroup(m.cfg.IDs, fast)
	if err != nil {
		return err
	}
	// A mode change zeroes the profile (docs/dynamixel.md §8): write it
	// after. It is RAM, writable with torque on: holding servos get it too,
	// in case someone power-cycled them into holding.
	prof := make([]int32, len(m.cfg.IDs))
	for i := range prof {
		prof[i] = int32(m.cfg.ProfileVelocity)
	}
	if err := g.WriteInt32(dynamixel.AddrProfileVelocity, prof); err != nil {
		return fmt.Errorf("emio: profile velocity: %w", err)
	}
	if err := g.ReadInt32(dynamixel.AddrPresentPosition, m.pulses); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
		return fmt.Errorf("emio: read positions: %w", err)
	}
	for i, id := range m.cfg.IDs {
		if held[i] {
			continue
		}
		// Goal := present position, so that torque on moves nothing.
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(m.pulses[i]))
		if err := bus.Write(id, dynamixel.AddrGoalPosition, b[:]); err != nil {
			return fmt.Errorf("emio: hold position of motor %d: %w", id, err)
		}
		if err := bus.Write(id, dynamixel.AddrTorqueEnable, []byte{1}); err != nil {
			return fmt.Errorf("emio: torque on motor %d: %w", id, err)
		}
	}
	// The goals the servos hold now: where a rejoin starts.
	if err := g.ReadInt32(dynamixel.AddrGoalPosition, m.goals); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
		return fmt.Errorf("emio: read goals: %w", err)
	}
	for i, p := range m.goals {
		m.rejoinGoal[i] = float64(p)
	}
	// A servo held where it stood (the first open, a power cycle, a
	// resume) rejoins the command at RejoinSpeed; servos that were all
	// holding (a cable glitch) go on as they were.
	if !m.opened || !allHeld {
		m.rejoin = true
		m.rejoining.Store(true)
	}
	m.opened = true
	m.port, m.bus, m.group, m.misses = port, bus, g, 0
	if m.stopped.Swap(0) != 0 {
		clear(m.stopHW)
		for i := range m.stopTorque {
			m.stopTorque[i] = -1
		}
		m.log.Warn("emio: the servos hold again after a person's resume; they rejoin the command", "link", m.cfg.Link,
			"rejoin_speed_rad_s", m.cfg.RejoinSpeed)
	}
	// The limits are read again (EEPROM someone may have changed), and the
	// error of a servo still in alert.
	m.sinceStatus, m.rr = 0, 0
	clear(m.limitRead)
	copy(m.hwDue, m.alerting)
	isFast, _ := g.Fast()
	m.log.Info("emio: motors ready", "ids", servoIDs(m.cfg.IDs), "mode", m.cfg.Mode.String(), "fast_sync_read", isFast,
		"still_holding", allHeld, "rejoin", m.rejoin)
	return nil
}

// holds reports whether servo id already holds a position: torque on in
// the configured mode, as the bridge left it before a transient fault.
func (m *Motors) holds(bus *dynamixel.Bus, id byte) (bool, error) {
	b := make([]byte, 1)
	if err := bus.Read(id, dynamixel.AddrTorqueEnable, b); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
		return false, fmt.Errorf("emio: read torque of motor %d: %w", id, err)
	}
	if b[0] != 1 {
		return false, nil
	}
	if err := bus.Read(id, dynamixel.AddrOperatingMode, b); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
		return false, fmt.Errorf("emio: read operating mode of motor %d: %w", id, err)
	}
	return dynamixel.OperatingMode(b[0]) == m.cfg.Mode, nil
}

// Measure implements plant.Plant: markers, then the motor angles (rad,
// emioapi's convention). Every StatusEvery ticks one status register is
// read after the positions (statusTick): the Hardware Error Status first
// when a servo's alert begins. A servo in alert (a hardware error) latches
// a stop: the positions are filled all the same, and the tick fails with an
// error wrapping plant.ErrStopLatched, so that the link applies nothing
// more and the other servos hold their last goal (stop.go).
func (m *Motors) Measure(dst []float64) error {
	if m.group == nil {
		return ErrClosed
	}
	if len(dst) != m.MeasureLen() {
		return fmt.Errorf("emio: measure buffer of %d values, want %d", len(dst), m.MeasureLen())
	}
	// The raw read leaves the Alert bits in Errs: no error value, no
	// allocation, while a servo stays in alert.
	if err := m.group.ReadInt32Raw(dynamixel.AddrPresentPosition, m.pulses); err != nil {
		if errors.Is(err, dynamixel.ErrPort) {
			return err // unplugged: no point waiting
		}
		// A missed or corrupt reply: hold the last positions for a few
		// ticks before giving up on the device.
		m.missed.Add(1)
		m.blame(err)
		if m.misses++; m.misses >= m.cfg.MaxMisses {
			m.misses = 0
			return err
		}
	} else {
		m.misses = 0
		for i, e := range m.group.Errs() {
			m.noteReply(i, e)
		}
		m.statusTick()
	}
	n := len(dst) - len(m.q) // the markers come first (Layout)
	for i, p := range m.pulses {
		m.q[i] = dynamixel.PulseToRad(p)
	}
	copy(dst[n:], m.q)
	if m.cfg.Source != nil {
		m.cfg.Source.Markers(m.q, dst[:n])
	} else {
		clear(dst[:n])
	}
	return m.stopErr()
}

// blame counts a failed position read against the servo that spoilt it:
// the first that did not answer, or one that answered with an error
// number. A failure that names none counts for every servo.
func (m *Motors) blame(err error) {
	var te *dynamixel.TimeoutError
	var se *dynamixel.StatusError
	id, known := byte(0), false
	switch {
	case errors.As(err, &te):
		id, known = te.Servo()
	case errors.As(err, &se):
		id, known = se.ID, true
	}
	for i := range m.servos {
		if !known || m.cfg.IDs[i] == id {
			m.servos[i].missed.Add(1)
		}
	}
}

// noteReply records the error byte of servo i's reply: the alerts, and
// the start and end of an alert.
func (m *Motors) noteReply(i int, errByte byte) {
	m.noteAlert(i, errByte&dynamixel.AlertBit != 0)
}

// noteAlert records whether servo i's last reply carried the Alert bit. An
// alert latches the servo's stop.
func (m *Motors) noteAlert(i int, alert bool) {
	s := &m.servos[i]
	if alert {
		s.alerts.Add(1)
		m.latch(i)
	}
	switch {
	case alert && !m.alerting[i]:
		m.alerting[i], m.hwDue[i] = true, true
		s.alerting.Store(true)
	case !alert && m.alerting[i]:
		// The Alert bit is Hardware Error Status ≠ 0 (docs/dynamixel.md
		// §4): its end says the status is 0 without a read.
		m.alerting[i], m.hwDue[i] = false, false
		s.hw.Store(0)
		s.alerting.Store(false)
	}
}

// statusTick runs the status read of every StatusEvery-th tick.
func (m *Motors) statusTick() {
	if m.statusEvery < 0 {
		return
	}
	if m.sinceStatus++; m.sinceStatus < m.statusEvery {
		return
	}
	m.sinceStatus = 0
	i, addr := m.nextStatus()
	s := &m.servos[i]
	errByte, err := m.bus.ReadRaw(m.cfg.IDs[i], addr, m.reg[:])
	if err != nil {
		// Never the tick's failure: counted, the old value kept, the
		// register read again in its turn (an alert's error at once).
		s.statusErrs.Add(1)
		if addr == dynamixel.AddrHardwareErrorStatus && m.alerting[i] {
			m.hwDue[i] = true
		}
		return
	}
	m.noteReply(i, errByte)
	v := m.reg[0]
	switch addr {
	case dynamixel.AddrPresentTemperature:
		s.tempC.Store(int32(v))
	case dynamixel.AddrTemperatureLimit:
		s.limitC.Store(int32(v))
		m.limitRead[i] = true
	case dynamixel.AddrHardwareErrorStatus:
		m.noteHW(i, v)
	}
}

// noteHW records servo i's Hardware Error Status v, read while it is in
// alert.
func (m *Motors) noteHW(i int, v byte) {
	if !m.alerting[i] {
		return
	}
	m.servos[i].hw.Store(uint32(v))
	if m.stopped.Load()&(1<<i) != 0 {
		m.stopHW[i] |= dynamixel.HardwareError(v)
	}
}

// nextStatus picks the register of this status read: first the Hardware
// Error Status of a servo whose alert began, or goes on into a new round;
// else the round robin over the servos, each one's Temperature Limit once
// after open and then its Present Temperature.
func (m *Motors) nextStatus() (int, uint16) {
	for i, due := range m.hwDue {
		if due {
			m.hwDue[i] = false
			return i, dynamixel.AddrHardwareErrorStatus
		}
	}
	i := m.rr
	if !m.limitRead[i] {
		return i, dynamixel.AddrTemperatureLimit // its temperature comes next
	}
	if m.rr++; m.rr == len(m.servos) {
		m.rr = 0
		copy(m.hwDue, m.alerting)
	}
	return i, dynamixel.AddrPresentTemperature
}

// Servos appends each servo's status to dst, in IDs order, and returns it;
// it allocates nothing when dst has room. Safe from any goroutine while
// the loop runs.
func (m *Motors) Servos(dst []ServoStatus) []ServoStatus {
	stopped := m.stopped.Load()
	for i, id := range m.cfg.IDs {
		s := &m.servos[i]
		dst = append(dst, ServoStatus{
			ID: id, TemperatureC: celsius(s.tempC.Load()), LimitC: celsius(s.limitC.Load()),
			HardwareError: dynamixel.HardwareError(s.hw.Load()),
			Alerts:        s.alerts.Load(), MissedReads: s.missed.Load(), StatusErrors: s.statusErrs.Load(),
			Alerting: s.alerting.Load(), Stopped: stopped&(1<<i) != 0,
		})
	}
	return dst
}

// celsius is a register's reading, NaN while unread (negative).
func celsius(v int32) float64 {
	if v < 0 {
		return math.NaN()
	}
	return float64(v)
}

// Latch implements plant.Latcher: the link calls it right before the
// datagram leaves, so that the markers are the newest the camera published
// by then, not those of the servo read's start.
func (m *Motors) Latch(dst []float64) {
	if len(dst) != m.MeasureLen() || m.cfg.Source == nil {
		return
	}
	n := len(dst) - len(m.q)
	if m.latcher != nil {
		m.latcher.LatchMarkers(m.q, dst[:n])
	} else {
		m.cfg.Source.Markers(m.q, dst[:n])
	}
}

// Ready implements plant.Readier: the measurement is complete once the
// marker source (a camera) has one; a source without Ready always has.
func (m *Motors) Ready() bool {
	return m.ready == nil || m.ready.Ready()
}

// Lack implements plant.Lacker: what the marker source (a camera) lacks,
// in its words; nil when the source has no lack to tell.
func (m *Motors) Lack() error {
	switch {
	case m.lacker != nil:
		return m.lacker.Lack()
	case m.ready != nil && !m.ready.Ready():
		return errMarkersNotReady
	}
	return nil
}

// errMarkersNotReady is the lack of a marker source that cannot say more.
var errMarkersNotReady = errors.New("emio: waiting for the marker source's first markers")

// Missed returns how many position reads went unanswered in all (Servos
// tells which servo spoilt them).
func (m *Motors) Missed() uint64 { return m.missed.Load() }

// Command implements plant.Plant: goal positions from angles. NaN, ±Inf and
// angles beyond the pulse range are refused whole; pulses are clamped to the
// mode's position range. While a stop is latched nothing is written.
//
// After a set-up that held servos where they stood (the first open, a power
// cycle, a resume: goal := present position) the command may be far from
// the goals: each goal then moves at most RejoinSpeed·Period from the
// previous one per Command ("rejoin"), until every goal has reached the
// command; from then on commands pass straight through, as emioapi's do
// (docs/dynamixel.md §17, "After a power cycle").
func (m *Motors) Command(u []float64) error {
	if m.group == nil {
		return ErrClosed
	}
	if err := m.stopErr(); err != nil {
		return err
	}
	if len(u) != len(m.goals) {
		return fmt.Errorf("emio: %d commands for %d motors", len(u), len(m.goals))
	}
	for i, rad := range u {
		if math.IsNaN(rad) || math.IsInf(rad, 0) {
			return fmt.Errorf("emio: motor %d goal %v: %w", m.cfg.IDs[i], rad, dynamixel.ErrRange)
		}
	}
	for i, rad := range u {
		p, err := dynamixel.RadToPulse(rad)
		if err != nil {
			return err
		}
		m.goals[i] = min(max(p, m.minP), m.maxP)
	}
	joined := true
	if m.rejoin {
		for i, p := range m.goals {
			g, d := m.rejoinGoal[i], float64(p)-m.rejoinGoal[i]
			switch {
			case d > m.step:
				g += m.step
			case d < -m.step:
				g -= m.step
			default:
				g = float64(p)
			}
			m.rejoinGoal[i] = g
			if g != float64(p) {
				joined = false
				m.goals[i] = int32(math.Round(g))
			}
		}
	}
	if err := m.group.WriteInt32(dynamixel.AddrGoalPosition, m.goals); err != nil {
		return err
	}
	if m.rejoin && joined {
		m.rejoin = false
		m.rejoining.Store(false)
	}
	return nil
}

// Rejoining reports whether the goals are still on their way to the
// command after a set-up (see Command). Safe from any goroutine.
func (m *Motors) Rejoining() bool { return m.rejoining.Load() }

// Halt implements plant.Plant: hold leaves the servos on their last goal,
// torque off releases them.
func (m *Motors) Halt(p plant.HaltPolicy) error {
	if m.bus == nil || p != plant.HaltTorqueOff {
		return nil
	}
	off := make([]byte, len(m.cfg.IDs))
	return m.bus.SyncWrite(dynamixel.AddrTorqueEnable, 1, m.cfg.IDs, off)
}

// Reopen implements plant.Reopener: close the old port, open it again by
// name, and run the open sequence (a replugged adapter lost the servos'
// RAM settings only if the servos lost power). While a stop is latched it
// only reads the stopped servos' status and says what to do (stop.go).
func (m *Motors) Reopen(ctx context.Context) error { return m.Open(ctx) }

// Close closes the port.
func (m *Motors) Close() error {
	if m.port == nil {
		return nil
	}
	err := m.port.Close()
	m.port, m.bus, m.group = nil, nil, nil
	return err
}

// servoIDs logs servo IDs as a list of numbers ([0,1,2,3] in JSON), not
// as the base64 text or the Go syntax of a []byte.
type servoIDs []byte

// LogValue implements slog.LogValuer.
func (ids servoIDs) LogValue() slog.Value {
	n := make([]int, len(ids))
	for i, id := range ids {
		n[i] = int(id)
	}
	return slog.AnyValue(n)
}
