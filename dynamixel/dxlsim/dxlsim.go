// Package dxlsim simulates a bus of XM430-W210 servos speaking Dynamixel
// Protocol 2.0 (docs/dynamixel.md), so that the driver, the bridge and the
// official SDK can be exercised without hardware.
//
// A Servo emulates the whole control table (write rules, EEPROM lock,
// indirect addresses, Reg Write/Action, reboot, multi-turn clear) and a
// simple plant: a profile or first-order position response, current and
// temperature, the overheat shutdown and the Bus Watchdog. A Bus holds
// several servos, parses the instruction stream as a servo does (resync on
// garbage, silence on CRC errors) and answers in bus order, stuffed, with
// optional Return Delay Time, byte time and USB latency batching. Faults are
// injected through thread-safe toggles on the Bus.
//
// Two transports connect a client: NewPipe, an in-memory dynamixel.Port that
// allocates nothing per packet, and PTY, a pseudo-terminal that the real
// serial stack (go.bug.st/serial, pyserial) opens like a USB adapter.
//
// Time comes from a Clock, so the dynamics are deterministic under a
// ManualClock; the transports' byte timing uses the real monotonic clock.
package dxlsim

import (
	"errors"
	"sync/atomic"
	"time"
)

var (
	// ErrConfig is an invalid ServoConfig, BusConfig or Timing.
	ErrConfig = errors.New("dxlsim: invalid configuration")
	// ErrNoServo names an ID no simulated servo has.
	ErrNoServo = errors.New("dxlsim: no such servo")
	// ErrClosed is returned by a Pipe after Close.
	ErrClosed = errors.New("dxlsim: port closed")
	// ErrUnplugged is returned by a Pipe while its bus is unplugged, as a
	// serial port fails when its USB adapter goes away.
	ErrUnplugged = errors.New("dxlsim: adapter unplugged")
	// ErrAddress is a control-table access outside the table.
	ErrAddress = errors.New("dxlsim: address outside the control table")
)

// Clock gives monotonic nanoseconds; realtime.Clock and ManualClock satisfy
// it.
type Clock interface{ Now() int64 }

// ManualClock is a Clock that only moves when told, for deterministic tests.
// It is safe for concurrent use.
type ManualClock struct{ ns atomic.Int64 }

// Now returns the clock's reading.
func (c *ManualClock) Now() int64 { return c.ns.Load() }

// Advance moves the clock forward by d (a negative d is ignored: the clock
// is monotonic).
func (c *ManualClock) Advance(d time.Duration) {
	if d > 0 {
		c.ns.Add(int64(d))
	}
}

// monoClock reads Go's monotonic clock from its creation.
type monoClock struct{ start time.Time }

func (c monoClock) Now() int64 { return int64(time.Since(c.start)) }

// SystemClock returns a Clock on the process's monotonic clock.
func SystemClock() Clock { return monoClock{start: time.Now()} }
