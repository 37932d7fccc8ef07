package tracker

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// emioParamsJSON is the cameraparameter.json emioapi ships.
const emioParamsJSON = `{"hue_h": 90, "hue_l": 73, "sat_h": 255, "sat_l": 138, "value_h": 255, "value_l": 35, "erosion_size": 0, "area": 100}`

func TestParseParams(t *testing.T) {
	def := DefaultParams()
	with := func(f func(*Params)) Params {
		p := def
		f(&p)
		return p
	}
	tests := []struct {
		name string
		in   string
		want Params
		err  string // substring of the error; "" for success
	}{
		{"emioapi file", emioParamsJSON, with(func(p *Params) { p.HueL = 73 }), ""},
		{"empty object", `{}`, def, ""},
		{"spaces", " \n{ \"area\" : 12.5 }\n", with(func(p *Params) { p.Area = 12.5 }), ""},
		{"integral float", `{"hue_l": 40.0, "erosion_size": 2}`, with(func(p *Params) { p.HueL, p.Erosion = 40, 2 }), ""},
		{"hue_h 255 from the GUI", `{"hue_h": 255}`, with(func(p *Params) { p.HueH = 255 }), ""},
		{"exponent", `{"area": 1e2}`, def, ""},
		{"unknown key", `{"hue": 3}`, def, `unknown camera parameter "hue"`},
		{"empty key", `{"": 1}`, def, `unknown camera parameter ""`},
		{"two unknown keys", `{"zz": 1, "aa": 2}`, def, `unknown camera parameter "aa"`},
		{"string value", `{"hue_l": "36"}`, def, `hue_l = "36" is not a number`},
		{"null value", `{"area": null}`, def, "area = null is not a number"},
		{"bool value", `{"erosion_size": true}`, def, "erosion_size = true is not a number"},
		{"fraction", `{"sat_l": 1.5}`, def, "sat_l = 1.5 is not an integer"},
		{"hue_l 180", `{"hue_l": 180}`, def, "hue_l = 180 out of range 0–179"},
		{"hue_h 256", `{"hue_h": 256}`, def, "hue_h = 256 out of range 0–255"},
		{"negative", `{"value_l": -1}`, def, "value_l = -1 out of range"},
		{"low above high", `{"sat_l": 200, "sat_h": 100}`, def, "sat_l = 200 above sat_h = 100"},
		{"erosion too large", `{"erosion_size": 256}`, def, "erosion_size = 256 out of range 0–255"},
		{"negative area", `{"area": -1}`, def, "area = -1"},
		{"huge area", `{"area": 1e400}`, def, "area = 1e400 is not a finite number"},
		{"array", `[1, 2]`, def, "not a JSON object"},
		{"null", `null`, def, "not a JSON object"},
		{"empty", ``, def, "not a JSON object"},
		{"truncated", `{"area": 1`, def, "camera parameters:"},
		{"huge int", `{"hue_l": 1e300}`, def, "hue_l = 1e300 is not an integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseParams([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrParams) || !strings.HasPrefix(err.Error(), "tracker:") {
					t.Fatalf("ParseParams(%s) error %v, want %q (ErrParams)", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseParams(%s): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ParseParams(%s) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParamsRange(t *testing.T) {
	if got := DefaultParams().Range(); got != DefaultRange() {
		t.Errorf("DefaultParams().Range() = %v, want DefaultRange %v", got, DefaultRange())
	}
	p := DefaultParams()
	p.HueH = 255
	if got := p.Range().Upper[0]; got != HueRange-1 {
		t.Errorf("hue_h 255: Range upper hue %d, want 179 (same pixels)", got)
	}
	if err := DefaultParams().Validate(); err != nil {
		t.Errorf("DefaultParams invalid: %v", err)
	}
}

func TestLoadParams(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cameraparameter.json")
	if err := os.WriteFile(path, []byte(emioParamsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadParams(path)
	if err != nil || p.HueL != 73 {
		t.Fatalf("LoadParams = %+v, %v", p, err)
	}
	if _, err := LoadParams(filepath.Join(dir, "missing.json")); err == nil || !strings.HasPrefix(err.Error(), "tracker:") {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"x": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadParams(path); !errors.Is(err, ErrParams) || !strings.Contains(err.Error(), path) {
		t.Errorf("bad file: %v", err)
	}
}

func FuzzParseParams(f *testing.F) {
	for _, s := range []string{emioParamsJSON, `{}`, `{"area": 1e400}`, `{"hue_l": -0}`, `{"hue_l": 1, "hue_l": 2}`, `[]`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseParams(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tracker:") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParseParams accepted %+v, which does not validate: %v", p, err)
		}
		r := p.Range()
		for c := range 3 {
			if r.Lower[c] > r.Upper[c] {
				t.Fatalf("Range %v empty for valid %+v", r, p)
			}
		}
	})
}
