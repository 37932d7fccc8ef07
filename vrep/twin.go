package vrep

import (
	"fmt"
	"math"
	"time"
)

// TwinAngle is how far a joint of the scene may be from a shadow twin's
// model before that is worth a look (docs/architecture.md "The shadow
// twin"): 0.2 rad (11°), four steps at 1 rad/s of a 50 ms scene.
const TwinAngle = 0.2

// TwinThresholds are a twin's defaults by measured field: the angles (the
// scene's clock is not watched).
func TwinThresholds() map[string]float64 { return map[string]float64{"angles": TwinAngle} }

// DescribeDivergence says, in a lab's words, what a joint that left the
// model means: name is the joint's (a measured name, or its path), diff
// the last real − model, size the largest magnitude, for how long.
func DescribeDivergence(name string, diff, size float64, d time.Duration) string {
	held := d.Round(100 * time.Millisecond)
	if math.IsNaN(diff) {
		return fmt.Sprintf("%s: nothing to compare with the model (for %v)", name, held)
	}
	return fmt.Sprintf("%s is %.2f rad (%.0f°) from the model (up to %.2f rad, for %v): a wheel that slips or drags, a joint blocked in the scene",
		name, math.Abs(diff), math.Abs(diff)*180/math.Pi, size, held)
}
