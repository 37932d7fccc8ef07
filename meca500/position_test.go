package meca500

import "testing"

func TestPositionLaw(t *testing.T) {
	l := NewPositionLaw(Config{Kp: 2, SpeedFraction: 0.25})
	lim, sp := JointLimits(), JointSpeeds()
	for _, c := range []struct {
		name          string
		i             int
		goal, q, want float64
	}{
		{"Kp times the error", 0, 10, 4, 12},
		{"toward a lower goal", 2, -3, 1, -8},
		{"capped at the speed fraction", 0, 100, 0, sp[0] * 0.25},
		{"capped below", 5, -300, 0, -sp[5] * 0.25},
		{"the goal clamped to the joint's range", 1, lim[1][1] + 50, lim[1][1] - 1, 2},
		{"at the goal", 3, 7, 7, 0},
	} {
		if got := l.Velocity(c.i, c.goal, c.q); got != c.want {
			t.Errorf("%s: Velocity(%d, %g, %g) = %g, want %g", c.name, c.i, c.goal, c.q, got, c.want)
		}
	}
	if d := NewPositionLaw(Config{}); d != NewPositionLaw(DefaultConfig(0)) {
		t.Errorf("zero Config's law %+v, want the defaults' %+v", d, NewPositionLaw(DefaultConfig(0)))
	}
}
