// Package bridge is the heart of the gateway: the clock-master Loop, the Plant
// interface that devices satisfy, the Link that joins a loop, a Simulink UDP
// master and a plant, the Supervisor that runs links and restarts failed
// devices, link states and events, and the configuration model. It follows
// docs/simulink-udp.md for the Emio loop semantics and docs/realtime.md for
// timing.
package bridge

import (
	"context"
	"errors"
	"fmt"
)

// Plant is the hardware side of a link: what the loop measures and commands.
// Measure and Command run on the loop thread once per tick and must not
// allocate; a device that fails returns an error and the link goes degraded.
type Plant interface {
	// MeasureLen and CommandLen are the fixed sizes of the vectors.
	MeasureLen() int
	CommandLen() int
	// Measure fills dst (MeasureLen values) with the current measurement.
	Measure(dst []float64) error
	// Command applies u (CommandLen values), already checked for NaN, ±Inf and
	// limits by the link.
	Command(u []float64) error
	// Halt puts the plant into the safe state named by the policy.
	Halt(p HaltPolicy) error
}

// Reopener is a plant whose device can be reconnected after a failure. The
// supervisor calls Reopen off the loop thread, with backoff, while the loop keeps
// ticking; Reopen must not run concurrently with Measure or Command on the old
// device (the link stops calling them while degraded).
type Reopener interface {
	Reopen(ctx context.Context) error
}

// Readier is a plant whose measurement is incomplete at first: the Emio
// before its camera's first frame. Until Ready, the link reads the plant and
// may complete the handshake, but sends no measurement to Simulink, as
// emioapi's bridge sends its first after the camera's first frame: a
// controller never integrates a made-up measurement. Ready runs on the loop
// thread and must not block.
type Readier interface {
	Ready() bool
}

// HaltPolicy is what a plant does when the bridge stops.
type HaltPolicy uint8

// Halt policies.
const (
	// HaltHold keeps the last good command: the robot stays where it is.
	HaltHold HaltPolicy = iota
	// HaltTorqueOff releases the motors.
	HaltTorqueOff
)

var haltNames = [...]string{"hold", "torque_off"}

func (p HaltPolicy) String() string {
	if int(p) < len(haltNames) {
		return haltNames[p]
	}
	return "unknown"
}

// ParseHaltPolicy parses "hold" or "torque_off".
func ParseHaltPolicy(s string) (HaltPolicy, error) {
	for i, n := range haltNames {
		if s == n {
			return HaltPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("bridge: halt policy %q: %w (want hold or torque_off)", s, ErrConfig)
}

// ErrConfig is the sentinel of every configuration error.
var ErrConfig = errors.New("bridge: invalid configuration")
