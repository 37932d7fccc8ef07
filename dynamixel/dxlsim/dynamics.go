package dxlsim

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/labbridge/bridge/dynamixel"
)

// The servo's plant: its motion towards the goal, its current and its
// temperature, advanced in steps up to the time of each access.

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
