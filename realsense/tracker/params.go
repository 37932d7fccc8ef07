package tracker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// ErrParams reports a cameraparameter.json that cannot be used.
var ErrParams = errors.New("tracker: bad camera parameters")

// maxParamsBytes bounds a cameraparameter.json; emioapi's is about 130 bytes.
const maxParamsBytes = 1 << 20

// Params is emioapi's cameraparameter.json: the HSV thresholds, the erosion
// size of the opening and the area threshold (docs/realsense.md §8.2).
type Params struct {
	HueL, HueH int // json hue_l, hue_h
	SatL, SatH int // json sat_l, sat_h
	ValueL     int // json value_l
	ValueH     int // json value_h
	Erosion    int // json erosion_size
	// Area is json area: a contour is a marker when its contourArea is
	// strictly greater.
	Area float64
}

// DefaultParams returns emioapi's DEFAULT_CAMERA_PARAMS: hue 36–90,
// saturation 138–255, value 35–255, erosion 0, area 100.
func DefaultParams() Params {
	return Params{HueL: 36, HueH: 90, SatL: 138, SatH: 255, ValueL: 35, ValueH: 255, Erosion: 0, Area: MinArea}
}

// MaxHue bounds hue_h. emioapi's GUI sliders go to 255 for every channel and
// save what they show, but OpenCV's 8-bit hue stops at HueRange−1 = 179, so a
// hue_h of 180–255 selects exactly what 179 does: it is accepted (a file the
// GUI saved must load) and Range clamps it. A hue_l above 179 selects nothing
// at all, which is never what a user meant, so it is an error.
const MaxHue = 255

// isParamKey reports whether k is one of emioapi's keys.
func isParamKey(k string) bool {
	switch k {
	case "hue_h", "hue_l", "sat_h", "sat_l", "value_h", "value_l", "erosion_size", "area":
		return true
	}
	return false
}

// ParseParams decodes a cameraparameter.json object. Missing keys keep their
// DefaultParams value, as emioapi merges the file into its defaults; unknown
// keys and values that are not JSON numbers are errors, so that a typo does
// not silently fall back to a default. The result is validated.
func ParseParams(b []byte) (Params, error) {
	p := DefaultParams()
	if len(b) > maxParamsBytes {
		return p, fmt.Errorf("tracker: camera parameters of %d bytes, limit %d: %w", len(b), maxParamsBytes, ErrParams)
	}
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return p, fmt.Errorf("tracker: camera parameters are not a JSON object: %w", ErrParams)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return p, fmt.Errorf("tracker: camera parameters: %v: %w", err, ErrParams)
	}
	unknown, bad := "", false
	for k := range m {
		if !isParamKey(k) && (!bad || k < unknown) {
			unknown, bad = k, true // the first in byte order: a stable message
		}
	}
	if bad {
		return p, fmt.Errorf("tracker: unknown camera parameter %q: %w", unknown, ErrParams)
	}
	ints := [...]struct {
		key string
		dst *int
	}{
		{"hue_h", &p.HueH}, {"hue_l", &p.HueL}, {"sat_h", &p.SatH}, {"sat_l", &p.SatL},
		{"value_h", &p.ValueH}, {"value_l", &p.ValueL}, {"erosion_size", &p.Erosion},
	}
	for _, f := range ints {
		raw, ok := m[f.key]
		if !ok {
			continue
		}
		v, err := jsonNumber(f.key, raw)
		if err != nil {
			return p, err
		}
		// The GUI writes integers; 73.0 is the same value, 73.5 is not one.
		if v != math.Trunc(v) || math.Abs(v) > 1<<31 {
			return p, fmt.Errorf("tracker: camera parameter %s = %s is not an integer: %w", f.key, raw, ErrParams)
		}
		*f.dst = int(v)
	}
	if raw, ok := m["area"]; ok {
		v, err := jsonNumber("area", raw)
		if err != nil {
			return p, err
		}
		p.Area = v
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	return p, nil
}

// jsonNumber decodes one JSON number; strings, booleans and null are errors.
func jsonNumber(key string, raw json.RawMessage) (float64, error) {
	r := bytes.TrimSpace(raw)
	if len(r) == 0 || (r[0] != '-' && (r[0] < '0' || r[0] > '9')) {
		return 0, fmt.Errorf("tracker: camera parameter %s = %s is not a number: %w", key, r, ErrParams)
	}
	v, err := strconv.ParseFloat(string(r), 64)
	if err != nil {
		return 0, fmt.Errorf("tracker: camera parameter %s = %s is not a finite number: %w", key, r, ErrParams)
	}
	return v, nil
}

// LoadParams reads and parses a cameraparameter.json file.
func LoadParams(path string) (Params, error) {
	f, err := os.Open(path)
	if err != nil {
		return DefaultParams(), fmt.Errorf("tracker: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxParamsBytes+1))
	if err != nil {
		return DefaultParams(), fmt.Errorf("tracker: %w", err)
	}
	p, err := ParseParams(b)
	if err != nil {
		return p, fmt.Errorf("%w (%s)", err, path)
	}
	return p, nil
}

// Validate checks the ranges OpenCV and the tracker accept: hue_l 0–179,
// hue_h 0–MaxHue (see MaxHue), saturation and value 0–255, low ≤ high per
// channel (emioapi would just find nothing), erosion_size 0–MaxErosion and a
// finite area ≥ 0.
func (p Params) Validate() error {
	chk := [...]struct {
		key     string
		v, hi   int
		comment string
	}{
		{"hue_l", p.HueL, HueRange - 1, " (OpenCV hue stops at 179)"},
		{"hue_h", p.HueH, MaxHue, ""},
		{"sat_l", p.SatL, 255, ""},
		{"sat_h", p.SatH, 255, ""},
		{"value_l", p.ValueL, 255, ""},
		{"value_h", p.ValueH, 255, ""},
		{"erosion_size", p.Erosion, MaxErosion, ""},
	}
	for _, c := range chk {
		if c.v < 0 || c.v > c.hi {
			return fmt.Errorf("tracker: camera parameter %s = %d out of range 0–%d%s: %w", c.key, c.v, c.hi, c.comment, ErrParams)
		}
	}
	pairs := [...]struct {
		lk, hk string
		l, h   int
	}{
		{"hue_l", "hue_h", p.HueL, p.HueH},
		{"sat_l", "sat_h", p.SatL, p.SatH},
		{"value_l", "value_h", p.ValueL, p.ValueH},
	}
	for _, c := range pairs {
		if c.l > c.h {
			return fmt.Errorf("tracker: camera parameter %s = %d above %s = %d: %w", c.lk, c.l, c.hk, c.h, ErrParams)
		}
	}
	if !(p.Area >= 0) || math.IsInf(p.Area, 0) {
		return fmt.Errorf("tracker: camera parameter area = %v, want a finite number ≥ 0: %w", p.Area, ErrParams)
	}
	return nil
}

// Range returns the HSV bounds of p for NewThreshold, hue_h clamped to 179
// (the same pixels, see MaxHue). p must be valid.
func (p Params) Range() Range {
	hh := min(p.HueH, HueRange-1)
	return Range{
		Lower: [3]uint8{clampByte(p.HueL), clampByte(p.SatL), clampByte(p.ValueL)},
		Upper: [3]uint8{clampByte(hh), clampByte(p.SatH), clampByte(p.ValueH)},
	}
}

func clampByte(v int) uint8 {
	return uint8(max(0, min(v, 255)))
}
