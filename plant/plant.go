// Package plant is the contract between a link and what it drives
// (docs/architecture.md "Packages"): the Plant a loop measures and commands
// every tick, the optional Reopener and Readier, the HaltPolicy applied when a
// link stops, the Layout that names the values of its vectors, and the
// errors by which a device tells the supervisor how to retry it.
//
// It imports nothing of the project, so that every device package can
// satisfy it and depend on nothing else of ours.
package plant

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
	// Halt puts the plant into the safe state named by the policy. After
	// Halt(HaltTorqueOff) the link calls neither Measure nor Command again
	// before a successful Reopen: a released robot is never reported as
	// running.
	Halt(p HaltPolicy) error
}

// Reopener is a plant whose device can be reconnected after a failure. The
// supervisor calls Reopen off the loop thread while the loop keeps ticking;
// Reopen never runs concurrently with Measure or Command (the link stops
// calling them while the device is down). A Reopen that finds the device
// healthy and configured must not disturb it: reopening servos that hold a
// position must not release them.
//
// A Reopen that fails because the device is not there (an unplugged adapter)
// returns an error wrapping ErrAbsent: the supervisor then polls it at a
// short interval instead of backing off, so a replug is noticed at once.
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

// Lacker is a Readier that says what its measurement lacks: the camera's
// first frame and why it has not come (a library not installed, a camera
// not plugged in), or frames that stopped. Lack is nil while the
// measurement is complete and fresh. When it has lacked for the link's hold
// time the link leaves running: a link whose datagrams carry nothing new is
// not running, and the error is what a person reads on the terminal, the
// status page and /healthz, so it says what is missing and what to do. Lack
// runs on the loop thread once per tick: it must not block or allocate
// (return an error kept since it was learned).
type Lacker interface {
	Lack() error
}

// Describer is a plant that names the values of its vectors (Layout), for
// status lines, recordings and the built-in partner's controllers.
type Describer interface {
	Layout() Layout
}

// Deadman is a plant that must know when a tick brings no fresh command: a
// robot streaming velocities, which would go on at the last one. The link
// then calls Command only with a command received since its previous call,
// and Idle on every other tick (the partner timed out or lost sync, a
// command was refused, the handshake is not done). Idle stops the robot and
// lets the robot's own dead-man switches (a velocity timeout, a connection
// watchdog) run out, so that it stops by itself even if the bridge hangs. A
// plant that is not a Deadman gets the last good command every tick, which
// is what a position-servoed robot wants. Idle runs on the loop thread, must
// not allocate, and an error from it degrades the link as Command's does.
type Deadman interface {
	Idle() error
}

// Latcher is a plant part of whose measurement a goroutine of its own keeps
// newest (the Emio's marker vector, which the camera goroutine publishes).
// The link calls Latch right before the datagram leaves, after Measure and
// the wait for the send instant, so that those values are as fresh as the
// send: Measure may leave them out, Latch writes them into dst (the whole
// measurement, MeasureLen values). It runs on the loop thread, must not
// block or allocate.
type Latcher interface {
	Latch(dst []float64)
}

// Stopper is a plant whose robot keeps moving by itself while no command
// comes: velocities streamed to wheels or joints, a simulation stepped in
// lock step with the link. When its link goes degraded, the supervisor calls
// StopMotion off the loop thread, before any Reopen and never concurrently
// with Measure, Command or Reopen: it commands zero velocity wherever the
// device can still be reached and releases a lock-stepped simulation, so
// that a link that applies nothing leaves nothing moving. Its error says, in
// the user's words, what it could not reach ("the scene is unreachable; its
// last speeds may still be applied").
type Stopper interface {
	StopMotion(ctx context.Context) error
}

// Resumer is a plant whose device can latch a stop that only a person may
// end: an emergency or protective stop, a hardware error, a simulation a
// person stopped. While latched, Reopen starts nothing and returns an error
// wrapping ErrStopLatched. Resume records that a person asked to go on (the
// bridge's resume command or its control endpoint): the next Reopen alone
// may then clear the stop and start the robot again (reset, activate,
// home). A Reopen that cannot (the stop is still engaged) consumes the
// request, so that the stop's own reset later starts nothing. Resume is
// cheap and safe from any goroutine.
type Resumer interface {
	Resume()
}

// Ager is a plant whose measurement carries its own freshness: an age, flags
// that say whether the device is connected, the device's error code. While
// the device is down the link sends the last measurement again; it first
// calls Age on the loop thread, which updates those fields in dst (the age
// grows, the flags say disconnected or stopped, the error code is the
// device's last known one) from what the plant keeps, without touching the
// device, so that a model can tell stale data from fresh. Age may run while
// Reopen runs on another goroutine; it must not block or allocate.
type Ager interface {
	Age(dst []float64)
}

// Stepped is a simulated plant that moves on its link's tick grid rather
// than on the wall clock: the link tells it each tick's deadline
// (CLOCK_MONOTONIC ns) before Measure, and the plant's state at a tick then
// depends only on the commands it was given and on which ticks ran, not on
// when the thread woke, so that a recording replayed into it comes out the
// same (internal/replay). StepTo runs on the loop thread and must not block
// or allocate.
type Stepped interface {
	StepTo(deadline int64)
}

// HaltPolicy is what a plant does when its link stops.
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

// ErrHaltPolicy is an unknown halt policy name.
var ErrHaltPolicy = errors.New("plant: unknown halt policy")

// ParseHaltPolicy parses "hold" or "torque_off".
func ParseHaltPolicy(s string) (HaltPolicy, error) {
	for i, n := range haltNames {
		if s == n {
			return HaltPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want hold or torque_off)", ErrHaltPolicy, s)
}

var (
	// ErrAbsent marks a device that is not there (an unplugged adapter, a
	// camera not connected). Retrying is right, and cheap: the supervisor
	// polls for it at a short interval rather than backing off.
	ErrAbsent = errors.New("plant: device absent")
	// ErrPermanent marks a failure that retrying cannot mend (a service that
	// cannot run twice, a library this build cannot load). The supervisor
	// logs it once and does not retry.
	ErrPermanent = errors.New("plant: permanent failure")
	// ErrStopLatched marks a device in a stop that only a person may end
	// (an emergency or protective stop, a hardware error, a simulation
	// stopped by hand). The supervisor does not retry it on its own: it
	// keeps the link degraded, says what the person must do, and reopens
	// the device only after Resumer.Resume.
	ErrStopLatched = errors.New("plant: stopped until a person resumes it")
)
