package dxlsim_test

import (
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// Status error numbers (docs/dynamixel.md §4).
const (
	errResultFail  = 1
	errInstruction = 2
	errDataRange   = 4
	errDataLength  = 5
	errDataLimit   = 6
	errAccess      = 7
	alert          = 0x80
)

func TestWriteRules(t *testing.T) {
	cases := []struct {
		name   string
		torque bool
		mode   dynamixel.OperatingMode
		addr   uint16
		data   []byte
		want   byte
	}{
		{"model number is read-only", false, 3, 0, le(1030, 2), errAccess},
		{"firmware is read-only", false, 3, 6, []byte{50}, errAccess},
		{"reserved address", false, 3, 2, []byte{1}, errAccess},
		{"present position is read-only", false, 3, 132, le(0, 4), errAccess},
		{"beyond the table", false, 3, 700, []byte{1}, errAccess},
		{"a read-only item inside a longer write", false, 3, 68, []byte{2, 0, 0}, errAccess},
		{"EEPROM with torque off", false, 3, 9, []byte{10}, 0},
		{"EEPROM with torque on", true, 3, 9, []byte{10}, errAccess},
		{"ID with torque on", true, 3, 7, []byte{5}, errAccess},
		{"RAM with torque on", true, 3, 65, []byte{1}, 0},
		{"two bytes of a four-byte goal", false, 3, 116, le(512, 2), errDataLength},
		{"starting inside an item", false, 3, 117, le(2, 3), errDataLength},
		{"no data", false, 3, 116, nil, errDataLength},
		{"several whole items", false, 3, 64, []byte{0, 1}, 0},
		{"ID above 252", false, 3, 7, []byte{253}, errDataRange},
		{"undefined operating mode", false, 3, 11, []byte{2}, errDataRange},
		{"torque enable 2", false, 3, 64, []byte{2}, errDataRange},
		{"goal within the position limits", true, 3, 116, le(4095, 4), 0},
		{"goal beyond Max Position Limit", true, 3, 116, le(4096, 4), errDataLimit},
		{"goal below Min Position Limit", true, 3, 116, le(-1, 4), errDataLimit},
		{"extended goal in mode 4", true, 4, 116, le(-1048575, 4), 0},
		{"extended goal beyond ±256 rev", true, 4, 116, le(1048576, 4), errDataRange},
		{"goal velocity above Velocity Limit", true, 1, 104, le(331, 4), errDataLimit},
		{"goal velocity within Velocity Limit", true, 1, 104, le(-330, 4), 0},
		{"goal current beyond its range", true, 0, 102, le(1194, 2), errDataRange},
		{"bus watchdog -1 is read-only", false, 3, 98, []byte{0xFF}, errDataRange},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, _ := newBus(t, 1)
			p := dxlsim.NewPipe(b)
			mustWrite(t, p, 1, dynamixel.ItemOperatingMode, int64(c.mode))
			if c.torque {
				mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
			}
			var before [662]byte
			b.Servo(1).Table(0, before[:])
			if got := write(t, p, 1, c.addr, c.data); got != c.want {
				t.Fatalf("error byte 0x%02X, want 0x%02X", got, c.want)
			}
			if c.want != 0 && int(c.addr)+len(c.data) <= len(before) {
				var after [662]byte
				b.Servo(1).Table(0, after[:])
				if string(after[c.addr:int(c.addr)+len(c.data)]) != string(before[c.addr:int(c.addr)+len(c.data)]) {
					t.Errorf("a refused write changed the table")
				}
			}
		})
	}
}

// Changing the Operating Mode resets the profile and the gains
// (docs/dynamixel.md §8); writing the same mode does not.
func TestModeChangeResetsProfile(t *testing.T) {
	b, _ := newBus(t, 0)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 0, dynamixel.ItemProfileVelocity, 1000)
	mustWrite(t, p, 0, dynamixel.ItemProfileAcceleration, 50)
	mustWrite(t, p, 0, dynamixel.ItemPositionPGain, 400)
	mustWrite(t, p, 0, dynamixel.ItemOperatingMode, 3)
	if v := readItem(t, p, 0, dynamixel.ItemProfileVelocity); v != 1000 {
		t.Fatalf("same mode: profile velocity %d, want 1000", v)
	}
	mustWrite(t, p, 0, dynamixel.ItemOperatingMode, 4)
	for _, c := range []struct {
		k    dynamixel.ItemKey
		want int64
	}{{dynamixel.ItemProfileVelocity, 0}, {dynamixel.ItemProfileAcceleration, 0}, {dynamixel.ItemPositionPGain, 800}} {
		if v := readItem(t, p, 0, c.k); v != c.want {
			t.Errorf("after a mode change %v = %d, want %d", c.k, v, c.want)
		}
	}
}

// Reg Write holds a write until Action; Action without one is an
// Instruction Error.
func TestRegWriteAction(t *testing.T) {
	b, _ := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	st := statuses(t, exchange(t, p, 1, dynamixel.InstRegWrite, addrParams(65, []byte{1})))
	if len(st) != 1 || st[0].Err != 0 {
		t.Fatalf("reg write: %+v", st)
	}
	if v := readItem(t, p, 1, dynamixel.ItemLED); v != 0 {
		t.Errorf("LED %d before Action", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemRegisteredInstruction); v != 1 {
		t.Errorf("Registered Instruction %d, want 1", v)
	}
	// A refused Reg Write is answered at once and registers nothing.
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstRegWrite, addrParams(0, le(1, 2)))); len(st) != 1 || st[0].Err != errAccess {
		t.Errorf("reg write of the model number: %+v", st)
	}
	// A broadcast Action is not answered.
	if got := exchange(t, p, dynamixel.BroadcastID, dynamixel.InstAction, nil); len(got) != 0 {
		t.Errorf("broadcast action answered % X", got)
	}
	if v := readItem(t, p, 1, dynamixel.ItemLED); v != 1 {
		t.Errorf("LED %d after Action, want 1", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemRegisteredInstruction); v != 0 {
		t.Errorf("Registered Instruction %d after Action", v)
	}
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstAction, nil)); len(st) != 1 || st[0].Err != errInstruction {
		t.Errorf("action without reg write: %+v", st)
	}
}

// Reboot answers, then resets RAM and keeps EEPROM.
func TestRebootKeepsEEPROM(t *testing.T) {
	b, _ := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 1, dynamixel.ItemReturnDelayTime, 7)
	mustWrite(t, p, 1, dynamixel.ItemOperatingMode, 4)
	mustWrite(t, p, 1, dynamixel.ItemProfileVelocity, 100)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
	mustWrite(t, p, 1, dynamixel.ItemLED, 1)
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstReboot, nil)); len(st) != 1 || st[0].Err != 0 {
		t.Fatalf("reboot: %+v", st)
	}
	for _, c := range []struct {
		k    dynamixel.ItemKey
		want int64
	}{
		{dynamixel.ItemReturnDelayTime, 7}, {dynamixel.ItemOperatingMode, 4}, {dynamixel.ItemBaudRate, 3},
		{dynamixel.ItemTorqueEnable, 0}, {dynamixel.ItemLED, 0}, {dynamixel.ItemProfileVelocity, 0},
		{dynamixel.ItemStatusReturnLevel, 2},
	} {
		if v := readItem(t, p, 1, c.k); v != c.want {
			t.Errorf("after reboot %v = %d, want %d", c.k, v, c.want)
		}
	}
}

// A reboot takes the servo off the bus for BootTime.
func TestBootTime(t *testing.T) {
	clk := &dxlsim.ManualClock{}
	cfg := dxlsim.DefaultBusConfig()
	cfg.IDs, cfg.Clock, cfg.Servo.BootTime = []byte{1}, clk, 500*time.Millisecond
	b, err := dxlsim.NewBus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second) // power-up boot
	p := dxlsim.NewPipe(b)
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstReboot, nil)); len(st) != 1 {
		t.Fatalf("reboot: %+v", st)
	}
	if got := exchange(t, p, 1, dynamixel.InstPing, nil); len(got) != 0 {
		t.Errorf("a booting servo answered % X", got)
	}
	clk.Advance(500 * time.Millisecond)
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstPing, nil)); len(st) != 1 {
		t.Errorf("ping after boot: %+v", st)
	}
}

func TestFactoryReset(t *testing.T) {
	cases := []struct {
		option         byte
		wantID         byte
		wantBaud, want int64
	}{
		{0x02, 5, 3, 0}, // keeps ID and baud
		{0x01, 5, 1, 0}, // keeps ID
		{0xFF, 1, 1, 0}, // everything: ID 1, 57600
	}
	for _, c := range cases {
		b, _ := newBus(t, 5)
		p := dxlsim.NewPipe(b)
		mustWrite(t, p, 5, dynamixel.ItemReturnDelayTime, 0)
		if st := statuses(t, exchange(t, p, 5, dynamixel.InstFactoryReset, []byte{c.option})); len(st) != 1 || st[0].Err != 0 || st[0].ID != 5 {
			t.Fatalf("option 0x%02X: %+v", c.option, st)
		}
		s := b.Servo(c.wantID)
		if s == nil {
			t.Fatalf("option 0x%02X: no servo at ID %d", c.option, c.wantID)
		}
		if v := s.Value(dynamixel.ItemBaudRate); v != c.wantBaud {
			t.Errorf("option 0x%02X: baud code %d, want %d", c.option, v, c.wantBaud)
		}
		if v := s.Value(dynamixel.ItemReturnDelayTime); v != 250 {
			t.Errorf("option 0x%02X: return delay %d, want the factory 250", c.option, v)
		}
		if v := s.Value(dynamixel.ItemFirmwareVersion); v != dxlsim.DefaultFirmware {
			t.Errorf("option 0x%02X: firmware %d", c.option, v)
		}
	}
	// FW 42+ ignores a broadcast reset of everything.
	b, _ := newBus(t, 5)
	p := dxlsim.NewPipe(b)
	exchange(t, p, dynamixel.BroadcastID, dynamixel.InstFactoryReset, []byte{0xFF})
	if b.Servo(5) == nil {
		t.Error("a broadcast factory reset of everything was applied")
	}
	if st := statuses(t, exchange(t, p, 5, dynamixel.InstFactoryReset, []byte{0x03})); len(st) != 1 || st[0].Err != errDataRange {
		t.Errorf("option 3: %+v", st)
	}
}

// Status Return Level (docs/dynamixel.md §4).
func TestStatusReturnLevel(t *testing.T) {
	type op struct {
		inst   byte
		params []byte
	}
	ping := op{dynamixel.InstPing, nil}
	rd := op{dynamixel.InstRead, []byte{132, 0, 4, 0}}
	wr := op{dynamixel.InstWrite, addrParams(65, []byte{1})}
	for _, c := range []struct {
		level    byte
		op       op
		answered bool
	}{
		{0, ping, true}, {0, rd, false}, {0, wr, false},
		{1, ping, true}, {1, rd, true}, {1, wr, false},
		{2, ping, true}, {2, rd, true}, {2, wr, true},
	} {
		b, _ := newBus(t, 1)
		p := dxlsim.NewPipe(b)
		exchange(t, p, 1, dynamixel.InstWrite, addrParams(68, []byte{c.level}))
		got := exchange(t, p, 1, c.op.inst, c.op.params)
		if (len(got) > 0) != c.answered {
			t.Errorf("level %d, instruction 0x%02X: reply % X, want answered=%v", c.level, c.op.inst, got, c.answered)
		}
		// A sync read counts as a read.
		got = exchange(t, p, dynamixel.BroadcastID, dynamixel.InstSyncRead, []byte{132, 0, 4, 0, 1})
		if (len(got) > 0) != (c.level >= 1) {
			t.Errorf("level %d: sync read reply % X", c.level, got)
		}
	}
}

// Present Position is signed 32-bit and sign-extended; an extended-position
// goal moves the servo past one turn, and Clear brings it back within one.
func TestExtendedPositionAndClear(t *testing.T) {
	b, clk := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 1, dynamixel.ItemOperatingMode, 4)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
	// -131073 is FF FF FD FF: the instruction is stuffed and must come out
	// whole (docs/dynamixel.md §3).
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, -131073)
	if v := readItem(t, p, 1, dynamixel.ItemGoalPosition); v != -131073 {
		t.Fatalf("goal %d, want -131073", v)
	}
	// Moving: Clear is refused.
	clk.Advance(5 * time.Millisecond)
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstClear, []byte{1, 0x44, 0x58, 0x4C, 0x22})); len(st) != 1 || st[0].Err != errResultFail {
		t.Errorf("clear while moving: %+v", st)
	}
	clk.Advance(10 * time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v != -131073 {
		t.Fatalf("present %d, want -131073", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemMoving); v != 0 {
		t.Fatalf("still moving")
	}
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstClear, []byte{1, 0x44, 0x58, 0x4C, 0x22})); len(st) != 1 || st[0].Err != 0 {
		t.Fatalf("clear: %+v", st)
	}
	// -131073 = -33 turns + 4095.
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v != 4095 {
		t.Errorf("present %d after Clear, want 4095", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemGoalPosition); v != 4095 {
		t.Errorf("goal %d after Clear, want 4095", v)
	}
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstClear, []byte{2, 0x44, 0x58, 0x4C, 0x22})); len(st) != 1 || st[0].Err != errDataRange {
		t.Errorf("clear with a wrong key: %+v", st)
	}
}

// With Profile Velocity and Acceleration at 0 the servo follows a
// first-order lag; with a Profile Velocity it moves at that speed.
func TestDynamics(t *testing.T) {
	b, clk := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
	if v := readItem(t, p, 1, dynamixel.ItemGoalPosition); v != 2048 {
		t.Fatalf("torque on: goal %d, want the present 2048", v)
	}
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 3048)
	clk.Advance(30 * time.Millisecond) // one time constant: 63 %
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v < 2048+600 || v > 2048+660 {
		t.Errorf("after one time constant: %d, want ≈ 2680", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemPresentVelocity); v <= 0 {
		t.Errorf("velocity %d while moving up", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemMoving); v != 1 {
		t.Errorf("Moving %d while moving", v)
	}
	clk.Advance(time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v != 3048 {
		t.Errorf("settled at %d, want 3048", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemMoving); v != 0 {
		t.Errorf("Moving %d at rest", v)
	}

	// 20 × 0.229 rev/min = 312.7 pulses/s: 1000 pulses take 3.2 s.
	mustWrite(t, p, 1, dynamixel.ItemProfileVelocity, 20)
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 2048)
	clk.Advance(time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v < 3048-315 || v > 3048-310 {
		t.Errorf("after 1 s at 20 units: %d, want ≈ 2735", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemPresentVelocity); v != -20 {
		t.Errorf("velocity %d, want -20", v)
	}
	clk.Advance(3 * time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v != 2048 {
		t.Errorf("settled at %d, want 2048", v)
	}
	// Profile Acceleration 10 = 2441 pulses/s²: after 100 ms, 244 pulses/s.
	mustWrite(t, p, 1, dynamixel.ItemProfileAcceleration, 10)
	mustWrite(t, p, 1, dynamixel.ItemProfileVelocity, 100)
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 4000)
	clk.Advance(100 * time.Millisecond)
	if v := readItem(t, p, 1, dynamixel.ItemPresentVelocity); v < 15 || v > 16 {
		t.Errorf("velocity %d after 100 ms of acceleration, want 15.6", v)
	}
	clk.Advance(5 * time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v != 4000 {
		t.Errorf("settled at %d, want 4000", v)
	}
	// Velocity mode: 50 × 0.229 rev/min = 781.7 pulses/s.
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 0)
	mustWrite(t, p, 1, dynamixel.ItemOperatingMode, 1)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
	mustWrite(t, p, 1, dynamixel.ItemGoalVelocity, 50)
	clk.Advance(time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v < 4000+780 || v > 4000+783 {
		t.Errorf("after 1 s at velocity 50: %d, want ≈ 4782", v)
	}
	mustWrite(t, p, 1, dynamixel.ItemGoalVelocity, 0)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 0)
	mustWrite(t, p, 1, dynamixel.ItemOperatingMode, 3) // back within one turn
	pos := readItem(t, p, 1, dynamixel.ItemPresentPosition)
	if pos < 0 || pos > 4095 {
		t.Errorf("position mode: present %d, want within one turn", pos)
	}

	// Torque off: the servo stays where it is.
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 0)
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 100)
	clk.Advance(time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v != pos {
		t.Errorf("moved from %d to %d with torque off", pos, v)
	}
}

// A forced overheat: Alert in every status, torque off and refused (Result
// Fail), data still valid; only a reboot clears it.
func TestOverheat(t *testing.T) {
	b, _ := newBus(t, 0, 1)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
	if err := b.ForceOverheat(1); err != nil {
		t.Fatal(err)
	}
	if err := b.ForceOverheat(9); err == nil {
		t.Error("ForceOverheat(9) on a bus without ID 9")
	}
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstPing, nil)); st[0].Err != alert {
		t.Errorf("ping error byte 0x%02X, want Alert", st[0].Err)
	}
	s := read(t, p, 1, 132, 4)
	if s.Err != alert || len(s.Data) != 4 || s.Data[1] != 0x08 {
		t.Errorf("read: %+v, want Alert with position 2048", s)
	}
	if v := readItem(t, p, 1, dynamixel.ItemHardwareErrorStatus); v != int64(dynamixel.HWOverheating) {
		t.Errorf("Hardware Error Status %d, want overheating", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemTorqueEnable); v != 0 {
		t.Errorf("torque %d after the shutdown", v)
	}
	if e := write(t, p, 1, 64, []byte{1}); e != alert|errResultFail {
		t.Errorf("torque on after the shutdown: 0x%02X, want Alert|Result Fail", e)
	}
	if e := write(t, p, 1, 65, []byte{1}); e != alert {
		t.Errorf("LED write: 0x%02X, want Alert only", e)
	}
	// Sync read and fast sync read carry the Alert per servo.
	st := statuses(t, exchange(t, p, dynamixel.BroadcastID, dynamixel.InstSyncRead, []byte{132, 0, 4, 0, 0, 1}))
	if len(st) != 2 || st[0].Err != 0 || st[1].Err != alert {
		t.Errorf("sync read: %+v", st)
	}
	fast := exchange(t, p, dynamixel.BroadcastID, dynamixel.InstFastSyncRead, []byte{132, 0, 4, 0, 0, 1})
	if len(fast) != 24 || fast[8] != 0 || fast[16] != alert {
		t.Errorf("fast sync read % X", fast)
	}
	if e := statuses(t, exchange(t, p, 1, dynamixel.InstReboot, nil)); e[0].Err != alert {
		t.Errorf("reboot status 0x%02X, want Alert", e[0].Err)
	}
	if st := statuses(t, exchange(t, p, 1, dynamixel.InstPing, nil)); st[0].Err != 0 {
		t.Errorf("ping after reboot: 0x%02X", st[0].Err)
	}
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
}

// A stalled servo pushing at its current limit heats up past Temperature
// Limit and shuts down; it then cools, but stays in error until a reboot.
func TestOverheatFromLoad(t *testing.T) {
	b, clk := newBus(t, 2)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 2, dynamixel.ItemTorqueEnable, 1)
	if err := b.SetStalled(2, true); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, p, 2, dynamixel.ItemGoalPosition, 3000)
	clk.Advance(time.Second)
	if v := readItem(t, p, 2, dynamixel.ItemPresentCurrent); v != 1193 {
		t.Errorf("stalled current %d, want the limit 1193", v)
	}
	t0 := readItem(t, p, 2, dynamixel.ItemPresentTemperature)
	var tripped int64
	for i := range 60 {
		clk.Advance(10 * time.Second)
		if readItem(t, p, 2, dynamixel.ItemHardwareErrorStatus) != 0 {
			tripped = int64(i+1) * 10
			break
		}
	}
	if tripped == 0 {
		t.Fatalf("no overheat after 10 minutes stalled (from %d °C)", t0)
	}
	// It tripped above 80 °C and has been cooling for a few seconds since.
	if v := readItem(t, p, 2, dynamixel.ItemPresentTemperature); v < 75 {
		t.Errorf("%d °C just after the overheat", v)
	}
	if v := readItem(t, p, 2, dynamixel.ItemTorqueEnable); v != 0 {
		t.Error("torque still on")
	}
	if err := b.SetStalled(2, false); err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Minute)
	if v := readItem(t, p, 2, dynamixel.ItemPresentTemperature); v > 30 {
		t.Errorf("still %d °C after 20 minutes off", v)
	}
	if st := statuses(t, exchange(t, p, 2, dynamixel.InstPing, nil)); st[0].Err != alert {
		t.Errorf("cooled but not rebooted: error byte 0x%02X, want Alert", st[0].Err)
	}
	exchange(t, p, 2, dynamixel.InstReboot, nil)
	mustWrite(t, p, 2, dynamixel.ItemTorqueEnable, 1)
	t.Logf("tripped after %d s from %d °C", tripped, t0)
}

// The Bus Watchdog stops a servo that hears nothing, reads -1 and refuses
// goals with Data Range Error until it is written 0.
func TestBusWatchdog(t *testing.T) {
	b, clk := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
	mustWrite(t, p, 1, dynamixel.ItemBusWatchdog, 5) // 100 ms
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 1000)
	clk.Advance(50 * time.Millisecond)
	if v := readItem(t, p, 1, dynamixel.ItemBusWatchdog); v != 5 {
		t.Fatalf("watchdog %d while fed", v)
	}
	clk.Advance(150 * time.Millisecond)
	if v := readItem(t, p, 1, dynamixel.ItemBusWatchdog); v != -1 {
		t.Fatalf("watchdog %d after 150 ms of silence, want -1", v)
	}
	stopped := readItem(t, p, 1, dynamixel.ItemPresentPosition)
	if stopped == 1000 || stopped == 2048 {
		t.Errorf("stopped at %d: not on its way", stopped)
	}
	if e := write(t, p, 1, 116, le(1500, 4)); e != errDataRange {
		t.Errorf("goal write while tripped: 0x%02X, want Data Range Error", e)
	}
	clk.Advance(time.Second)
	if v := readItem(t, p, 1, dynamixel.ItemPresentPosition); v != stopped {
		t.Errorf("moved from %d to %d after the watchdog stopped it", stopped, v)
	}
	mustWrite(t, p, 1, dynamixel.ItemBusWatchdog, 0)
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 1500)
}

// Indirect Data n reads and writes the address in Indirect Address n.
func TestIndirectAddress(t *testing.T) {
	b, _ := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	// Indirect Data 1..4 (224) ← Goal Position, 5 (228) ← LED.
	for i, a := range []int64{116, 117, 118, 119, 65} {
		if e := write(t, p, 1, uint16(168+2*i), le(a, 2)); e != 0 {
			t.Fatalf("indirect address %d: 0x%02X", i+1, e)
		}
	}
	if e := write(t, p, 1, 224, append(le(1234, 4), 1)); e != 0 {
		t.Fatalf("indirect write: 0x%02X", e)
	}
	if v := readItem(t, p, 1, dynamixel.ItemGoalPosition); v != 1234 {
		t.Errorf("goal %d through indirect data, want 1234", v)
	}
	if v := readItem(t, p, 1, dynamixel.ItemLED); v != 1 {
		t.Errorf("LED %d through indirect data", v)
	}
	if s := read(t, p, 1, 224, 5); s.Err != 0 || string(s.Data) != string(append(le(1234, 4), 1)) {
		t.Errorf("indirect read %+v", s)
	}
	// Rules of the target apply: a goal beyond the limits, a read-only item.
	if e := write(t, p, 1, 224, append(le(5000, 4), 0)); e != errDataLimit {
		t.Errorf("goal 5000 through indirect data: 0x%02X", e)
	}
	if e := write(t, p, 1, 168, le(132, 2)); e != 0 {
		t.Fatal(e)
	}
	if e := write(t, p, 1, 224, []byte{1}); e != errAccess {
		t.Errorf("write to Present Position through indirect data: 0x%02X", e)
	}
	// EEPROM cannot be mapped.
	if e := write(t, p, 1, 168, le(7, 2)); e != errDataRange {
		t.Errorf("indirect address 7: 0x%02X", e)
	}
}

func TestServoConfig(t *testing.T) {
	for _, c := range []dxlsim.ServoConfig{
		{ID: 253}, {ReturnDelay: 255}, {Position: 2000000}, {TimeConstant: -1}, {Ambient: 1000},
	} {
		if _, err := dxlsim.NewServo(c, nil); err == nil {
			t.Errorf("NewServo(%+v) accepted", c)
		}
	}
	if _, err := dxlsim.NewBus(dxlsim.BusConfig{IDs: []byte{1, 1}}); err == nil {
		t.Error("NewBus with ID 1 twice")
	}
	if _, err := dxlsim.NewBus(dxlsim.BusConfig{Timing: dxlsim.Timing{Baud: -1}}); err == nil {
		t.Error("NewBus with baud -1")
	}
	s, err := dxlsim.NewServo(dxlsim.ServoConfig{ID: 3, Firmware: 38, ReturnDelay: 250}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    dynamixel.ItemKey
		want int64
	}{
		{dynamixel.ItemModelNumber, 1030}, {dynamixel.ItemFirmwareVersion, 38}, {dynamixel.ItemID, 3},
		{dynamixel.ItemBaudRate, 3}, {dynamixel.ItemReturnDelayTime, 250}, {dynamixel.ItemOperatingMode, 3},
		{dynamixel.ItemMaxPositionLimit, 4095}, {dynamixel.ItemMinPositionLimit, 0}, {dynamixel.ItemShutdown, 52},
		{dynamixel.ItemTemperatureLimit, 80}, {dynamixel.ItemStatusReturnLevel, 2}, {dynamixel.ItemPresentTemperature, 25},
		{dynamixel.ItemPresentInputVoltage, 120},
	} {
		if v := s.Value(c.k); v != c.want {
			t.Errorf("%v = %d, want %d", c.k, v, c.want)
		}
	}
	if err := s.Poke(660, []byte{1, 2, 3}); err == nil {
		t.Error("Poke beyond the table")
	}
}
