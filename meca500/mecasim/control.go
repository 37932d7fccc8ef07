package mecasim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrControl is a fault-injection command the simulator does not know, or
// one with a bad value; the error names it and lists what is accepted.
var ErrControl = errors.New("mecasim: bad control command")

// ControlHelp lists the commands Control accepts, one per line.
const ControlHelp = `estop | estop release | estop reset    press, release, reset the emergency stop (3070)
pstop | pstop release | pstop reset    the same for protective stop 1 (3069)
error                                  a motion error (3005): the robot stops, in error
drop                                   close the control connection abruptly
delay 500ms                            delay every message the robot sends (0 ends it)
full 10                                refuse the next 10 queued commands with 1000 (buffer full)
payload 60                             a payload slows every motion to 60 % of its commanded speed (100: none)
status                                 print the robot's state`

// Control applies one command of the simulator's console or of its control
// endpoint (`bridge sim meca500`): words such as ["estop"], ["estop",
// "release"], ["delay", "500ms"] or ["full", "10"]. It returns the robot's
// state after the command (StateLine), so that whoever injected a fault
// sees what it did. A reset at the power supply resets every released stop,
// as the real one does (§8).
func (r *Robot) Control(words []string) (string, error) {
	if len(words) == 0 {
		return "", fmt.Errorf("%w: empty (want one of:\n%s)", ErrControl, ControlHelp)
	}
	name := strings.ToLower(words[0])
	arg := ""
	if len(words) > 1 {
		arg = strings.ToLower(strings.Join(words[1:], " "))
	}
	bad := func(want string) (string, error) {
		return "", fmt.Errorf("%w: %q: want %s", ErrControl, strings.Join(words, " "), want)
	}
	switch name {
	case "estop", "pstop":
		press, what := r.EStop, "estop"
		if name == "pstop" {
			press, what = r.PStop1, "pstop"
		}
		switch arg {
		case "", "press":
			press(true)
		case "release":
			press(false)
		case "reset":
			r.ResetPowerSupply()
		default:
			return bad(what + ", " + what + " release or " + what + " reset")
		}
	case "payload":
		pct, err := strconv.ParseFloat(arg, 64)
		if err != nil {
			return bad("payload N, the arm's speed under it in % (100: none)")
		}
		if err := r.SetPayload(pct); err != nil {
			return "", err
		}
	case "error":
		if arg != "" {
			return bad("error, without a value")
		}
		r.MotionError()
	case "drop":
		if arg != "" {
			return bad("drop, without a value")
		}
		r.DropClient()
	case "delay":
		d, err := time.ParseDuration(arg)
		if arg == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 || d > time.Minute {
			return bad("delay and a duration from 0 to 1m, such as delay 500ms")
		}
		r.SetReplyDelay(d)
	case "full":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 || n > 1000000 {
			return bad("full and a count of commands from 0 to 1000000, such as full 10")
		}
		r.BufferFull(n)
	case "status":
		if arg != "" {
			return bad("status, without a value")
		}
	default:
		return "", fmt.Errorf("%w: %q (want one of:\n%s)", ErrControl, strings.Join(words, " "), ControlHelp)
	}
	return r.StateLine(), nil
}

// StateLine is the robot's state on one line: activation, homing, pause,
// error, the two safety stops, motion, the client.
func (r *Robot) StateLine() string {
	s := r.Status()
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	client := "none"
	if s.Connected {
		client = "connected"
	}
	line := fmt.Sprintf("activated=%s homed=%s paused=%s error=%d estop=%s pstop=%s moving=%s client=%s reply_delay=%v buffer_full_pending=%d",
		yes(s.Activated), yes(s.Homed), yes(s.Paused), s.ErrorCode, stopName(s.EStopState), stopName(s.PStop1State),
		yes(s.Moving), client, s.ReplyDelay, s.BufferFullPending)
	if s.Speed != 100 {
		line += fmt.Sprintf(" payload_speed=%g%%", s.Speed)
	}
	return line
}

func stopName(state int) string {
	switch state {
	case stopActive:
		return "pressed"
	case stopResettable:
		return "released-awaiting-reset"
	}
	return "off"
}
