package vrep

import (
	"math"
	"testing"
	"time"
)

func TestDescribeDivergence(t *testing.T) {
	if got, want := DescribeDivergence("left_angle", -0.35, 0.4, 2*time.Second),
		"left_angle is 0.35 rad (20°) from the model (up to 0.40 rad, for 2s): a wheel that slips or drags, a joint blocked in the scene"; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if got := DescribeDivergence("/MotorLeft", math.NaN(), math.NaN(), time.Second); got != "/MotorLeft: nothing to compare with the model (for 1s)" {
		t.Errorf("got %s", got)
	}
}
