package tracker

import "fmt"

// hsvShift is OpenCV's fixed-point shift in RGB2HSV_b.
const hsvShift = 12

// HueRange is the number of hue values of OpenCV's 8-bit HSV: hue is 0–179.
const HueRange = 180

// HSV converts 8-bit BGR pixels to 8-bit HSV exactly as OpenCV's
// cvtColor(COLOR_BGR2HSV). It owns OpenCV's two division tables; build it with
// NewHSV. A HSV is read-only after construction and safe for concurrent use.
type HSV struct {
	sdiv [256]int32 // round((255 << 12) / i), sdiv[0] = 0
	hdiv [256]int32 // round((180 << 12) / (6 i)), hdiv[0] = 0
}

// NewHSV builds the division tables of OpenCV's RGB2HSV_b. No entry is a tie,
// so integer rounding half up equals OpenCV's cvRound.
func NewHSV() *HSV {
	c := new(HSV)
	for i := int32(1); i < 256; i++ {
		c.sdiv[i] = (2*(255<<hsvShift) + i) / (2 * i)
		c.hdiv[i] = (2*(HueRange<<hsvShift) + 6*i) / (12 * i)
	}
	return c
}

// Pixel converts one BGR colour to (hue, saturation, value).
func (c *HSV) Pixel(b, g, r uint8) (h, s, v uint8) {
	return c.pixel(int32(b), int32(g), int32(r))
}

// pixel is RGB2HSV_b written without data-dependent branches: min and max
// use sign masks, and the v == r / v == g selections use all-ones masks as
// OpenCV's scalar loop does.
func (c *HSV) pixel(b, g, r int32) (uint8, uint8, uint8) {
	d := b - g
	v := b - (d & (d >> 31)) // max(b, g)
	m := g + (d & (d >> 31)) // min(b, g)
	d = v - r
	v -= d & (d >> 31)
	d = m - r
	m = r + (d & (d >> 31))
	diff := v - m

	vr := isZero(v - r) // -1 when v == r
	vg := isZero(v - g)
	s := (diff*c.sdiv[v&255] + 1<<(hsvShift-1)) >> hsvShift
	h := (vr & (g - b)) + (^vr & ((vg & (b - r + 2*diff)) + (^vg & (r - g + 4*diff))))
	h = (h*c.hdiv[diff&255] + 1<<(hsvShift-1)) >> hsvShift
	h += (h >> 31) & HueRange
	return uint8(h), uint8(s), uint8(v)
}

// isZero returns -1 when x == 0 and 0 otherwise, for |x| < 2^31.
func isZero(x int32) int32 {
	return ^((x | -x) >> 31)
}

// Convert writes the HSV image of the w×h BGR8 image bgr into dst, 3 bytes
// per pixel in the order H, S, V, as cvtColor(COLOR_BGR2HSV). Both buffers
// must hold at least 3·w·h bytes; dst may be bgr itself.
func (c *HSV) Convert(dst, bgr []byte, w, h int) error {
	n, err := pixels(w, h)
	if err != nil {
		return err
	}
	if len(bgr) < 3*n {
		return fmt.Errorf("tracker: BGR buffer of %d bytes, want %d for %dx%d: %w", len(bgr), 3*n, w, h, ErrSize)
	}
	if len(dst) < 3*n {
		return fmt.Errorf("tracker: HSV buffer of %d bytes, want %d for %dx%d: %w", len(dst), 3*n, w, h, ErrSize)
	}
	src := bgr[:3*n]
	dst = dst[:3*n]
	for i := 0; i < len(src); i += 3 {
		p := src[i : i+3 : i+3]
		q := dst[i : i+3 : i+3]
		q[0], q[1], q[2] = c.pixel(int32(p[0]), int32(p[1]), int32(p[2]))
	}
	return nil
}

// pixels checks an image size and returns its pixel count.
func pixels(w, h int) (int, error) {
	if w <= 0 || w > 1<<16 {
		return 0, fmt.Errorf("tracker: width %d out of range 1–65536: %w", w, ErrSize)
	}
	if h <= 0 || h > 1<<16 {
		return 0, fmt.Errorf("tracker: height %d out of range 1–65536: %w", h, ErrSize)
	}
	return w * h, nil
}
