package meca500

import (
	"fmt"
	"math"
	"time"
)

// What a shadow twin of a streamed Meca500 watches (docs/architecture.md
// "The shadow twin"), per measured field of Layout: a joint 2° from the
// model (a sample's age at the robot's speeds is a fraction of that), the
// pose 5 mm or 5° (its values mix the two units; the angles are the turn
// between the robot's tool and the model's, about the tool's axes).
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
		// x, y, z; then the tool's orientation, compared as the rotation
		// that takes the robot's to the model's, about the tool's own axes
		// (Euler angles are not defined alone near β = ±90°).
		axes := [...]string{"x", "y", "z"}
		switch {
		case index >= 1 && index <= 3:
			return fmt.Sprintf("the tool's %s is %.1f mm from the model (up to %.1f mm, for %v)", axes[index-1], math.Abs(diff), size, held)
		case index >= 4 && index <= 6:
			return fmt.Sprintf("the tool is turned %.1f° from the model about its %s axis (up to %.1f°, for %v)", math.Abs(diff), axes[index-4], size, held)
		}
	}
	return fmt.Sprintf("%s %d is %.3g from the model (for %v)", field, index, diff, held)
}
