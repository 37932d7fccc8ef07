package mecasim

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// execute runs one well-formed command of the control client (r.mu held,
// the simulation stepped to now). The replies and their codes are those of
// docs/meca500.md §3–§6 and §12.
func (r *Robot) execute(rq request, cmd command, now time.Duration) {
	s := &r.st
	ts := now.Microseconds()
	switch strings.ToLower(cmd.name) {
	// Identity and connect dialogue (§4, §12).
	case "getrobotserial":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2083, r.cfg.Serial)
		}
	case "getfwversionfull":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2082, r.fwFull)
		}
	case "getfwversion":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2081, "v"+r.cfg.Firmware)
		}
	case "getproducttype":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2084, "Meca500")
		}
	case "setrtc":
		// The clock is not simulated; no reply, as on the robot (§4).
		if v, ok := r.numbers(rq, cmd, 1); ok {
			r.inRange(rq, cmd, "time", v[0], 0, math.MaxUint32)
		}
	case "setctrlportmonitoring":
		if on, ok := r.flag(rq, cmd); ok {
			rq.s.monitoring = on
			if on {
				r.reply(rq, 2096, "Monitoring on control port enabled.")
				// The client waits for this snapshot (§4).
				r.reply(rq, 2007, statusPayload(s.flags()))
			} else {
				r.reply(rq, 2096, "Monitoring on control port disabled.")
			}
		}

	// Monitoring (§6, §7).
	case "getrealtimemonitoring":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2117, s.rtList())
		}
	case "setrealtimemonitoring":
		r.setRealTimeMonitoring(rq, cmd)
	case "getmonitoringinterval":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2116, fmtNum(s.interval.Seconds()))
		}
	case "setmonitoringinterval":
		if v, ok := r.numbers(rq, cmd, 1); ok && r.inRange(rq, cmd, "interval", v[0],
			MinMonitoringInterval.Seconds(), MaxMonitoringInterval.Seconds()) {
			s.interval = time.Duration(math.Round(v[0] * float64(time.Second)))
			s.nextMon = now + s.interval
		}
	case "forcerealtimemonitoring":
		if r.noArgs(rq, cmd) {
			r.cycle(now)
		}
	case "getstatusrobot":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2007, statusPayload(s.flags()))
		}
	case "getjoints":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2026, fmtList(-1, s.q[:]...))
		}
	case "getpose":
		if r.noArgs(rq, cmd) {
			p := poseOf(forward(s.q))
			r.reply(rq, 2027, fmtList(-1, p[:]...))
		}
	case "getrttargetjointpos", "getrtjointpos":
		if r.noArgs(rq, cmd) {
			code := 2200
			if strings.EqualFold(cmd.name, "getrtjointpos") {
				code = 2210
			}
			r.reply(rq, code, fmtList(ts, s.q[:]...))
		}
	case "getrttargetcartpos", "getrtcartpos":
		if r.noArgs(rq, cmd) {
			code := 2201
			if strings.EqualFold(cmd.name, "getrtcartpos") {
				code = 2211
			}
			p := poseOf(forward(s.q))
			r.reply(rq, code, fmtList(ts, p[:]...))
		}
	case "getrttargetjointvel", "getrtjointvel":
		if r.noArgs(rq, cmd) {
			code := 2202
			if strings.EqualFold(cmd.name, "getrtjointvel") {
				code = 2212
			}
			r.reply(rq, code, fmtList(ts, s.qdot[:]...))
		}
	case "getcmdpendingcount":
		if r.noArgs(rq, cmd) {
			r.reply(rq, 2080, strconv.Itoa(len(s.queue)))
		}
	case "synccmdqueue":
		// Commands are executed in order, so the fence is answered at once.
		if v, ok := r.numbers(rq, cmd, 1); ok && r.integer(rq, cmd, "id", v[0], 0, math.MaxUint32) {
			r.reply(rq, 2097, fmtNum(v[0]))
		}

	// State (§5.2, §6, §8).
	case "activaterobot":
		if r.noArgs(rq, cmd) {
			r.activate(rq, now)
		}
	case "deactivaterobot":
		if r.noArgs(rq, cmd) {
			r.stopMotion()
			s.activated, s.homed, s.homing = false, false, false
			r.reply(rq, 2004, "Motors deactivated.")
		}
	case "home":
		if !r.noArgs(rq, cmd) {
			break
		}
		switch {
		case s.errored:
			r.reply(rq, codeInError, "The robot is in error.")
		case !s.activated:
			r.reply(rq, codeNotActivated, "Motors are not activated.")
		case s.homed:
			r.reply(rq, 2003, "Homing already done.")
		case s.homing:
			// Already on its way: [2002] will follow.
		default:
			s.homing, s.homingDone = true, now+homingTime
		}
	case "reseterror":
		if r.noArgs(rq, cmd) {
			if s.errored {
				// Still paused: ResumeMotion follows (§8).
				s.errored, s.errorCode = false, 0
				r.reply(rq, 2005, "The error was reset.")
			} else {
				r.reply(rq, 2006, "There was no error to reset.")
			}
		}
	case "pausemotion":
		if r.noArgs(rq, cmd) {
			wasMoving := s.moving()
			s.paused = true
			// A velocity command does not outlive a pause.
			s.vel.active = false
			s.qdot = [6]float64{}
			r.reply(rq, 2042, "Motion paused.")
			if wasMoving && !s.eomOn {
				// §6: 3004 if the robot was moving; with SetEom(1) the
				// end of movement sends it anyway.
				r.event(false, 3004, "End of movement.")
			}
		}
	case "resumemotion":
		if !r.noArgs(rq, cmd) {
			break
		}
		switch {
		case s.errored:
			r.reply(rq, codeInError, "The robot is in error.")
		case !s.activated:
			r.reply(rq, codeNotActivated, "Motors are not activated.")
		default:
			s.paused = false
			r.reply(rq, 2043, "Motion resumed.")
		}
	case "clearmotion":
		if r.noArgs(rq, cmd) {
			r.stopMotion()
			s.paused = true
			r.reply(rq, 2044, "The motion was cleared.")
		}
	case "connectionwatchdog":
		if v, ok := r.numbers(rq, cmd, 1); ok && r.inRange(rq, cmd, "timeout", v[0], 0, (1<<32-2)/1000.0) {
			r.watchdog(rq, v[0], now)
		}
	case "seteob", "seteom":
		if on, ok := r.flag(rq, cmd); ok {
			code := 2052 // EOM on; +1 off; EOB is 2054/2055
			what := "movement"
			if strings.EqualFold(cmd.name, "seteob") {
				s.eobOn, code, what = on, 2054, "block"
			} else {
				s.eomOn = on
			}
			if on {
				r.reply(rq, code, "End of "+what+" is enabled.")
			} else {
				r.reply(rq, code+1, "End of "+what+" is disabled.")
			}
		}

	// Motion settings: stored at once, in any state, without a reply.
	case "setjointvel":
		r.setting(rq, cmd, "percentage", 0.001, 100, &s.jointVel)
	case "setjointacc":
		r.setting(rq, cmd, "percentage", 0.001, 150, &s.jointAcc)
	case "setjointvellimit":
		r.setting(rq, cmd, "percentage", 0.001, 100, &s.velLimit)
	case "setcartlinvel":
		r.setting(rq, cmd, "velocity", 0.001, 1000, &s.cartLinVel)
	case "setcartangvel":
		r.setting(rq, cmd, "velocity", 0.001, 300, &s.cartAngVel)
	case "setcartacc":
		r.setting(rq, cmd, "percentage", 0.001, 600, &s.cartAcc)
	case "setblending":
		r.setting(rq, cmd, "percentage", 0, 100, &s.blending)
	case "getjointvel", "getjointacc", "getjointvellimit", "getcartlinvel", "getcartangvel", "getcartacc",
		"getblending", "getveltimeout":
		if r.noArgs(rq, cmd) {
			r.getSetting(rq, strings.ToLower(cmd.name))
		}
	case "setconf":
		if v, ok := r.numbers(rq, cmd, 3); ok {
			for i, c := range v {
				if c != 1 && c != -1 && !r.bad(rq, cmd, "configuration "+strconv.Itoa(2*i+1), c, "-1 or 1") {
					break
				}
			}
		}
	case "setautoconf", "setautoconfturn":
		r.flag(rq, cmd)
	case "setconfturn":
		if v, ok := r.numbers(rq, cmd, 1); ok {
			r.integer(rq, cmd, "turn", v[0], -100, 100)
		}

	// The motion queue (§5.3, §6).
	case "movejoints":
		if v, ok := r.vector(rq, cmd); ok && r.admit(rq, true) {
			r.enqueue(item{kind: itemMoveJoints, v: v}, true)
		}
	case "movejointsvel":
		if v, ok := r.vector(rq, cmd); ok && r.jointSpeeds(rq, cmd, v) && r.admit(rq, true) {
			r.enqueue(item{kind: itemJointVel, v: v}, true)
			s.received(cmd.name, v)
		}
	case "movelinvelwrf", "movelinveltrf":
		kind := itemLinVelWRF
		if strings.EqualFold(cmd.name, "movelinveltrf") {
			kind = itemLinVelTRF
		}
		if v, ok := r.vector(rq, cmd); ok && r.cartSpeeds(rq, cmd, v) && r.admit(rq, true) {
			r.enqueue(item{kind: kind, v: v}, true)
			s.received(cmd.name, v)
		}
	case "setcheckpoint":
		if v, ok := r.numbers(rq, cmd, 1); ok && r.integer(rq, cmd, "id", v[0], 1, 8191) && r.admit(rq, false) {
			r.enqueue(item{kind: itemCheckpoint, n: int(v[0])}, false)
		}
	case "setveltimeout":
		if v, ok := r.numbers(rq, cmd, 1); ok && r.inRange(rq, cmd, "timeout", v[0], 0.001, 1) && r.admit(rq, false) {
			r.enqueue(item{kind: itemVelTimeout, d: seconds(v[0])}, false)
		}
	case "delay":
		if v, ok := r.numbers(rq, cmd, 1); ok && r.inRange(rq, cmd, "time", v[0], 0.001, 3600) && r.admit(rq, false) {
			r.enqueue(item{kind: itemDelay, d: seconds(v[0])}, false)
		}

	default:
		r.reply(rq, codeUnknown, "Empty command or command unrecognized - Command: '"+quote(cmd.name)+"'")
	}
}

func seconds(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Second))) }

// activate is ActivateRobot (§5.2): refused while a safety stop removes
// power; restores the defaults that activation resets (§6).
func (r *Robot) activate(rq request, now time.Duration) {
	s := &r.st
	switch {
	case s.estop != stopInactive || s.pstop1 != stopInactive:
		r.reply(rq, codeActivationError, "Activation failed: a safety stop must be reset at the power supply.")
	case s.activated:
		// Not in mecademicpy's enum, but the reference code sends it (§3).
		r.reply(rq, 2001, "Motors already activated.")
	default:
		s.activated, s.paused, s.homed = true, false, false
		s.velTimeout = defaultVelTimeout
		if s.interval != s.defInterval {
			s.interval = s.defInterval
			s.nextMon = now + s.interval
		}
		r.reply(rq, 2000, "Motors activated.")
	}
}

// watchdog is ConnectionWatchdog(t) (§6): [2177][1] when it arms, nothing
// when it is refreshed, [2177][0] when t = 0 disarms it.
func (r *Robot) watchdog(rq request, t float64, now time.Duration) {
	s := &r.st
	s.watchdogCommands++
	if t == 0 {
		s.wdTimeout = 0
		r.reply(rq, 2177, "0")
		return
	}
	first := s.wdTimeout == 0
	s.wdTimeout = max(seconds(t), time.Millisecond)
	s.wdDeadline = now + s.wdTimeout
	s.wdRefreshed = now
	if first {
		r.reply(rq, 2177, "1")
		return
	}
	s.watchdogRefreshes++
}

// setRealTimeMonitoring enables the optional codes listed, or all of them
// (§6); it answers with the list, as GetRealTimeMonitoring does. The
// always-on codes (2200, 2201, 2208, 2209, 2230) and codes this simulator
// does not produce are accepted and ignored; 0 alone disables every
// optional code.
func (r *Robot) setRealTimeMonitoring(rq request, cmd command) {
	s := &r.st
	if len(cmd.args) == 0 {
		r.reply(rq, codeArgument, "Argument error: SetRealTimeMonitoring needs event codes or 'all'.")
		return
	}
	enable := map[int]bool{}
	for _, a := range cmd.args {
		if strings.EqualFold(a, "all") {
			for _, c := range optionalCodes() {
				enable[c] = true
			}
			continue
		}
		v, ok := parseNumber(a)
		if !ok || v != math.Trunc(v) || v != 0 && (v < 2200 || v > 2399) {
			r.reply(rq, codeArgument, "Argument error: SetRealTimeMonitoring code '"+quote(a)+"' is not an event code or 'all'.")
			return
		}
		if codes := optionalCodes(); slices.Contains(codes[:], int(v)) {
			enable[int(v)] = true
		}
	}
	s.rt = enable
	r.reply(rq, 2117, s.rtList())
}

// rtList lists the optional codes enabled, ascending.
func (s *state) rtList() string {
	var b strings.Builder
	for _, c := range optionalCodes() {
		if s.rt[c] {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(c))
		}
	}
	return b.String()
}

func (r *Robot) getSetting(rq request, name string) {
	s := &r.st
	switch name {
	case "getjointvel":
		r.reply(rq, 2152, fmtNum(s.jointVel))
	case "getjointacc":
		r.reply(rq, 2153, fmtNum(s.jointAcc))
	case "getcartlinvel":
		r.reply(rq, 2154, fmtNum(s.cartLinVel))
	case "getcartangvel":
		r.reply(rq, 2155, fmtNum(s.cartAngVel))
	case "getcartacc":
		r.reply(rq, 2156, fmtNum(s.cartAcc))
	case "getblending":
		r.reply(rq, 2150, fmtNum(s.blending))
	case "getjointvellimit":
		r.reply(rq, 2169, fmtNum(s.velLimit))
	case "getveltimeout":
		r.reply(rq, 2151, fmtNum(s.velTimeout.Seconds()))
	}
}

// admit checks that the robot can take a queued command (§6): not in error
// (1011), activated (1005), homed for a move (1006), room in the queue
// (1000, or a BufferFull injection).
func (r *Robot) admit(rq request, move bool) bool {
	s := &r.st
	switch {
	case s.errored:
		r.reply(rq, codeInError, "The robot is in error.")
	case !s.activated:
		r.reply(rq, codeNotActivated, "Motors are not activated.")
	case move && !s.homed:
		r.reply(rq, codeNotHomed, "Homing has not been performed.")
	case s.bufferFullPending > 0 || len(s.queue) >= maxQueue:
		if s.bufferFullPending > 0 {
			s.bufferFullPending--
		}
		s.bufferFullRefused++
		r.reply(rq, codeBufferFull, "Command buffer is full.")
	default:
		return true
	}
	return false
}

func (r *Robot) enqueue(it item, move bool) {
	s := &r.st
	s.queue = append(s.queue, it)
	if move {
		s.motionCommands++
	}
}

// setting stores a motion setting after checking its one argument.
func (r *Robot) setting(rq request, cmd command, what string, lo, hi float64, dst *float64) {
	if v, ok := r.numbers(rq, cmd, 1); ok && r.inRange(rq, cmd, what, v[0], lo, hi) {
		*dst = v[0]
	}
}

// numbers parses exactly n numeric arguments, or answers [1003].
func (r *Robot) numbers(rq request, cmd command, n int) ([]float64, bool) {
	if len(cmd.args) != n {
		r.reply(rq, codeArgument, "Argument error: "+quote(cmd.name)+" takes "+strconv.Itoa(n)+" arguments, got "+
			strconv.Itoa(len(cmd.args))+".")
		return nil, false
	}
	v := make([]float64, n)
	for i, a := range cmd.args {
		x, ok := parseNumber(a)
		if !ok {
			r.reply(rq, codeArgument, "Argument error: "+quote(cmd.name)+" argument "+strconv.Itoa(i+1)+" '"+quote(a)+
				"' is not a finite number.")
			return nil, false
		}
		v[i] = x
	}
	return v, true
}

func (r *Robot) noArgs(rq request, cmd command) bool {
	_, ok := r.numbers(rq, cmd, 0)
	return ok
}

// vector parses the six arguments of a Move command.
func (r *Robot) vector(rq request, cmd command) ([6]float64, bool) {
	var out [6]float64
	v, ok := r.numbers(rq, cmd, 6)
	if ok {
		copy(out[:], v)
	}
	return out, ok
}

// flag parses a single 0 or 1.
func (r *Robot) flag(rq request, cmd command) (bool, bool) {
	v, ok := r.numbers(rq, cmd, 1)
	if !ok {
		return false, false
	}
	if v[0] != 0 && v[0] != 1 {
		return false, r.bad(rq, cmd, "value", v[0], "0 or 1")
	}
	return v[0] == 1, true
}

func (r *Robot) inRange(rq request, cmd command, what string, v, lo, hi float64) bool {
	if v >= lo && v <= hi {
		return true
	}
	return r.bad(rq, cmd, what, v, fmtNum(lo)+" to "+fmtNum(hi))
}

func (r *Robot) integer(rq request, cmd command, what string, v, lo, hi float64) bool {
	if v == math.Trunc(v) && v >= lo && v <= hi {
		return true
	}
	return r.bad(rq, cmd, what, v, "an integer from "+fmtNum(lo)+" to "+fmtNum(hi))
}

// bad answers [1003] naming the argument, its value and what is allowed;
// it returns false.
func (r *Robot) bad(rq request, cmd command, what string, v float64, want string) bool {
	r.reply(rq, codeArgument, "Argument error: "+quote(cmd.name)+" "+what+" "+fmtNum(v)+", want "+want+".")
	return false
}

// jointSpeeds checks MoveJointsVel's speeds against the R3's admissible
// ones, scaled by SetJointVelLimit (§6).
func (r *Robot) jointSpeeds(rq request, cmd command, v [6]float64) bool {
	for i, w := range v {
		lim := maxJointSpeed(i) * r.st.velLimit / 100
		if math.Abs(w) > lim && !r.bad(rq, cmd, "joint "+strconv.Itoa(i+1)+" speed", w, "-"+fmtNum(lim)+" to "+fmtNum(lim)) {
			return false
		}
	}
	return true
}

// cartSpeeds bounds MoveLinVel*'s arguments.
func (r *Robot) cartSpeeds(rq request, cmd command, v [6]float64) bool {
	for i, x := range v {
		lim, what := float64(maxLinVel), "linear velocity"
		if i >= 3 {
			lim, what = maxAngVel, "angular velocity"
		}
		if math.Abs(x) > lim && !r.bad(rq, cmd, what, x, "-"+fmtNum(lim)+" to "+fmtNum(lim)) {
			return false
		}
	}
	return true
}
