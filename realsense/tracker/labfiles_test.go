package tracker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lab's files are found in emioapi's directory when none are named; named
// ones win; a malformed file there is an error, never a silent default.
func TestLoadLabFiles(t *testing.T) {
	home := t.TempDir()
	dir := EmioapiDir(home)
	if v, err := LoadLabFiles("", "", dir); err != nil || v.ParamsFrom != "emioapi's defaults" || v.Calibration != nil {
		t.Fatalf("no files: %+v %v", v, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	params := filepath.Join(dir, "cameraparameter.json")
	if err := os.WriteFile(params, []byte(`{"hue_h": 90, "hue_l": 73, "sat_h": 255, "sat_l": 138, "value_h": 255, "value_l": 35, "erosion_size": 0, "area": 123}`), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := LoadLabFiles("", "", dir)
	if err != nil || v.ParamsFrom != params || v.Params.Area != 123 {
		t.Fatalf("lab params: %+v %v", v, err)
	}
	other := filepath.Join(home, "mine.json")
	if err := os.WriteFile(other, []byte(`{"hue_h": 90, "hue_l": 73, "sat_h": 255, "sat_l": 138, "value_h": 255, "value_l": 35, "erosion_size": 0, "area": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := LoadLabFiles(other, "", dir); err != nil || v.Params.Area != 7 {
		t.Fatalf("named params: %+v %v", v, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "camera_2d_points.csv"), []byte("not a calibration"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLabFiles("", "", dir); err == nil || !strings.Contains(err.Error(), "camera_2d_points.csv") {
		t.Fatalf("malformed lab calibration: %v", err)
	}
	if EmioapiDir("") != "" {
		t.Error("no home, yet a directory")
	}
}
