package tracker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestDefaultRange(t *testing.T) {
	r := DefaultRange()
	if r.Lower != [3]uint8{36, 138, 35} || r.Upper != [3]uint8{90, 255, 255} {
		t.Errorf("DefaultRange() = %+v, want hue 36–90, saturation 138–255, value 35–255", r)
	}
}

func TestRangeContains(t *testing.T) {
	r := DefaultRange()
	for _, tc := range []struct {
		hsv  [3]uint8
		want bool
	}{
		{[3]uint8{36, 138, 35}, true},  // every lower bound is inclusive
		{[3]uint8{90, 255, 255}, true}, // every upper bound is inclusive
		{[3]uint8{60, 204, 200}, true},
		{[3]uint8{35, 200, 200}, false},
		{[3]uint8{91, 200, 200}, false},
		{[3]uint8{60, 137, 200}, false},
		{[3]uint8{60, 200, 34}, false},
		{[3]uint8{0, 0, 0}, false},
	} {
		if got := r.Contains(tc.hsv[0], tc.hsv[1], tc.hsv[2]); got != tc.want {
			t.Errorf("Contains(%v) = %v, want %v", tc.hsv, got, tc.want)
		}
	}
	empty := Range{Lower: [3]uint8{100, 0, 0}, Upper: [3]uint8{50, 255, 255}}
	if empty.Contains(75, 100, 100) {
		t.Error("an empty hue interval contains a colour")
	}
}

func TestAndDepth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi uint16
		depth  []uint16
		want   []byte
	}{
		{"bridge 0–1000", BridgeDepthMin, BridgeDepthMax,
			[]uint16{0, 1, 999, 1000, 1001, 65535},
			[]byte{255, 255, 255, 255, 0, 0}},
		{"emioapi default 2–430", 2, 430,
			[]uint16{0, 1, 2, 3, 429, 430, 431},
			[]byte{0, 0, 255, 255, 255, 255, 0}},
		{"empty", 10, 5,
			[]uint16{4, 5, 7, 10, 11},
			[]byte{0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mask := make([]byte, len(tc.depth))
			for i := range mask {
				mask[i] = 255
			}
			if err := AndDepth(mask, tc.depth, len(mask), 1, tc.lo, tc.hi); err != nil {
				t.Fatal(err)
			}
			if string(mask) != string(tc.want) {
				t.Errorf("mask %v, want %v", mask, tc.want)
			}
		})
	}
	// A cleared pixel stays cleared.
	mask := []byte{0}
	if err := AndDepth(mask, []uint16{500}, 1, 1, 0, 1000); err != nil || mask[0] != 0 {
		t.Errorf("AndDepth set a cleared pixel: %v %v", mask, err)
	}
}

func TestMaskErrors(t *testing.T) {
	c := NewHSV()
	thr := NewThreshold(c, DefaultRange())
	r := DefaultRange()
	for _, tc := range []struct {
		name    string
		run     func() error
		mention string
	}{
		{"InRange short HSV", func() error { return InRange(make([]byte, 4), make([]byte, 11), 2, 2, r) }, "HSV buffer of 11 bytes"},
		{"InRange short mask", func() error { return InRange(make([]byte, 3), make([]byte, 12), 2, 2, r) }, "mask buffer of 3 bytes"},
		{"InRange zero height", func() error { return InRange(nil, nil, 2, 0, r) }, "height 0"},
		{"AndDepth short depth", func() error { return AndDepth(make([]byte, 4), make([]uint16, 3), 2, 2, 0, 1) }, "depth buffer of 3 values"},
		{"AndDepth short mask", func() error { return AndDepth(make([]byte, 2), make([]uint16, 4), 2, 2, 0, 1) }, "mask buffer of 2 bytes"},
		{"Threshold short BGR", func() error { return thr.Mask(make([]byte, 4), make([]byte, 5), make([]uint16, 4), 2, 2, 0, 1) }, "BGR buffer of 5 bytes"},
		{"Threshold short depth", func() error { return thr.Mask(make([]byte, 4), make([]byte, 12), make([]uint16, 1), 2, 2, 0, 1) }, "depth buffer of 1 values"},
		{"Threshold short mask", func() error { return thr.Mask(make([]byte, 1), make([]byte, 12), make([]uint16, 4), 2, 2, 0, 1) }, "mask buffer of 1 bytes"},
		{"Threshold negative width", func() error { return thr.Mask(nil, nil, nil, -1, 2, 0, 1) }, "width -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, ErrSize) {
				t.Fatalf("error %v, want ErrSize", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "tracker: ") || !strings.Contains(msg, tc.mention) {
				t.Errorf("error %q does not start with %q and name %q", msg, "tracker: ", tc.mention)
			}
		})
	}
}

// TestThresholdMatchesStages checks the fused table against Convert, InRange
// and AndDepth on random images and several ranges.
func TestThresholdMatchesStages(t *testing.T) {
	c := NewHSV()
	rng := rand.New(rand.NewPCG(1, 2))
	const w, h = 97, 31
	bgr := make([]byte, 3*w*h)
	depth := make([]uint16, w*h)
	hsv := make([]byte, len(bgr))
	want := make([]byte, w*h)
	got := make([]byte, w*h)
	for _, r := range []Range{
		DefaultRange(),
		{Lower: [3]uint8{0, 0, 0}, Upper: [3]uint8{179, 255, 255}},
		{Lower: [3]uint8{170, 50, 50}, Upper: [3]uint8{179, 200, 220}},
		{Lower: [3]uint8{100, 0, 0}, Upper: [3]uint8{50, 255, 255}},
	} {
		thr := NewThreshold(c, r)
		if thr.Range() != r {
			t.Fatalf("Range() = %v, want %v", thr.Range(), r)
		}
		for i := range bgr {
			bgr[i] = byte(rng.UintN(256))
		}
		for i := range depth {
			depth[i] = uint16(rng.UintN(1200))
		}
		if err := c.Convert(hsv, bgr, w, h); err != nil {
			t.Fatal(err)
		}
		if err := InRange(want, hsv, w, h, r); err != nil {
			t.Fatal(err)
		}
		if err := AndDepth(want, depth, w, h, 2, 1000); err != nil {
			t.Fatal(err)
		}
		if err := thr.Mask(got, bgr, depth, w, h, 2, 1000); err != nil {
			t.Fatal(err)
		}
		sameBytes(t, "fused mask", got, want, w, 1)
	}
}

func TestMaskAllocs(t *testing.T) {
	c := NewHSV()
	thr := NewThreshold(c, DefaultRange())
	const w, h = 64, 48
	bgr := make([]byte, 3*w*h)
	hsv := make([]byte, 3*w*h)
	depth := make([]uint16, w*h)
	mask := make([]byte, w*h)
	r := DefaultRange()
	for name, f := range map[string]func(){
		"InRange":   func() { _ = InRange(mask, hsv, w, h, r) },
		"AndDepth":  func() { _ = AndDepth(mask, depth, w, h, 0, 1000) },
		"Threshold": func() { _ = thr.Mask(mask, bgr, depth, w, h, 0, 1000) },
	} {
		if a := testing.AllocsPerRun(10, f); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
}

// TestDepthLanes checks the four-lane depth test against d ∈ [lo, hi] for
// every depth and bounds around the lane form's limits, with and without
// the lo = 0 shortcut, and depth8's gathering of the lanes of two words.
func TestDepthLanes(t *testing.T) {
	for _, b := range [][2]uint16{{0, 1000}, {2, 1000}, {0, 0}, {1, 1}, {300, 301}, {0, 0x7FFF}, {0x7FFF, 0x7FFF}, {0x7FFE, 0x7FFF}, {1000, 0x7FFF}} {
		lo, hi := b[0], b[1]
		over := (0x7FFF - uint64(hi)) * lane1
		under := (0x8000 - uint64(lo)) * lane1
		in := func(d uint64) bool { return uint16(d) >= lo && uint16(d) <= hi }
		for _, lo0 := range []bool{false, lo == 0} {
			for d := range 1 << 16 {
				// d in lanes 1 and 3, their neighbours' worst cases around
				// them.
				for _, other := range []uint64{0, 0xFFFF, uint64(lo), uint64(hi)} {
					v := other | uint64(d)<<16 | other<<32 | uint64(d)<<48
					got := outLanes(v, over, under, lo0)
					if (got>>31&1 == 0) != in(uint64(d)) || (got>>63&1 == 0) != in(uint64(d)) {
						t.Fatalf("depth %d in [%d, %d] (lo0 %v): lanes %#x", d, lo, hi, lo0, got)
					}
					if (got>>15&1 == 0) != in(other) {
						t.Fatalf("depth %d beside %d in [%d, %d] (lo0 %v): lanes %#x", other, d, lo, hi, lo0, got)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var d [8]uint16
	for range 100000 {
		for k := range d {
			d[k] = uint16(rng.UintN(1 << 16))
			if rng.UintN(2) == 0 {
				d[k] = uint16(rng.UintN(1200))
			}
		}
		for _, b := range [][2]uint16{{0, 1000}, {300, 700}} {
			lo, hi := b[0], b[1]
			over := (0x7FFF - uint64(hi)) * lane1
			under := (0x8000 - uint64(lo)) * lane1
			var want byte
			for k, v := range d {
				if v >= lo && v <= hi {
					want |= 1 << k
				}
			}
			if got := depth8(d[:], over, under, lo == 0); got != want {
				t.Fatalf("depths %v in [%d, %d]: bits %08b, want %08b", d, lo, hi, got, want)
			}
		}
	}
}

// TestPlaneMatchesMask checks that Threshold.Plane leaves the plane that
// packing Threshold.Mask's output would, that Contours.unpack gives that
// mask back, and that FindPlane finds Find's blobs, for widths that are and
// are not multiples of 8 and 64 and depth ranges inside and beyond the lane
// form's.
func TestPlaneMatchesMask(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	thr := NewThreshold(NewHSV(), Range{Lower: [3]uint8{20, 40, 30}, Upper: [3]uint8{100, 255, 255}})
	for _, sz := range [][2]int{{97, 31}, {64, 9}, {128, 4}, {848, 6}, {7, 3}, {1, 1}, {200, 1}} {
		w, h := sz[0], sz[1]
		bgr := make([]byte, 3*w*h)
		depth := make([]uint16, w*h)
		want := make([]byte, w*h)
		got := make([]byte, w*h)
		c, err := NewContours(w, h, 4*w*h+4)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := NewContours(w, h, 4*w*h+4)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range [][2]uint16{{0, 1000}, {2, 1000}, {500, 400}, {0, 0}, {0, 0x7FFF}, {0, 0x8000}, {40000, 65535}, {0, 65535}} {
			lo, hi := b[0], b[1]
			for i := range bgr {
				bgr[i] = byte(rng.UintN(256))
			}
			for i := range depth {
				switch rng.UintN(4) {
				case 0:
					depth[i] = uint16(rng.UintN(1 << 16))
				case 1:
					depth[i] = lo + uint16(rng.UintN(3)) - 1
				case 2:
					depth[i] = hi + uint16(rng.UintN(3)) - 1
				default:
					depth[i] = uint16(rng.UintN(1200))
				}
			}
			planeMatchesMask(t, thr, c, ref, want, bgr, depth, w, h, lo, hi, fmt.Sprintf("%dx%d depth %d–%d", w, h, lo, hi))
			c.unpack(got)
			sameBytes(t, "unpacked plane", got, want, w, 1)
			gb, err := c.FindPlane(nil)
			if err != nil {
				t.Fatal(err)
			}
			wb, err := ref.Find(want, w, h, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gb, wb) {
				t.Fatalf("%dx%d depth %d–%d: FindPlane %v, Find %v", w, h, lo, hi, gb, wb)
			}
		}
	}
}

// greyRanges are ranges with and without a saturation floor: the band test
// of Plane is on for some, off for those that hold an exact grey, and the
// empty range skips every group.
func greyRanges() []Range {
	return []Range{
		DefaultRange(),
		{Lower: [3]uint8{20, 40, 30}, Upper: [3]uint8{100, 255, 255}},
		{Lower: [3]uint8{0, 1, 0}, Upper: [3]uint8{179, 255, 255}},
		{Lower: [3]uint8{170, 200, 200}, Upper: [3]uint8{10, 255, 255}}, // hue wraps: empty
		{Lower: [3]uint8{0, 0, 0}, Upper: [3]uint8{179, 255, 255}},      // every colour
		{Lower: [3]uint8{0, 0, 100}, Upper: [3]uint8{179, 30, 120}},     // greys only
	}
}

// TestThresholdBands checks NewThreshold's band test and runs table against
// its bits: when the test is on, no colour of the table has its three bytes
// in one band of 1<<bandShift values, a range holding an exact grey has it
// off, and every runs entry without its flag gives the bits of its blues.
func TestThresholdBands(t *testing.T) {
	hsv := NewHSV()
	step := 1
	if raceEnabled {
		step = 97
	}
	for _, r := range greyRanges() {
		thr := NewThreshold(hsv, r)
		grey := false
		for col := 0; col < 1<<24; col += step {
			if thr.lut[col>>6]>>(col&63)&1 == 0 {
				continue
			}
			b, g, rd := col&255, col>>8&255, col>>16
			if b == g && g == rd {
				grey = true
			}
			if s := thr.bandShift; thr.grey && b>>s == g>>s && g>>s == rd>>s {
				t.Fatalf("%v: colour %#06x lies in one band of %d, yet the band test is on", r, col, 1<<s)
			}
		}
		if grey && thr.grey {
			t.Errorf("%v holds a grey, yet the band test is on", r)
		}
		// The runs table gives the table's bit for every colour of a red
		// and green without the flag.
		split := 0
		for rg := 0; rg < 1<<16; rg += step {
			e := thr.runs[rg]
			if e>>16 != 0 {
				split++
				continue
			}
			for b := range 256 {
				col := rg<<8 | b
				if want := thr.lut[col>>6] >> (col & 63) & 1; inRun(e, uint64(b)) != want {
					t.Fatalf("%v: colour %#06x: runs entry %#x gives %d, table %d", r, col, e, inRun(e, uint64(b)), want)
				}
			}
		}
		t.Logf("%v: band test %v, band %d; %d reds and greens of several runs", r, thr.grey, 1<<thr.bandShift, split)
	}
	if thr := NewThreshold(hsv, DefaultRange()); !thr.grey || thr.bandShift != 5 {
		t.Errorf("default range: band test %v, shift %d, want on with bands of 32", thr.grey, thr.bandShift)
	}
}

// TestPlaneGreyish checks Plane against Mask on greyish images, where the
// band test decides most groups: levels across band boundaries, small
// channel spreads, single saturated pixels among grey ones, every range of
// greyRanges.
func TestPlaneGreyish(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	hsv := NewHSV()
	const w, h = 203, 40
	bgr := make([]byte, 3*w*h)
	depth := make([]uint16, w*h)
	want := make([]byte, w*h)
	c, err := NewContours(w, h, 4*w*h+4)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewContours(w, h, 4*w*h+4)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range greyRanges() {
		thr := NewThreshold(hsv, r)
		for round := range 20 {
			spread := round % 8 * 5 // 0: exact greys
			for y := range h {
				level := rng.IntN(256)
				switch y % 8 {
				case 0, 1: // black, white: bytes no shift tells from the frame
					level = 255 * (y % 8)
				case 2:
					level = 110 // within the greys-only range
				}
				for x := range w {
					i := y*w + x
					for ch := range 3 {
						bgr[3*i+ch] = byte(max(0, min(255, level+rng.IntN(2*spread+1)-spread)))
					}
					if rng.IntN(50) == 0 {
						bgr[3*i+1] = byte(rng.IntN(256))
					}
					depth[i] = uint16(rng.IntN(1100))
				}
			}
			planeMatchesMask(t, thr, c, ref, want, bgr, depth, w, h, BridgeDepthMin, BridgeDepthMax, fmt.Sprintf("%v, spread %d", r, spread))
		}
	}
}

// planeMatchesMask thresholds one frame both ways, the mask into want, and
// fails unless Plane's bit plane in c is the mask packed (into ref).
func planeMatchesMask(t *testing.T, thr *Threshold, c, ref *Contours, want, bgr []byte, depth []uint16, w, h int, lo, hi uint16, what string) {
	t.Helper()
	if err := thr.Mask(want, bgr, depth, w, h, lo, hi); err != nil {
		t.Fatal(err)
	}
	if err := thr.Plane(c, bgr, depth, lo, hi); err != nil {
		t.Fatal(err)
	}
	ref.pack(want)
	if !slices.Equal(c.fg, ref.fg) {
		t.Fatalf("%s: Plane's plane differs from the packed mask", what)
	}
}
