package tracker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LabFiles are the tracker settings of a lab and where they came from:
// emioapi's cameraparameter.json (HSV thresholds, erosion, area) and
// camera_2d_points.csv (the calibration), docs/realsense.md §8.4.
type LabFiles struct {
	Params     Params
	ParamsFrom string
	// Calibration is nil when there is none: the camera frame (identity
	// pose) is used.
	Calibration     *Calibration
	CalibrationFrom string
}

// EmioapiDir is where emioapi keeps a lab's camera files under home:
// ~/.config/emioapi. It is "" when home is.
func EmioapiDir(home string) string {
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "emioapi")
}

// LoadLabFiles reads the tracker's files: the named paths, else emioapi's own
// files in dir (EmioapiDir) when the lab has them, else emioapi's defaults.
// A named path that cannot be read is an error; so is a file in dir that is
// there but malformed (the lab would otherwise silently lose its settings).
func LoadLabFiles(paramsPath, calibPath, dir string) (LabFiles, error) {
	v := LabFiles{Params: DefaultParams(), ParamsFrom: "emioapi's defaults", CalibrationFrom: "none (camera frame)"}
	if paramsPath = orInDir(paramsPath, dir, "cameraparameter.json"); paramsPath != "" {
		p, err := LoadParams(paramsPath)
		if err != nil {
			return v, err
		}
		v.Params, v.ParamsFrom = p, paramsPath
	}
	if calibPath = orInDir(calibPath, dir, "camera_2d_points.csv"); calibPath != "" {
		c, err := LoadCalibration(calibPath)
		if err != nil {
			return v, err
		}
		v.Calibration, v.CalibrationFrom = &c, calibPath
	}
	return v, nil
}

// orInDir is path, or dir/name when path is "" and that file exists, or "".
func orInDir(path, dir, name string) string {
	if path != "" || dir == "" {
		return path
	}
	if p := filepath.Join(dir, name); isFile(p) {
		return p
	}
	return ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// DefaultIntrinsics are depth intrinsics for saved frames that come without
// theirs: the D435 of the project's recording at 640×480 (the virtual camera
// uses the same), scaled to other widths, and typical values at 848×480.
func DefaultIntrinsics(w, h int) Intrinsics {
	if w == 848 {
		return Intrinsics{Width: w, Height: h, FX: 426, FY: 426, PPX: 424, PPY: 240}
	}
	s := float64(w) / 640
	return Intrinsics{
		Width: w, Height: h,
		FX: float64(float32(390.43146)) * s, FY: float64(float32(390.43146)) * s,
		PPX: float64(float32(331.38788)) * s, PPY: float64(float32(242.18735)) * s,
	}
}

// ParseIntrinsics reads "fx,fy,ppx,ppy" (pixels) for an image of w×h.
func ParseIntrinsics(s string, w, h int) (Intrinsics, error) {
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return Intrinsics{}, fmt.Errorf("tracker: intrinsics %q: want fx,fy,ppx,ppy", s)
	}
	var v [4]float64
	for i, x := range f {
		var err error
		if v[i], err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			return Intrinsics{}, fmt.Errorf("tracker: intrinsics %q: %q is not a number (want fx,fy,ppx,ppy)", s, x)
		}
	}
	in := Intrinsics{Width: w, Height: h, FX: v[0], FY: v[1], PPX: v[2], PPY: v[3]}
	return in, in.Validate()
}
