package dxlsim

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/labbridge/bridge/dynamixel"
)

// Error numbers of the status error byte (docs/dynamixel.md §4).
const (
	errResultFail  byte = 1
	errInstruction byte = 2
	errDataRange   byte = 4
	errDataLength  byte = 5
	errDataLimit   byte = 6
	errAccess      byte = 7
	alertBit       byte = 0x80
)

// Firmware versions that matter to the protocol (docs/dynamixel.md §5, §6).
const (
	// DefaultFirmware knows Fast Sync Read and Fast Bulk Read.
	DefaultFirmware = 46
	// fastReadFirmware is the first X430 firmware with the fast reads.
	fastReadFirmware = 45
	// clearFirmware is the first with Clear and the ignored broadcast
	// factory reset.
	clearFirmware = 42
)

// Plant constants of an XM430-W210.
const (
	pulsesPerRev = 4096
	// velUnit is 0.229 rev/min in pulses/s; accUnit is 214.577 rev/min² in
	// pulses/s².
	velUnit = 0.229 / 60 * pulsesPerRev
	accUnit = 214.577 / 3600 * pulsesPerRev
	// fullCurrent is the factory Current Limit: the load the thermal model
	// calls 100 %.
	fullCurrent = 1193
	// inputVoltage is what Present Input Voltage reads (12.0 V).
	inputVoltage = 120
	// maxStep bounds one integration step, so a long jump of the clock
	// still heats and cools smoothly.
	maxStep = int64(10 * time.Millisecond)
	// watchdogUnit is the Bus Watchdog's unit.
	watchdogUnit = int64(20 * time.Millisecond)
	// Drive Mode bit 3: a goal write turns torque on (FW 45+).
	driveTorqueOnGoal = 0x08
)

// ServoConfig describes one simulated XM430-W210. A zero field takes the
// value of DefaultServoConfig, except ID, ReturnDelay and Position, which are
// used as given.
type ServoConfig struct {
	// ID is the servo's ID (0..252).
	ID byte
	// Firmware is the Firmware Version (address 6): 45 and above answer
	// Fast Sync Read; 38, the eManual's example, answers it with an
	// Instruction Error.
	Firmware byte
	// Baud is the Baud Rate (address 8) at power-up, in bit/s: one of the
	// eight rates of the item. The servo answers only a client whose line
	// runs at its rate (docs/dynamixel.md §15). 0 is the bus's Timing.Baud
	// when that is one of the eight, else 1000000 (the Emio's).
	Baud int
	// ReturnDelay is Return Delay Time (address 9) in 2 µs units, 0..254.
	// 0 suits tests; the factory value is 250 (500 µs).
	ReturnDelay byte
	// Position is the Present Position at power-up, in pulses.
	Position int32
	// TimeConstant is the first-order response to a new goal while
	// Profile Velocity and Profile Acceleration are 0.
	TimeConstant time.Duration
	// Ambient is the temperature of a cold servo (°C).
	Ambient float64
	// HeatRise is how far above Ambient a servo settles at full current
	// (the factory Current Limit); beyond Temperature Limit it shuts down.
	HeatRise float64
	// ThermalTau is the thermal time constant of heating and cooling.
	ThermalTau time.Duration
	// BootTime is how long a servo stays deaf after Reboot or Factory
	// Reset.
	BootTime time.Duration
}

// DefaultServoConfig is an Emio servo: ID 0, firmware 46, no return delay,
// centred at pulse 2048, a 30 ms response, 25 °C ambient.
func DefaultServoConfig() ServoConfig {
	return ServoConfig{
		Firmware:     DefaultFirmware,
		Position:     dynamixel.PulseCenter,
		TimeConstant: 30 * time.Millisecond,
		Ambient:      25,
		HeatRise:     60,
		ThermalTau:   2 * time.Minute,
	}
}

func (c *ServoConfig) fill() error {
	d := DefaultServoConfig()
	if c.Firmware == 0 {
		c.Firmware = d.Firmware
	}
	if c.TimeConstant == 0 {
		c.TimeConstant = d.TimeConstant
	}
	if c.Ambient == 0 {
		c.Ambient = d.Ambient
	}
	if c.HeatRise == 0 {
		c.HeatRise = d.HeatRise
	}
	if c.ThermalTau == 0 {
		c.ThermalTau = d.ThermalTau
	}
	if c.Baud == 0 {
		c.Baud = 1000000
	}
	switch {
	case baudIndex(c.Baud) < 0:
		return fmt.Errorf("%w: baud %d, want one of %v", ErrConfig, c.Baud, baudRates)
	case c.ID > dynamixel.MaxID:
		return fmt.Errorf("%w: servo ID %d, want 0..%d", ErrConfig, c.ID, dynamixel.MaxID)
	case c.ReturnDelay > 254:
		return fmt.Errorf("%w: return delay %d, want 0..254", ErrConfig, c.ReturnDelay)
	case c.Position < -1048575 || c.Position > 1048575:
		return fmt.Errorf("%w: position %d, want -1048575..1048575", ErrConfig, c.Position)
	case c.TimeConstant < 0 || c.TimeConstant > time.Minute:
		return fmt.Errorf("%w: time constant %v, want 0..1m", ErrConfig, c.TimeConstant)
	case c.ThermalTau < 0 || c.BootTime < 0 || c.BootTime > time.Minute:
		return fmt.Errorf("%w: thermal tau %v or boot time %v, want positive and boot time up to 1m", ErrConfig, c.ThermalTau, c.BootTime)
	case math.IsNaN(c.Ambient) || math.IsInf(c.Ambient, 0) || c.Ambient < -40 || c.Ambient > 100:
		return fmt.Errorf("%w: ambient %v °C, want -40..100", ErrConfig, c.Ambient)
	case math.IsNaN(c.HeatRise) || c.HeatRise < 0 || c.HeatRise > 500:
		return fmt.Errorf("%w: heat rise %v °C, want 0..500", ErrConfig, c.HeatRise)
	}
	return nil
}

// Servo is one simulated XM430-W210: its control table and its plant. Its
// methods are safe for concurrent use; a Bus shares one lock among its
// servos, so a whole instruction is atomic.
type Servo struct {
	mu    *sync.Mutex
	lay   *layout
	cfg   ServoConfig
	clock Clock

	mem [tableSize]byte
	// next stages a write, so that a refused one changes nothing.
	next    [tableSize]byte
	touched [256]bool // items staged, by layout index
	list    [256]uint8
	nList   int
	// reg is the Reg Write waiting for Action.
	reg struct {
		addr int
		n    int
		data [tableSize]byte
	}

	// The plant, in pulses before Homing Offset, pulses/s and raw current
	// units; temp in °C.
	pos, vel, cur, temp float64
	last                int64 // clock reading the plant was advanced to
	lastComm            int64 // last instruction on the bus, for the watchdog
	bootUntil           int64

	missing, stalled bool
	// off is a servo without power: deaf, silent and limp until PowerOn.
	off bool
	// releases counts the times torque went from on to off, by a write, a
	// shutdown or a power loss: what a test watches to prove a robot was
	// never let go.
	releases uint64
	// rx is what the servo received that a safety test watches.
	rx Received
}

// Received is what a servo received on the wire that a safety test
// watches: the device's side of a rule such as "nothing re-enables a servo
// in hardware error" or "no goal jumps".
type Received struct {
	// Reboots counts the Reboot instructions the servo executed.
	Reboots uint64
	// TorqueOnWrites counts the writes of Torque Enable = 1 it heard,
	// refused ones included (a servo in shutdown answers Result Fail).
	TorqueOnWrites uint64
	// GoalWrites counts the writes that changed Goal Position.
	GoalWrites uint64
	// MaxGoalStep is the largest change of Goal Position that one write
	// made while torque was on (pulses): how far a single command moved
	// the servo's target. Torque coming on holds the present position and
	// counts nothing.
	MaxGoalStep int64
}

// NewServo returns a servo at power-up: factory defaults, except ID, Baud
// Rate (1 Mbps by default), Return Delay Time and firmware from cfg. A nil clock is
// the system's monotonic clock.
func NewServo(cfg ServoConfig, clock Clock) (*Servo, error) {
	if clock == nil {
		clock = SystemClock()
	}
	return newServo(cfg, clock, &sync.Mutex{}, newLayout(dynamixel.XM430W210()))
}

func newServo(cfg ServoConfig, clock Clock, mu *sync.Mutex, lay *layout) (*Servo, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	s := &Servo{mu: mu, lay: lay, cfg: cfg, clock: clock}
	for i := range s.lay.items {
		s.setDefault(i)
	}
	s.mem[dynamixel.AddrFirmwareVersion] = cfg.Firmware
	s.mem[dynamixel.AddrID] = cfg.ID
	s.mem[dynamixel.AddrBaudRate] = byte(baudIndex(cfg.Baud))
	s.mem[dynamixel.AddrReturnDelayTime] = cfg.ReturnDelay
	s.pos = float64(cfg.Position)
	s.temp = cfg.Ambient
	now := clock.Now()
	s.last, s.lastComm = now, now
	s.boot(now)
	return s, nil
}

// setDefault writes item i's factory value.
func (s *Servo) setDefault(i int) {
	it := &s.lay.items[i].Item
	putItem(s.mem[it.Addr:], it.Size, it.Default)
}

// boot is what a power-up and a reboot do: RAM back to its defaults, EEPROM
// kept, the position reduced to one turn and held.
func (s *Servo) boot(now int64) {
	for i := range s.lay.items {
		if !s.lay.items[i].EEPROM {
			s.setDefault(i)
		}
	}
	s.pos = wrapTurn(s.pos)
	s.vel, s.cur = 0, 0
	s.reg.n = 0
	s.bootUntil = now + int64(s.cfg.BootTime)
	s.holdGoal()
	s.writePresent(now)
}

// ID returns the servo's current ID (address 7).
func (s *Servo) ID() byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem[dynamixel.AddrID]
}

// Releases returns how many times the servo's torque went from on to off
// (a Torque Enable write of 0, or a shutdown): a robot released and held
// again within a tick shows here, never in Value.
func (s *Servo) Releases() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releases
}

// Received returns what the servo received that a safety test watches.
func (s *Servo) Received() Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rx
}

// ResetMaxGoalStep forgets the largest goal step seen so far, so that a
// test can watch one phase (a rejoin after a power cycle) on its own.
func (s *Servo) ResetMaxGoalStep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rx.MaxGoalStep = 0
}

// Value returns an item's raw value, sign-extended, after advancing the
// plant to now.
func (s *Servo) Value(k dynamixel.ItemKey) int64 {
	it := k.Item()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.clock.Now())
	v, err := it.Decode(s.mem[it.Addr : int(it.Addr)+int(it.Size)])
	if err != nil {
		return 0
	}
	return v
}

// SetValue writes an item's raw value, bypassing every write rule, like
// Poke.
func (s *Servo) SetValue(k dynamixel.ItemKey, v int64) error {
	it := k.Item()
	if it.Size == 0 {
		return fmt.Errorf("%w: no item %v", ErrAddress, k)
	}
	var b [4]byte
	putItem(b[:], it.Size, v)
	return s.Poke(it.Addr, b[:it.Size])
}

// Table copies the raw control table from addr into dst, after advancing
// the plant; Indirect Data reads as raw memory here.
func (s *Servo) Table(addr uint16, dst []byte) error {
	if int(addr)+len(dst) > tableSize {
		return fmt.Errorf("%w: %d bytes at %d, table ends at %d", ErrAddress, len(dst), addr, tableSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.clock.Now())
	copy(dst, s.mem[addr:])
	return nil
}

// Poke writes raw bytes into the control table, bypassing the write rules,
// to set up states a client cannot (a Present Current of -1, an old
// firmware, a hot servo). The plant takes Present Position, Velocity,
// Current and Temperature from what was poked; the dynamics recompute them
// at the next clock step.
func (s *Servo) Poke(addr uint16, data []byte) error {
	if int(addr)+len(data) > tableSize {
		return fmt.Errorf("%w: %d bytes at %d, table ends at %d", ErrAddress, len(data), addr, tableSize)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(s.clock.Now())
	copy(s.mem[addr:], data)
	s.pos = float64(s.i32(dynamixel.AddrPresentPosition) - s.i32(dynamixel.AddrHomingOffset))
	s.vel = float64(s.i32(dynamixel.AddrPresentVelocity)) * velUnit
	s.cur = float64(int16(s.u16(dynamixel.AddrPresentCurrent)))
	s.temp = float64(s.mem[dynamixel.AddrPresentTemperature])
	return nil
}

// Little-endian accessors of the live table.
func (s *Servo) u16(a uint16) uint16 { return binary.LittleEndian.Uint16(s.mem[a:]) }
func (s *Servo) i32(a uint16) int32  { return int32(binary.LittleEndian.Uint32(s.mem[a:])) }

func putItem(b []byte, size uint8, v int64) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	}
}

func wrapTurn(p float64) float64 {
	p = math.Mod(p, pulsesPerRev)
	if p < 0 {
		p += pulsesPerRev
	}
	return p
}

// present is Present Position: the plant's position plus Homing Offset.
func (s *Servo) present() int32 {
	return int32(math.Round(s.pos)) + s.i32(dynamixel.AddrHomingOffset)
}

// holdGoal makes the servo hold where it is: Goal Position = Present
// Position, as at power-up and when torque comes on.
func (s *Servo) holdGoal() {
	binary.LittleEndian.PutUint32(s.mem[dynamixel.AddrGoalPosition:], uint32(s.present()))
}

// errByte is a status error byte: the error number, and Alert whenever
// Hardware Error Status is not clear (docs/dynamixel.md §4, §8).
func (s *Servo) errByte(code byte) byte {
	if s.mem[dynamixel.AddrHardwareErrorStatus] != 0 {
		code |= alertBit
	}
	return code
}

func (s *Servo) firmware() byte { return s.mem[dynamixel.AddrFirmwareVersion] }

// rdt is the servo's Return Delay Time.
func (s *Servo) rdt() time.Duration {
	return time.Duration(s.mem[dynamixel.AddrReturnDelayTime]) * 2 * time.Microsecond
}

// hears reports whether the servo is on the bus, powered and booted.
func (s *Servo) hears(now int64) bool { return !s.missing && !s.off && now >= s.bootUntil }

// baudRates are the rates of the Baud Rate item, by code (docs/dynamixel.md
// §8); a table, so that checking the line allocates nothing.
var baudRates = [...]int{9600, 57600, 115200, 1000000, 2000000, 3000000, 4000000, 4500000}

// baudIndex is the Baud Rate code of bps, -1 for a rate no servo uses.
func baudIndex(bps int) int {
	for i, r := range baudRates {
		if r == bps {
			return i
		}
	}
	return -1
}

// baud is the servo's rate now, 0 for a code outside the item's range.
func (s *Servo) baud() int {
	if c := int(s.mem[dynamixel.AddrBaudRate]); c < len(baudRates) {
		return baudRates[c]
	}
	return 0
}

// powerOff cuts the servo's power: torque goes (a release), the servo
// hears nothing until powerOn.
func (s *Servo) powerOff() {
	if s.off {
		return
	}
	s.off = true
	if s.mem[dynamixel.AddrTorqueEnable] != 0 {
		s.mem[dynamixel.AddrTorqueEnable] = 0
		s.releases++
	}
	s.vel, s.cur = 0, 0
}

// powerOn gives the power back: the servo boots as at power-up (RAM
// defaults, hardware error cleared, goal = present, torque off).
func (s *Servo) powerOn(now int64) {
	if !s.off {
		return
	}
	s.off = false
	s.boot(now)
}
