package meca500

import (
	"fmt"
	"math"
	"time"
)

// What a shadow twin of a streamed Meca500 watches (docs/architecture.md
// "The shadow twin"), per measured field of Layout: a joint 2° from the
// model (a sample's age at the robot's speeds is a fraction of that), the
// pose 5 mm or 5° (its values mix the two units).
const (
	TwinJoint = 2.0
	TwinPose  = 5.0
)

// TwinThresholds are a twin's defaults by field.
func TwinThresholds(pose bool) map[string]float64 {
	t := map[string]float64{"joints": TwinJoint}
	if pose {
		t["pose"] = TwinPose
	}
	return t
}

// DescribeDivergence says, in a lab's words, what a measured value that
// left the model means: field and index (1-based), diff the last real −
// model, size the largest magnitude, for how long.
func DescribeDivergence(field string, index int, diff, size float64, d time.Duration) string {
	held := d.Round(100 * time.Millisecond)
	switch field {
	case "joints":
		if math.IsNaN(diff) {
			return fmt.Sprintf("the arm's joint %d: nothing to compare with the model (for %v)", index, held)
		}
		// Whether that is behind or ahead depends on the way the joint
		// moves, which the divergence does not say: its size is said.
		return fmt.Sprintf("the arm's joint %d is %.1f° from the model (up to %.1f°, for %v): a payload, a collision or a drive that cannot follow",
			index, math.Abs(diff), size, held)
	case "pose":
		names := [...]string{"x", "y", "z", "alpha", "beta", "gamma"}
		unit := " mm"
		if index > 3 {
			unit = "°"
		}
		name := fmt.Sprint(index)
		if index >= 1 && index <= len(names) {
			name = names[index-1]
		}
		return fmt.Sprintf("the tool's %s is %.1f%s from the model (up to %.1f%s, for %v)", name, math.Abs(diff), unit, size, unit, held)
	}
	return fmt.Sprintf("%s %d is %.3g from the model (for %v)", field, index, diff, held)
}
