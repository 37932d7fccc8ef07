package emio

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/plant"
)

// A servo's hardware error (overload, overheating, electrical shock, …) is a
// stop that only a person may end (docs/dynamixel.md §18, "A servo's hardware
// error"): the servo shuts its torque off and only a reboot re-enables it,
// and the bridge never reboots or re-enables it on its own. The first reply
// that carries the Alert bit latches the stop: the tick fails, the link
// applies nothing more, and the other servos hold their last goal. While
// latched, Reopen writes nothing: it reads the stopped servos' status and
// says what to do. Resume arms one Reopen that reboots the servos still in
// error and sets them up again, with a rejoin.

// StopError is a stop latched by servos' hardware errors. It wraps
// plant.ErrStopLatched, and Cause when a person's resume could not start
// the servos.
type StopError struct {
	// Link is the link's name, for the command the message names.
	Link   string
	Servos []StoppedServo
	// Cause is why the last resume did not start the servos; nil if none
	// was tried.
	Cause error
}

// StoppedServo is one servo of a StopError.
type StoppedServo struct {
	ID byte
	// Error is the hardware error that latched the stop; 0 until read.
	Error dynamixel.HardwareError
	// Cleared is true when the servo no longer reports it (it lost power
	// meanwhile): a resume then needs no reboot.
	Cleared bool
	// Torque is its Torque Enable as last read: 0 off, 1 on, -1 unread.
	Torque int8
}

func (e *StopError) Error() string {
	var b strings.Builder
	b.WriteString("emio: ")
	reboot := 0
	for i, s := range e.Servos {
		if i > 0 {
			b.WriteString("; ")
		}
		if s.Error == 0 && s.Torque < 0 && !s.Cleared {
			// The tick that latched the stop, before its error is read.
			fmt.Fprintf(&b, "servo %d reports a hardware error; find its cause", s.ID)
			reboot++
			continue
		}
		fmt.Fprintf(&b, "servo %d: %s", s.ID, words(s.Error))
		switch {
		case s.Cleared:
			b.WriteString(", no longer reported (the servo lost power meanwhile)")
			continue
		case s.Torque == 0:
			b.WriteString(": the servo shut its torque off")
		case s.Torque == 1:
			b.WriteString(": the servo still holds")
		}
		reboot++
		if do := remedy(s.Error); do != "" {
			b.WriteString("; ")
			b.WriteString(do)
		}
	}
	link := e.Link
	if link == "" {
		link = "LINK"
	}
	switch reboot {
	case 0:
		fmt.Fprintf(&b, "; the servos hold still until you run `bridge resume %s`", link)
	case 1:
		fmt.Fprintf(&b, ", then run `bridge resume %s`, which reboots it", link)
	default:
		fmt.Fprintf(&b, "; then run `bridge resume %s`, which reboots them", link)
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (the last resume did not start the servos: %v)", e.Cause)
	}
	return b.String()
}

// Is makes errors.Is match plant.ErrStopLatched (without allocating, as a
// tick's check may).
func (e *StopError) Is(target error) bool { return target == plant.ErrStopLatched }

// Unwrap returns the cause of a failed resume.
func (e *StopError) Unwrap() error { return e.Cause }

// words names hardware errors h: "overload", "input voltage and overload".
func words(h dynamixel.HardwareError) string {
	return strings.ReplaceAll(h.String(), "|", " and ")
}

// remedy is what a person does about hardware errors h before a resume.
func remedy(h dynamixel.HardwareError) string {
	var do []string
	if h&dynamixel.HWOverload != 0 {
		do = append(do, "remove the load")
	}
	if h&dynamixel.HWOverheating != 0 {
		do = append(do, "let it cool (about 20 minutes) and lighten its load")
	}
	if h&dynamixel.HWElectricalShock != 0 {
		do = append(do, "check its cable and the power supply")
	}
	if h&dynamixel.HWInputVoltage != 0 {
		do = append(do, "check the supply voltage (12 V)")
	}
	if h&dynamixel.HWMotorEncoder != 0 {
		do = append(do, "check the servo (its encoder failed)")
	}
	return strings.Join(do, ", ")
}

// rebootWait is how long a rebooted servo may take to answer again
// (docs/dynamixel.md §13: allow about a second).
const rebootWait = 3 * time.Second

// latch latches servo i's stop. A new stop forgets an earlier request to
// resume: a person resumes what they saw.
func (m *Motors) latch(i int) {
	if bit := uint32(1) << i; m.stopped.Or(bit)&bit == 0 {
		m.resume.Store(false)
	}
}

// stopErr is the tick's error while a stop is latched, nil otherwise; it
// allocates nothing.
func (m *Motors) stopErr() error {
	if s := m.stopped.Load(); s != 0 {
		return m.stopErrs[bits.TrailingZeros32(s)]
	}
	return nil
}

// Resume implements plant.Resumer: a person asks to end a latched stop;
// the next Reopen reboots the servos still in error and sets them up again.
// Without a latched stop it does nothing, so that a request never outlives
// what the person saw.
func (m *Motors) Resume() {
	if m.stopped.Load() != 0 {
		m.resume.Store(true)
	}
}

// Stopped reports whether a servo's hardware error keeps the servos stopped
// until a person resumes them. Safe from any goroutine.
func (m *Motors) Stopped() bool { return m.stopped.Load() != 0 }

// stillStopped is a latched Reopen: a few status reads of the stopped
// servos over the port still open (their error, torque and temperature, so
// that the message and the fault probes stay current), nothing written.
func (m *Motors) stillStopped() error {
	if m.bus != nil {
		if err := m.readStopped(); err != nil && (errors.Is(err, dynamixel.ErrPort) || dynamixel.IsDisconnect(err)) {
			m.Close() // a resume opens it again
		}
	}
	return m.stopError(nil)
}

// readStopped reads every servo's Hardware Error Status (a servo whose
// error began meanwhile joins the stop, and the message names it), and
// the stopped servos' Torque Enable and temperature. A servo that does not
// answer is skipped.
func (m *Motors) readStopped() error {
	var reg [1]byte
	for i, id := range m.cfg.IDs {
		errByte, err := m.bus.ReadRaw(id, dynamixel.AddrHardwareErrorStatus, reg[:])
		if err != nil {
			if errors.Is(err, dynamixel.ErrPort) {
				return err
			}
			continue
		}
		m.noteReply(i, errByte)
		m.noteHW(i, reg[0])
		if m.stopped.Load()&(1<<i) == 0 {
			continue
		}
		if _, err := m.bus.ReadRaw(id, dynamixel.AddrTorqueEnable, reg[:]); err == nil {
			m.stopTorque[i] = int8(min(reg[0], 1))
		}
		if _, err := m.bus.ReadRaw(id, dynamixel.AddrPresentTemperature, reg[:]); err == nil {
			m.servos[i].tempC.Store(int32(reg[0]))
		}
	}
	return nil
}

// stopError describes the latched stop, with the cause of a failed resume.
func (m *Motors) stopError(cause error) error {
	e := &StopError{Link: m.cfg.Link, Cause: cause}
	stopped := m.stopped.Load()
	for i, id := range m.cfg.IDs {
		if stopped&(1<<i) != 0 {
			e.Servos = append(e.Servos, StoppedServo{ID: id, Error: m.stopHW[i], Cleared: !m.alerting[i], Torque: m.stopTorque[i]})
		}
	}
	return e
}

// reboot reboots the servos in alert, as a person asked (Resume), and
// waits for each to answer again without its error.
func (m *Motors) reboot(ctx context.Context, bus *dynamixel.Bus) error {
	for i, id := range m.cfg.IDs {
		if !m.alerting[i] {
			continue
		}
		m.log.Warn("emio: rebooting a servo in hardware error, as a person asked", "link", m.cfg.Link, "id", id,
			"error", m.stopHW[i].String())
		if err := bus.Reboot(id); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
			return fmt.Errorf("emio: reboot servo %d: %w", id, err)
		}
		deadline := time.Now().Add(rebootWait)
		for {
			_, _, err := bus.Ping(id)
			alert := errors.Is(err, dynamixel.ErrAlert)
			if err == nil || alert {
				m.noteAlert(i, alert)
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("emio: servo %d did not answer within %v of its reboot: %w", id, rebootWait, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
		if m.alerting[i] {
			var reg [1]byte
			if _, err := bus.ReadRaw(id, dynamixel.AddrHardwareErrorStatus, reg[:]); err == nil {
				m.noteHW(i, reg[0])
			}
			return fmt.Errorf("emio: servo %d still reports %v after its reboot", id, m.stopHW[i])
		}
	}
	return nil
}
