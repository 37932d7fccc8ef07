package tracker

import (
	"errors"
	"fmt"
	"math"
)

// ErrConfig reports a tracker configuration that cannot be used.
var ErrConfig = errors.New("tracker: bad configuration")

// Side is emioapi's bridge "side": the frame the marker vector is sent in
// (docs/realsense.md §8.3).
type Side int

const (
	// Top sends the calibrated world points, unsorted, in contour order.
	Top Side = iota
	// Front sends points from emioapi's hard-coded front-camera intrinsics,
	// offset and reordered to the top frame, then sorted.
	Front
	// Plan sends the intersection of each marker's calibrated viewing ray
	// with the plane x = −5 mm, then sorted. It is emioapi's default.
	Plan
)

// ParseSide parses emioapi's spelling: "top", "front" or "plan".
func ParseSide(s string) (Side, error) {
	switch s {
	case "top":
		return Top, nil
	case "front":
		return Front, nil
	case "plan":
		return Plan, nil
	}
	return 0, fmt.Errorf("tracker: side %q, want top, front or plan: %w", s, ErrConfig)
}

func (s Side) String() string {
	switch s {
	case Top:
		return "top"
	case Front:
		return "front"
	case Plan:
		return "plan"
	}
	return fmt.Sprintf("Side(%d)", int(s))
}

// Sort is the column the bridge sorts the Front and Plan points by.
type Sort int

const (
	// SortY sorts by y (column 1), emioapi's default.
	SortY Sort = iota
	// SortZ sorts by z (column 2).
	SortZ
)

// ParseSort parses emioapi's spelling: "y" or "z".
func ParseSort(s string) (Sort, error) {
	switch s {
	case "y":
		return SortY, nil
	case "z":
		return SortZ, nil
	}
	return 0, fmt.Errorf("tracker: sort %q, want y or z: %w", s, ErrConfig)
}

func (s Sort) String() string {
	switch s {
	case SortY:
		return "y"
	case SortZ:
		return "z"
	}
	return fmt.Sprintf("Sort(%d)", int(s))
}

// column is the index of the point coordinate s sorts by.
func (s Sort) column() int {
	if s == SortZ {
		return 2
	}
	return 1
}

// emioapi's front mode (udp_bridge.py pixel_to_mm, camera_to_sofa_order)
// ignores the camera and calibration: it uses these intrinsics of one D435
// colour stream and assumes every marker at 249 mm.
const (
	FrontPPX   = 319.475
	FrontPPY   = 240.962
	FrontF     = 382.605
	FrontDepth = 249.0
)

// front2top is emioapi's front2top_offset in mm, added before reordering.
func front2top() [3]float64 { return [3]float64{-2.2, 195.8, -254} }

// FrontPoint is emioapi's front-mode point of a marker at pixel (px, py) with
// measured depth d: X = ((px − 319.475)/382.605)·249, Y likewise with
// 240.962, Z = d; plus front2top_offset; reordered to (Z, −Y, X).
func FrontPoint(px, py int, d float64) [3]float64 {
	x := ((float64(px) - FrontPPX) / FrontF) * FrontDepth
	y := ((float64(py) - FrontPPY) / FrontF) * FrontDepth
	o := front2top()
	x, y, z := x+o[0], y+o[1], d+o[2]
	return [3]float64{z, -y, x}
}

// The plane of emioapi's plan mode: n·p + d = 0 with n = [1, 0, 0], d = 5.
func planeN() [3]float64 { return [3]float64{1, 0, 0} }

const planeD = 5.0

// planEpsilon is the |n·ray| below which emioapi finds no intersection.
const planEpsilon = 1e-6

// PlanPoint is emioapi's plan-mode point of pixel (px, py): the calibrated
// ray through the pixel, computed as Python does, ray = (R·p + T) − T with
// p = [((px−ppx)/fx)·1.0, ((py−ppy)/fy)·1.0, 1.0], intersected with the plane
// x = −5 mm: s = −(n·T + d)/(n·ray), T + s·ray. ok is false when the ray is
// parallel to the plane (|n·ray| < 1e-6), where emioapi raises ValueError.
func PlanPoint(in *Intrinsics, ps *Pose, px, py int) (pt [3]float64, ok bool) {
	p := in.Deproject(float64(px), float64(py), 1.0)
	w := ps.Apply(p)
	ray := [3]float64{w[0] - ps.T[0], w[1] - ps.T[1], w[2] - ps.T[2]}
	n := planeN()
	denom := n[0]*ray[0] + n[1]*ray[1] + n[2]*ray[2]
	if !(math.Abs(denom) >= planEpsilon) {
		return pt, false
	}
	s := -(n[0]*ps.T[0] + n[1]*ps.T[1] + n[2]*ps.T[2] + planeD) / denom
	return [3]float64{ps.T[0] + s*ray[0], ps.T[1] + s*ray[1], ps.T[2] + s*ray[2]}, true
}

// sortedInto writes pts flattened into dst, stably sorted ascending by column
// col, as Python's sorted(…, key=lambda p: p[col]). It uses an insertion sort
// of a fixed index array: n ≤ MaxMarkers, and nothing is allocated.
func sortedInto(dst []float64, pts *[MaxMarkers][3]float64, n, col int) {
	var idx [MaxMarkers]int
	for i := range n {
		idx[i] = i
		for j := i; j > 0 && pts[idx[j]][col] < pts[idx[j-1]][col]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	for i := range n {
		copy(dst[3*i:3*i+3], pts[idx[i]][:])
	}
}
