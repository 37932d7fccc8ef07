package bridge

import "time"

// State is the state of a link (design: starting → handshaking → running ⇄
// degraded → stopped).
type State uint8

// Link states.
const (
	// Starting: sockets bound, devices opening, the loop not yet ticking.
	Starting State = iota
	// Handshaking: the loop ticks and reads the plant, and the master sends
	// seq −1 packets until the partner answers.
	Handshaking
	// Running: exchanges run every tick and commands reach the plant.
	Running
	// Degraded: a device is down, or the measurement has lacked a part for
	// the link's hold (no camera frame); the loop keeps ticking and
	// exchanging the last measurement, applies nothing, and the supervisor
	// reopens the device (a camera reopens itself).
	Degraded
	// Stopped: the loop has ended and the halt policy was applied.
	Stopped
	numState
)

var stateNames = [numState]string{"starting", "handshaking", "running", "degraded", "stopped"}

func (s State) String() string {
	if s < numState {
		return stateNames[s]
	}
	return "unknown"
}

// Event is one link state transition. Events are produced on the loop thread
// into a fixed buffer and consumed by the supervisor (logs, metrics, tests).
type Event struct {
	Link     string
	From, To State
	// Cause is a short constant phrase: "handshake done", "partner lost",
	// "device error", "device reopened", "stop".
	Cause string
	// Err is the device error behind a transition to Degraded, if any.
	Err error
	// At is when the transition happened (monotonic ns on the loop's clock).
	At int64
	// Time is the wall-clock time, filled in by the consumer.
	Time time.Time
}

// Event causes.
const (
	CauseStart          = "loop started"
	CauseHandshake      = "handshake done"
	CausePartnerLost    = "partner lost"
	CauseDeviceError    = "device error"
	CauseDeviceReopened = "device reopened"
	// CauseIncomplete: the plant's measurement has lacked for the hold
	// (Link.Lack says what); CauseComplete: it is whole again.
	CauseIncomplete = "measurement incomplete"
	CauseComplete   = "measurement complete"
	CauseStop       = "stop"
)
