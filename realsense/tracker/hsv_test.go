package tracker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
)

// refHSV is RGB2HSV_b transcribed literally, branches and all, with the
// tables computed in floating point and rounded as cvRound does.
func refHSV(b, g, r int) (int, int, int) {
	sdiv := func(i int) int {
		if i == 0 {
			return 0
		}
		return int(roundEven(float64(255<<12) / float64(i)))
	}
	hdiv := func(i int) int {
		if i == 0 {
			return 0
		}
		return int(roundEven(float64(180<<12) / (6 * float64(i))))
	}
	v := max(b, g, r)
	vmin := min(b, g, r)
	diff := v - vmin
	s := (diff*sdiv(v) + 2048) >> 12
	var h int
	switch {
	case v == r:
		h = g - b
	case v == g:
		h = b - r + 2*diff
	default:
		h = r - g + 4*diff
	}
	h = (h*hdiv(diff) + 2048) >> 12
	if h < 0 {
		h += 180
	}
	return h, s, v
}

func roundEven(x float64) float64 {
	f := float64(int64(x))
	d := x - f
	switch {
	case d > 0.5, d == 0.5 && int64(f)%2 == 1:
		return f + 1
	}
	return f
}

func TestPixelSpotValues(t *testing.T) {
	c := NewHSV()
	for _, tc := range []struct {
		bgr, hsv [3]uint8
	}{
		// docs/realsense.md §9, verified against OpenCV.
		{[3]uint8{40, 200, 40}, [3]uint8{60, 204, 200}},
		{[3]uint8{40, 40, 220}, [3]uint8{0, 209, 220}},
		{[3]uint8{1, 2, 3}, [3]uint8{15, 170, 3}},
		{[3]uint8{200, 10, 100}, [3]uint8{134, 242, 200}},
		// Greys have no hue or saturation.
		{[3]uint8{0, 0, 0}, [3]uint8{0, 0, 0}},
		{[3]uint8{255, 255, 255}, [3]uint8{0, 0, 255}},
		{[3]uint8{128, 128, 128}, [3]uint8{0, 0, 128}},
		// Primaries and secondaries.
		{[3]uint8{255, 0, 0}, [3]uint8{120, 255, 255}},
		{[3]uint8{0, 255, 0}, [3]uint8{60, 255, 255}},
		{[3]uint8{0, 0, 255}, [3]uint8{0, 255, 255}},
		{[3]uint8{255, 255, 0}, [3]uint8{90, 255, 255}},
		{[3]uint8{0, 255, 255}, [3]uint8{30, 255, 255}},
		{[3]uint8{255, 0, 255}, [3]uint8{150, 255, 255}},
		// Hue just below 360°: a negative h wraps by 180, unless it rounds to 0.
		{[3]uint8{10, 0, 255}, [3]uint8{179, 255, 255}},
		{[3]uint8{1, 0, 255}, [3]uint8{0, 255, 255}},
	} {
		h, s, v := c.Pixel(tc.bgr[0], tc.bgr[1], tc.bgr[2])
		if got := [3]uint8{h, s, v}; got != tc.hsv {
			t.Errorf("Pixel(%v) = %v, want %v", tc.bgr, got, tc.hsv)
		}
	}
}

// TestPixelMatchesReference compares the branchless conversion with a
// literal transcription of OpenCV's scalar code on a coarse grid of colours
// (the full comparison with OpenCV is TestAllColoursHash).
func TestPixelMatchesReference(t *testing.T) {
	c := NewHSV()
	for b := 0; b < 256; b += 3 {
		for g := 0; g < 256; g += 5 {
			for r := 0; r < 256; r++ {
				h, s, v := c.Pixel(uint8(b), uint8(g), uint8(r))
				wh, ws, wv := refHSV(b, g, r)
				if int(h) != wh || int(s) != ws || int(v) != wv {
					t.Fatalf("Pixel(%d, %d, %d) = (%d, %d, %d), reference (%d, %d, %d)", b, g, r, h, s, v, wh, ws, wv)
				}
			}
		}
	}
}

// TestAllColoursHash is the acceptance test: the HSV of all 2^24 BGR colours,
// indexed by b<<16 | g<<8 | r, hashes to what OpenCV's cvtColor gives
// (testdata/hsv_all.sha256, written by testdata/gen_opencv.py).
func TestAllColoursHash(t *testing.T) {
	raw, err := os.ReadFile("testdata/hsv_all.sha256")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(raw))
	c := NewHSV()
	const rows = 1 << 8 // one b value: 2^16 colours per Convert
	bgr := make([]byte, 3*rows*256)
	hsv := make([]byte, len(bgr))
	sum := sha256.New()
	for b := range 256 {
		for i := range rows * 256 {
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = byte(b), byte(i>>8), byte(i)
		}
		if err := c.Convert(hsv, bgr, 256, rows); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(hsv); i += 3 {
			if hsv[i] >= HueRange {
				t.Fatalf("hue %d of BGR (%d, %d, %d)", hsv[i], b, bgr[i+1], bgr[i+2])
			}
		}
		sum.Write(hsv)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != want {
		t.Fatalf("sha256 of the 2^24-colour HSV table = %s, OpenCV %s", got, want)
	}
}

func TestConvertInPlace(t *testing.T) {
	c := NewHSV()
	img := []byte{40, 200, 40, 1, 2, 3, 200, 10, 100}
	if err := c.Convert(img, img, 3, 1); err != nil {
		t.Fatal(err)
	}
	want := []byte{60, 204, 200, 15, 170, 3, 134, 242, 200}
	if string(img) != string(want) {
		t.Errorf("in place: %v, want %v", img, want)
	}
}

func TestConvertErrors(t *testing.T) {
	c := NewHSV()
	for _, tc := range []struct {
		name     string
		dst, bgr int
		w, h     int
		mention  string
	}{
		{"zero width", 12, 12, 0, 1, "width 0"},
		{"negative height", 12, 12, 1, -2, "height -2"},
		{"huge width", 12, 12, 1<<16 + 1, 1, "width 65537"},
		{"short source", 12, 11, 2, 2, "BGR buffer of 11 bytes"},
		{"short destination", 11, 12, 2, 2, "HSV buffer of 11 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Convert(make([]byte, tc.dst), make([]byte, tc.bgr), tc.w, tc.h)
			if !errors.Is(err, ErrSize) {
				t.Fatalf("error %v, want ErrSize", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "tracker: ") || !strings.Contains(msg, tc.mention) {
				t.Errorf("error %q does not start with %q and name %q", msg, "tracker: ", tc.mention)
			}
		})
	}
}

func TestConvertAllocs(t *testing.T) {
	c := NewHSV()
	bgr := make([]byte, 3*64*48)
	hsv := make([]byte, len(bgr))
	if a := testing.AllocsPerRun(10, func() { _ = c.Convert(hsv, bgr, 64, 48) }); a != 0 {
		t.Errorf("Convert: %v allocations", a)
	}
}

// FuzzPixel checks the conversion against the literal transcription of
// OpenCV's code, for single pixels and through Convert.
func FuzzPixel(f *testing.F) {
	f.Add(byte(40), byte(200), byte(40))
	f.Add(byte(1), byte(0), byte(255))
	c := NewHSV()
	f.Fuzz(func(t *testing.T, b, g, r byte) {
		h, s, v := c.Pixel(b, g, r)
		wh, ws, wv := refHSV(int(b), int(g), int(r))
		if int(h) != wh || int(s) != ws || int(v) != wv {
			t.Fatalf("Pixel(%d, %d, %d) = (%d, %d, %d), reference (%d, %d, %d)", b, g, r, h, s, v, wh, ws, wv)
		}
		out := make([]byte, 3)
		if err := c.Convert(out, []byte{b, g, r}, 1, 1); err != nil {
			t.Fatal(err)
		}
		if out[0] != h || out[1] != s || out[2] != v {
			t.Fatalf("Convert %v, Pixel (%d, %d, %d)", out, h, s, v)
		}
	})
}
