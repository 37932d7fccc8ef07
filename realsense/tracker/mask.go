package tracker

import (
	"encoding/binary"
	"fmt"
)

// Range holds inclusive HSV bounds, as the lower and upper arrays given to
// cv2.inRange: a pixel is in range when every channel c satisfies
// Lower[c] ≤ hsv[c] ≤ Upper[c]. Channels are hue (0–179), saturation and
// value. An empty interval (Lower > Upper) selects nothing.
type Range struct {
	Lower, Upper [3]uint8
}

// DefaultRange returns emioapi's default thresholds (cameraparameter.json,
// DEFAULT_CAMERA_PARAMS): hue 36–90, saturation 138–255, value 35–255, the
// green of the Emio markers.
func DefaultRange() Range {
	return Range{Lower: [3]uint8{36, 138, 35}, Upper: [3]uint8{90, 255, 255}}
}

// Contains reports whether an HSV triple lies within r.
func (r Range) Contains(h, s, v uint8) bool {
	return r.Lower[0] <= h && h <= r.Upper[0] &&
		r.Lower[1] <= s && s <= r.Upper[1] &&
		r.Lower[2] <= v && v <= r.Upper[2]
}

// Bridge depth limits in raw Z16 units (mm): emioapi's UDP bridge calls the
// tracker with depth_min 0 and depth_max 1000, so zero (invalid) depth passes.
const (
	BridgeDepthMin = 0
	BridgeDepthMax = 1000
)

// InRange writes the mask of the w×h HSV image hsv into dst, one byte per
// pixel: 255 where the pixel is within r, 0 elsewhere, as cv2.inRange.
// hsv must hold 3·w·h bytes and dst w·h bytes.
func InRange(dst, hsv []byte, w, h int, r Range) error {
	n, err := pixels(w, h)
	if err != nil {
		return err
	}
	if len(hsv) < 3*n {
		return fmt.Errorf("tracker: HSV buffer of %d bytes, want %d for %dx%d: %w", len(hsv), 3*n, w, h, ErrSize)
	}
	if len(dst) < n {
		return fmt.Errorf("tracker: mask buffer of %d bytes, want %d for %dx%d: %w", len(dst), n, w, h, ErrSize)
	}
	dst = dst[:n]
	src := hsv[:3*n]
	if r.Lower[0] > r.Upper[0] || r.Lower[1] > r.Upper[1] || r.Lower[2] > r.Upper[2] {
		clear(dst)
		return nil
	}
	// x is within [lo, lo+d] when uint8(x−lo) ≤ d; the sign of the OR of the
	// three d − uint8(x−lo) says whether all three are, without a branch.
	l0, l1, l2 := r.Lower[0], r.Lower[1], r.Lower[2]
	d0 := int32(r.Upper[0] - l0)
	d1 := int32(r.Upper[1] - l1)
	d2 := int32(r.Upper[2] - l2)
	for i := range dst {
		p := src[3*i : 3*i+3 : 3*i+3]
		t := (d0 - int32(p[0]-l0)) | (d1 - int32(p[1]-l1)) | (d2 - int32(p[2]-l2))
		dst[i] = byte(^(t >> 31))
	}
	return nil
}

// AndDepth clears every mask pixel whose depth lies outside [lo, hi], i.e.
// mask = mask AND cv2.inRange(depth, lo, hi): inclusive bounds, in raw Z16
// units (millimetres with emioapi's depth_units of 0.001). mask and depth
// hold w·h values.
func AndDepth(mask []byte, depth []uint16, w, h int, lo, hi uint16) error {
	n, err := pixels(w, h)
	if err != nil {
		return err
	}
	if len(mask) < n {
		return fmt.Errorf("tracker: mask buffer of %d bytes, want %d for %dx%d: %w", len(mask), n, w, h, ErrSize)
	}
	if len(depth) < n {
		return fmt.Errorf("tracker: depth buffer of %d values, want %d for %dx%d: %w", len(depth), n, w, h, ErrSize)
	}
	mask = mask[:n]
	depth = depth[:n]
	if lo > hi {
		clear(mask)
		return nil
	}
	span := int32(hi - lo)
	for i, d := range depth {
		mask[i] &= byte(^((span - int32(d-lo)) >> 31)) // d−lo wraps when d < lo
	}
	return nil
}

// lutWords is the size of a colour table of one bit per BGR colour.
const lutWords = 1 << 24 / 64

// Threshold is the fused first stage of the tracker (docs/realsense.md §11):
// a depth range test, then one bit per BGR colour telling whether its HSV lies
// within a Range. It produces the same mask as Convert, InRange and AndDepth
// in one pass without an HSV image. The table takes 2 MiB; build it with
// NewThreshold, once per parameter set. A Threshold is read-only after
// construction and safe for concurrent use.
type Threshold struct {
	r   Range
	lut [lutWords]uint64 // bit c&63 of word c>>6, c = r<<16 | g<<8 | b
}

// NewThreshold builds the colour table of r with the conversion c.
func NewThreshold(c *HSV, r Range) *Threshold {
	t := &Threshold{r: r}
	// Indexed by a pixel's three bytes read as a little-endian number, so
	// that Mask takes them straight from word loads.
	for col := 0; col < 1<<24; col++ {
		h, s, v := c.pixel(int32(col&255), int32(col>>8&255), int32(col>>16))
		if r.Contains(h, s, v) {
			t.lut[col>>6] |= 1 << (col & 63)
		}
	}
	return t
}

// Range returns the HSV bounds the table was built for.
func (t *Threshold) Range() Range { return t.r }

// Mask writes into dst (w·h bytes) 255 for each pixel of the w×h BGR8 image
// bgr whose depth is within [lo, hi] (inclusive, raw Z16 units) and whose HSV
// is within the table's Range, and 0 elsewhere.
func (t *Threshold) Mask(dst, bgr []byte, depth []uint16, w, h int, lo, hi uint16) error {
	n, err := pixels(w, h)
	if err != nil {
		return err
	}
	if len(bgr) < 3*n {
		return fmt.Errorf("tracker: BGR buffer of %d bytes, want %d for %dx%d: %w", len(bgr), 3*n, w, h, ErrSize)
	}
	if len(depth) < n {
		return fmt.Errorf("tracker: depth buffer of %d values, want %d for %dx%d: %w", len(depth), n, w, h, ErrSize)
	}
	if len(dst) < n {
		return fmt.Errorf("tracker: mask buffer of %d bytes, want %d for %dx%d: %w", len(dst), n, w, h, ErrSize)
	}
	dst = dst[:n]
	depth = depth[:n]
	src := bgr[:3*n]
	if lo > hi {
		clear(dst)
		return nil
	}
	span := hi - lo
	// Eight pixels a step: three word loads hold their 24 colour bytes and
	// one word store their mask bytes.
	i := 0
	for ; i+8 <= n; i += 8 {
		d := depth[i : i+8 : i+8]
		p := src[3*i : 3*i+24 : 3*i+24]
		w0 := binary.LittleEndian.Uint64(p[0:])
		w1 := binary.LittleEndian.Uint64(p[8:])
		w2 := binary.LittleEndian.Uint64(p[16:])
		m := t.bit(d[0], lo, span, uint32(w0)) |
			t.bit(d[1], lo, span, uint32(w0>>24))<<8 |
			t.bit(d[2], lo, span, uint32(w0>>48|w1<<16))<<16 |
			t.bit(d[3], lo, span, uint32(w1>>8))<<24 |
			t.bit(d[4], lo, span, uint32(w1>>32))<<32 |
			t.bit(d[5], lo, span, uint32(w1>>56|w2<<8))<<40 |
			t.bit(d[6], lo, span, uint32(w2>>16))<<48 |
			t.bit(d[7], lo, span, uint32(w2>>40))<<56
		binary.LittleEndian.PutUint64(dst[i:], m*0xFF)
	}
	for ; i < n; i++ {
		p := src[3*i : 3*i+3 : 3*i+3]
		c := uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16
		dst[i] = byte(t.bit(depth[i], lo, span, c) * 0xFF)
	}
	return nil
}

// bit is 1 when depth d is within [lo, hi] and colour c (the low 24 bits)
// within the table's Range; span is hi−lo. Depth first: the table is looked up only for
// pixels in range, which on real frames are spatially coherent, so the
// branch predicts well.
func (t *Threshold) bit(d, lo, span uint16, c uint32) uint64 {
	if d-lo > span { // d−lo wraps when d < lo
		return 0
	}
	c &= 1<<24 - 1
	return t.lut[c>>6] >> (c & 63) & 1
}

// Depth lanes: four Z16 values a word, the top bit of each lane the answer.
const (
	lane15 = 0x7FFF7FFF7FFF7FFF
	laneH  = 0x8000800080008000
	lane1  = 0x0001000100010001
)

// depthLanes returns bit 15 of each 16-bit lane of v set when that depth
// lies within the range whose constants are over = (0x7FFF−hi) and
// under = (0x8000−lo) in every lane (hi ≤ 0x7FFF): a lane's low 15 bits plus
// either constant stays within the lane, so no carry crosses lanes.
func depthLanes(v, over, under uint64) uint64 {
	a := v & lane15
	above := (a + over) | v // bit 15: d > hi
	atLeast := (a + under) | v
	return atLeast &^ above & laneH
}

// Plane writes the same mask as Mask into c's foreground plane, one bit per
// pixel, so that c.FindPlane needs no byte mask: eight pixels a step, whose
// eight depths are tested in two words, and whose colours are looked up only
// when one of those depths is in range (on a camera frame, the part beyond
// the depth range is large and contiguous).
func (t *Threshold) Plane(c *Contours, bgr []byte, depth []uint16, lo, hi uint16) error {
	w, h := c.w, c.h
	n := w * h
	if len(bgr) < 3*n {
		return fmt.Errorf("tracker: BGR buffer of %d bytes, want %d for %dx%d: %w", len(bgr), 3*n, w, h, ErrSize)
	}
	if len(depth) < n {
		return fmt.Errorf("tracker: depth buffer of %d values, want %d for %dx%d: %w", len(depth), n, w, h, ErrSize)
	}
	rb := 1 << c.shift / 8
	fg := c.fg
	clear(fg[:rb])
	clear(fg[(h+1)*rb:])
	if lo > hi {
		clear(fg)
		return nil
	}
	// The lane form needs hi below 2^15 (32 m); beyond, every pixel takes
	// the per-pixel test.
	lanes := hi <= 0x7FFF
	over := (0x7FFF - uint64(hi)&0x7FFF) * lane1
	under := (0x8000 - uint64(lo)) * lane1
	span := hi - lo
	for y := range h {
		t.planeRow(fg[(y+1)*rb:(y+2)*rb], bgr[3*y*w:3*(y+1)*w], depth[y*w:(y+1)*w], lanes, over, under, lo, span)
	}
	return nil
}

// planeRow is Plane on one row of w = len(dep) pixels: src holds their 3·w
// colour bytes and row is their padded plane row. A function of its own, so
// that the loop's values stay in registers.
func (t *Threshold) planeRow(row, src []byte, dep []uint16, lanes bool, over, under uint64, lo, span uint16) {
	w := len(dep)
	src = src[:3*w]
	lut := &t.lut
	var carry uint64 // the bit shifted out of the previous word: the frame first
	j := 0
	x := 0
	for x < w {
		var v uint64
		k := 0
		for ; lanes && k < 64 && x+8 <= w; k += 8 {
			d := dep[x : x+8 : x+8]
			d0 := depthLanes(uint64(d[0])|uint64(d[1])<<16|uint64(d[2])<<32|uint64(d[3])<<48, over, under)
			d1 := depthLanes(uint64(d[4])|uint64(d[5])<<16|uint64(d[6])<<32|uint64(d[7])<<48, over, under)
			if d0|d1 != 0 {
				p := src[3*x : 3*x+24 : 3*x+24]
				w0 := binary.LittleEndian.Uint64(p[0:])
				w1 := binary.LittleEndian.Uint64(p[8:])
				w2 := binary.LittleEndian.Uint64(p[16:])
				// Pixel i's colour is bits 24i… of the 24 bytes: its table
				// word is the colour >> 6, its bit the colour & 63.
				g := lut[w0>>6&(lutWords-1)]>>(w0&63)&1 |
					lut[w0>>30&(lutWords-1)]>>(w0>>24&63)&1<<1 |
					lut[(w0>>54|w1<<10)&(lutWords-1)]>>(w0>>48&63)&1<<2 |
					lut[w1>>14&(lutWords-1)]>>(w1>>8&63)&1<<3 |
					lut[w1>>38&(lutWords-1)]>>(w1>>32&63)&1<<4 |
					lut[(w1>>62|w2<<2)&(lutWords-1)]>>(w1>>56&63)&1<<5 |
					lut[w2>>22&(lutWords-1)]>>(w2>>16&63)&1<<6 |
					lut[w2>>46&(lutWords-1)]>>(w2>>40&63)&1<<7
				g &= lanes4(d0) | lanes4(d1)<<4
				v |= g << k
			}
			x += 8
		}
		for ; k < 64 && x < w; k++ {
			p := src[3*x : 3*x+3 : 3*x+3]
			v |= t.bit(dep[x], lo, span, uint32(p[0])|uint32(p[1])<<8|uint32(p[2])<<16) << k
			x++
		}
		binary.LittleEndian.PutUint64(row[8*j:], v<<1|carry)
		carry = v >> 63
		j++
	}
	for ; 8*j < len(row); j++ {
		binary.LittleEndian.PutUint64(row[8*j:], carry)
		carry = 0
	}
}

// lanes4 gathers bit 15 of the four 16-bit lanes of x into bits 0–3: the
// multiplier moves lane i's bit to bit 45+i, and no two of its partial
// products meet.
func lanes4(x uint64) uint64 {
	return (x >> 15) * (1<<45 | 1<<30 | 1<<15 | 1) >> 45 & 0xF
}
