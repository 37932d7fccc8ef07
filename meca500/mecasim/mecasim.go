// Package mecasim simulates a Meca500 R3 robot arm speaking the ASCII TCP API
// of firmware 9.x and 10.x (docs/meca500.md), so that the meca500 client, the
// bridge and the official Python client mecademicpy can be exercised without
// hardware.
//
// A Robot serves the control port (Serve, §1: one client at a time, a second
// one gets [3001] and is closed) and, optionally, the monitoring port
// (ServeMonitoring, many clients). Framing follows §2: commands end with NUL
// or '\n', split reads and several frames per read are normal, empty frames
// are ignored, names are case-insensitive, "()" is optional and a "-" prefix
// marks a silent request. Replies are "[NNNN][payload]\x00" with numbers in
// plain decimal, never an exponent. The connect dialogue is that of §4 and
// §12; the state machine, 2007 status events, checkpoints, EOB/EOM, pause,
// clear and resume follow §5 and §6; the monitoring cycle (2200, 2201, the
// optional codes, 2230) is §7; errors, safety stops and the connection
// watchdog are §8 and §9.
//
// Motion is simulated in real time on a goroutine owned by Serve: MoveJoints
// plans a synchronised cycloidal move at the speed set by SetJointVel;
// MoveJointsVel, MoveLinVelWrf and MoveLinVelTrf are integrated until the
// velocity timeout (§6), then stop at once (this simulator has no
// deceleration ramp). Joints halt just before their limits without error. The
// Cartesian commands use the forward kinematics of the R3 and a damped
// least-squares inverse of its numerical Jacobian (kinematics.go).
//
// Faults are injected through methods safe from any goroutine: MotionError,
// EStop, PStop1, ResetPowerSupply, DropClient, SetReplyDelay and BufferFull,
// or through Control, which takes them as words typed on a console ("estop
// release", "delay 500ms"). Joints, Status and StateLine inspect the robot.
// A client that connects while a safety stop is pressed or awaits its reset
// is told so after the banner ([3070][1] or [3070][2]), so that it does not
// mistake the stopped robot for one merely deactivated.
//
// Where the protocol notes leave a choice open, this simulator decides:
// replies to a "-" request carry no prefix unless Config.PrefixReplies is
// set (§2.1 says they may); unsolicited 2007 events and the monitoring cycle
// reach the control port only after SetCtrlPortMonitoring(1), as §7
// describes and mecademicpy expects (§4); a robot that is not activated reports pm = 1, as the 9.x
// recordings of mecademicpy's own fake do (§4); motion settings such as
// SetJointVel take effect at once and in any state, while SetVelTimeout and
// SetCheckpoint are queued (§6); a MoveJoints target outside the joint limits
// is found when the move starts, and puts the robot in error with [1007]
// (§8).
package mecasim

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// ErrConfig is an invalid Config; the error names the field and value.
	ErrConfig = errors.New("mecasim: invalid configuration")
	// ErrServing is a Serve (or ServeMonitoring) while another one of the
	// same port runs: a robot has one control port and one monitoring port.
	ErrServing = errors.New("mecasim: port already served")
)

// Defaults of Config.
const (
	DefaultFirmware           = "9.3.0"
	DefaultSerial             = "M500-0000"
	DefaultMonitoringInterval = 16666 * time.Microsecond // 60 Hz (§6)
	// MinMonitoringInterval and MaxMonitoringInterval bound
	// SetMonitoringInterval and Config.MonitoringInterval (§6).
	MinMonitoringInterval = time.Millisecond
	MaxMonitoringInterval = time.Second
)

// Config describes the simulated robot. The zero Config is a Meca500 R3 on
// firmware 9.3.0 at zero joints.
type Config struct {
	// Firmware is the advertised version "major.minor.patch", 9.x or 10.x
	// (mecademicpy takes the 11.x JSON path, §4). The banner is
	// "[3000][Connected to Meca500 R3 v<Firmware>.]" and GetFwVersionFull
	// answers "<Firmware>.<build>". Empty: DefaultFirmware.
	Firmware string
	// Virtual makes the banner say "Meca500 R3-virtual", as MecaPortal's
	// virtual robot does.
	Virtual bool
	// Serial is what GetRobotSerial answers. Empty: DefaultSerial.
	Serial string
	// MonitoringInterval is the period of the monitoring cycle at start and
	// after each activation (§6), 1 ms to 1 s. Zero:
	// DefaultMonitoringInterval.
	MonitoringInterval time.Duration
	// Initial are the joint angles at start, degrees, within the joint
	// limits.
	Initial [6]float64
	// PrefixReplies makes the direct replies to a "-" (silent) request carry
	// the "-" prefix too, which §2.1 says a robot may do. mecademicpy skips
	// to the first '[', so it parses either form.
	PrefixReplies bool
	// Logger receives connection and fault messages; nil discards them.
	Logger *slog.Logger
	// OnCommand, if set, is called on the connection's goroutine as soon as
	// a complete, well-formed command frame is parsed and before it is
	// executed, with the name as sent (case preserved, without the "-"
	// prefix) and the numeric arguments (a non-numeric one, such as the
	// "all" of SetRealTimeMonitoring, is NaN). Tests and benchmarks use it to
	// timestamp arrivals. It must not retain args. It runs without the
	// robot's lock held, so it may call the Robot's methods.
	OnCommand func(name string, args []float64)
}

// Status is a snapshot of the robot's state.
type Status struct {
	// The fields of the 2007 status event (§5.1), as the robot would send
	// them now; Paused is also true while the robot is not activated.
	Activated, Homed, Error, Paused, EOB, EOM bool
	// ErrorCode is the code that put the robot in error (3005 after
	// MotionError, 1007 after a move beyond the joint limits), 0 without
	// error.
	ErrorCode int
	// Homing is true while a Home runs.
	Homing bool
	// EStop and PStop1 are true from the press until ResetPowerSupply
	// (stop states 1 and 2 of §8).
	EStop, PStop1 bool
	// EStopState and PStop1State are the stop states of §8: 0 off, 1
	// pressed, 2 released and awaiting the reset at the power supply.
	EStopState, PStop1State int
	// Moving is true while the joints are commanded to move.
	Moving bool
	// Connected is true while a control client is connected.
	Connected bool
	// Monitoring is true while the control client gets the monitoring
	// stream (SetCtrlPortMonitoring(1)).
	Monitoring bool
	// Watchdog is true while a ConnectionWatchdog is armed.
	Watchdog bool
	// WatchdogExpiries counts the connection-watchdog expiries.
	WatchdogExpiries int
	// WatchdogRefreshes counts the ConnectionWatchdog commands received
	// while it was armed.
	WatchdogRefreshes int
	// MotionCommands counts the Move* commands accepted into the queue.
	MotionCommands int
	// BufferFull counts the commands refused with [1000] (see
	// Robot.BufferFull).
	BufferFull int
	// Queued is the number of commands waiting in the motion queue.
	Queued int
	// ReplyDelay is the delay of every message (SetReplyDelay), and
	// BufferFullPending the refusals BufferFull has still to make.
	ReplyDelay        time.Duration
	BufferFullPending int
	// Speed is the % of its commanded speed the arm makes (SetPayload).
	Speed float64
}

// Robot is a simulated Meca500 R3. Create it with New and serve it with
// Serve; its methods are safe for concurrent use.
type Robot struct {
	cfg      Config
	log      *slog.Logger
	start    time.Time // t = 0 of the monitoring timestamps (§7: µs since boot)
	banner   string
	fwFull   string
	discard  bool // the firmware reports discarded checkpoints (3040, §8, §10)
	serving  atomic.Bool
	monServe atomic.Bool
	kick     chan struct{} // wakes the engine after a command; capacity 1

	mu     sync.Mutex
	ctrl   *session              // the control client, nil when none
	mons   map[*session]struct{} // monitoring-port clients
	live   map[*session]struct{} // every open connection, to close them
	engine engineRef
	st     state
}

// New validates cfg and returns a robot at rest: deactivated, not homed, at
// cfg.Initial.
func New(cfg Config) (*Robot, error) {
	if cfg.Firmware == "" {
		cfg.Firmware = DefaultFirmware
	}
	major, minor, patch, ok := parseVersion(cfg.Firmware)
	if !ok {
		return nil, fmt.Errorf("%w: Firmware %q: want major.minor.patch, such as %q", ErrConfig, cfg.Firmware, DefaultFirmware)
	}
	if major != 9 && major != 10 {
		return nil, fmt.Errorf("%w: Firmware %q: want 9.x or 10.x", ErrConfig, cfg.Firmware)
	}
	if cfg.Serial == "" {
		cfg.Serial = DefaultSerial
	}
	for _, c := range cfg.Serial {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return nil, fmt.Errorf("%w: Serial %q: want letters, digits, '-', '_' or '.'", ErrConfig, cfg.Serial)
		}
	}
	if cfg.MonitoringInterval == 0 {
		cfg.MonitoringInterval = DefaultMonitoringInterval
	}
	if cfg.MonitoringInterval < MinMonitoringInterval || cfg.MonitoringInterval > MaxMonitoringInterval {
		return nil, fmt.Errorf("%w: MonitoringInterval %v: want %v to %v", ErrConfig, cfg.MonitoringInterval,
			MinMonitoringInterval, MaxMonitoringInterval)
	}
	for i, q := range cfg.Initial {
		if lo, hi := jointRange(i); !(q >= lo && q <= hi) {
			return nil, fmt.Errorf("%w: Initial[%d] %v: want %v to %v degrees", ErrConfig, i, q, lo, hi)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	model := "Meca500 R3"
	if cfg.Virtual {
		model += "-virtual"
	}
	r := &Robot{
		cfg:     cfg,
		log:     cfg.Logger,
		start:   time.Now(),
		banner:  "Connected to " + model + " v" + cfg.Firmware + ".",
		fwFull:  cfg.Firmware + "." + simBuild,
		discard: major > 10 || major == 10 && (minor > 2 || minor == 2 && patch >= 1),
		kick:    make(chan struct{}, 1),
		mons:    map[*session]struct{}{},
		live:    map[*session]struct{}{},
	}
	r.st.init(cfg)
	return r, nil
}

// parseVersion reads "major.minor.patch", each part 1 to 3 digits.
func parseVersion(v string) (major, minor, patch int, ok bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return 0, 0, 0, false
	}
	var n [3]int
	for i, p := range parts {
		if len(p) == 0 || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return 0, 0, 0, false
		}
		n[i], _ = strconv.Atoi(p)
	}
	return n[0], n[1], n[2], true
}

// simBuild is the build number GetFwVersionFull appends to the version.
const simBuild = "0"

// now is the robot's clock: time since New.
func (r *Robot) now() time.Duration { return time.Since(r.start) }

// wake nudges the engine to recompute its next wake-up.
func (r *Robot) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Joints returns the current joint positions, degrees.
func (r *Robot) Joints() [6]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.q
}

// Pose returns the current flange pose: x, y, z in mm and the mobile XYZ
// Euler angles α, β, γ in degrees (what 2201 reports).
func (r *Robot) Pose() [6]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return poseOf(forward(r.st.q))
}

// Status returns a snapshot of the robot's state.
func (r *Robot) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.st
	f := s.flags()
	return Status{
		Activated: f[0] == 1, Homed: f[1] == 1, Error: f[3] == 1, Paused: f[4] == 1, EOB: f[5] == 1, EOM: f[6] == 1,
		ErrorCode:         s.errorCode,
		Homing:            s.homing,
		EStop:             s.estop != stopInactive,
		PStop1:            s.pstop1 != stopInactive,
		EStopState:        s.estop,
		PStop1State:       s.pstop1,
		Moving:            s.moving(),
		ReplyDelay:        s.replyDelay,
		Speed:             100 * s.speed,
		BufferFullPending: s.bufferFullPending,
		Connected:         r.ctrl != nil,
		Monitoring:        r.ctrl != nil && r.ctrl.monitoring,
		Watchdog:          s.wdTimeout > 0,
		WatchdogExpiries:  s.watchdogExpiries,
		WatchdogRefreshes: s.watchdogRefreshes,
		MotionCommands:    s.motionCommands,
		BufferFull:        s.bufferFullRefused,
		Queued:            len(s.queue),
	}
}

// MotionError puts the robot in error as a motion error would (§3: 3005,
// resettable): [3005] is sent, the queue is cleared (pending checkpoints are
// discarded, with [3040] on firmware ≥ 10.2.1), motion stops and the 2007
// status shows es = 1 and pm = 1. Motion commands are then refused with
// [1011] until ResetError and ResumeMotion (§8).
func (r *Robot) MotionError() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log.Info("mecasim: motion error injected")
	r.sync(r.now())
	r.fail(codeMotionError, "Motion error.")
	r.publish()
	r.wake()
}

// EStop presses (active) or releases the emergency stop (§8). A press sends
// [3070][1] and removes motor power: the robot stops, loses activation and
// homing, and its queue is cleared; ActivateRobot is refused with [1013]
// until the stop is reset. A release sends [3070][2] (cleared, awaiting a
// reset at the power supply); see ResetPowerSupply.
func (r *Robot) EStop(active bool) {
	r.safetyStop(&r.st.estop, codeEStop, "EStop", active)
}

// PStop1 presses or releases protective stop 1 ([3069]), which behaves like
// EStop (§8).
func (r *Robot) PStop1(active bool) {
	r.safetyStop(&r.st.pstop1, codePStop1, "PStop1", active)
}

func (r *Robot) safetyStop(state *int, code int, name string, active bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sync(r.now())
	switch {
	case active && *state != stopActive:
		r.log.Info("mecasim: safety stop", "stop", name)
		*state = stopActive
		r.powerOff()
		r.event(true, code, "1")
	case !active && *state == stopActive:
		*state = stopResettable
		r.event(true, code, "2")
	}
	r.publish()
	r.wake()
}

// ResetPowerSupply resets the released safety stops, as the reset button of
// the power supply does (§8): each stop in state 2 goes to 0 with [3070][0]
// or [3069][0]. The robot stays deactivated. A stop still pressed is not
// reset.
func (r *Robot) ResetPowerSupply() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.estop == stopResettable {
		r.st.estop = stopInactive
		r.event(true, codeEStop, "0")
	}
	if r.st.pstop1 == stopResettable {
		r.st.pstop1 = stopInactive
		r.event(true, codePStop1, "0")
	}
	r.publish()
}

// SetPayload makes the arm carry a payload it was not set up for: every
// motion goes at pct % of its commanded speed (100: none), a fault the
// robot itself does not report.
func (r *Robot) SetPayload(pct float64) error {
	if !(pct > 0 && pct <= 100) {
		return fmt.Errorf("%w: payload %v %%: want the arm's speed under it, 0 < %% ≤ 100", ErrControl, pct)
	}
	r.mu.Lock()
	r.sync(r.now())
	r.st.speed = pct / 100
	r.mu.Unlock()
	r.wake()
	return nil
}

// DropClient closes the control connection abruptly, from the server side,
// without a message. The robot reacts as to any lost connection (§9): if it
// was moving or had queued motion it stops, clears the queue and stays
// paused.
func (r *Robot) DropClient() {
	r.mu.Lock()
	s := r.ctrl
	if s != nil {
		r.log.Info("mecasim: dropping the control client")
		r.sync(r.now())
		r.lostClient(s)
		r.publish()
	}
	r.mu.Unlock()
	if s != nil {
		s.closeNow()
	}
	r.wake()
}

// SetReplyDelay delays every message the robot sends from now on (replies,
// events and monitoring data, on both ports) by d, as a slow network would.
// Order is kept. A negative d is taken as zero.
func (r *Robot) SetReplyDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.replyDelay = max(d, 0)
}

// BufferFull makes the robot refuse the next n queued commands (motion
// commands, SetCheckpoint, SetVelTimeout, Delay) that it would otherwise
// accept, with "[1000][Command buffer is full.]" (§3). n ≤ 0 cancels what is
// left of an earlier call.
func (r *Robot) BufferFull(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.bufferFullPending = max(n, 0)
}
