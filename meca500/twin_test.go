package meca500

import (
	"math"
	"testing"
	"time"
)

func TestDescribeDivergence(t *testing.T) {
	for _, tc := range []struct {
		field      string
		index      int
		diff, size float64
		want       string
	}{
		{"joints", 3, -5, 6.25, "the arm's joint 3 is 5.0° from the model (up to 6.2°, for 2s): a payload, a collision or a drive that cannot follow"},
		{"pose", 2, 12, 12, "the tool's y is 12.0 mm from the model (up to 12.0 mm, for 2s)"},
		{"pose", 6, -7, 7, "the tool is turned 7.0° from the model about its z axis (up to 7.0°, for 2s)"},
		{"pose", 2, 3.25, 4, "the tool's y is 3.2 mm from the model (up to 4.0 mm, for 2s)"},
		{"joints", 1, math.NaN(), math.NaN(), "the arm's joint 1: nothing to compare with the model (for 2s)"},
	} {
		if got := DescribeDivergence(tc.field, tc.index, tc.diff, tc.size, 2*time.Second); got != tc.want {
			t.Errorf("%s %d:\n got %s\nwant %s", tc.field, tc.index, got, tc.want)
		}
	}
	if th := TwinThresholds(false); len(th) != 1 || th["joints"] != TwinJoint {
		t.Errorf("without a pose: %v", th)
	}
}
