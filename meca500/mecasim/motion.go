package mecasim

import (
	"math"
	"time"
)

// Status and event codes (docs/meca500.md §3).
const (
	codeBufferFull      = 1000
	codeUnknown         = 1001
	codeSyntax          = 1002
	codeArgument        = 1003
	codeNotActivated    = 1005
	codeNotHomed        = 1006
	codeJointOverLimit  = 1007
	codeInError         = 1011
	codeActivationError = 1013
	codeMotionError     = 3005
	codeEStop           = 3070
	codePStop1          = 3069
	codeConnDropped     = 3086
)

// Stop states of a safety stop (MxStopState, §8).
const (
	stopInactive   = 0
	stopActive     = 1
	stopResettable = 2
)

// Timing of the simulation.
const (
	// substep is the longest integration step: the engine wakes every
	// millisecond while the robot moves, and a late wake-up is integrated in
	// steps of this size.
	substep = time.Millisecond
	// maxGap bounds the time integrated at once, so that a process stopped
	// for long (a debugger, a suspended machine) does not make the robot
	// jump.
	maxGap = time.Second
	// homingTime is how long Home takes (hs = 0 until it is done).
	homingTime = 200 * time.Millisecond
	// defaultVelTimeout is SetVelTimeout's default, restored at each
	// activation (§6).
	defaultVelTimeout = 50 * time.Millisecond
	// maxQueue is the motion queue's capacity; beyond it commands get [1000].
	maxQueue = 10000
	// limitMargin is how far before a joint limit a velocity motion halts
	// (§6: "halts just before them"), degrees.
	limitMargin = 0.001
)

// jointRange returns the Meca500 R3's limits of joint i, degrees: J1 ±175,
// J2 −70..90, J3 −135..70, J4 ±170, J5 ±115, J6 ±180.
func jointRange(i int) (lo, hi float64) {
	switch i {
	case 0:
		return -175, 175
	case 1:
		return -70, 90
	case 2:
		return -135, 70
	case 3:
		return -170, 170
	case 4:
		return -115, 115
	default:
		return -180, 180
	}
}

// maxJointSpeed returns the R3's admissible speed of joint i, °/s (§6).
func maxJointSpeed(i int) float64 {
	switch i {
	case 0, 1:
		return 150
	case 2:
		return 180
	case 3, 4:
		return 300
	default:
		return 500
	}
}

// Bounds of MoveLinVelWrf/Trf's arguments: this simulator's choice, the
// notes give none.
const (
	maxLinVel = 1000 // mm/s per axis
	maxAngVel = 300  // °/s per axis
)

type itemKind int

const (
	itemMoveJoints itemKind = iota
	itemJointVel
	itemLinVelWRF
	itemLinVelTRF
	itemCheckpoint
	itemVelTimeout
	itemDelay
)

// item is a command in the motion queue (§5.3, §6).
type item struct {
	kind itemKind
	v    [6]float64
	n    int           // checkpoint id
	d    time.Duration // SetVelTimeout, Delay
}

// move is a planned MoveJoints in progress: a synchronised cycloidal profile
// whose peak speed is the SetJointVel fraction of the slowest joint's speed.
type move struct {
	active   bool
	from, to [6]float64
	dur      time.Duration
	elapsed  time.Duration // progress, frozen while paused
}

// velocity is a velocity command being executed, until its timeout.
type velocity struct {
	active bool
	kind   itemKind // itemJointVel, itemLinVelWRF or itemLinVelTRF
	v      [6]float64
	until  time.Duration
}

// state is everything the robot knows; Robot.mu guards it.
type state struct {
	// Settings.
	replyDelay  time.Duration
	defInterval time.Duration
	interval    time.Duration
	rt          map[int]bool // optional monitoring codes enabled
	velTimeout  time.Duration
	jointVel    float64 // SetJointVel, % of the admissible speeds
	jointAcc    float64
	cartLinVel  float64
	cartAngVel  float64
	cartAcc     float64
	blending    float64
	velLimit    float64 // SetJointVelLimit, % (scales MoveJointsVel's bounds)
	eobOn       bool    // SetEob (default on)
	eomOn       bool    // SetEom (default off)
	// speed is the fraction of its commanded motion the arm makes: 1, or
	// less under an injected payload (SetPayload).
	speed float64

	// The robot.
	activated, homed, errored, paused, homing bool
	homingDone                                time.Duration
	errorCode                                 int
	estop, pstop1                             int
	q, qdot                                   [6]float64 // degrees, °/s
	queue                                     []item
	mv                                        move
	vel                                       velocity
	delaying                                  bool
	delayUntil                                time.Duration
	last                                      time.Duration // integrated up to
	nextMon                                   time.Duration
	wdTimeout, wdDeadline                     time.Duration // ConnectionWatchdog; 0: off

	// What was published, to send events on changes.
	sent           [7]int
	sentValid      bool
	wasEOB, wasEOM bool

	// Counters.
	watchdogExpiries, watchdogRefreshes, motionCommands, bufferFullRefused, bufferFullPending int

	// What was received, for Velocities and LastWatchdogExpiry.
	velocities       []Velocity // newest last
	watchdogCommands int
	wdRefreshed      time.Duration
	lastExpiry       WatchdogExpiry
}

func (s *state) init(cfg Config) {
	s.defInterval = cfg.MonitoringInterval
	s.interval = cfg.MonitoringInterval
	s.rt = map[int]bool{}
	s.velTimeout = defaultVelTimeout
	s.jointVel = 25
	s.jointAcc = 100
	s.cartLinVel = 150
	s.cartAngVel = 45
	s.cartAcc = 50
	s.blending = 100
	s.velLimit = 100
	s.eobOn = true
	s.speed = 1
	s.q = cfg.Initial
	s.wasEOB, s.wasEOM = true, true
}

// moving is true while the joints are commanded to move.
func (s *state) moving() bool {
	return !s.paused && (s.mv.active || s.vel.active)
}

// busy is true while something holds the queue: a move (even paused), a
// velocity command before its timeout, a Delay.
func (s *state) busy() bool { return s.mv.active || s.vel.active || s.delaying }

// flags are the 2007 fields [as,hs,sm,es,pm,eob,eom] (§5.1).
func (s *state) flags() [7]int {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	eob := len(s.queue) == 0 && !s.busy()
	return [7]int{b(s.activated), b(s.homed), 0, b(s.errored), b(s.paused || !s.activated), b(eob), b(!s.moving())}
}

// step brings the simulation to now: it integrates the motion, starts queued
// commands as the queue allows, finishes a homing, checks the connection
// watchdog and sends the monitoring cycles that are due. r.mu is held.
func (r *Robot) step(now time.Duration) {
	s := &r.st
	if now-s.last > maxGap {
		s.last = now - maxGap
	}
	t := s.last
	r.advance(t)
	for guard := 0; t < now && guard < 1<<20; guard++ {
		if !s.moving() && !s.delaying {
			break
		}
		h := min(now-t, substep)
		if s.vel.active {
			h = min(h, max(s.vel.until-t, 0))
		}
		if s.mv.active && !s.paused {
			h = min(h, s.mv.dur-s.mv.elapsed)
		}
		if s.delaying {
			h = min(h, max(s.delayUntil-t, 0))
		}
		r.integrate(h)
		t += h
		if s.vel.active && t >= s.vel.until {
			s.vel.active = false
			s.qdot = [6]float64{}
		}
		if s.mv.active && s.mv.elapsed >= s.mv.dur {
			s.mv.active = false
			s.q, s.qdot = s.mv.to, [6]float64{}
		}
		if s.delaying && t >= s.delayUntil {
			s.delaying = false
		}
		r.advance(t)
	}
	if now > s.last {
		s.last = now
	}
	if s.homing && now >= s.homingDone {
		s.homing, s.homed = false, true
		r.event(false, 2002, "Homing done.")
		r.advance(now)
	}
	if s.wdTimeout > 0 && now >= s.wdDeadline {
		r.watchdogExpired(now)
	}
	if now >= s.nextMon {
		r.cycle(now)
		s.nextMon += s.interval
		if s.nextMon <= now {
			s.nextMon = now + s.interval
		}
	}
	r.publish()
}

// integrate advances the active motion by h.
func (r *Robot) integrate(h time.Duration) {
	s := &r.st
	// A payload the arm was not set up for slows every motion: the
	// joints cover only this fraction of what they were commanded.
	dt := h.Seconds() * s.speed
	h = time.Duration(float64(h) * s.speed)
	switch {
	case s.mv.active && !s.paused:
		s.mv.elapsed = min(s.mv.elapsed+h, s.mv.dur)
		u, d := 1.0, s.mv.dur.Seconds()
		if d > 0 {
			u = s.mv.elapsed.Seconds() / d
		}
		// Clamped: near u = 0 and 1 the difference rounds either way.
		pos := min(max(u-math.Sin(2*math.Pi*u)/(2*math.Pi), 0), 1)
		rate := 1 - math.Cos(2*math.Pi*u)
		for i := range s.q {
			delta := s.mv.to[i] - s.mv.from[i]
			s.q[i] = s.mv.from[i] + delta*pos
			if d > 0 {
				s.qdot[i] = delta * rate / d
			}
		}
	case s.vel.active && s.vel.kind == itemJointVel:
		for i := range s.q {
			s.q[i], s.qdot[i] = towardLimit(i, s.q[i], s.vel.v[i], dt)
		}
	case s.vel.active:
		v := s.vel.v
		if s.vel.kind == itemLinVelTRF {
			v = toWorld(forward(s.q).R, v)
		}
		qd := cartesianToJoint(s.q, v)
		next := s.q
		for i := range next {
			next[i] += qd[i] * dt
			lo, hi := jointRange(i)
			if next[i] < lo+limitMargin && qd[i] < 0 || next[i] > hi-limitMargin && qd[i] > 0 {
				// A Cartesian motion stops as a whole at a joint limit
				// (§6), so that the path stays straight.
				s.qdot = [6]float64{}
				return
			}
		}
		s.q, s.qdot = next, qd
	}
}

// towardLimit moves joint i at w for dt seconds, halting just before its
// limit, and returns the position and the speed actually applied.
func towardLimit(i int, q, w, dt float64) (float64, float64) {
	lo, hi := jointRange(i)
	switch {
	case w > 0 && q < hi-limitMargin:
		n := q + w*dt
		if n >= hi-limitMargin {
			return hi - limitMargin, 0
		}
		return n, w
	case w < 0 && q > lo+limitMargin:
		n := q + w*dt
		if n <= lo+limitMargin {
			return lo + limitMargin, 0
		}
		return n, w
	}
	return q, 0
}

// advance starts queued commands as far as the queue allows at time t
// (§5.3, §6): a checkpoint, a Delay or a MoveJoints waits for the motion
// before it to end; a velocity command waits only for a MoveJoints or a Delay
// and replaces the velocity command before it.
func (r *Robot) advance(t time.Duration) {
	s := &r.st
	for len(s.queue) > 0 {
		if !s.activated || !s.homed || s.errored || s.paused {
			return
		}
		it := s.queue[0]
		switch it.kind {
		case itemCheckpoint, itemDelay, itemMoveJoints:
			if s.busy() {
				return
			}
		case itemJointVel, itemLinVelWRF, itemLinVelTRF:
			if s.mv.active || s.delaying {
				return
			}
		}
		s.queue = s.queue[1:]
		if len(s.queue) == 0 {
			s.queue = nil // let the backing array go
		}
		switch it.kind {
		case itemMoveJoints:
			for i, v := range it.v {
				if lo, hi := jointRange(i); v < lo || v > hi {
					r.fail(codeJointOverLimit, "Joint over limit: joint "+fmtNum(float64(i+1))+" target "+fmtNum(v)+
						" outside "+fmtNum(lo)+" to "+fmtNum(hi)+".")
					return
				}
			}
			if m := s.plan(it.v); m.dur > 0 {
				s.mv = m
			} else {
				s.q = it.v // a move shorter than a nanosecond
			}
		case itemJointVel, itemLinVelWRF, itemLinVelTRF:
			s.vel = velocity{active: true, kind: it.kind, v: it.v, until: t + s.velTimeout}
		case itemCheckpoint:
			r.event(false, 3030, fmtNum(float64(it.n)))
		case itemVelTimeout:
			s.velTimeout = it.d
		case itemDelay:
			s.delaying, s.delayUntil = true, t+it.d
		}
	}
}

// plan makes the move from the current joints to target.
func (s *state) plan(target [6]float64) move {
	var secs float64
	for i := range target {
		speed := maxJointSpeed(i) * s.jointVel / 100
		secs = max(secs, math.Abs(target[i]-s.q[i])/speed)
	}
	// The cycloidal profile peaks at twice its mean speed.
	return move{active: true, from: s.q, to: target, dur: time.Duration(2 * secs * float64(time.Second))}
}

// stopMotion stops the robot at once and empties the queue; pending
// checkpoints are discarded, with [3040] where the firmware reports it (§8).
func (r *Robot) stopMotion() {
	s := &r.st
	for _, it := range s.queue {
		if it.kind == itemCheckpoint && r.discard {
			r.event(false, 3040, fmtNum(float64(it.n)))
		}
	}
	s.queue = nil
	s.mv.active, s.vel.active, s.delaying = false, false, false
	s.qdot = [6]float64{}
}

// fail puts the robot in error (§8): the error is announced, motion stops,
// the queue is cleared and the robot is paused until ResetError and
// ResumeMotion.
func (r *Robot) fail(code int, text string) {
	s := &r.st
	s.errored, s.errorCode, s.paused = true, code, true
	r.event(code >= 3000, code, text)
	r.stopMotion()
}

// powerOff is what a safety stop that removes motor power does (§8).
func (r *Robot) powerOff() {
	s := &r.st
	r.stopMotion()
	s.activated, s.homed, s.homing = false, false, false
}

// lostClient detaches the control client s. If the robot was moving or had
// queued motion it stops and stays paused (§9); the next client must send
// ResumeMotion.
func (r *Robot) lostClient(s *session) {
	if r.ctrl != s {
		return
	}
	r.ctrl = nil
	s.gone.Store(true)
	st := &r.st
	st.wdTimeout = 0
	if st.busy() || len(st.queue) > 0 {
		r.log.Info("mecasim: control connection lost while moving: robot stopped and paused")
		r.stopMotion()
		st.paused = true
		r.event(true, codeConnDropped, "1")
	}
}

// watchdogExpired is the connection watchdog's expiry (§6, §9): [3086][1],
// the robot stops and stays paused, and the control connection is closed once
// the message is out.
func (r *Robot) watchdogExpired(now time.Duration) {
	st := &r.st
	st.wdTimeout = 0
	sess := r.ctrl
	if sess == nil {
		return
	}
	st.watchdogExpiries++
	st.lastExpiry = WatchdogExpiry{Refreshed: st.wdRefreshed, Expired: st.wdDeadline, Noticed: now}
	r.log.Info("mecasim: connection watchdog expired: closing the control connection", "at", now)
	r.stopMotion()
	st.paused = true
	r.event(true, codeConnDropped, "1")
	r.publish()
	r.ctrl = nil
	sess.gone.Store(true)
	sess.out.finish()
}

// publish sends what changed since the last call: [3004] and [3012] when the
// robot comes to rest (§5.3), unless an error stopped it, and the 2007 status
// (§5.1).
func (r *Robot) publish() {
	s := &r.st
	f := s.flags()
	eob, eom := f[5] == 1, f[6] == 1
	if eom && !s.wasEOM && s.eomOn && !s.errored {
		r.event(false, 3004, "End of movement.")
	}
	if eob && !s.wasEOB && s.eobOn && !s.errored {
		r.event(false, 3012, "End of block.")
	}
	s.wasEOB, s.wasEOM = eob, eom
	if !s.sentValid || f != s.sent {
		s.sent, s.sentValid = f, true
		r.monitor(2007, statusPayload(f))
	}
}

func statusPayload(f [7]int) string {
	b := make([]byte, 0, 13)
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, byte('0'+v))
	}
	return string(b)
}

// Optional monitoring codes this simulator can send (§6 SetRealTimeMonitoring,
// §7), in the order of a cycle.
const (
	rtTargetJointVel = 2202
	rtTargetCartVel  = 2204
	rtJointPos       = 2210
	rtCartPos        = 2211
	rtJointVel       = 2212
	rtCartVel        = 2214
)

func optionalCodes() [6]int {
	return [6]int{rtTargetJointVel, rtTargetCartVel, rtJointPos, rtCartPos, rtJointVel, rtCartVel}
}

// cycle sends one monitoring cycle (§7): 2200, 2201, the optional codes
// enabled, then 2230, all stamped with now in µs.
func (r *Robot) cycle(now time.Duration) {
	if (r.ctrl == nil || !r.ctrl.monitoring) && len(r.mons) == 0 {
		return
	}
	s := &r.st
	ts := now.Microseconds()
	pose := poseOf(forward(s.q))
	r.monitor(2200, fmtList(ts, s.q[:]...))
	r.monitor(2201, fmtList(ts, pose[:]...))
	var cartVel [6]float64
	if s.rt[rtTargetCartVel] || s.rt[rtCartVel] {
		cartVel = jointToCartesian(s.q, s.qdot)
	}
	for _, code := range optionalCodes() {
		if !s.rt[code] {
			continue
		}
		switch code {
		case rtTargetJointVel, rtJointVel:
			r.monitor(code, fmtList(ts, s.qdot[:]...))
		case rtTargetCartVel, rtCartVel:
			r.monitor(code, fmtList(ts, cartVel[:]...))
		case rtJointPos:
			r.monitor(code, fmtList(ts, s.q[:]...))
		case rtCartPos:
			r.monitor(code, fmtList(ts, pose[:]...))
		}
	}
	r.monitor(2230, fmtList(ts))
}
