package emio

import (
	"math"
	"testing"
	"time"
)

// A divergence is said in a lab's words: the servo by its ID, degrees, a
// lost marker as lost.
func TestDescribeDivergence(t *testing.T) {
	ids := []byte{0, 1, 2, 3}
	for _, tc := range []struct {
		field      string
		index      int
		diff, size float64
		want       string
	}{
		{"angles", 3, -0.2094, 0.25, "servo 2 does not follow its goal (12.0° from the model, up to 14.3°, for 2s)"},
		{"angles", 9, 0.2, 0.2, "motor 9 does not follow its goal (11.5° from the model, up to 11.5°, for 2s)"},
		{"markers", 5, 41, 45, "marker 2 is 41 mm from the model along y (up to 45 mm, for 2s)"},
		{"markers", 1, math.NaN(), math.NaN(), "marker 1 lost: the camera does not see it where the model has it (for 2s)"},
		{"speed", 1, 0.5, 0.5, "speed 1 is 0.5 from the model (for 2s)"},
	} {
		if got := DescribeDivergence(tc.field, tc.index, tc.diff, tc.size, 2*time.Second, ids); got != tc.want {
			t.Errorf("%s %d:\n got %s\nwant %s", tc.field, tc.index, got, tc.want)
		}
	}
	if s := SpeedOf(1000); math.Abs(s-23.98) > 0.01 {
		t.Errorf("profile velocity 1000 is %g rad/s, want 23.98", s)
	}
}
