package meca500

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/labbridge/bridge/plant"
)

// Open connects and runs the start-up; the same as Reopen.
func (a *Arm) Open(ctx context.Context) error { return a.Reopen(ctx) }

// Reopen implements the plant's Reopener: it connects if the connection is
// gone, then brings the robot to streaming as the policies allow
// (docs/meca500.md §5.2, §13). A robot that is connected and ready is not
// disturbed. A robot that does not answer is absent (plant.ErrAbsent); a
// busy one, one in error that may not be reset, or one under a safety stop
// fails with a message saying what to do, and the supervisor retries.
//
// Once the arm has been started, a stop that only a person may end latches
// it (stop.go, docs/meca500.md §15): Reopen then reads the robot's status
// and starts nothing, failing with a *StoppedError (plant.ErrStopLatched),
// until Resume, or restart_after_stop once no stop holds.
func (a *Arm) Reopen(ctx context.Context) error {
	err := a.reopen(ctx)
	a.mu.Lock()
	a.reopenErr = err
	a.unlock()
	return err
}

func (a *Arm) reopen(ctx context.Context) error {
	a.mu.Lock()
	latched := a.latch.kind != latchNone
	armed := a.resumeArmed
	a.resumeArmed = false // one Reopen per resume, whatever it finds
	fine := a.st.connected && a.st.readyErr() == nil && a.st.haveSamp
	a.unlock()
	switch {
	case latched:
		return a.reopenLatched(ctx, armed)
	case fine:
		return nil
	}
	return a.start(ctx, a.cfg.ResetErrors)
}

// ensureConnected keeps a live connection and makes a new one in place of
// one that dropped.
func (a *Arm) ensureConnected(ctx context.Context) error {
	a.mu.Lock()
	up := a.st.connected
	a.unlock()
	if up {
		return nil
	}
	a.Close()
	return a.connect(ctx)
}

// start connects if need be and brings the robot to streaming; resetOK
// allows resetting a robot error.
func (a *Arm) start(ctx context.Context, resetOK bool) error {
	if err := a.ensureConnected(ctx); err != nil {
		return err
	}
	if err := a.startup(ctx, resetOK); err != nil {
		if errors.Is(err, ErrDisconnected) || errors.Is(err, ErrNoReply) {
			a.Close() // start again from a fresh connection next time
		}
		return err
	}
	a.streaming, a.wdArmed = false, false
	a.mu.Lock()
	a.started = true
	a.unlock()
	a.obs.Connected()
	return nil
}

// connect dials, sends the lone NUL and waits for the banner
// (docs/meca500.md §2.1, §4).
func (a *Arm) connect(ctx context.Context) error {
	conn, err := a.dial(ctx)
	if err != nil {
		return err
	}
	a.mu.Lock()
	// The robot's last error outlives the connection: a robot found in
	// error does not say its code again.
	prev := &a.st
	a.st = state{connected: true, lastError: prev.lastError, errText: prev.errText, errLen: prev.errLen, status: prev.status}
	a.unlock()
	a.framer.Reset()
	done := make(chan struct{})
	a.wmu.Lock()
	a.conn, a.done, a.silent = conn, done, ""
	a.wmu.Unlock()
	a.setNames()
	go a.read(conn, done)
	// mecademicpy's lone NUL: the robot then knows the peer is no WebSocket
	// and sends its banner at once.
	if err := a.writeTimeout([]byte{0}, a.cfg.ReplyTimeout); err != nil {
		return err
	}
	err = a.await(ctx, a.cfg.ReplyTimeout, "the banner", func(st *state) (bool, error) {
		switch st.refusal {
		case 3001:
			return false, fmt.Errorf("%w at %s (code 3001): MecaPortal open in a browser or another program is connected; close it and the bridge connects by itself", ErrBusy, a.addr)
		case 3002:
			return false, fmt.Errorf("%w at %s: a firmware update is in progress (code 3002); wait for it to finish", ErrUnavailable, a.addr)
		case 3053:
			return false, fmt.Errorf("%w at %s: a reboot is pending (code 3053); reboot the robot", ErrUnavailable, a.addr)
		}
		return st.bannerOK, nil
	})
	if err != nil {
		return err
	}
	b, _ := a.Banner()
	if !b.Firmware.AtLeast(9, 0) {
		return fmt.Errorf("%w %v at %s: the relay needs monitoring on the control port (firmware 9.0 or later); update the robot's firmware", ErrFirmware, b.Firmware, a.addr)
	}
	if b.Firmware.AtLeast(9, 2) {
		a.wmu.Lock()
		a.silent = "-"
		a.wmu.Unlock()
		a.setNames()
	}
	a.log.Info("connected to the robot", "model", b.Model, "revision", b.Revision, "firmware", b.Firmware.String(), "virtual", b.Virtual)
	return nil
}

// dial connects within ConnectTimeout, retrying every 100 ms
// (mecademicpy's connect loop, docs/meca500.md §11). Nothing listening, or
// nothing answering, is an absent robot.
func (a *Arm) dial(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.ConnectTimeout)
	defer cancel()
	var last error
	for {
		attempt, stop := context.WithTimeout(ctx, 100*time.Millisecond)
		conn, err := a.cfg.Dial(attempt, "tcp", a.addr)
		stop()
		if err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetNoDelay(true) // one small command per tick: no Nagle
			}
			return conn, nil
		}
		last = err
		select {
		case <-ctx.Done():
			hint := "is it powered, and on this network?"
			if errors.Is(last, syscall.ECONNREFUSED) {
				hint = "the address answers but nothing listens on the control port: is it a Meca500, is it booted?"
			}
			return nil, fmt.Errorf("meca500: the robot at %s is unreachable (%v): %s: %w", a.addr, last, hint, plant.ErrAbsent)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// read is the reader goroutine of one connection: it frames the stream,
// parses each message and keeps the newest state. It returns when the
// connection fails or is closed.
func (a *Arm) read(conn net.Conn, done chan struct{}) {
	defer close(done)
	buf := make([]byte, 16<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			a.framer.Feed(buf[:n], a.onMsg)
		}
		if err != nil {
			cause := "the robot closed the connection"
			if !errors.Is(err, io.EOF) {
				cause = err.Error()
			}
			a.mu.Lock()
			if a.st.connected {
				a.st.connected = false
				a.st.lost = fmt.Errorf("%w: the robot at %s is unreachable (%s): the bridge reconnects", ErrDisconnected, a.addr, cause)
			}
			a.unlock()
			a.signal()
			return
		}
	}
}

func (a *Arm) signal() {
	select {
	case a.poke <- struct{}{}:
	default:
	}
}

// handle takes one frame: it runs on the reader and does not allocate for
// monitoring data.
func (a *Arm) handle(frame []byte) {
	m, err := Parse(frame)
	if err != nil {
		return // not ours to judge: mecademicpy skips these too
	}
	var vals [8]float64
	a.mu.Lock()
	st := &a.st
	if m.Code < len(st.seen) {
		st.seen[m.Code]++
	}
	switch c := m.Code; {
	case c == 2200 || c == 2201 || c == 2210 || c == 2211:
		if n, err := Numbers(m.Payload, vals[:]); err == nil && n == 7 {
			st.pend.t = vals[0]
			dst := map4(&st.pend, c)
			copy(dst[:], vals[1:7])
		}
		a.unlock()
		return
	case c == 2230:
		st.sample = st.pend
		st.sampleAt = time.Now()
		first := !st.haveSamp
		st.haveSamp = true
		st.samples++
		a.unlock()
		if first {
			a.signal()
		}
		return
	case c == 2007:
		n, err := Numbers(m.Payload, vals[:])
		if err != nil || n < 7 {
			break
		}
		s := Status{vals[0] == 1, vals[1] == 1, vals[2] == 1, vals[3] == 1, vals[4] == 1, vals[5] == 1, vals[6] == 1}
		changed := !st.statusOK || s != st.status
		st.status, st.statusOK = s, true
		if changed {
			latched := a.after()
			a.obs.State(s)
			a.logLatch(latched)
			a.signal()
			return
		}
	case c == 3000:
		if b, err := ParseBanner(string(m.Payload)); err == nil {
			st.banner, st.bannerOK = b, true
		}
	case c == 3001 || c == 3002 || c == 3053:
		st.refusal = c
	case c == 1000:
		// A burst of refusals is one line: its first.
		now := time.Now()
		first := now.Sub(a.lastFull) > time.Second
		a.lastFull = now
		a.fulls.Add(1)
		a.unlock()
		a.obs.BufferFull()
		if first {
			a.log.Warn("the robot refused a motion command: its motion queue is full (code 1000); the arm stops until it takes commands again",
				"refused", a.fulls.Load())
		}
		return
	case c > 1000 && c < 2000, c == 3005, c == 3006, c == 3029, c == 3041, c == 3049:
		st.errors++
		// 1011 (a command refused because the robot is in error) would
		// hide the error that put it there: keep the cause.
		if c != 1011 || !st.status.Error || st.lastError == 0 {
			st.lastError = c
			st.errLen = copy(st.errText[:], m.Payload)
		}
		latched := a.after()
		a.obs.Error(c)
		a.log.Warn("the robot reports an error", "code", c, "text", string(m.Payload))
		a.logLatch(latched)
		a.signal()
		return
	case safetySlot(c) >= 0:
		if n, err := Numbers(m.Payload, vals[:]); err == nil && n >= 1 {
			v := int8(vals[0])
			if c == 3083 || c == 3086 {
				// Events, not states: the stop they cause shows as a
				// paused or deactivated robot in 2007.
				v = 0
			}
			st.safety[safetySlot(c)] = v
			latched := a.after()
			a.obs.SafetyStop(c, int(vals[0]))
			a.log.Warn("safety stop", "code", c, "name", safetyName(c), "state", int(vals[0]))
			a.logLatch(latched)
			a.signal()
			return
		}
	}
	a.unlock()
	a.signal()
}

// after is the end of a state change under a.mu: it latches a stop if it
// must, publishes what Age reads, and unlocks. It returns the latched
// stop's message when it latched now.
func (a *Arm) after() string {
	msg := ""
	if a.latchCheckLocked() {
		msg = a.latchedErrLocked("", nil).Msg
	}
	a.unlock()
	return msg
}

func (a *Arm) logLatch(msg string) {
	if msg != "" {
		a.log.Warn("the robot stopped; the link waits for a person", "err", msg)
	}
}

func map4(c *cycle, code int) *[Joints]float64 {
	switch code {
	case 2200:
		return &c.target
	case 2201:
		return &c.pose
	case 2210:
		return &c.measured
	}
	return &c.measuredPose
}

// await waits until cond holds, fails, the connection drops, ctx is done or
// timeout passes. what names the thing awaited, for the timeout's message.
func (a *Arm) await(ctx context.Context, timeout time.Duration, what string, cond func(*state) (bool, error)) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		a.mu.Lock()
		ok, err := cond(&a.st)
		up, lost := a.st.connected, a.st.lost
		a.unlock()
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case !up:
			return lost
		}
		select {
		case <-a.poke:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("%w: %s did not come within %v", ErrNoReply, what, timeout)
		}
	}
}

// request sends a command (name with its prefix, if any) and waits for one of the reply codes; a robot
// error in between fails it with that error, and 1001 means the firmware
// does not know the command.
func (a *Arm) request(ctx context.Context, name string, args []float64, want ...int) (int, error) {
	a.mu.Lock()
	var before [4]uint32
	for i, c := range want {
		before[i] = a.st.seen[c]
	}
	errs := a.st.errors
	a.unlock()
	b, err := AppendCommand(nil, name, args...)
	if err != nil {
		return 0, err
	}
	if err := a.writeTimeout(b, a.cfg.ReplyTimeout); err != nil {
		return 0, err
	}
	got := 0
	err = a.await(ctx, a.cfg.ReplyTimeout, "the reply to "+name, func(st *state) (bool, error) {
		for i, c := range want {
			if st.seen[c] != before[i] {
				got = c
				return true, nil
			}
		}
		if st.errors != errs {
			return false, fmt.Errorf("meca500: %s: %w", name, &RobotError{Code: st.lastError, Text: string(st.errText[:st.errLen])})
		}
		return false, nil
	})
	return got, err
}

// send writes a command whose reply is not awaited.
func (a *Arm) send(name string, args ...float64) error {
	b, err := AppendCommand(nil, name, args...)
	if err != nil {
		return err
	}
	return a.writeTimeout(b, a.cfg.ReplyTimeout)
}

// startup brings a connected robot to streaming, driven by its 2007 status
// only (docs/meca500.md §5.2, §13). Each step runs only if the status asks
// for it, so a robot already streaming is left as it is.
func (a *Arm) startup(ctx context.Context, resetOK bool) error {
	// Monitoring on the control port: one connection carries everything
	// (§10). 2096 comes with a 2007 snapshot.
	if _, err := a.request(ctx, a.silent+"SetCtrlPortMonitoring", []float64{1}, 2096); err != nil {
		return err
	}
	if _, err := a.request(ctx, a.silent+"GetStatusRobot", nil, 2007); err != nil {
		return err
	}
	if latched, err := a.Latched(); latched {
		// Started before, and found stopped on this connection.
		return err
	}
	st := a.snapshot()
	// A robot found paused while active was paused by someone (a
	// connection drop leaves it so, §9); one found deactivated is paused
	// by its deactivation, and activating it is ours to finish.
	pausedByOthers := st.status.Activated && st.status.Paused
	for i, s := range st.safety {
		if s != 0 && i < len(slotCodes) {
			return &SafetyStopError{Code: slotCodes[i], State: int(s)}
		}
	}
	if st.status.Error {
		if !resetOK {
			return fmt.Errorf("%w: %w; reset_errors = false, so the bridge leaves it: reset it at the robot, or set reset_errors = true",
				ErrPolicy, &RobotError{Code: st.lastError, Text: string(st.errText[:st.errLen])})
		}
		a.log.Warn("resetting the robot's error", "code", st.lastError)
		if _, err := a.request(ctx, "ResetError", nil, 2005, 2006); err != nil {
			return err
		}
		if err := a.await(ctx, a.cfg.ReplyTimeout, "the error reset", func(st *state) (bool, error) { return !st.status.Error, nil }); err != nil {
			return err
		}
		// After a reset the robot stays paused until ResumeMotion (§8).
		if _, err := a.request(ctx, "ResumeMotion", nil, 2043); err != nil {
			return err
		}
	}
	st = a.snapshot()
	if !st.status.Activated {
		if !a.cfg.Activate {
			return fmt.Errorf("%w: the robot is deactivated and activate = false: activate it yourself, or set activate = true", ErrPolicy)
		}
		a.log.Info("activating the robot")
		if err := a.step(ctx, "ActivateRobot", "activation", 1013, func(s Status) bool { return s.Activated }); err != nil {
			return err
		}
	}
	if !a.snapshot().status.Homed {
		if !a.cfg.Home {
			return fmt.Errorf("%w: the robot is not homed and home = false: home it yourself, or set home = true", ErrPolicy)
		}
		a.log.Info("homing the robot")
		if err := a.step(ctx, "Home", "homing", 1014, func(s Status) bool { return s.Homed }); err != nil {
			return err
		}
	}
	// Activation resets the monitoring settings (§6): set them after it.
	codes := []float64{2200, 2201}
	if a.cfg.Measured {
		codes = append(codes, 2210, 2211)
	}
	if err := a.send(a.silent+"SetRealTimeMonitoring", codes...); err != nil {
		return err
	}
	if err := a.send(a.silent+"SetMonitoringInterval", a.cfg.MonitoringInterval.Seconds()); err != nil {
		return err
	}
	// Empty the queue before streaming: a velocity command would wait
	// behind whatever another program left (§6). ClearMotion pauses.
	if pausedByOthers && !a.cfg.Resume {
		return fmt.Errorf("%w: the robot's motion is paused (after a connection drop it stays so) and resume = false: resume it yourself, or set resume = true", ErrPolicy)
	}
	if _, err := a.request(ctx, "ClearMotion", nil, 2044); err != nil {
		return err
	}
	if _, err := a.request(ctx, "ResumeMotion", nil, 2043); err != nil {
		return err
	}
	if err := a.await(ctx, a.cfg.ReplyTimeout, "the resumed status", func(st *state) (bool, error) { return !st.status.Paused, nil }); err != nil {
		return err
	}
	// A queued motion setting, reset at each activation: after it.
	if err := a.send(a.silent+"SetVelTimeout", a.cfg.VelTimeout.Seconds()); err != nil {
		return err
	}
	return a.await(ctx, a.cfg.ReplyTimeout, "monitoring data", func(st *state) (bool, error) { return st.haveSamp, nil })
}

// step sends an activation or homing command and waits for the 2007 flag
// it sets; failCode is the robot's refusal of that step.
func (a *Arm) step(ctx context.Context, name, what string, failCode int, done func(Status) bool) error {
	a.mu.Lock()
	fails := a.st.seen[failCode]
	a.unlock()
	if err := a.send(name); err != nil {
		return err
	}
	return a.await(ctx, a.cfg.StartupTimeout, what, func(st *state) (bool, error) {
		if st.seen[failCode] != fails {
			return false, fmt.Errorf("meca500: %s failed: %w", what, &RobotError{Code: failCode, Text: string(st.errText[:st.errLen])})
		}
		return st.statusOK && done(st.status), nil
	})
}

// snapshot copies the state.
func (a *Arm) snapshot() state {
	a.mu.Lock()
	defer a.unlock()
	return a.st
}
