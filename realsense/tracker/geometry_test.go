package tracker

import (
	"errors"
	"math"
	"testing"
)

func TestParseSideSort(t *testing.T) {
	for _, s := range []Side{Top, Front, Plan} {
		got, err := ParseSide(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSide(%q) = %v, %v", s.String(), got, err)
		}
	}
	for _, s := range []Sort{SortY, SortZ} {
		got, err := ParseSort(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSort(%q) = %v, %v", s.String(), got, err)
		}
	}
	for _, bad := range []string{"", "Top", "plane", " top"} {
		if _, err := ParseSide(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseSide(%q) error %v", bad, err)
		}
	}
	for _, bad := range []string{"", "x", "Y"} {
		if _, err := ParseSort(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseSort(%q) error %v", bad, err)
		}
	}
	if Plan.String() != "plan" || Side(7).String() != "Side(7)" || Sort(3).String() != "Sort(3)" {
		t.Error("String")
	}
}

// TestFrontPoint checks values computed with numpy as udp_bridge.py does:
// pos = [(u−319.475)/382.605*249, (v−240.962)/382.605*249, d] + offset,
// then (pos[2], −pos[1], pos[0]).
func TestFrontPoint(t *testing.T) {
	for _, tc := range []struct {
		px, py int
		d      float64
		want   [3]float64
	}{
		{320, 241, 400, [3]float64{146.0, -195.82473046614658, -1.8583290861332333}},
		{100, 50, 250.5, [3]float64{-3.5, -71.52159799270791, -145.03471203983221}},
		{600, 470, 0, [3]float64{-254.0, -344.8583290861332, 180.36615830948367}},
	} {
		if got := FrontPoint(tc.px, tc.py, tc.d); got != tc.want {
			t.Errorf("FrontPoint(%d, %d, %v) = %v, want %v", tc.px, tc.py, tc.d, got, tc.want)
		}
	}
}

// TestPlanPoint checks a value computed with numpy as udp_bridge.py does,
// and the parallel-ray case.
func TestPlanPoint(t *testing.T) {
	in := Intrinsics{PPX: 320, PPY: 240, FX: 400, FY: 400}
	ps := Pose{R: [9]float64{0, 0, 1, 0, 1, 0, -1, 0, 0}, T: [3]float64{100, 20, 30}}
	got, ok := PlanPoint(&in, &ps, 360, 280)
	want := [3]float64{-5.0, 9.49999999999985, 40.50000000000015}
	if !ok || got != want {
		t.Errorf("PlanPoint = %v, %v; want %v", got, ok, want)
	}
	// Identity pose: the plane x = −5 is met at depth −5/x.
	id := IdentityPose()
	got, ok = PlanPoint(&in, &id, 420, 240)
	if !ok || got != [3]float64{-5, 0, -20} {
		t.Errorf("identity PlanPoint = %v, %v", got, ok)
	}
	// The column of the principal point looks along the plane.
	if got, ok := PlanPoint(&in, &id, 320, 100); ok {
		t.Errorf("parallel ray: %v, ok", got)
	}
	// Nearly parallel, below emioapi's 1e-6.
	near := Intrinsics{PPX: 320 - 1e-7*400, PPY: 240, FX: 400, FY: 400}
	if got, ok := PlanPoint(&near, &id, 320, 100); ok {
		t.Errorf("nearly parallel ray: %v, ok", got)
	}
}

func TestSortedIntoStable(t *testing.T) {
	var pts [MaxMarkers][3]float64
	in := [][3]float64{{0, 5, 1}, {1, 2, 9}, {2, 5, 0}, {3, 2, 9}, {4, -1, 9}, {5, 5, math.Inf(1)}}
	copy(pts[:], in)
	dst := make([]float64, 3*len(in))
	sortedInto(dst, &pts, len(in), SortY.column())
	wantY := []float64{4, 1, 3, 0, 2, 5} // equal y keep their order
	for i, w := range wantY {
		if dst[3*i] != w {
			t.Fatalf("sort y: order %v, want ids %v", dst, wantY)
		}
	}
	sortedInto(dst, &pts, len(in), SortZ.column())
	wantZ := []float64{2, 0, 1, 3, 4, 5}
	for i, w := range wantZ {
		if dst[3*i] != w {
			t.Fatalf("sort z: order %v, want ids %v", dst, wantZ)
		}
	}
	if dst[1] != 5 || dst[2] != 0 {
		t.Errorf("rows not copied whole: %v", dst[:3])
	}
}
