package meca500

import "math"

// PositionLaw is the joint_position controller the arm runs on each fresh
// command (docs/meca500.md): each goal angle clamped to its joint's range,
// then a velocity of Kp times the error from the joint's measured angle,
// capped at the joint's admissible speed times the speed fraction. The
// shadow twin runs the same law on its model, so that a robot that cannot
// follow it shows against an arm that does.
type PositionLaw struct {
	kp     float64
	limits [Joints][2]float64
	speeds [Joints]float64
}

// NewPositionLaw returns cfg's law: its Kp and SpeedFraction, the defaults
// where they are 0.
func NewPositionLaw(cfg Config) PositionLaw {
	cfg.defaults()
	l := PositionLaw{kp: cfg.Kp, limits: JointLimits()}
	for i, v := range JointSpeeds() {
		l.speeds[i] = v * cfg.SpeedFraction
	}
	return l
}

// Velocity is joint i's velocity (°/s) toward goal from q (°).
func (l *PositionLaw) Velocity(i int, goal, q float64) float64 {
	goal = math.Max(l.limits[i][0], math.Min(l.limits[i][1], goal))
	return clampAbs(l.kp*(goal-q), l.speeds[i])
}
