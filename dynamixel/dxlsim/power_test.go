package dxlsim_test

import (
	"errors"
	"testing"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// A power cycle: while off the servo is silent and limp (a release), can
// be moved; back on it has booted: torque off, goal = its present
// position, hardware error gone, EEPROM kept.
func TestPowerCycle(t *testing.T) {
	b, _ := newBus(t, 0, 1)
	p := dxlsim.NewPipe(b)
	mustWrite(t, p, 1, dynamixel.ItemOperatingMode, 4)
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 2048)
	if err := b.ForceHardwareError(1, dynamixel.HWInputVoltage); err != nil {
		t.Fatal(err)
	}
	if err := b.PowerOff(1); err != nil {
		t.Fatal(err)
	}
	if got := exchange(t, p, 1, dynamixel.InstPing, nil); len(got) != 0 {
		t.Errorf("a servo without power answered % X", got)
	}
	if st := statuses(t, exchange(t, p, 0, dynamixel.InstPing, nil)); len(st) != 1 {
		t.Errorf("servo 0 lost its power with servo 1: %+v", st)
	}
	s := b.Servo(1)
	if s.Releases() != 1 || s.Value(dynamixel.ItemTorqueEnable) != 0 {
		t.Errorf("after power off: %d releases, torque %d", s.Releases(), s.Value(dynamixel.ItemTorqueEnable))
	}
	// The limp arm sags.
	if err := s.SetValue(dynamixel.ItemPresentPosition, 2700); err != nil {
		t.Fatal(err)
	}
	if err := b.PowerOn(1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    dynamixel.ItemKey
		want int64
	}{
		{dynamixel.ItemTorqueEnable, 0}, {dynamixel.ItemGoalPosition, 2700}, {dynamixel.ItemPresentPosition, 2700},
		{dynamixel.ItemHardwareErrorStatus, 0}, {dynamixel.ItemOperatingMode, 4},
	} {
		if v := readItem(t, p, 1, c.k); v != c.want {
			t.Errorf("after power on %v = %d, want %d", c.k, v, c.want)
		}
	}
	if r := s.Received(); r.Reboots != 0 {
		t.Errorf("a power cycle counted as %d reboots", r.Reboots)
	}
	// Every servo, at once.
	if err := b.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	if err := b.PowerOff(9); !errors.Is(err, dxlsim.ErrNoServo) {
		t.Errorf("PowerOff(9): %v, want ErrNoServo", err)
	}
}

// What a servo received: torque-on writes (refused ones too), reboots, goal
// writes and the largest goal step made with torque on.
func TestReceived(t *testing.T) {
	b, _ := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	s := b.Servo(1)
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 3000) // torque off: not a step
	mustWrite(t, p, 1, dynamixel.ItemTorqueEnable, 1)    // holds 2048: goal back to it, not a step either
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 2148)
	mustWrite(t, p, 1, dynamixel.ItemGoalPosition, 2098)
	if r := s.Received(); r.TorqueOnWrites != 1 || r.GoalWrites != 3 || r.MaxGoalStep != 100 || r.Reboots != 0 {
		t.Errorf("received %+v, want 1 torque-on write, 3 goal writes, a largest step of 100", r)
	}
	s.ResetMaxGoalStep()
	if err := b.ForceHardwareError(1, dynamixel.HWOverload); err != nil {
		t.Fatal(err)
	}
	if v := readItem(t, p, 1, dynamixel.ItemTorqueEnable); v != 0 {
		t.Errorf("torque %d after an overload", v)
	}
	if e := write(t, p, 1, dynamixel.AddrTorqueEnable, []byte{1}); e != alert|errResultFail {
		t.Errorf("torque on after an overload: 0x%02X, want Alert|Result Fail", e)
	}
	statuses(t, exchange(t, p, 1, dynamixel.InstReboot, nil))
	if r := s.Received(); r.TorqueOnWrites != 2 || r.Reboots != 1 || r.MaxGoalStep != 0 {
		t.Errorf("received %+v, want 2 torque-on writes, 1 reboot, no step since the reset", r)
	}
	if v := readItem(t, p, 1, dynamixel.ItemHardwareErrorStatus); v != 0 {
		t.Errorf("hardware error %d after the reboot", v)
	}
}
