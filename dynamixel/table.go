package dynamixel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The XM430-W210 control table (docs/dynamixel.md §7, from the ROBOTIS eManual
// page of the servo and the SDK's xm430_w210.model).

var (
	// ErrRange is a value outside the raw range of a control-table item, or an
	// angle that maps to no valid goal position.
	ErrRange = errors.New("dynamixel: value out of range")
	// ErrItemSize is a buffer whose length does not match the item's size.
	ErrItemSize = errors.New("dynamixel: wrong item size")
	// ErrBaud is a baud rate, or Baud Rate code, the servo does not support.
	ErrBaud = errors.New("dynamixel: unsupported baud rate")
)

// RangeError is a value refused by Item.Encode.
type RangeError struct {
	Item     string
	Value    int64
	Min, Max int64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("dynamixel: %s = %d out of range %d..%d", e.Item, e.Value, e.Min, e.Max)
}

// Is makes errors.Is(err, ErrRange) hold.
func (e *RangeError) Is(target error) bool { return target == ErrRange }

// ItemSizeError is a buffer of the wrong length for an item.
type ItemSizeError struct {
	Item string
	Got  int // length of the buffer
	Want int // size of the item
}

func (e *ItemSizeError) Error() string {
	return fmt.Sprintf("dynamixel: %s: %d bytes, want %d", e.Item, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrItemSize) hold.
func (e *ItemSizeError) Is(target error) bool { return target == ErrItemSize }

// AngleError is an angle RadToPulse cannot turn into a goal position.
type AngleError struct {
	Rad float64
}

func (e *AngleError) Error() string {
	if math.IsNaN(e.Rad) || math.IsInf(e.Rad, 0) {
		return fmt.Sprintf("dynamixel: angle %v rad is not finite", e.Rad)
	}
	return fmt.Sprintf("dynamixel: angle %v rad is outside the goal position range %d..%d pulses",
		e.Rad, minGoalPosition, maxGoalPosition)
}

// Is makes errors.Is(err, ErrRange) hold.
func (e *AngleError) Is(target error) bool { return target == ErrRange }

// Item is one entry of a control table. Values are handled raw, as the
// integers on the wire; Scale converts them to physical units.
type Item struct {
	Name     string
	Addr     uint16
	Size     uint8 // 1, 2 or 4 bytes, little-endian
	Signed   bool  // two's complement: sign-extend on decode
	Writable bool
	EEPROM   bool    // writable only while Torque Enable = 0 (addresses below 64)
	Unit     string  // physical unit after Scale, "" if none
	Scale    float64 // physical units per raw count, 0 if none
	Min, Max int64   // raw range Encode accepts
	Default  int64   // factory value per docs/dynamixel.md §7; 0 where none is given
}

// Decode reads the item's raw value from exactly Size little-endian bytes,
// sign-extended when the item is signed. It never checks the range: a servo's
// reading is what it is (Bus Watchdog reads -1 once tripped).
func (it Item) Decode(b []byte) (int64, error) {
	if len(b) != int(it.Size) {
		return 0, &ItemSizeError{Item: it.Name, Got: len(b), Want: int(it.Size)}
	}
	var u uint64
	switch it.Size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		u = uint64(binary.LittleEndian.Uint32(b))
	default:
		return 0, it.badSize()
	}
	if it.Signed {
		shift := 64 - 8*uint(it.Size)
		return int64(u<<shift) >> shift, nil
	}
	return int64(u), nil
}

// Encode writes v into the first Size bytes of dst, little-endian, after
// checking it against Min..Max, so an out-of-range goal never reaches the wire
// (a sync write has no status reply to report it; docs/dynamixel.md §9).
func (it Item) Encode(dst []byte, v int64) error {
	if it.Size != 1 && it.Size != 2 && it.Size != 4 {
		return it.badSize()
	}
	if v < it.Min || v > it.Max {
		return &RangeError{Item: it.Name, Value: v, Min: it.Min, Max: it.Max}
	}
	if len(dst) < int(it.Size) {
		return &ItemSizeError{Item: it.Name, Got: len(dst), Want: int(it.Size)}
	}
	switch it.Size {
	case 1:
		dst[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(dst, uint16(v))
	default:
		binary.LittleEndian.PutUint32(dst, uint32(v))
	}
	return nil
}

// Physical converts a raw value to Unit; without a Scale it is the raw value.
func (it Item) Physical(raw int64) float64 {
	if it.Scale == 0 {
		return float64(raw)
	}
	return float64(raw) * it.Scale
}

func (it Item) badSize() error {
	return fmt.Errorf("%w: item %q has size %d, want 1, 2 or 4", ErrItemSize, it.Name, it.Size)
}

// Addresses of the XM430-W210 control table, for code that needs only the
// number (a sync read of Present Position is AddrPresentPosition, 4 bytes).
const (
	AddrModelNumber           uint16 = 0
	AddrFirmwareVersion       uint16 = 6
	AddrID                    uint16 = 7
	AddrBaudRate              uint16 = 8
	AddrReturnDelayTime       uint16 = 9
	AddrDriveMode             uint16 = 10
	AddrOperatingMode         uint16 = 11
	AddrProtocolType          uint16 = 13
	AddrHomingOffset          uint16 = 20
	AddrMovingThreshold       uint16 = 24
	AddrTemperatureLimit      uint16 = 31
	AddrMaxVoltageLimit       uint16 = 32
	AddrMinVoltageLimit       uint16 = 34
	AddrPWMLimit              uint16 = 36
	AddrCurrentLimit          uint16 = 38
	AddrVelocityLimit         uint16 = 44
	AddrMaxPositionLimit      uint16 = 48
	AddrMinPositionLimit      uint16 = 52
	AddrStartupConfiguration  uint16 = 60
	AddrShutdown              uint16 = 63
	AddrTorqueEnable          uint16 = 64
	AddrLED                   uint16 = 65
	AddrStatusReturnLevel     uint16 = 68
	AddrRegisteredInstruction uint16 = 69
	AddrHardwareErrorStatus   uint16 = 70
	AddrVelocityIGain         uint16 = 76
	AddrVelocityPGain         uint16 = 78
	AddrPositionDGain         uint16 = 80
	AddrPositionIGain         uint16 = 82
	AddrPositionPGain         uint16 = 84
	AddrFeedforward2ndGain    uint16 = 88
	AddrFeedforward1stGain    uint16 = 90
	AddrBusWatchdog           uint16 = 98
	AddrGoalPWM               uint16 = 100
	AddrGoalCurrent           uint16 = 102
	AddrGoalVelocity          uint16 = 104
	AddrProfileAcceleration   uint16 = 108
	AddrProfileVelocity       uint16 = 112
	AddrGoalPosition          uint16 = 116
	AddrRealtimeTick          uint16 = 120
	AddrMoving                uint16 = 122
	AddrMovingStatus          uint16 = 123
	AddrPresentPWM            uint16 = 124
	AddrPresentCurrent        uint16 = 126
	AddrPresentVelocity       uint16 = 128
	AddrPresentPosition       uint16 = 132
	AddrVelocityTrajectory    uint16 = 136
	AddrPositionTrajectory    uint16 = 140
	AddrPresentInputVoltage   uint16 = 144
	AddrPresentTemperature    uint16 = 146
)

// eepromEnd is the first RAM address; below it writes need torque off.
const eepromEnd = 64

// Goal Position range in extended position mode (docs/dynamixel.md §8).
const (
	minGoalPosition = -1048575
	maxGoalPosition = 1048575
)

// ItemKey names an item of the XM430-W210 table. ItemKey.Item builds the Item
// from constants, so the control loop gets one without a lookup or an
// allocation.
type ItemKey uint8

// The XM430-W210 items, in address order.
const (
	ItemModelNumber ItemKey = iota
	ItemFirmwareVersion
	ItemID
	ItemBaudRate
	ItemReturnDelayTime
	ItemDriveMode
	ItemOperatingMode
	ItemProtocolType
	ItemHomingOffset
	ItemMovingThreshold
	ItemTemperatureLimit
	ItemMaxVoltageLimit
	ItemMinVoltageLimit
	ItemPWMLimit
	ItemCurrentLimit
	ItemVelocityLimit
	ItemMaxPositionLimit
	ItemMinPositionLimit
	ItemStartupConfiguration
	ItemShutdown
	ItemTorqueEnable
	ItemLED
	ItemStatusReturnLevel
	ItemRegisteredInstruction
	ItemHardwareErrorStatus
	ItemVelocityIGain
	ItemVelocityPGain
	ItemPositionDGain
	ItemPositionIGain
	ItemPositionPGain
	ItemFeedforward2ndGain
	ItemFeedforward1stGain
	ItemBusWatchdog
	ItemGoalPWM
	ItemGoalCurrent
	ItemGoalVelocity
	ItemProfileAcceleration
	ItemProfileVelocity
	ItemGoalPosition
	ItemRealtimeTick
	ItemMoving
	ItemMovingStatus
	ItemPresentPWM
	ItemPresentCurrent
	ItemPresentVelocity
	ItemPresentPosition
	ItemVelocityTrajectory
	ItemPositionTrajectory
	ItemPresentInputVoltage
	ItemPresentTemperature
	numItems
)

// Raw ranges of read-only items the eManual gives no range for: whatever the
// size and sign can hold, so Encode (used by simulators) refuses nothing real.
const (
	u8Max  = math.MaxUint8
	u16Max = math.MaxUint16
	s16Min = math.MinInt16
	s16Max = math.MaxInt16
	s32Min = math.MinInt32
	s32Max = math.MaxInt32
)

// Units and scales of docs/dynamixel.md §7.
const (
	unitPulse   = "pulse"
	unitRPM     = "rev/min"
	scaleRPM    = 0.229
	unitVolt    = "V"
	scaleVolt   = 0.1
	unitPercent = "%"
	scalePWM    = 0.113
	unitMA      = "mA"
	scaleMA     = 2.69
	unitCelsius = "°C"
	unitMS      = "ms"
	maxGain     = 16383
)

// Item returns the item k names, with EEPROM derived from its address; the
// zero Item for an unknown key.
func (k ItemKey) Item() Item {
	it := k.item()
	it.EEPROM = it.Size != 0 && it.Addr < eepromEnd
	return it
}

// String returns the item's name.
func (k ItemKey) String() string {
	if it := k.item(); it.Name != "" {
		return it.Name
	}
	return "ItemKey(" + strconv.Itoa(int(k)) + ")"
}

// item is the single source of the table. Ranges and defaults are the
// eManual's (docs/dynamixel.md §7); where the range depends on another item
// (Goal Current within Current Limit), it is the widest the servo allows.
func (k ItemKey) item() Item {
	switch k {
	case ItemModelNumber:
		return Item{Name: "ModelNumber", Addr: AddrModelNumber, Size: 2, Max: u16Max, Default: ModelXM430W210}
	case ItemFirmwareVersion:
		return Item{Name: "FirmwareVersion", Addr: AddrFirmwareVersion, Size: 1, Max: u8Max}
	case ItemID:
		return Item{Name: "ID", Addr: AddrID, Size: 1, Writable: true, Max: 252, Default: 1}
	case ItemBaudRate:
		return Item{Name: "BaudRate", Addr: AddrBaudRate, Size: 1, Writable: true, Max: 7, Default: 1}
	case ItemReturnDelayTime:
		return Item{Name: "ReturnDelayTime", Addr: AddrReturnDelayTime, Size: 1, Writable: true,
			Unit: "µs", Scale: 2, Max: 254, Default: 250}
	case ItemDriveMode:
		// Bits 0, 2 and 3 (docs/dynamixel.md §7); the eManual's 0..5 predates bit 3.
		return Item{Name: "DriveMode", Addr: AddrDriveMode, Size: 1, Writable: true, Max: 13}
	case ItemOperatingMode:
		return Item{Name: "OperatingMode", Addr: AddrOperatingMode, Size: 1, Writable: true,
			Max: int64(ModePWM), Default: int64(ModePosition)}
	case ItemProtocolType:
		return Item{Name: "ProtocolType", Addr: AddrProtocolType, Size: 1, Writable: true, Min: 1, Max: 2, Default: 2}
	case ItemHomingOffset:
		return Item{Name: "HomingOffset", Addr: AddrHomingOffset, Size: 4, Signed: true, Writable: true,
			Unit: unitPulse, Scale: 1, Min: -1044479, Max: 1044479}
	case ItemMovingThreshold:
		return Item{Name: "MovingThreshold", Addr: AddrMovingThreshold, Size: 4, Writable: true,
			Unit: unitRPM, Scale: scaleRPM, Max: 1023, Default: 10}
	case ItemTemperatureLimit:
		return Item{Name: "TemperatureLimit", Addr: AddrTemperatureLimit, Size: 1, Writable: true,
			Unit: unitCelsius, Scale: 1, Max: 100, Default: 80}
	case ItemMaxVoltageLimit:
		return Item{Name: "MaxVoltageLimit", Addr: AddrMaxVoltageLimit, Size: 2, Writable: true,
			Unit: unitVolt, Scale: scaleVolt, Min: 95, Max: 160, Default: 160}
	case ItemMinVoltageLimit:
		return Item{Name: "MinVoltageLimit", Addr: AddrMinVoltageLimit, Size: 2, Writable: true,
			Unit: unitVolt, Scale: scaleVolt, Min: 95, Max: 160, Default: 95}
	case ItemPWMLimit:
		return Item{Name: "PWMLimit", Addr: AddrPWMLimit, Size: 2, Writable: true,
			Unit: unitPercent, Scale: scalePWM, Max: 885, Default: 885}
	case ItemCurrentLimit:
		return Item{Name: "CurrentLimit", Addr: AddrCurrentLimit, Size: 2, Writable: true,
			Unit: unitMA, Scale: scaleMA, Max: 1193, Default: 1193}
	case ItemVelocityLimit:
		return Item{Name: "VelocityLimit", Addr: AddrVelocityLimit, Size: 4, Writable: true,
			Unit: unitRPM, Scale: scaleRPM, Max: 1023, Default: 330}
	case ItemMaxPositionLimit:
		return Item{Name: "MaxPositionLimit", Addr: AddrMaxPositionLimit, Size: 4, Writable: true,
			Unit: unitPulse, Scale: 1, Max: 4095, Default: 4095}
	case ItemMinPositionLimit:
		return Item{Name: "MinPositionLimit", Addr: AddrMinPositionLimit, Size: 4, Writable: true,
			Unit: unitPulse, Scale: 1, Max: 4095}
	case ItemStartupConfiguration:
		return Item{Name: "StartupConfiguration", Addr: AddrStartupConfiguration, Size: 1, Writable: true, Max: 3}
	case ItemShutdown:
		// A HardwareError mask; the default covers overheating, electrical
		// shock and overload.
		return Item{Name: "Shutdown", Addr: AddrShutdown, Size: 1, Writable: true, Max: u8Max,
			Default: int64(HWOverheating | HWElectricalShock | HWOverload)}
	case ItemTorqueEnable:
		return Item{Name: "TorqueEnable", Addr: AddrTorqueEnable, Size: 1, Writable: true, Max: 1}
	case ItemLED:
		return Item{Name: "LED", Addr: AddrLED, Size: 1, Writable: true, Max: 1}
	case ItemStatusReturnLevel:
		return Item{Name: "StatusReturnLevel", Addr: AddrStatusReturnLevel, Size: 1, Writable: true, Max: 2, Default: 2}
	case ItemRegisteredInstruction:
		return Item{Name: "RegisteredInstruction", Addr: AddrRegisteredInstruction, Size: 1, Max: 1}
	case ItemHardwareErrorStatus:
		return Item{Name: "HardwareErrorStatus", Addr: AddrHardwareErrorStatus, Size: 1, Max: u8Max}
	case ItemVelocityIGain:
		return Item{Name: "VelocityIGain", Addr: AddrVelocityIGain, Size: 2, Writable: true, Max: maxGain, Default: 1920}
	case ItemVelocityPGain:
		return Item{Name: "VelocityPGain", Addr: AddrVelocityPGain, Size: 2, Writable: true, Max: maxGain, Default: 100}
	case ItemPositionDGain:
		return Item{Name: "PositionDGain", Addr: AddrPositionDGain, Size: 2, Writable: true, Max: maxGain}
	case ItemPositionIGain:
		return Item{Name: "PositionIGain", Addr: AddrPositionIGain, Size: 2, Writable: true, Max: maxGain}
	case ItemPositionPGain:
		return Item{Name: "PositionPGain", Addr: AddrPositionPGain, Size: 2, Writable: true, Max: maxGain, Default: 800}
	case ItemFeedforward2ndGain:
		return Item{Name: "Feedforward2ndGain", Addr: AddrFeedforward2ndGain, Size: 2, Writable: true, Max: maxGain}
	case ItemFeedforward1stGain:
		return Item{Name: "Feedforward1stGain", Addr: AddrFeedforward1stGain, Size: 2, Writable: true, Max: maxGain}
	case ItemBusWatchdog:
		// Signed because it reads -1 once tripped; writes are 0 (off) or
		// 1..127 × 20 ms.
		return Item{Name: "BusWatchdog", Addr: AddrBusWatchdog, Size: 1, Signed: true, Writable: true,
			Unit: unitMS, Scale: 20, Max: 127}
	case ItemGoalPWM:
		return Item{Name: "GoalPWM", Addr: AddrGoalPWM, Size: 2, Signed: true, Writable: true,
			Unit: unitPercent, Scale: scalePWM, Min: -885, Max: 885}
	case ItemGoalCurrent:
		return Item{Name: "GoalCurrent", Addr: AddrGoalCurrent, Size: 2, Signed: true, Writable: true,
			Unit: unitMA, Scale: scaleMA, Min: -1193, Max: 1193}
	case ItemGoalVelocity:
		return Item{Name: "GoalVelocity", Addr: AddrGoalVelocity, Size: 4, Signed: true, Writable: true,
			Unit: unitRPM, Scale: scaleRPM, Min: -1023, Max: 1023}
	case ItemProfileAcceleration:
		return Item{Name: "ProfileAcceleration", Addr: AddrProfileAcceleration, Size: 4, Writable: true,
			Unit: "rev/min²", Scale: 214.577, Max: 32767}
	case ItemProfileVelocity:
		return Item{Name: "ProfileVelocity", Addr: AddrProfileVelocity, Size: 4, Writable: true,
			Unit: unitRPM, Scale: scaleRPM, Max: 32767}
	case ItemGoalPosition:
		// The extended-position range; in position mode the servo further
		// limits it to Min..Max Position Limit.
		return Item{Name: "GoalPosition", Addr: AddrGoalPosition, Size: 4, Signed: true, Writable: true,
			Unit: unitPulse, Scale: 1, Min: minGoalPosition, Max: maxGoalPosition}
	case ItemRealtimeTick:
		return Item{Name: "RealtimeTick", Addr: AddrRealtimeTick, Size: 2, Unit: unitMS, Scale: 1, Max: 32767}
	case ItemMoving:
		return Item{Name: "Moving", Addr: AddrMoving, Size: 1, Max: 1}
	case ItemMovingStatus:
		return Item{Name: "MovingStatus", Addr: AddrMovingStatus, Size: 1, Max: u8Max}
	case ItemPresentPWM:
		return Item{Name: "PresentPWM", Addr: AddrPresentPWM, Size: 2, Signed: true,
			Unit: unitPercent, Scale: scalePWM, Min: s16Min, Max: s16Max}
	case ItemPresentCurrent:
		return Item{Name: "PresentCurrent", Addr: AddrPresentCurrent, Size: 2, Signed: true,
			Unit: unitMA, Scale: scaleMA, Min: s16Min, Max: s16Max}
	case ItemPresentVelocity:
		return Item{Name: "PresentVelocity", Addr: AddrPresentVelocity, Size: 4, Signed: true,
			Unit: unitRPM, Scale: scaleRPM, Min: s32Min, Max: s32Max}
	case ItemPresentPosition:
		return Item{Name: "PresentPosition", Addr: AddrPresentPosition, Size: 4, Signed: true,
			Unit: unitPulse, Scale: 1, Min: s32Min, Max: s32Max}
	case ItemVelocityTrajectory:
		// Signed like the velocities it tracks (negative when moving backwards).
		return Item{Name: "VelocityTrajectory", Addr: AddrVelocityTrajectory, Size: 4, Signed: true,
			Unit: unitRPM, Scale: scaleRPM, Min: s32Min, Max: s32Max}
	case ItemPositionTrajectory:
		return Item{Name: "PositionTrajectory", Addr: AddrPositionTrajectory, Size: 4, Signed: true,
			Unit: unitPulse, Scale: 1, Min: s32Min, Max: s32Max}
	case ItemPresentInputVoltage:
		return Item{Name: "PresentInputVoltage", Addr: AddrPresentInputVoltage, Size: 2,
			Unit: unitVolt, Scale: scaleVolt, Max: u16Max}
	case ItemPresentTemperature:
		return Item{Name: "PresentTemperature", Addr: AddrPresentTemperature, Size: 1,
			Unit: unitCelsius, Scale: 1, Max: u8Max}
	}
	return Item{}
}

// ModelXM430W210 is the XM430-W210's Model Number, as Ping reports it.
const ModelXM430W210 = 1030

// Model is the control table of one servo model.
type Model struct {
	Number uint16
	Name   string
	items  []Item // in address order
}

// XM430W210 returns the XM430-W210 table. Each call builds a new Model, so a
// caller may not change what another one sees.
func XM430W210() *Model {
	m := &Model{Number: ModelXM430W210, Name: "XM430-W210", items: make([]Item, 0, numItems)}
	for k := range numItems {
		m.items = append(m.items, k.Item())
	}
	return m
}

// Item looks an item up by its Name ("GoalPosition").
func (m *Model) Item(name string) (Item, bool) {
	for _, it := range m.items {
		if it.Name == name {
			return it, true
		}
	}
	return Item{}, false
}

// ItemAt returns the item that starts at addr, for a simulator that serves
// reads and writes by address.
func (m *Model) ItemAt(addr uint16) (Item, bool) {
	for _, it := range m.items {
		if it.Addr == addr {
			return it, true
		}
	}
	return Item{}, false
}

// Items returns a copy of the table in address order.
func (m *Model) Items() []Item {
	return append([]Item(nil), m.items...)
}

// OperatingMode is the value of Operating Mode (address 11).
type OperatingMode uint8

// Operating modes of the XM430-W210 (docs/dynamixel.md §7).
const (
	ModeCurrent              OperatingMode = 0
	ModeVelocity             OperatingMode = 1
	ModePosition             OperatingMode = 3 // Emio's default
	ModeExtendedPosition     OperatingMode = 4 // Emio's multi_turn
	ModeCurrentBasedPosition OperatingMode = 5
	ModePWM                  OperatingMode = 16
)

// Valid reports whether m is one of the modes above; the servo answers any
// other value with Data Range Error.
func (m OperatingMode) Valid() bool {
	switch m {
	case ModeCurrent, ModeVelocity, ModePosition, ModeExtendedPosition, ModeCurrentBasedPosition, ModePWM:
		return true
	}
	return false
}

func (m OperatingMode) String() string {
	switch m {
	case ModeCurrent:
		return "current"
	case ModeVelocity:
		return "velocity"
	case ModePosition:
		return "position"
	case ModeExtendedPosition:
		return "extended position"
	case ModeCurrentBasedPosition:
		return "current-based position"
	case ModePWM:
		return "PWM"
	}
	return "OperatingMode(" + strconv.Itoa(int(m)) + ")"
}

// HardwareError is the value of Hardware Error Status (address 70), also the
// bit layout of Shutdown (address 63).
type HardwareError uint8

// Hardware error bits (docs/dynamixel.md §7).
const (
	HWInputVoltage    HardwareError = 1 << 0
	HWOverheating     HardwareError = 1 << 2
	HWMotorEncoder    HardwareError = 1 << 3
	HWElectricalShock HardwareError = 1 << 4
	HWOverload        HardwareError = 1 << 5
)

// Has reports whether every bit of bits is set (false for no bits).
func (h HardwareError) Has(bits HardwareError) bool {
	return bits != 0 && h&bits == bits
}

// String lists the set bits, lowest first ("overheating|overload"); "none"
// when clear, "bitN" for a bit the docs do not name.
func (h HardwareError) String() string {
	if h == 0 {
		return "none"
	}
	var b strings.Builder
	for i := range 8 {
		bit := HardwareError(1) << i
		if h&bit == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		switch bit {
		case HWInputVoltage:
			b.WriteString("input voltage")
		case HWOverheating:
			b.WriteString("overheating")
		case HWMotorEncoder:
			b.WriteString("motor encoder")
		case HWElectricalShock:
			b.WriteString("electrical shock")
		case HWOverload:
			b.WriteString("overload")
		default:
			b.WriteString("bit" + strconv.Itoa(i))
		}
	}
	return b.String()
}

// bauds are the bit rates of the Baud Rate (address 8) codes 0..7 of
// protocol 2.0 servos (docs/dynamixel.md).
var bauds = [...]int{9600, 57600, 115200, 1000000, 2000000, 3000000, 4000000, 4500000}

// BaudList names the bit rates a servo takes, for messages: "9600, 57600,
// …, 4000000 or 4500000".
func BaudList() string {
	return wordList(len(bauds), "or", func(i int) int { return bauds[i] })
}

// BaudFromCode maps a Baud Rate (address 8) code to bits/s.
func BaudFromCode(code int64) (int, error) {
	if code < 0 || code >= int64(len(bauds)) {
		return 0, fmt.Errorf("%w: Baud Rate code %d (want 0..%d)", ErrBaud, code, len(bauds)-1)
	}
	return bauds[code], nil
}

// BaudCode maps bits/s to the Baud Rate (address 8) code.
func BaudCode(bps int) (int64, error) {
	for code, b := range bauds {
		if b == bps {
			return int64(code), nil
		}
	}
	return 0, fmt.Errorf("%w: %d bit/s (want %s)", ErrBaud, bps, BaudList())
}

// Emio's angle convention (docs/dynamixel.md §9): pulse 2048 is 0 rad and a
// positive angle is a decreasing pulse.
const (
	// PulseCenter is the pulse of 0 rad.
	PulseCenter = 2048
	// PulsesPerRad is K = 4096/(2π), rounded once to float64 as Python's
	// float arithmetic computes it, so conversions match emioapi bit for bit.
	PulsesPerRad float64 = 4096 / (2 * float64(math.Pi))
)

// PulseToRad converts a Present Position to radians as emioapi does:
// (2048 − p)/K. The algebraically equal (2048 − p)·2π/4096 differs in the
// last bit for 584 of the pulses 0..4095.
func PulseToRad(p int32) float64 {
	return (PulseCenter - float64(p)) / PulsesPerRad
}

// RadToPulse converts an angle to a Goal Position as emioapi does:
// trunc(2048 − K·rad). The result lies in the extended-position goal range;
// NaN, ±Inf and angles beyond it are an *AngleError (ErrRange), where
// emioapi's int() would raise. Converting a read angle back gives p − 1 for 79
// of the pulses 0..4095.
func RadToPulse(rad float64) (int32, error) {
	// The conversion to float64 rounds K·rad on its own, forbidding a fused
	// multiply-subtract (arm64), which would differ from emioapi in the last bit.
	f := PulseCenter - float64(PulsesPerRad*rad)
	if !(f > minGoalPosition-1 && f < maxGoalPosition+1) { // also false for NaN
		return 0, &AngleError{Rad: rad}
	}
	return int32(f), nil // truncates toward zero, as Python's int()
}
