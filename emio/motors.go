// Package emio is the Emio robot as a plant of the bridge loop: four
// XM430-W210 servos on a Dynamixel bus (docs/dynamixel.md §9: IDs 0–3,
// position mode, profile velocity 1000, emioapi's angle convention) and the
// marker vector that goes with them (docs/simulink-udp.md §2). Its Layout is
// the one place that says how an Emio measurement is laid out.
package emio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
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
	// Logger receives the open sequence (never the loop).
	Logger *slog.Logger
}

// ServoStatus is what the ticks learnt about one servo, for a watcher off
// the tick (Motors.Servos).
type ServoStatus struct {
	ID byte
	// TemperatureC is Present Temperature (address 146) and LimitC
	// Temperature Limit (address 31), in °C; NaN until read.
	TemperatureC, LimitC float64
	// HardwareError is Hardware Error Status (address 70), read when the
	// servo raises its Alert bit and again every round while it lasts; 0
	// once the Alert bit is gone (it mirrors a non-zero status,
	// docs/dynamixel.md §4).
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
// allocating. It satisfies plant.Plant and plant.Reopener.
type Motors struct {
	cfg    Config
	log    *slog.Logger
	port   dynamixel.Port
	bus    *dynamixel.Bus
	group  *dynamixel.Group
	pulses []int32
	q      []float64
	minP   int32
	maxP   int32
	misses int
	missed atomic.Uint64
	ready  interface{ Ready() bool } // the marker source's, when it has one
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
}

// New checks cfg; nothing is opened until Open.
func New(cfg Config) (*Motors, error) {
	switch {
	case len(cfg.IDs) == 0 || len(cfg.IDs) > 16:
		return nil, fmt.Errorf("%w: %d IDs, want 1..16", ErrConfig, len(cfg.IDs))
	case cfg.Mode != dynamixel.ModePosition && cfg.Mode != dynamixel.ModeExtendedPosition:
		return nil, fmt.Errorf("%w: operating mode %v, want position (3) or extended position (4)", ErrConfig, cfg.Mode)
	case cfg.ProfileVelocity < 0 || cfg.ProfileVelocity > 32767:
		return nil, fmt.Errorf("%w: profile velocity %d, want 0..32767", ErrConfig, cfg.ProfileVelocity)
	case cfg.Markers < 0 || cfg.Markers > 16:
		return nil, fmt.Errorf("%w: %d markers, want 0..16", ErrConfig, cfg.Markers)
	case cfg.Open == nil && cfg.Port == "":
		return nil, fmt.Errorf("%w: no serial port (want a port spec such as \"auto\" or \"/dev/ttyUSB0\")", ErrConfig)
	}
	for i, id := range cfg.IDs {
		if id > dynamixel.MaxID {
			return nil, fmt.Errorf("%w: ID %d, want 0..%d", ErrConfig, id, dynamixel.MaxID)
		}
		for _, prev := range cfg.IDs[:i] {
			if prev == id {
				return nil, fmt.Errorf("%w: ID %d listed twice", ErrConfig, id)
			}
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxMisses <= 0 {
		cfg.MaxMisses = 3
	}
	if cfg.StatusEvery == 0 {
		cfg.StatusEvery = max(1, 30/len(cfg.IDs))
	}
	n := len(cfg.IDs)
	m := &Motors{cfg: cfg, log: cfg.Logger, pulses: make([]int32, n), q: make([]float64, n),
		minP: 0, maxP: 4095, measureLen: Layout(cfg.Markers, n).MeasureLen(),
		servos: make([]servoState, n), statusEvery: cfg.StatusEvery,
		limitRead: make([]bool, n), hwDue: make([]bool, n), alerting: make([]bool, n)}
	for i := range m.servos {
		m.servos[i].tempC.Store(-1)
		m.servos[i].limitC.Store(-1)
	}
	if cfg.Mode == dynamixel.ModeExtendedPosition {
		m.minP, m.maxP = -1048575, 1048575
	}
	m.ready, _ = cfg.Source.(interface{ Ready() bool })
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
// them. A port that is not there is an error wrapping plant.ErrAbsent.
func (m *Motors) Open(ctx context.Context) error {
	port, bc, err := m.openPort()
	if err != nil {
		return err
	}
	if err := m.setup(ctx, port, bc); err != nil {
		port.Close()
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

func (m *Motors) setup(ctx context.Context, port dynamixel.Port, bc dynamixel.BusConfig) error {
	bus, err := dynamixel.NewBus(port, bc)
	if err != nil {
		return err
	}
	fast := m.cfg.Fast
	rdt := make([]byte, 1)
	var maxRDT byte
	for _, id := range m.cfg.IDs {
		if err := ctx.Err(); err != nil {
			return err
		}
		model, fw, err := bus.Ping(id)
		if err != nil && !errors.Is(err, dynamixel.ErrAlert) {
			return fmt.Errorf("emio: ping motor %d: %w", id, err)
		}
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
	// Servos still holding (the same robot after a transient fault or a
	// replug) are taken over as they are: torque, mode and goal untouched.
	holding, err := m.holding(bus)
	if err != nil {
		return err
	}
	if !holding {
		for _, id := range m.cfg.IDs {
			if err := bus.Write(id, dynamixel.AddrTorqueEnable, []byte{0}); err != nil {
				return fmt.Errorf("emio: torque off motor %d: %w", id, err)
			}
			if err := bus.Write(id, dynamixel.AddrOperatingMode, []byte{byte(m.cfg.Mode)}); err != nil {
				return fmt.Errorf("emio: operating mode %v on motor %d: %w", m.cfg.Mode, id, err)
			}
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
	if !holding {
		// Goal := present position, so that torque on moves nothing.
		if err := g.WriteInt32(dynamixel.AddrGoalPosition, m.pulses); err != nil {
			return fmt.Errorf("emio: hold positions: %w", err)
		}
		for _, id := range m.cfg.IDs {
			if err := bus.Write(id, dynamixel.AddrTorqueEnable, []byte{1}); err != nil {
				return fmt.Errorf("emio: torque on motor %d: %w", id, err)
			}
		}
	}
	m.port, m.bus, m.group, m.misses = port, bus, g, 0
	// The limits are read again (EEPROM someone may have changed), and the
	// error of a servo still in alert.
	m.sinceStatus, m.rr = 0, 0
	clear(m.limitRead)
	copy(m.hwDue, m.alerting)
	isFast, _ := g.Fast()
	m.log.Info("emio: motors ready", "ids", servoIDs(m.cfg.IDs), "mode", m.cfg.Mode.String(), "fast_sync_read", isFast,
		"still_holding", holding)
	return nil
}

// holding reports whether every servo already holds a position: torque on
// in the configured mode, as the bridge left them before a transient fault.
func (m *Motors) holding(bus *dynamixel.Bus) (bool, error) {
	b := make([]byte, 1)
	for _, id := range m.cfg.IDs {
		if err := bus.Read(id, dynamixel.AddrTorqueEnable, b); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
			return false, fmt.Errorf("emio: read torque of motor %d: %w", id, err)
		}
		if b[0] != 1 {
			return false, nil
		}
		if err := bus.Read(id, dynamixel.AddrOperatingMode, b); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
			return false, fmt.Errorf("emio: read operating mode of motor %d: %w", id, err)
		}
		if dynamixel.OperatingMode(b[0]) != m.cfg.Mode {
			return false, nil
		}
	}
	return true, nil
}

// Measure implements plant.Plant: markers, then the motor angles (rad,
// emioapi's convention). A hardware alert does not fail the tick: the
// positions are valid; the alert is recorded for Servos. Every StatusEvery
// ticks one status register is read after the positions (statusTick).
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
	return nil
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
	s := &m.servos[i]
	alert := errByte&dynamixel.AlertBit != 0
	if alert {
		s.alerts.Add(1)
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
		if m.alerting[i] {
			s.hw.Store(uint32(v))
		}
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
	for i, id := range m.cfg.IDs {
		s := &m.servos[i]
		dst = append(dst, ServoStatus{
			ID: id, TemperatureC: celsius(s.tempC.Load()), LimitC: celsius(s.limitC.Load()),
			HardwareError: dynamixel.HardwareError(s.hw.Load()),
			Alerts:        s.alerts.Load(), MissedReads: s.missed.Load(), StatusErrors: s.statusErrs.Load(),
			Alerting: s.alerting.Load(),
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

// Missed returns how many position reads went unanswered in all (Servos
// tells which servo spoilt them).
func (m *Motors) Missed() uint64 { return m.missed.Load() }

// Command implements plant.Plant: goal positions from angles. NaN, ±Inf and
// angles beyond the pulse range are refused whole; pulses are clamped to the
// mode's position range.
func (m *Motors) Command(u []float64) error {
	if m.group == nil {
		return ErrClosed
	}
	if len(u) != len(m.pulses) {
		return fmt.Errorf("emio: %d commands for %d motors", len(u), len(m.pulses))
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
		m.pulses[i] = min(max(p, m.minP), m.maxP)
	}
	return m.group.WriteInt32(dynamixel.AddrGoalPosition, m.pulses)
}

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
// RAM settings only if the servos lost power).
func (m *Motors) Reopen(ctx context.Context) error {
	m.Close()
	return m.Open(ctx)
}

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
