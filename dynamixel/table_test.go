package dynamixel

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestItemDecode(t *testing.T) {
	tests := []struct {
		name string
		key  ItemKey
		b    []byte
		want int64
		err  error
	}{
		{"position -1", ItemPresentPosition, []byte{0xFF, 0xFF, 0xFF, 0xFF}, -1, nil},
		{"position 166", ItemPresentPosition, []byte{0xA6, 0, 0, 0}, 166, nil},
		{"position min int32", ItemPresentPosition, []byte{0, 0, 0, 0x80}, math.MinInt32, nil},
		{"position max int32", ItemPresentPosition, []byte{0xFF, 0xFF, 0xFF, 0x7F}, math.MaxInt32, nil},
		{"current -1", ItemPresentCurrent, []byte{0xFF, 0xFF}, -1, nil},
		{"current -32768", ItemPresentCurrent, []byte{0x00, 0x80}, -32768, nil},
		{"velocity -2", ItemPresentVelocity, []byte{0xFE, 0xFF, 0xFF, 0xFF}, -2, nil},
		{"watchdog tripped", ItemBusWatchdog, []byte{0xFF}, -1, nil},
		{"model number unsigned", ItemModelNumber, []byte{0x06, 0x04}, 1030, nil},
		{"voltage unsigned", ItemPresentInputVoltage, []byte{0xFF, 0xFF}, 65535, nil},
		{"profile velocity unsigned", ItemProfileVelocity, []byte{0xFF, 0xFF, 0xFF, 0xFF}, 0xFFFFFFFF, nil},
		{"temperature", ItemPresentTemperature, []byte{0xC8}, 200, nil},
		{"short", ItemPresentPosition, []byte{1, 2, 3}, 0, ErrItemSize},
		{"long", ItemTorqueEnable, []byte{1, 0}, 0, ErrItemSize},
		{"empty", ItemPresentCurrent, nil, 0, ErrItemSize},
		{"unknown key", ItemKey(200), nil, 0, ErrItemSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.key.Item().Decode(tt.b)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Decode(% X) error = %v, want %v", tt.b, err, tt.err)
			}
			if got != tt.want {
				t.Errorf("Decode(% X) = %d, want %d", tt.b, got, tt.want)
			}
		})
	}
}

func TestItemEncode(t *testing.T) {
	tests := []struct {
		name string
		key  ItemKey
		dst  int // buffer length
		v    int64
		want []byte
		err  error
	}{
		{"goal 512", ItemGoalPosition, 4, 512, []byte{0x00, 0x02, 0x00, 0x00}, nil},
		{"goal -1", ItemGoalPosition, 4, -1, []byte{0xFF, 0xFF, 0xFF, 0xFF}, nil},
		{"goal -131073 stuffing case", ItemGoalPosition, 4, -131073, []byte{0xFF, 0xFF, 0xFD, 0xFF}, nil},
		{"goal min", ItemGoalPosition, 4, -1048575, []byte{0x01, 0x00, 0xF0, 0xFF}, nil},
		{"goal max", ItemGoalPosition, 4, 1048575, []byte{0xFF, 0xFF, 0x0F, 0x00}, nil},
		{"goal below", ItemGoalPosition, 4, -1048576, nil, ErrRange},
		{"goal above", ItemGoalPosition, 4, 1048576, nil, ErrRange},
		{"current -1", ItemGoalCurrent, 2, -1, []byte{0xFF, 0xFF}, nil},
		{"current above limit", ItemGoalCurrent, 2, 1194, nil, ErrRange},
		{"torque on", ItemTorqueEnable, 1, 1, []byte{1}, nil},
		{"torque 2", ItemTorqueEnable, 1, 2, nil, ErrRange},
		{"id 253", ItemID, 1, 253, nil, ErrRange},
		{"watchdog -1 refused", ItemBusWatchdog, 1, -1, nil, ErrRange},
		{"watchdog 127", ItemBusWatchdog, 1, 127, []byte{0x7F}, nil},
		{"min voltage below", ItemMinVoltageLimit, 2, 94, nil, ErrRange},
		{"profile velocity 1000", ItemProfileVelocity, 4, 1000, []byte{0xE8, 0x03, 0, 0}, nil},
		{"longer buffer keeps the rest", ItemLED, 3, 1, []byte{1, 0, 0}, nil},
		{"short buffer", ItemGoalPosition, 3, 0, nil, ErrItemSize},
		{"unknown key", ItemKey(200), 4, 0, nil, ErrItemSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]byte, tt.dst)
			err := tt.key.Item().Encode(dst, tt.v)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("Encode(%d) error = %v, want %v", tt.v, err, tt.err)
			}
			if err != nil {
				return
			}
			if !bytes.Equal(dst, tt.want) {
				t.Errorf("Encode(%d) = % X, want % X", tt.v, dst, tt.want)
			}
			back, err := tt.key.Item().Decode(dst[:tt.key.Item().Size])
			if err != nil || back != tt.v {
				t.Errorf("Decode(Encode(%d)) = %d, %v", tt.v, back, err)
			}
		})
	}
}

func TestRangeErrorNamesItemAndRange(t *testing.T) {
	err := ItemGoalPosition.Item().Encode(make([]byte, 4), 2000000)
	var re *RangeError
	if !errors.As(err, &re) || re.Item != "GoalPosition" || re.Value != 2000000 {
		t.Fatalf("error = %#v", err)
	}
	const want = "dynamixel: GoalPosition = 2000000 out of range -1048575..1048575"
	if err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

func TestPhysical(t *testing.T) {
	tests := []struct {
		key  ItemKey
		raw  int64
		want float64
	}{
		{ItemReturnDelayTime, 250, 500},
		{ItemPresentInputVoltage, 120, 12},
		{ItemPresentCurrent, -100, -269},
		{ItemBusWatchdog, 5, 100},
		{ItemTorqueEnable, 1, 1}, // no scale: the raw value
	}
	for _, tt := range tests {
		if got := tt.key.Item().Physical(tt.raw); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%v.Physical(%d) = %v, want %v", tt.key, tt.raw, got, tt.want)
		}
	}
}

// readOnly lists the items marked (R) in docs/dynamixel.md §7.
var readOnly = map[string]bool{
	"ModelNumber": true, "FirmwareVersion": true, "RegisteredInstruction": true,
	"HardwareErrorStatus": true, "RealtimeTick": true, "Moving": true, "MovingStatus": true,
	"PresentPWM": true, "PresentCurrent": true, "PresentVelocity": true, "PresentPosition": true,
	"VelocityTrajectory": true, "PositionTrajectory": true, "PresentInputVoltage": true,
	"PresentTemperature": true,
}

func TestTableConsistency(t *testing.T) {
	m := XM430W210()
	if m.Number != 1030 || m.Name != "XM430-W210" {
		t.Errorf("model = %d %q", m.Number, m.Name)
	}
	items := m.Items()
	if len(items) != int(numItems) {
		t.Fatalf("%d items, want %d", len(items), numItems)
	}
	names := map[string]bool{}
	end := uint16(0) // first free address after the previous item
	for i, it := range items {
		if it.Size != 1 && it.Size != 2 && it.Size != 4 {
			t.Errorf("%s: size %d", it.Name, it.Size)
		}
		if i > 0 && it.Addr < end {
			t.Errorf("%s at %d overlaps the previous item (ends at %d)", it.Name, it.Addr, end)
		}
		end = it.Addr + uint16(it.Size)
		if it.EEPROM != (it.Addr < 64) {
			t.Errorf("%s at %d: EEPROM = %v", it.Name, it.Addr, it.EEPROM)
		}
		if it.Writable == readOnly[it.Name] {
			t.Errorf("%s: Writable = %v", it.Name, it.Writable)
		}
		if names[it.Name] {
			t.Errorf("duplicate name %s", it.Name)
		}
		names[it.Name] = true
		lo, hi := int64(0), int64(1)<<(8*it.Size)-1
		if it.Signed {
			lo, hi = -int64(1)<<(8*it.Size-1), int64(1)<<(8*it.Size-1)-1
		}
		if it.Min > it.Max || it.Min < lo || it.Max > hi {
			t.Errorf("%s: range %d..%d does not fit %d..%d", it.Name, it.Min, it.Max, lo, hi)
		}
		if it.Default < it.Min || it.Default > it.Max {
			t.Errorf("%s: default %d outside %d..%d", it.Name, it.Default, it.Min, it.Max)
		}
		if (it.Unit == "") != (it.Scale == 0) {
			t.Errorf("%s: unit %q with scale %v", it.Name, it.Unit, it.Scale)
		}
		if k := ItemKey(i); k.String() != it.Name || k.Item() != it {
			t.Errorf("ItemKey(%d) = %v, want %s", i, k, it.Name)
		}
		if got, ok := m.Item(it.Name); !ok || got != it {
			t.Errorf("Item(%q) = %v, %v", it.Name, got, ok)
		}
		if got, ok := m.ItemAt(it.Addr); !ok || got != it {
			t.Errorf("ItemAt(%d) = %v, %v", it.Addr, got, ok)
		}
	}
	for name := range readOnly {
		if !names[name] {
			t.Errorf("read-only item %s missing", name)
		}
	}
	if _, ok := m.Item("Nope"); ok {
		t.Error(`Item("Nope") found`)
	}
	if _, ok := m.ItemAt(1); ok {
		t.Error("ItemAt(1) found (inside Model Number)")
	}
	if got := ItemKey(200).String(); got != "ItemKey(200)" {
		t.Errorf("ItemKey(200).String() = %q", got)
	}
}

func TestTableAddressesAndDefaults(t *testing.T) {
	m := XM430W210()
	tests := []struct {
		name   string
		addr   uint16
		size   uint8
		signed bool
		def    int64
	}{
		{"ModelNumber", 0, 2, false, 1030},
		{"FirmwareVersion", 6, 1, false, 0},
		{"ID", 7, 1, false, 1},
		{"BaudRate", 8, 1, false, 1},
		{"ReturnDelayTime", 9, 1, false, 250},
		{"DriveMode", 10, 1, false, 0},
		{"OperatingMode", 11, 1, false, 3},
		{"ProtocolType", 13, 1, false, 2},
		{"HomingOffset", 20, 4, true, 0},
		{"MovingThreshold", 24, 4, false, 10},
		{"TemperatureLimit", 31, 1, false, 80},
		{"MaxVoltageLimit", 32, 2, false, 160},
		{"MinVoltageLimit", 34, 2, false, 95},
		{"PWMLimit", 36, 2, false, 885},
		{"CurrentLimit", 38, 2, false, 1193},
		{"VelocityLimit", 44, 4, false, 330},
		{"MaxPositionLimit", 48, 4, false, 4095},
		{"MinPositionLimit", 52, 4, false, 0},
		{"StartupConfiguration", 60, 1, false, 0},
		{"Shutdown", 63, 1, false, 52},
		{"TorqueEnable", 64, 1, false, 0},
		{"LED", 65, 1, false, 0},
		{"StatusReturnLevel", 68, 1, false, 2},
		{"RegisteredInstruction", 69, 1, false, 0},
		{"HardwareErrorStatus", 70, 1, false, 0},
		{"VelocityIGain", 76, 2, false, 1920},
		{"VelocityPGain", 78, 2, false, 100},
		{"PositionDGain", 80, 2, false, 0},
		{"PositionIGain", 82, 2, false, 0},
		{"PositionPGain", 84, 2, false, 800},
		{"Feedforward2ndGain", 88, 2, false, 0},
		{"Feedforward1stGain", 90, 2, false, 0},
		{"BusWatchdog", 98, 1, true, 0},
		{"GoalPWM", 100, 2, true, 0},
		{"GoalCurrent", 102, 2, true, 0},
		{"GoalVelocity", 104, 4, true, 0},
		{"ProfileAcceleration", 108, 4, false, 0},
		{"ProfileVelocity", 112, 4, false, 0},
		{"GoalPosition", 116, 4, true, 0},
		{"RealtimeTick", 120, 2, false, 0},
		{"Moving", 122, 1, false, 0},
		{"MovingStatus", 123, 1, false, 0},
		{"PresentPWM", 124, 2, true, 0},
		{"PresentCurrent", 126, 2, true, 0},
		{"PresentVelocity", 128, 4, true, 0},
		{"PresentPosition", 132, 4, true, 0},
		{"VelocityTrajectory", 136, 4, true, 0},
		{"PositionTrajectory", 140, 4, true, 0},
		{"PresentInputVoltage", 144, 2, false, 0},
		{"PresentTemperature", 146, 1, false, 0},
	}
	for _, tt := range tests {
		it, ok := m.Item(tt.name)
		if !ok {
			t.Errorf("%s missing", tt.name)
			continue
		}
		if it.Addr != tt.addr || it.Size != tt.size || it.Signed != tt.signed || it.Default != tt.def {
			t.Errorf("%s = addr %d size %d signed %v default %d, want %d %d %v %d", tt.name,
				it.Addr, it.Size, it.Signed, it.Default, tt.addr, tt.size, tt.signed, tt.def)
		}
	}
	if len(tests) != len(m.Items()) {
		t.Errorf("checked %d items of %d", len(tests), len(m.Items()))
	}
	if it, _ := m.Item("GoalPosition"); it.Min != -1048575 || it.Max != 1048575 {
		t.Errorf("GoalPosition range %d..%d", it.Min, it.Max)
	}
}

func TestModelIsFresh(t *testing.T) {
	a := XM430W210()
	items := a.Items()
	items[0].Name = "changed"
	if it, ok := a.Item("ModelNumber"); !ok || it.Name != "ModelNumber" {
		t.Error("Items() shares storage with the Model")
	}
	a.items[0].Default = 1
	if it, _ := XM430W210().Item("ModelNumber"); it.Default != 1030 {
		t.Error("a new Model sees another's change")
	}
}

func TestBaud(t *testing.T) {
	tests := []struct {
		code int64
		bps  int
	}{
		{0, 9600}, {1, 57600}, {2, 115200}, {3, 1000000},
		{4, 2000000}, {5, 3000000}, {6, 4000000}, {7, 4500000},
	}
	for _, tt := range tests {
		if got, err := BaudFromCode(tt.code); err != nil || got != tt.bps {
			t.Errorf("BaudFromCode(%d) = %d, %v", tt.code, got, err)
		}
		if got, err := BaudCode(tt.bps); err != nil || got != tt.code {
			t.Errorf("BaudCode(%d) = %d, %v", tt.bps, got, err)
		}
	}
	for _, code := range []int64{-1, 8, 255} {
		if _, err := BaudFromCode(code); !errors.Is(err, ErrBaud) {
			t.Errorf("BaudFromCode(%d) error = %v", code, err)
		}
	}
	for _, bps := range []int{0, 1, 38400, 4571428} {
		if _, err := BaudCode(bps); !errors.Is(err, ErrBaud) {
			t.Errorf("BaudCode(%d) error = %v", bps, err)
		}
	}
	if _, err := BaudCode(230400); err == nil || err.Error()[:len("dynamixel: ")] != "dynamixel: " {
		t.Errorf("BaudCode(230400) error = %v", err)
	}
	const list = "9600, 57600, 115200, 1000000, 2000000, 3000000, 4000000 or 4500000"
	if got := BaudList(); got != list {
		t.Errorf("BaudList() = %q, want %q", got, list)
	}
	if _, err := BaudCode(230400); err == nil || !strings.Contains(err.Error(), "(want "+list+")") {
		t.Errorf("BaudCode(230400) error = %v, want the list", err)
	}
}

func TestOperatingMode(t *testing.T) {
	tests := []struct {
		m     OperatingMode
		valid bool
		s     string
	}{
		{0, true, "current"},
		{1, true, "velocity"},
		{2, false, "OperatingMode(2)"},
		{3, true, "position"},
		{4, true, "extended position"},
		{5, true, "current-based position"},
		{16, true, "PWM"},
		{17, false, "OperatingMode(17)"},
	}
	for _, tt := range tests {
		if tt.m.Valid() != tt.valid || tt.m.String() != tt.s {
			t.Errorf("OperatingMode(%d) = %v %q, want %v %q", uint8(tt.m), tt.m.Valid(), tt.m, tt.valid, tt.s)
		}
	}
	if it := ItemOperatingMode.Item(); OperatingMode(it.Default) != ModePosition {
		t.Errorf("default mode %d", it.Default)
	}
}

func TestHardwareError(t *testing.T) {
	tests := []struct {
		h HardwareError
		s string
	}{
		{0, "none"},
		{HWOverheating | HWOverload, "overheating|overload"},
		{HWInputVoltage, "input voltage"},
		{HWMotorEncoder | HWElectricalShock, "motor encoder|electrical shock"},
		{52, "overheating|electrical shock|overload"},
		{0x82, "bit1|bit7"},
	}
	for _, tt := range tests {
		if got := tt.h.String(); got != tt.s {
			t.Errorf("HardwareError(%#x) = %q, want %q", uint8(tt.h), got, tt.s)
		}
	}
	h := HWOverheating | HWOverload
	if !h.Has(HWOverheating) || !h.Has(HWOverload) || !h.Has(HWOverheating|HWOverload) {
		t.Error("Has misses a set bit")
	}
	if h.Has(HWInputVoltage) || h.Has(HWOverload|HWMotorEncoder) || h.Has(0) {
		t.Error("Has reports a clear bit")
	}
	if got := HardwareError(ItemShutdown.Item().Default); got != HWOverheating|HWElectricalShock|HWOverload {
		t.Errorf("Shutdown default = %v", got)
	}
}

// pyK is K as Python computes it: each operation rounded to float64.
func pyK() float64 {
	two, pi := 2.0, math.Pi
	return 4096 / (two * pi)
}

func TestPulsesPerRadIsPythonK(t *testing.T) {
	if math.Float64bits(PulsesPerRad) != math.Float64bits(pyK()) {
		t.Fatalf("PulsesPerRad = %b, Python's K = %b", PulsesPerRad, pyK())
	}
}

func TestPulseToRadBitExact(t *testing.T) {
	k := pyK()
	two, pi := 2.0, math.Pi
	differ := 0
	for p := int32(-70000); p <= 70000; p++ {
		got := PulseToRad(p)
		want := (2048 - float64(p)) / k
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("PulseToRad(%d) = %v, want %v", p, got, want)
		}
		if p >= 0 && p < 4096 && got != (2048-float64(p))*two*pi/4096 {
			differ++
		}
	}
	// docs/dynamixel.md §9: the other order differs for exactly 584 pulses,
	// which proves this one is emioapi's.
	if differ != 584 {
		t.Errorf("(2048-p)*2π/4096 differs for %d pulses of 0..4095, want 584", differ)
	}
	for _, p := range []int32{math.MinInt32, math.MaxInt32} {
		if got, want := PulseToRad(p), (2048-float64(p))/k; got != want {
			t.Errorf("PulseToRad(%d) = %v, want %v", p, got, want)
		}
	}
	if PulseToRad(2048) != 0 || PulseToRad(0) <= 0 || PulseToRad(4095) >= 0 {
		t.Error("pulse 2048 is not 0 rad, or the sign is not emioapi's")
	}
}

func TestRadToPulse(t *testing.T) {
	k := pyK()
	tests := []struct {
		name string
		rad  float64
		want int32
		err  bool
	}{
		{"zero", 0, 2048, false},
		{"+π/2", math.Pi / 2, int32(2048 - float64(k*(math.Pi/2))), false},
		{"-π/2", -math.Pi / 2, int32(2048 - float64(k*(-math.Pi/2))), false},
		{"truncates toward zero", 0.5 / k, 2047, false}, // 2047.5 → 2047
		{"truncates negative toward zero", (2048 + 0.5) / k, 0, false},
		{"just below zero pulse", (2048 + 1.5) / k, -1, false},
		{"goal max", (2048 - 1048575.5) / k, 1048575, false},
		{"goal min", (2048 + 1048575.5) / k, -1048575, false},
		{"beyond goal max", (2048 - 1048577) / k, 0, true},
		{"beyond goal min", (2048 + 1048577) / k, 0, true},
		{"huge", 1e300, 0, true},
		{"NaN", math.NaN(), 0, true},
		{"+Inf", math.Inf(1), 0, true},
		{"-Inf", math.Inf(-1), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RadToPulse(tt.rad)
			if tt.err {
				var ae *AngleError
				if !errors.Is(err, ErrRange) || !errors.As(err, &ae) {
					t.Fatalf("RadToPulse(%v) = %d, %v; want ErrRange", tt.rad, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("RadToPulse(%v) = %d, %v; want %d", tt.rad, got, err, tt.want)
			}
		})
	}
}

func TestRadToPulseBitExact(t *testing.T) {
	k := pyK()
	for p := int32(-5000); p <= 10000; p++ {
		for _, rad := range []float64{PulseToRad(p), PulseToRad(p) + 1e-4, math.Nextafter(PulseToRad(p), 0)} {
			got, err := RadToPulse(rad)
			want := int32(2048 - float64(k*rad))
			if err != nil || got != want {
				t.Fatalf("RadToPulse(%v) = %d, %v; want %d", rad, got, err, want)
			}
		}
	}
}

func TestRadToPulseRoundTrip(t *testing.T) {
	// docs/dynamixel.md §9: a read angle converted back gives p−1 for exactly
	// 79 pulses of 0..4095, all below 2048, and p for the others.
	minus1 := 0
	for p := int32(0); p < 4096; p++ {
		got, err := RadToPulse(PulseToRad(p))
		switch {
		case err != nil:
			t.Fatalf("RadToPulse(PulseToRad(%d)): %v", p, err)
		case got == p-1:
			minus1++
			if p >= 2048 {
				t.Errorf("pulse %d comes back as %d (only pulses below 2048 should)", p, got)
			}
		case got != p:
			t.Errorf("pulse %d comes back as %d", p, got)
		}
	}
	if minus1 != 79 {
		t.Errorf("%d pulses come back as p-1, want 79", minus1)
	}
}

func TestAngleErrorMessage(t *testing.T) {
	_, err := RadToPulse(math.NaN())
	if err == nil || err.Error() != "dynamixel: angle NaN rad is not finite" {
		t.Errorf("NaN error = %v", err)
	}
	_, err = RadToPulse(1e6)
	if err == nil || err.Error() != "dynamixel: angle 1e+06 rad is outside the goal position range -1048575..1048575 pulses" {
		t.Errorf("range error = %v", err)
	}
}

func TestTableHotPathAllocs(t *testing.T) {
	buf := make([]byte, 4)
	var sink int64
	var fsink float64
	allocs := testing.AllocsPerRun(1000, func() {
		goal := ItemGoalPosition.Item()
		p, err := RadToPulse(0.7)
		if err != nil {
			panic(err)
		}
		if err := goal.Encode(buf, int64(p)); err != nil {
			panic(err)
		}
		v, err := ItemPresentPosition.Item().Decode(buf)
		if err != nil {
			panic(err)
		}
		sink += v
		fsink += PulseToRad(int32(v)) + ItemPresentCurrent.Item().Physical(v)
		if HardwareError(v).Has(HWOverload) {
			sink++
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per tick, want 0", allocs)
	}
	_, _ = sink, fsink
}

func FuzzItemDecode(f *testing.F) {
	f.Add(uint8(ItemPresentPosition), []byte{0xFF, 0xFF, 0xFF, 0xFF})
	f.Add(uint8(ItemPresentCurrent), []byte{0xFF, 0xFF})
	f.Add(uint8(ItemBusWatchdog), []byte{0xFF})
	f.Add(uint8(ItemGoalPosition), []byte{0x00, 0x00, 0x10, 0x00})
	f.Add(uint8(200), []byte{})
	f.Fuzz(func(t *testing.T, key uint8, b []byte) {
		it := ItemKey(key).Item()
		v, err := it.Decode(b)
		if err != nil {
			if !errors.Is(err, ErrItemSize) {
				t.Fatalf("Decode(% X): %v", b, err)
			}
			return
		}
		lo, hi := int64(0), int64(1)<<(8*it.Size)-1
		if it.Signed {
			lo, hi = -int64(1)<<(8*it.Size-1), int64(1)<<(8*it.Size-1)-1
		}
		if v < lo || v > hi {
			t.Fatalf("%s: Decode(% X) = %d outside %d..%d", it.Name, b, v, lo, hi)
		}
		dst := make([]byte, it.Size)
		err = it.Encode(dst, v)
		if v < it.Min || v > it.Max {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("%s: Encode(%d) = %v, want ErrRange", it.Name, v, err)
			}
			return
		}
		if err != nil || !bytes.Equal(dst, b) {
			t.Fatalf("%s: Encode(Decode(% X)) = % X, %v", it.Name, b, dst, err)
		}
	})
}

func FuzzRadToPulse(f *testing.F) {
	for _, r := range []float64{0, 1.57, -1.57, math.Pi, 1e300, math.NaN(), math.Inf(1)} {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, rad float64) {
		p, err := RadToPulse(rad)
		finite := !math.IsNaN(rad) && !math.IsInf(rad, 0)
		if err != nil {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("RadToPulse(%v): %v", rad, err)
			}
			if finite && math.Abs(2048-PulsesPerRad*rad) < 1048575 {
				t.Fatalf("RadToPulse(%v) refused an in-range angle: %v", rad, err)
			}
			return
		}
		if !finite || p < -1048575 || p > 1048575 {
			t.Fatalf("RadToPulse(%v) = %d", rad, p)
		}
		if d := math.Abs(PulseToRad(p) - rad); d > 1.0001/PulsesPerRad {
			t.Fatalf("RadToPulse(%v) = %d, %v rad away", rad, p, d)
		}
	})
}

func ExampleItem_Decode() {
	// A Present Position of -1 and a Present Current of -1, as a sync read
	// returns them: both must be sign-extended.
	pos, _ := ItemPresentPosition.Item().Decode([]byte{0xFF, 0xFF, 0xFF, 0xFF})
	cur, _ := ItemPresentCurrent.Item().Decode([]byte{0xFF, 0xFF})
	it := ItemPresentCurrent.Item()
	fmt.Println(pos, cur, it.Physical(cur), it.Unit)
	// Output: -1 -1 -2.69 mA
}

func ExampleItem_Encode() {
	goal := ItemGoalPosition.Item()
	buf := make([]byte, goal.Size)
	fmt.Println(goal.Encode(buf, 512), buf)
	fmt.Println(goal.Encode(buf, 2000000))
	// Output:
	// <nil> [0 2 0 0]
	// dynamixel: GoalPosition = 2000000 out of range -1048575..1048575
}

func ExampleModel_Item() {
	m := XM430W210()
	it, _ := m.Item("ReturnDelayTime")
	fmt.Printf("%s: address %d, %d byte, default %d = %v %s, EEPROM %v\n",
		it.Name, it.Addr, it.Size, it.Default, it.Physical(it.Default), it.Unit, it.EEPROM)
	// Output: ReturnDelayTime: address 9, 1 byte, default 250 = 500 µs, EEPROM true
}

func ExampleRadToPulse() {
	for _, rad := range []float64{0, 1.57, -1.57, math.NaN()} {
		p, err := RadToPulse(rad)
		fmt.Println(p, err)
	}
	fmt.Printf("%.6f\n", PulseToRad(1024))
	// Output:
	// 2048 <nil>
	// 1024 <nil>
	// 3071 <nil>
	// 0 dynamixel: angle NaN rad is not finite
	// 1.570796
}

func ExampleHardwareError() {
	h := HardwareError(0x24)
	fmt.Println(h, h.Has(HWOverload))
	// Output: overheating|overload true
}
