package meca500

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/labbridge/bridge/plant"
)

// A stop that only a person may end (docs/meca500.md §15): once the arm has
// been started, an emergency or protective stop, a robot error or a robot
// deactivated behind the bridge's back latches. The link goes degraded
// (Measure fails), and Reopen starts nothing until Resume: a reset at the
// power supply must not start motion (IEC 60204-1 §9.2.5.4, ISO 13850).

type latchKind uint8

const (
	latchNone latchKind = iota
	latchSafety
	latchError
	latchDeactivated
)

// latchState is what latched the arm; guarded by Arm.mu.
type latchState struct {
	kind latchKind
	code int // the safety stop's or the error's code
}

// StoppedError is a stop that only a person may end: it wraps
// plant.ErrStopLatched, and its message says what is engaged and what the
// person must do, in order. Cause is the underlying error, if any (the
// safety stop, the robot's error, a failed reconnection).
type StoppedError struct {
	// Code is the stop's code (3070 emergency stop, 3069 and 3032
	// protective stops, 3081 …) or the robot's error (3005 …); 0 when the
	// robot was found deactivated.
	Code int
	// Engaged: the stop itself still holds (pressed, or awaiting its
	// reset); a resume is refused until it is reset.
	Engaged bool
	Msg     string
	Cause   error
}

func (e *StoppedError) Error() string { return e.Msg }

// Is makes a StoppedError a plant.ErrStopLatched.
func (e *StoppedError) Is(target error) bool { return target == plant.ErrStopLatched }

func (e *StoppedError) Unwrap() error { return e.Cause }

// resetAtPowerSupply reports whether a safety stop is reset at the power
// supply (§8): those that cut motor power.
func resetAtPowerSupply(code int) bool { return code == 3069 || code == 3070 }

// latching reports whether a safety stop's slot latches the arm: all but
// the events 3083 (rebooted: the robot comes back deactivated, which
// latches) and 3086 (connection dropped: the bridge reconnects).
func latching(i int) bool { return i < len(slotCodes) && slotCodes[i] != 3083 && slotCodes[i] != 3086 }

// resumeHow is what a person runs to resume the link.
func (a *Arm) resumeHow() string {
	return fmt.Sprintf("run `bridge resume %s` or POST /links/%s/resume", a.cfg.Link, a.cfg.Link)
}

// latchCheckLocked latches the arm if it has been started and the robot is
// stopped; it reports whether it latched now. a.mu is held.
func (a *Arm) latchCheckLocked() bool {
	if !a.started || a.latch.kind != latchNone {
		return false
	}
	st := &a.st
	for i, s := range st.safety {
		if s != 0 && latching(i) {
			a.latch = latchState{kind: latchSafety, code: slotCodes[i]}
		}
	}
	if a.latch.kind == latchNone && st.statusOK {
		switch {
		case st.status.Error:
			a.latch = latchState{kind: latchError, code: st.lastError}
		case !st.status.Activated:
			a.latch = latchState{kind: latchDeactivated}
		}
	}
	if a.latch.kind == latchNone {
		return false
	}
	a.resumeArmed = false // a resume asked before this stop does not end it
	return true
}

// engagedLocked reports whether a safety stop still holds (pressed or
// awaiting its reset), and which. a.mu is held.
func (a *Arm) engagedLocked() (code, state int) {
	for i, s := range a.st.safety {
		if s != 0 && latching(i) {
			return slotCodes[i], int(s)
		}
	}
	return 0, 0
}

// latchedErrLocked says what holds the latched arm and what the person must
// do. a.mu is held.
func (a *Arm) latchedErrLocked(prefix string, cause error) *StoppedError {
	st := &a.st
	e := &StoppedError{Code: a.latch.code, Cause: cause}
	how := a.resumeHow()
	var what string
	switch a.latch.kind {
	case latchSafety:
		name := safetyName(a.latch.code)
		state := int(a.st.safety[safetySlot(a.latch.code)])
		if code, s := a.engagedLocked(); s != 0 {
			// Another stop may hold it now: say what holds it.
			name, state, e.Code = safetyName(code), s, code
		}
		e.Engaged = state != 0
		switch {
		case state == 1 && resetAtPowerSupply(e.Code):
			what = fmt.Sprintf("%s engaged: release it and reset it at the power supply, then %s", name, how)
		case state == 1:
			what = fmt.Sprintf("%s engaged: clear its cause and reset it at the robot, then %s", name, how)
		case state == 2 && resetAtPowerSupply(e.Code):
			what = fmt.Sprintf("%s released but not reset: reset it at the power supply, then %s", name, how)
		case state == 2:
			what = fmt.Sprintf("%s cleared but not reset: reset it at the robot, then %s", name, how)
		default:
			what = fmt.Sprintf("the %s is reset; the arm waits for a person: %s", name, how)
		}
	case latchError:
		re := &RobotError{Code: a.latch.code}
		if st.lastError == a.latch.code {
			re.Text = string(st.errText[:st.errLen])
		}
		if st.statusOK && !st.status.Error {
			what = fmt.Sprintf("the robot's error %d is reset; the arm waits for a person: %s", a.latch.code, how)
		} else {
			what = fmt.Sprintf("%s: see what stopped the arm and clear its way, then %s (the resume resets the error)", re.describe(), how)
		}
	default:
		what = fmt.Sprintf("the robot was deactivated while the link ran (its power was cut, it rebooted, or another program deactivated it); the arm waits for a person: %s", how)
	}
	e.Msg = fmt.Sprintf("meca500: %sthe robot at %s is stopped: %s", prefix, a.addr, what)
	if cause != nil && (errors.Is(cause, ErrDisconnected) || errors.Is(cause, plant.ErrAbsent) || errors.Is(cause, ErrNoReply)) {
		e.Msg = fmt.Sprintf("meca500: %s%s; when last reached, the robot was stopped: %s", prefix, strings.TrimPrefix(cause.Error(), "meca500: "), what)
	}
	return e
}

// Resume implements plant.Resumer: a person asked the latched arm to go on.
// The next Reopen alone may reset the robot's error, activate, home and
// resume it, as the start-up policies allow; if a safety stop still holds,
// that Reopen fails, says why, and the request is spent. A Resume while
// nothing is latched does nothing, so that it cannot end a later stop.
func (a *Arm) Resume() {
	a.mu.Lock()
	defer a.unlock()
	if a.latch.kind != latchNone {
		a.resumeArmed = true
	}
}

// Latched reports whether the arm waits for a person, and why.
func (a *Arm) Latched() (bool, error) {
	a.mu.Lock()
	defer a.unlock()
	if a.latch.kind == latchNone {
		return false, nil
	}
	return true, a.latchedErrLocked("", nil)
}

// reopenLatched is Reopen while the arm is latched: it reads the robot's
// status (over the connection it has, or a new one if that dropped) and
// starts nothing, unless a person asked (armed) or restart_after_stop
// allows it and no stop holds any more.
func (a *Arm) reopenLatched(ctx context.Context, armed bool) error {
	if err := a.ensureConnected(ctx); err != nil {
		a.mu.Lock()
		defer a.unlock()
		return a.latchedErrLocked(refused(armed), err)
	}
	if err := a.readStatus(ctx); err != nil {
		if errors.Is(err, ErrDisconnected) || errors.Is(err, ErrNoReply) {
			a.Close()
		}
		a.mu.Lock()
		defer a.unlock()
		return a.latchedErrLocked(refused(armed), err)
	}
	a.mu.Lock()
	_, engaged := a.engagedLocked()
	if !armed && (!a.cfg.RestartAfterStop || engaged != 0) {
		err := a.latchedErrLocked("", nil)
		a.unlock()
		return err
	}
	if engaged != 0 {
		err := a.latchedErrLocked("resume refused: ", nil)
		a.unlock()
		a.log.Warn("resume refused: a stop still holds the robot", "err", err.Msg)
		return err
	}
	kept := a.latch
	a.latch, a.started = latchState{}, false
	a.unlock()
	if armed {
		a.log.Info("a person resumed the robot: resetting, activating and homing it as configured")
	} else {
		a.log.Warn("restart_after_stop = true: restarting the robot after its stop without a person")
	}
	// A person's resume is the reset the robot's error waited for.
	if err := a.start(ctx, a.cfg.ResetErrors || armed); err != nil {
		a.mu.Lock()
		defer a.unlock()
		if a.latch.kind == latchNone {
			a.latch, a.started = kept, true
		}
		return &StoppedError{Code: kept.code, Cause: err,
			Msg: fmt.Sprintf("%v; the robot at %s waits for a person again: mend that, then %s", err, a.addr, a.resumeHow())}
	}
	return nil
}

func refused(armed bool) string {
	if armed {
		return "resume refused: "
	}
	return ""
}

// readStatus asks for the robot's status over the connection, with the
// monitoring stream on it, and turns the connection watchdog off: nothing
// streams while the arm is latched, and a watchdog left running would drop
// the connection that a latched reopen keeps.
func (a *Arm) readStatus(ctx context.Context) error {
	if _, err := a.request(ctx, a.silent+"SetCtrlPortMonitoring", []float64{1}, 2096); err != nil {
		return err
	}
	if err := a.send(a.silent+"ConnectionWatchdog", 0); err != nil {
		return err
	}
	_, err := a.request(ctx, a.silent+"GetStatusRobot", nil, 2007)
	return err
}

// StopMotion implements plant.Stopper: the link went degraded, so nothing
// streams. A reachable robot that can move is sent zero joint velocity
// (MoveJointsVel(0,…), §6: it decelerates at once, its queue being empty
// while the bridge streams; its velocity timeout would stop it anyway), and
// the connection watchdog is turned off, as Halt does: the link commands
// nothing until its reopen, and the watchdog would otherwise drop the
// connection a latched reopen keeps. A robot it cannot reach was stopped
// by its own velocity timeout.
func (a *Arm) StopMotion(ctx context.Context) error {
	a.mu.Lock()
	up, canMove := a.st.connected, a.st.readyErr() == nil
	a.unlock()
	a.streaming, a.wdArmed = false, false
	if !up {
		return a.stoppedByItself(nil)
	}
	var b []byte
	if canMove {
		var zero [Joints]float64
		b, _ = AppendCommand(b, a.moveName(), zero[:]...)
	}
	b, _ = AppendCommand(b, a.watchdogName(), 0)
	d := a.cfg.ReplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	if err := a.writeTimeout(b, max(d, time.Millisecond)); err != nil {
		return a.stoppedByItself(err)
	}
	return nil
}

// stoppedByItself is StopMotion's outcome for a robot it cannot reach: the
// robot's own velocity timeout (always set: 1 ms to 1 s) has stopped the
// joints within VelTimeout of the last command, which nothing of the
// bridge's can renew. Said at info level; not an error.
func (a *Arm) stoppedByItself(cause error) error {
	a.log.Info("the robot is unreachable; its velocity timeout stopped its joints within "+a.cfg.VelTimeout.String()+" of the last command", "err", cause)
	return nil
}

func (a *Arm) moveName() string {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return a.move
}

func (a *Arm) watchdogName() string {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	return a.watchdog
}

// Health says whether the robot can be driven, and if not, whether it is
// unreachable or reachable but stopped: for /healthz. Safe from any
// goroutine.
func (a *Arm) Health() error {
	a.mu.Lock()
	defer a.unlock()
	st := &a.st
	switch {
	case a.latch.kind != latchNone && !st.connected && a.reopenErr != nil:
		return a.reopenErr // unreachable, and stopped when last reached
	case a.latch.kind != latchNone:
		return a.latchedErrLocked("", nil)
	case !st.connected && a.reopenErr != nil:
		return a.reopenErr
	case !st.connected && st.lost != nil:
		return fmt.Errorf("meca500: the robot at %s is unreachable: %w", a.addr, st.lost)
	case !st.connected:
		return fmt.Errorf("meca500: the robot at %s is not connected yet", a.addr)
	}
	if err := st.readyErr(); err != nil {
		return fmt.Errorf("meca500: the robot at %s is reachable but cannot move: %w", a.addr, err)
	}
	return nil
}

// Stopped reports whether the robot is stopped in a way only a person ends
// (a latched stop, or a safety stop or error found at start), with what
// holds it: for the robot_stopped fault. Safe from any goroutine.
func (a *Arm) Stopped() (bool, string) {
	a.mu.Lock()
	defer a.unlock()
	if a.latch.kind != latchNone {
		return true, a.latchedErrLocked("", nil).Msg
	}
	st := &a.st
	if !st.connected {
		return false, ""
	}
	for i, s := range st.safety {
		if s != 0 && latching(i) {
			return true, (&SafetyStopError{Code: slotCodes[i], State: int(s)}).Error()
		}
	}
	if st.statusOK && st.status.Error {
		return true, (&RobotError{Code: st.lastError, Text: string(st.errText[:st.errLen])}).Error()
	}
	return false, ""
}

// BufferFulls counts the motion commands the robot refused with 1000 (its
// motion queue full). Safe from any goroutine.
func (a *Arm) BufferFulls() uint64 { return a.fulls.Load() }

// errCodeLocked is the measurement's error field: the code of what stops
// the robot now: its error (es = 1), a safety stop, the latched stop, 3086
// while the connection is lost; 0 when nothing does. a.mu is held.
func (a *Arm) errCodeLocked() int {
	st := &a.st
	switch {
	case st.connected && st.statusOK && st.status.Error:
		return st.lastError
	case !st.connected && st.status.Error && st.lastError != 0:
		return st.lastError
	}
	if code, s := a.engagedLocked(); s != 0 {
		return code
	}
	if a.latch.kind != latchNone && a.latch.code != 0 {
		return a.latch.code
	}
	if !st.connected {
		return 3086
	}
	return 0
}

// publishLocked copies what Age needs into atomics and publishes the
// loop's view. a.mu is held; unlock calls it on every release.
func (a *Arm) publishLocked() {
	st := &a.st
	v := a.view.next()
	v.connected, v.latched, v.ready = st.connected, a.latch.kind != latchNone, st.canMove()
	v.haveSamp, v.sample, v.sampleAt = st.haveSamp, st.sample, st.sampleAt
	v.flags, v.errCode = st.status.flags(), a.errCodeLocked()
	a.view.publish()
	if st.statusOK {
		var bits uint32
		for i, f := range st.status.flags() {
			if f {
				bits |= 1 << i
			}
		}
		a.flagBits.Store(bits)
	}
	a.up.Store(st.connected)
	a.sampled.Store(st.haveSamp)
	a.errField.Store(int64(a.errCodeLocked()))
}

// Age implements plant.Ager: while the link is degraded it updates the
// measurement's status flags, error code and age from what the reader last
// learned, without touching the robot. A robot whose connection is lost is
// shown paused and still (pm = 1, eob = eom = 1: it pauses when its
// connection goes, §9) with error 3086 unless a robot error is known. The
// age is that of the joints the link keeps sending: it grows from the
// monitoring cycle the last Measure copied. It does not block or allocate.
func (a *Arm) Age(dst []float64) {
	n := Joints
	if a.cfg.Pose {
		n += Joints
	}
	if len(dst) < n+9 {
		return
	}
	bits, up := a.flagBits.Load(), a.up.Load()
	for i := range 7 {
		dst[n+i] = float64(bits >> i & 1)
	}
	if !up {
		dst[n+4], dst[n+5], dst[n+6] = 1, 1, 1
	}
	dst[n+7] = float64(a.errField.Load())
	dst[n+8] = math.NaN()
	if at := a.sampleNs.Load(); at > 0 {
		dst[n+8] = (time.Since(a.epoch) - time.Duration(at)).Seconds()
	}
}
