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

// answers applies Status Return Level (docs/dynamixel.md §4): 2 answers
// everything, 1 only PING and reads, 0 only PING.
func (s *Servo) answers(inst byte) bool {
	switch srl := s.mem[dynamixel.AddrStatusReturnLevel]; {
	case inst == dynamixel.InstPing || srl >= 2:
		return true
	case srl == 1:
		switch inst {
		case dynamixel.InstRead, dynamixel.InstSyncRead, dynamixel.InstFastSyncRead,
			dynamixel.InstBulkRead, dynamixel.InstFastBulkRead:
			return true
		}
	}
	return false
}

// read copies n bytes from addr into dst, resolving Indirect Data. Reserved
// addresses inside the table read 0, as on the servo.
func (s *Servo) read(addr, n int, dst []byte) byte {
	if n == 0 {
		return errDataLength
	}
	if addr+n > tableSize {
		return errAccess
	}
	for i := range n {
		a := addr + i
		if k := s.lay.lookup(a); k >= 0 && s.lay.items[k].indirect != 0 {
			a = int(s.u16(s.lay.items[k].indirect))
		}
		dst[i] = s.mem[a]
	}
	return 0
}

// write applies a Write: stage, check, commit. On an error nothing changes.
func (s *Servo) write(addr int, data []byte, now int64) byte {
	if te := int(dynamixel.AddrTorqueEnable); addr <= te && te < addr+len(data) && data[te-addr] == 1 {
		s.rx.TorqueOnWrites++
	}
	if code := s.stage(addr, data); code != 0 {
		return code
	}
	s.commit(now)
	return 0
}

// stage copies the table to next and writes data there, checking the access
// rules item by item: only whole writable items (Data Length Error for a
// write that starts inside an item or stops short of its end), no EEPROM
// while torque is on and no read-only or undefined address (Access Error),
// then each value against its range (Data Range Error) and the goals
// against their limits (Data Limit Error).
func (s *Servo) stage(addr int, data []byte) byte {
	if len(data) == 0 {
		return errDataLength
	}
	if addr < 0 || addr+len(data) > tableSize {
		return errAccess
	}
	for i := range s.nList {
		s.touched[s.list[i]] = false
	}
	s.nList = 0
	s.next = s.mem
	torque := s.mem[dynamixel.AddrTorqueEnable] == 1
	for i := 0; i < len(data); {
		a := addr + i
		k := s.lay.lookup(a)
		if k < 0 {
			return errAccess
		}
		it := &s.lay.items[k]
		if !it.Writable || it.EEPROM && torque {
			return errAccess
		}
		size := int(it.Size)
		if int(it.Addr) != a || i+size > len(data) {
			return errDataLength
		}
		if it.indirect != 0 {
			// The data byte stands for the byte it points at, with that
			// item's access rules (eManual "Indirect Address").
			t := int(s.u16(it.indirect))
			tk := s.lay.lookup(t)
			if tk < 0 || !s.lay.items[tk].Writable || s.lay.items[tk].EEPROM || s.lay.items[tk].indirect != 0 {
				return errAccess
			}
			s.next[t] = data[i]
			s.touch(tk)
		} else {
			copy(s.next[a:a+size], data[i:i+size])
			s.touch(k)
		}
		i += size
	}
	for i := range s.nList {
		if code := s.check(int(s.list[i])); code != 0 {
			return code
		}
	}
	return 0
}

func (s *Servo) touch(k int) {
	if !s.touched[k] {
		s.touched[k] = true
		s.list[s.nList] = uint8(k)
		s.nList++
	}
}

// staged returns item k's value in next.
func (s *Servo) staged(k int) int64 {
	it := &s.lay.items[k].Item
	v, _ := it.Decode(s.next[it.Addr : int(it.Addr)+int(it.Size)])
	return v
}

func (s *Servo) stagedAt(addr uint16) int64 { return s.staged(s.lay.lookup(int(addr))) }

// check validates staged item k.
func (s *Servo) check(k int) byte {
	it := &s.lay.items[k].Item
	v := s.staged(k)
	if v < it.Min || v > it.Max {
		return errDataRange
	}
	switch it.Addr {
	case dynamixel.AddrOperatingMode:
		if !dynamixel.OperatingMode(v).Valid() {
			return errDataRange
		}
	case dynamixel.AddrTorqueEnable:
		// "If Torque cannot be enabled, the Result Fail bit ... is set":
		// only a reboot re-allows torque after a shutdown.
		if v == 1 && s.mem[dynamixel.AddrHardwareErrorStatus]&s.mem[dynamixel.AddrShutdown] != 0 {
			return errResultFail
		}
	case dynamixel.AddrGoalPWM, dynamixel.AddrGoalCurrent, dynamixel.AddrGoalVelocity, dynamixel.AddrGoalPosition:
		// A tripped Bus Watchdog makes the goals read-only.
		if int8(s.mem[dynamixel.AddrBusWatchdog]) < 0 {
			return errDataRange
		}
		if !s.withinLimit(it.Addr, v) {
			return errDataLimit
		}
	}
	return 0
}

// withinLimit checks a goal against the limit items that bound it. Out of
// them the servo answers Data Limit Error and keeps the old goal; the real
// firmware's choice between that and clamping is not documented, and an
// error is what a driver must be ready for.
func (s *Servo) withinLimit(addr uint16, v int64) bool {
	abs := func(x int64) int64 { return max(x, -x) }
	switch addr {
	case dynamixel.AddrGoalPWM:
		return abs(v) <= s.stagedAt(dynamixel.AddrPWMLimit)
	case dynamixel.AddrGoalCurrent:
		return abs(v) <= s.stagedAt(dynamixel.AddrCurrentLimit)
	case dynamixel.AddrGoalVelocity:
		return abs(v) <= s.stagedAt(dynamixel.AddrVelocityLimit)
	case dynamixel.AddrGoalPosition:
		if dynamixel.OperatingMode(s.next[dynamixel.AddrOperatingMode]) == dynamixel.ModePosition {
			return v >= s.stagedAt(dynamixel.AddrMinPositionLimit) && v <= s.stagedAt(dynamixel.AddrMaxPositionLimit)
		}
	}
	return true
}

// commit makes the staged write live, with its side effects.
func (s *Servo) commit(now int64) {
	old := s.mem
	s.mem = s.next
	for i := range s.nList {
		switch s.lay.items[s.list[i]].Addr {
		case dynamixel.AddrOperatingMode:
			if old[dynamixel.AddrOperatingMode] != s.mem[dynamixel.AddrOperatingMode] {
				s.modeChanged()
			}
		case dynamixel.AddrTorqueEnable:
			on := s.mem[dynamixel.AddrTorqueEnable] == 1
			if on && old[dynamixel.AddrTorqueEnable] == 0 {
				s.torqueOn()
			} else if !on {
				if old[dynamixel.AddrTorqueEnable] != 0 {
					s.releases++
				}
				s.vel, s.cur = 0, 0
			}
		case dynamixel.AddrGoalPosition:
			if from, to := int64(int32(binary.LittleEndian.Uint32(old[dynamixel.AddrGoalPosition:]))), int64(s.i32(dynamixel.AddrGoalPosition)); from != to {
				s.rx.GoalWrites++
				if old[dynamixel.AddrTorqueEnable] == 1 {
					s.rx.MaxGoalStep = max(s.rx.MaxGoalStep, to-from, from-to)
				}
			}
			if s.mem[dynamixel.AddrDriveMode]&driveTorqueOnGoal != 0 && s.mem[dynamixel.AddrTorqueEnable] == 0 &&
				s.mem[dynamixel.AddrHardwareErrorStatus]&s.mem[dynamixel.AddrShutdown] == 0 {
				s.mem[dynamixel.AddrTorqueEnable] = 1
				if s.mem[dynamixel.AddrOperatingMode] == byte(dynamixel.ModePosition) {
					s.pos = wrapTurn(s.pos)
				}
			}
		case dynamixel.AddrBusWatchdog:
			s.lastComm = now
		}
	}
	s.writePresent(now)
}

// modeChanged resets what a new Operating Mode resets (docs/dynamixel.md §8):
// the profile and the gains; in position mode the position comes back
// within one turn.
func (s *Servo) modeChanged() {
	for i := range s.lay.items {
		switch s.lay.items[i].Addr {
		case dynamixel.AddrProfileAcceleration, dynamixel.AddrProfileVelocity,
			dynamixel.AddrVelocityIGain, dynamixel.AddrVelocityPGain,
			dynamixel.AddrPositionDGain, dynamixel.AddrPositionIGain, dynamixel.AddrPositionPGain,
			dynamixel.AddrFeedforward2ndGain, dynamixel.AddrFeedforward1stGain:
			s.setDefault(i)
		}
	}
	if s.mem[dynamixel.AddrOperatingMode] == byte(dynamixel.ModePosition) {
		s.pos = wrapTurn(s.pos)
	}
	s.holdGoal()
}

// torqueOn holds the present position, within one turn in position mode.
func (s *Servo) torqueOn() {
	if s.mem[dynamixel.AddrOperatingMode] == byte(dynamixel.ModePosition) {
		s.pos = wrapTurn(s.pos)
	}
	s.vel = 0
	s.holdGoal()
}

// regWrite checks a Reg Write now and keeps it for Action.
func (s *Servo) regWrite(addr int, data []byte) byte {
	if code := s.stage(addr, data); code != 0 {
		return code
	}
	s.reg.addr, s.reg.n = addr, copy(s.reg.data[:], data)
	s.mem[dynamixel.AddrRegisteredInstruction] = 1
	return 0
}

// action applies the registered write; without one it is an Instruction
// Error (docs/dynamixel.md §4).
func (s *Servo) action(now int64) byte {
	if s.mem[dynamixel.AddrRegisteredInstruction] == 0 {
		return errInstruction
	}
	s.mem[dynamixel.AddrRegisteredInstruction] = 0
	n := s.reg.n
	s.reg.n = 0
	return s.write(s.reg.addr, s.reg.data[:n], now)
}

// clear resets the multi-turn count (Clear option 0x01 with its fixed
// key): only while stopped, else Result Fail.
func (s *Servo) clear(params []byte) byte {
	if s.firmware() < clearFirmware {
		return errInstruction
	}
	if len(params) != 5 || params[0] != 0x01 || params[1] != 0x44 || params[2] != 0x58 || params[3] != 0x4C || params[4] != 0x22 {
		return errDataRange
	}
	if s.mem[dynamixel.AddrMoving] != 0 {
		return errResultFail
	}
	turns := math.Floor(s.pos / pulsesPerRev)
	s.pos -= turns * pulsesPerRev
	goal := s.i32(dynamixel.AddrGoalPosition) - int32(turns)*pulsesPerRev
	binary.LittleEndian.PutUint32(s.mem[dynamixel.AddrGoalPosition:], uint32(goal))
	s.writePresent(s.last)
	return 0
}

// validReset reports whether option is a Factory Reset option: 0xFF resets
// everything, 0x01 keeps the ID, 0x02 the ID and the baud rate.
func validReset(option byte) bool { return option == 0xFF || option == 0x01 || option == 0x02 }

// factoryReset restores the EEPROM as option says and reboots.
func (s *Servo) factoryReset(option byte, now int64) {
	id, baud := s.mem[dynamixel.AddrID], s.mem[dynamixel.AddrBaudRate]
	fw := s.firmware()
	for i := range s.lay.items {
		if s.lay.items[i].EEPROM {
			s.setDefault(i)
		}
	}
	s.mem[dynamixel.AddrFirmwareVersion] = fw
	if option != 0xFF {
		s.mem[dynamixel.AddrID] = id
	}
	if option == 0x02 {
		s.mem[dynamixel.AddrBaudRate] = baud
	}
	s.boot(now)
}

// overheat raises the overheating error as the temperature sensor would.
func (s *Servo) overheat() { s.fail(dynamixel.HWOverheating) }

// fail raises hardware errors e, and shuts the servo down if the Shutdown
// mask says so.
func (s *Servo) fail(e dynamixel.HardwareError) {
	s.mem[dynamixel.AddrHardwareErrorStatus] |= byte(e)
	s.shutdown()
}

// shutdown forces torque off when a hardware error is in the Shutdown mask.
func (s *Servo) shutdown() {
	if s.mem[dynamixel.AddrHardwareErrorStatus]&s.mem[dynamixel.AddrShutdown] != 0 && s.mem[dynamixel.AddrTorqueEnable] != 0 {
		s.mem[dynamixel.AddrTorqueEnable] = 0
		s.vel, s.cur = 0, 0
		s.releases++
	}
}

// advance runs the plant up to now in steps of at most maxStep and updates
// the present values.
func (s *Servo) advance(now int64) {
	for s.last < now {
		h := min(now-s.last, maxStep)
		s.last += h
		s.step(float64(h)/float64(time.Second), s.last)
	}
	s.writePresent(now)
}

// step integrates the plant over h seconds ending at t.
func (s *Servo) step(h float64, t int64) {
	torque := s.mem[dynamixel.AddrTorqueEnable] == 1
	if wd := int64(int8(s.mem[dynamixel.AddrBusWatchdog])); torque && wd > 0 && t-s.lastComm > wd*watchdogUnit {
		// The watchdog stops the servo where it is and reads -1.
		s.mem[dynamixel.AddrBusWatchdog] = 0xFF
		s.holdGoal()
		binary.LittleEndian.PutUint32(s.mem[dynamixel.AddrGoalVelocity:], 0)
	}
	switch {
	case !torque:
		s.vel, s.cur = 0, 0
	case s.mode() == dynamixel.ModeVelocity:
		s.stepVelocity(h)
	case s.mode() == dynamixel.ModeCurrent:
		s.vel = 0
		s.cur = float64(int16(s.u16(dynamixel.AddrGoalCurrent)))
	case s.mode() == dynamixel.ModePWM:
		s.vel, s.cur = 0, 0
	default:
		s.stepPosition(h)
	}
	load := min(math.Abs(s.cur)/fullCurrent, 1)
	eq := s.cfg.Ambient + s.cfg.HeatRise*load
	s.temp = eq + (s.temp-eq)*math.Exp(-h/s.cfg.ThermalTau.Seconds())
	if math.Round(s.temp) > float64(s.mem[dynamixel.AddrTemperatureLimit]) {
		s.overheat()
	}
}

func (s *Servo) mode() dynamixel.OperatingMode {
	return dynamixel.OperatingMode(s.mem[dynamixel.AddrOperatingMode])
}

// target is the goal in plant coordinates (without Homing Offset).
func (s *Servo) target() float64 {
	return float64(s.i32(dynamixel.AddrGoalPosition) - s.i32(dynamixel.AddrHomingOffset))
}

// stepPosition moves toward the goal: a trapezoidal profile when Profile
// Velocity or Acceleration is set, else a first-order lag. The current is
// the position loop's effort, saturated at Current Limit (and at Goal
// Current in current-based position mode); a stalled servo keeps pushing.
func (s *Servo) stepPosition(h float64) {
	target := s.target()
	if !s.stalled {
		pv := float64(binary.LittleEndian.Uint32(s.mem[dynamixel.AddrProfileVelocity:]))
		pa := float64(binary.LittleEndian.Uint32(s.mem[dynamixel.AddrProfileAcceleration:]))
		var np float64
		if pv == 0 && pa == 0 {
			np = target + (s.pos-target)*math.Exp(-h/s.cfg.TimeConstant.Seconds())
		} else {
			vmax := float64(binary.LittleEndian.Uint32(s.mem[dynamixel.AddrVelocityLimit:])) * velUnit
			if pv > 0 {
				vmax = min(vmax, pv*velUnit)
			}
			np = s.profile(target, vmax, pa*accUnit, h)
		}
		if math.Abs(np-target) < 0.5 {
			np = target
		}
		s.vel = (np - s.pos) / h
		s.pos = np
	} else {
		s.vel = 0
	}
	limit := float64(s.u16(dynamixel.AddrCurrentLimit))
	if s.mode() == dynamixel.ModeCurrentBasedPosition {
		limit = min(limit, math.Abs(float64(int16(s.u16(dynamixel.AddrGoalCurrent)))))
	}
	gain := float64(s.u16(dynamixel.AddrPositionPGain)) / 200
	s.cur = max(-limit, min(limit, (target-s.pos)*gain))
}

// profile advances one step of a trapezoidal move toward target with speed
// limit vmax and acceleration acc (0 = unlimited), in pulses and seconds.
func (s *Servo) profile(target, vmax, acc, h float64) float64 {
	d := target - s.pos
	dir := 1.0
	if d < 0 {
		dir, d = -1, -d
	}
	v := s.vel * dir // speed toward the target
	want := vmax
	if acc > 0 {
		want = min(vmax, math.Sqrt(2*acc*d))
		if v < want {
			want = min(want, v+acc*h)
		} else {
			want = max(want, v-acc*h)
		}
	}
	if want*h >= d {
		return target
	}
	return s.pos + dir*want*h
}

// stepVelocity follows Goal Velocity, ramped by Profile Acceleration.
func (s *Servo) stepVelocity(h float64) {
	goal := float64(int32(binary.LittleEndian.Uint32(s.mem[dynamixel.AddrGoalVelocity:]))) * velUnit
	if acc := float64(binary.LittleEndian.Uint32(s.mem[dynamixel.AddrProfileAcceleration:])) * accUnit; acc > 0 {
		goal = max(s.vel-acc*h, min(s.vel+acc*h, goal))
	}
	if !s.stalled {
		s.vel = goal
		s.pos += s.vel * h
	} else {
		s.vel = 0
	}
	s.cur = 0
}

// writePresent writes the plant's state into the read-only items.
func (s *Servo) writePresent(now int64) {
	m := &s.mem
	present := s.present()
	vel := int32(math.Round(s.vel / velUnit))
	cur := int16(math.Round(s.cur))
	torque := m[dynamixel.AddrTorqueEnable] == 1
	binary.LittleEndian.PutUint32(m[dynamixel.AddrPresentPosition:], uint32(present))
	binary.LittleEndian.PutUint32(m[dynamixel.AddrPresentVelocity:], uint32(vel))
	binary.LittleEndian.PutUint16(m[dynamixel.AddrPresentCurrent:], uint16(cur))
	binary.LittleEndian.PutUint16(m[dynamixel.AddrPresentPWM:], uint16(int16(int32(cur)*885/fullCurrent)))
	binary.LittleEndian.PutUint32(m[dynamixel.AddrVelocityTrajectory:], uint32(vel))
	traj := present
	inPos := false
	if torque {
		switch s.mode() {
		case dynamixel.ModePosition, dynamixel.ModeExtendedPosition, dynamixel.ModeCurrentBasedPosition:
			traj = s.i32(dynamixel.AddrGoalPosition)
			inPos = math.Abs(s.target()-s.pos) < 1
		}
	}
	binary.LittleEndian.PutUint32(m[dynamixel.AddrPositionTrajectory:], uint32(traj))
	absVel := int64(max(vel, -vel))
	moving := torque && (!inPos && s.mode() != dynamixel.ModeVelocity && s.mode() != dynamixel.ModeCurrent && s.mode() != dynamixel.ModePWM ||
		absVel > int64(binary.LittleEndian.Uint32(m[dynamixel.AddrMovingThreshold:])))
	m[dynamixel.AddrMoving] = 0
	m[dynamixel.AddrMovingStatus] = 0
	if inPos {
		m[dynamixel.AddrMovingStatus] |= 0x01
	}
	if moving {
		m[dynamixel.AddrMoving] = 1
		m[dynamixel.AddrMovingStatus] |= 0x02
	}
	binary.LittleEndian.PutUint16(m[dynamixel.AddrPresentInputVoltage:], inputVoltage)
	m[dynamixel.AddrPresentTemperature] = byte(max(0, min(255, math.Round(s.temp))))
	binary.LittleEndian.PutUint16(m[dynamixel.AddrRealtimeTick:], uint16(now/int64(time.Millisecond)%32768))
}
