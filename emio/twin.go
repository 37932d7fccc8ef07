package emio

import (
	"fmt"
	"math"
	"time"
)

// What a shadow twin of the Emio watches (docs/architecture.md "The shadow
// twin"): how far, per measured field of Layout and in its unit, the robot
// may be from its model before that is worth a look.
const (
	// TwinAngle: 0.1 rad (5.7°), thirty times a Dynamixel's resolution and
	// past what a servo under load lags a profile by.
	TwinAngle = 0.1
	// TwinMarker: 40 mm, past the tracker's noise and what a frame's age
	// makes of a moving leg.
	TwinMarker = 40.0
)

// TwinThresholds are the defaults of a twin of the Emio, by field: the
// angles always, the markers when the model has a marker model.
func TwinThresholds(markers bool) map[string]float64 {
	t := map[string]float64{"angles": TwinAngle}
	if markers {
		t["markers"] = TwinMarker
	}
	return t
}

// SpeedOf is the speed (rad/s) a servo moves at under Profile Velocity pv
// (× 0.229 rpm), 0 for unbounded: the twin's model of a move.
func SpeedOf(pv int64) float64 { return float64(pv) * 0.229 * 2 * math.Pi / 60 }

// DescribeDivergence says, in a lab's words, what a measured value that
// left the model means: field and index (1-based) as the twin names them,
// diff the last real − model, size the largest magnitude, for how long,
// ids the servos' IDs in measurement order.
func DescribeDivergence(field string, index int, diff, size float64, d time.Duration, ids []byte) string {
	held := d.Round(100 * time.Millisecond)
	switch field {
	case "angles":
		who := fmt.Sprintf("motor %d", index)
		if index >= 1 && index <= len(ids) {
			who = fmt.Sprintf("servo %d", ids[index-1])
		}
		if math.IsNaN(diff) {
			return fmt.Sprintf("%s does not follow its goal: no angle to compare (for %v)", who, held)
		}
		return fmt.Sprintf("%s does not follow its goal (%.1f° from the model, up to %.1f°, for %v)", who,
			math.Abs(diff)*180/math.Pi, size*180/math.Pi, held)
	case "markers":
		m, axis := (index-1)/3+1, "xyz"[(index-1)%3:(index-1)%3+1]
		if math.IsNaN(diff) || math.IsNaN(size) {
			return fmt.Sprintf("marker %d lost: the camera does not see it where the model has it (for %v)", m, held)
		}
		return fmt.Sprintf("marker %d is %.0f mm from the model along %s (up to %.0f mm, for %v)", m, math.Abs(diff), axis, size, held)
	}
	return fmt.Sprintf("%s %d is %.3g from the model (for %v)", field, index, diff, held)
}
