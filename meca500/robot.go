// Package meca500 drives a Mecademic Meca500 arm over its TCP control port
// as a plant of the bridge loop (docs/meca500.md): one connection to port
// 10000 with the monitoring stream on it (§4, §10), a reader goroutine that
// keeps the newest robot state (§7), a start-up sequence driven by the 2007
// status alone (§5), velocity streaming with the robot's own dead-man
// switches (§6, §13) and the safety rules of §8 and §9.
//
// It knows nothing of the loop or of the Simulink protocol: Arm satisfies
// the plant package's interfaces structurally.
package meca500

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Mode is what the command vector means.
type Mode uint8

// Streaming modes (docs/meca500.md §6, §13).
const (
	// JointVelocity: six joint speeds (°/s), sent as MoveJointsVel.
	JointVelocity Mode = iota
	// CartesianVelocity: linear (mm/s) and angular (°/s) velocity of the
	// tool in the world frame, sent as MoveLinVelWrf.
	CartesianVelocity
	// JointPosition: six goal joint angles (°), reached by a clamped
	// proportional controller in the bridge that streams joint speeds; a
	// MoveJoints per tick would fill the robot's queue (§6).
	JointPosition
)

var modeNames = [...]string{"joint_velocity", "cartesian_velocity", "joint_position"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// ErrMode is an unknown streaming mode.
var ErrMode = errors.New("meca500: unknown streaming mode")

// ParseMode parses joint_velocity, cartesian_velocity or joint_position.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q (want %s)", ErrMode, s, strings.Join(modeNames[:], ", "))
}

// Joints is the number of joints of a Meca500.
const Joints = 6

// JointSpeeds are the admissible joint speeds of a Meca500 R3 (°/s,
// docs/meca500.md §6).
func JointSpeeds() [Joints]float64 { return [Joints]float64{150, 150, 180, 300, 300, 500} }

// JointLimits are the joint ranges of a Meca500 R3 (°).
func JointLimits() [Joints][2]float64 {
	return [Joints][2]float64{{-175, 175}, {-70, 90}, {-135, 70}, {-170, 170}, {-115, 115}, {-180, 180}}
}

// CartesianSpeeds are the bridge's caps of a Cartesian velocity command:
// mm/s for x, y, z and °/s for the three rotations. The manual gives no
// hard range for MoveLinVelWrf (it slows joints down as needed, §6); these
// keep a relay on a lab bench at a walking pace at full scale.
func CartesianSpeeds() [Joints]float64 { return [Joints]float64{1000, 1000, 1000, 300, 300, 300} }

// Status is the robot's 2007 status (docs/meca500.md §5.1).
type Status struct {
	Activated, Homed, Simulation, Error, Paused, EOB, EOM bool
}

func (s Status) flags() [7]bool {
	return [7]bool{s.Activated, s.Homed, s.Simulation, s.Error, s.Paused, s.EOB, s.EOM}
}

// String is the status as a lab engineer reads it.
func (s Status) String() string {
	var b strings.Builder
	add := func(on bool, name string) {
		if on {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(name)
		}
	}
	add(s.Activated, "activated")
	add(s.Homed, "homed")
	add(s.Simulation, "simulation")
	add(s.Error, "error")
	add(s.Paused, "paused")
	if b.Len() == 0 {
		return "deactivated"
	}
	return b.String()
}

// Banner is what the robot says of itself on connect (docs/meca500.md §4).
type Banner struct {
	Model    string // "Meca500"
	Revision int    // 3
	Virtual  bool   // MecaPortal's virtual robot
	Firmware Version
}

// Version is a firmware version.
type Version struct{ Major, Minor, Patch int }

// AtLeast reports whether v ≥ major.minor.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// ParseVersion reads "9.3.0" or a full version such as "9.3.0.1234".
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("%w: firmware version %q", ErrFrame, s)
	}
	var n [3]int
	for i := range min(3, len(parts)) {
		v, err := strconv.Atoi(parts[i])
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("%w: firmware version %q", ErrFrame, s)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// ParseBanner reads "Connected to Meca500 R3[-virtual][-safe-boot] v9.1.0.".
func ParseBanner(text string) (Banner, error) {
	var b Banner
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "Connected to ")
	if !ok {
		return b, fmt.Errorf("%w: banner %q", ErrFrame, text)
	}
	fields := strings.Fields(rest)
	if len(fields) < 3 {
		return b, fmt.Errorf("%w: banner %q", ErrFrame, text)
	}
	b.Model = fields[0]
	rev := fields[1]
	if r, ok := strings.CutPrefix(rev, "R"); ok {
		r, b.Virtual = strings.CutSuffix(strings.TrimSuffix(r, "-safe-boot"), "-virtual")
		r = strings.TrimSuffix(r, "-safe-boot")
		b.Revision, _ = strconv.Atoi(r)
	}
	ver, ok := strings.CutPrefix(fields[len(fields)-1], "v")
	if !ok {
		return b, fmt.Errorf("%w: banner %q has no version", ErrFrame, text)
	}
	v, err := ParseVersion(strings.TrimSuffix(ver, "."))
	if err != nil {
		return b, err
	}
	b.Firmware = v
	return b, nil
}

// Error sentinels. Each error a user reads says what is wrong and what to do.
var (
	// ErrBusy: another client holds the control port (3001).
	ErrBusy = errors.New("meca500: another client holds the robot")
	// ErrUnavailable: the robot refuses connections for now (3002, 3053).
	ErrUnavailable = errors.New("meca500: the robot refuses connections for now")
	// ErrDisconnected: the connection to the robot is lost.
	ErrDisconnected = errors.New("meca500: connection to the robot lost")
	// ErrSilent: the robot stopped sending monitoring data.
	ErrSilent = errors.New("meca500: no monitoring data from the robot")
	// ErrFirmware: a firmware this relay cannot drive.
	ErrFirmware = errors.New("meca500: unsupported firmware")
	// ErrNoReply: the robot did not answer a request in time.
	ErrNoReply = errors.New("meca500: no reply from the robot")
	// ErrPolicy: the robot needs a step that the configuration forbids.
	ErrPolicy = errors.New("meca500: the robot is not ready and the configuration forbids the step that would make it so")
	// ErrConfig: an invalid configuration.
	ErrConfig = errors.New("meca500: invalid configuration")
)

// RobotError is a robot in error mode, or a command it refused, with the
// robot's code and text (docs/meca500.md §3, §8).
type RobotError struct {
	Code int
	Text string
}

func (e *RobotError) Error() string { return "meca500: " + e.describe() }

// describe is the error without the package's prefix.
func (e *RobotError) describe() string {
	if e.Code == 0 {
		// In error before the bridge connected: the code went to the
		// client of then.
		return "the robot is in error (its code was reported before the bridge connected)"
	}
	msg := fmt.Sprintf("the robot reports error %d", e.Code)
	if e.Text != "" {
		msg += " (" + e.Text + ")"
	}
	if e.Code == 1025 {
		msg += "; it cannot be reset: power-cycle the robot"
	}
	return msg
}

// SafetyStopError is an active safety stop (docs/meca500.md §8). The bridge
// never resets one: a person does, at the robot.
type SafetyStopError struct {
	Code  int // 3069 PStop1, 3070 EStop, 3032 PStop2, 3080–3087
	State int // 1 active, 2 cleared but awaiting a reset
}

func (e *SafetyStopError) Error() string {
	name := safetyName(e.Code)
	if e.State == 2 {
		return fmt.Sprintf("meca500: %s released, awaiting its reset at the robot's power supply; the bridge waits and never resets it", name)
	}
	return fmt.Sprintf("meca500: %s active (code %d): the robot is left alone until a person clears it", name, e.Code)
}

func safetyName(code int) string {
	switch code {
	case 3069:
		return "protective stop PStop1"
	case 3070:
		return "emergency stop"
	case 3032:
		return "protective stop PStop2"
	case 3081:
		return "enabling device released"
	case 3083:
		return "robot rebooted"
	case 3086:
		return "connection-drop stop"
	}
	return "safety stop"
}

// clampAbs limits v to ±lim; NaN stays NaN (callers refuse it).
func clampAbs(v, lim float64) float64 {
	return math.Max(-lim, math.Min(lim, v))
}
