package dxlsim

import (
	"encoding/binary"
	"math"

	"github.com/labbridge/bridge/dynamixel"
)

// The control table's rules: who answers, what a read returns, what a
// write may change and when (docs/dynamixel.md §4, §8).

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
