package tracker

import (
	"encoding/binary"
	"fmt"
	"math/bits"
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
// in one pass without an HSV image. The tables take 2.25 MiB; build them with
// NewThreshold, once per parameter set. A Threshold is read-only after
// construction and safe for concurrent use.
type Threshold struct {
	r Range
	// grey says that band holds masks for Plane's low-saturation test: no
	// colour of the table has its three bytes in one aligned band of
	// 1<<bandShift values, so a group of eight pixels that all do needs no
	// lookup. band[i] keeps the high bits of the bytes of colour word i
	// that pair a pixel's B with its G and its G with its R.
	grey      bool
	bandShift uint
	band      [3]uint64
	lut       [lutWords]uint64 // bit c&63 of word c>>6, c = r<<16 | g<<8 | b
	// runs holds, for each red and green (c>>8), the blues of the table as
	// one run: lo | hi<<8 (255 | 0 when there are none), plus 1<<16 when
	// they are not one run and the bits of lut must be read. At 256 KiB it
	// stays in a core's L2 cache, where lut, at 2 MiB, does not.
	runs [1 << 16]uint32
}

// Byte i of colour word j (of the three holding eight BGR pixels) is byte
// 8j+i of the group; these mark the bytes whose next byte belongs to the
// same pixel (a B before its G, a G before its R).
const (
	samePixel0 = 0xFFFF00FFFF00FFFF // bytes 0, 1, 3, 4, 6, 7
	samePixel1 = 0xFF00FFFF00FFFF00 // bytes 9, 10, 12, 13, 15
	samePixel2 = 0x00FFFF00FFFF00FF // bytes 16, 18, 19, 21, 22
)

// NewThreshold builds the colour table of r with the conversion c.
func NewThreshold(c *HSV, r Range) *Threshold {
	t := &Threshold{r: r}
	// The smallest band shift at which some colour of the table has its
	// three bytes in one band: 9 when the table is empty.
	sameAt := 9
	// Indexed by a pixel's three bytes read as a little-endian number, so
	// that Mask takes them straight from word loads.
	for col := 0; col < 1<<24; col++ {
		h, s, v := c.pixel(int32(col&255), int32(col>>8&255), int32(col>>16))
		if r.Contains(h, s, v) {
			t.lut[col>>6] |= 1 << (col & 63)
			d := col ^ col>>8 // B^G, G^R
			sameAt = min(sameAt, bits.Len8(uint8(d|d>>8)))
		}
	}
	for rg := range t.runs {
		t.runs[rg] = bluesRun(t.lut[4*rg : 4*rg+4 : 4*rg+4])
	}
	// A range with a saturation floor holds no grey: the widest band none
	// of its colours fits in lets Plane skip the lookups of greyish
	// backgrounds. A range that holds some exact grey (sameAt 0) gets none.
	if sameAt > 0 {
		t.grey = true
		t.bandShift = uint(sameAt - 1)
		hi := uint64(0xFF<<t.bandShift&0xFF) * 0x0101010101010101
		t.band = [3]uint64{hi & samePixel0, hi & samePixel1, hi & samePixel2}
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

// outLanes returns bit 15 of each 16-bit lane of v set when that depth lies
// outside the range whose constants are over = (0x7FFF−hi) and
// under = (0x8000−lo) in every lane (hi ≤ 0x7FFF): a lane's low 15 bits plus
// either constant stays within the lane, so no carry crosses lanes. lo0 says
// that lo is 0 (the bridge's range), where no depth lies below.
func outLanes(v, over, under uint64, lo0 bool) uint64 {
	a := v & lane15
	out := (a + over) | v // bit 15: d > hi
	if !lo0 {
		out |= ^((a + under) | v) // d < lo
	}
	return out
}

// Plane writes the same mask as Mask into c's foreground plane, one bit per
// pixel, so that c.FindPlane needs no byte mask. It takes a row eight pixels
// at a time: their eight depths in two words, whether they are all greyish
// (see NewThreshold), and only then their eight table bits. Each row takes
// the depth and the band test in the order that rejected more groups on the
// row above: a camera frame is spatially coherent, and the tests cost about
// the same.
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
	groups := 0
	if hi <= 0x7FFF {
		groups = w / 8
	}
	over := (0x7FFF - uint64(hi)&0x7FFF) * lane1
	under := (0x8000 - uint64(lo)) * lane1
	band := &t.band
	if !t.grey {
		band = nil
	}
	bits := c.rowBits
	depthFirst := true // on the first row
	lo0 := lo == 0
	for y := range h {
		src := bgr[3*y*w : 3*(y+1)*w]
		dep := depth[y*w : (y+1)*w]
		clear(bits[groups:])
		var r1, r2 int
		if depthFirst {
			r1, r2 = t.rowDepthFirst(bits[:groups], src[:24*groups], dep[:8*groups], over, under, lo0, band)
		} else {
			r1, r2 = t.rowBandFirst(bits[:groups], src[:24*groups], dep[:8*groups], over, under, lo0, band)
		}
		if r2 > r1 {
			depthFirst = !depthFirst
		}
		for x := 8 * groups; x < w; x++ {
			p := src[3*x : 3*x+3 : 3*x+3]
			bits[x>>3] |= byte(t.bit(dep[x], lo, hi-lo, uint32(p[0])|uint32(p[1])<<8|uint32(p[2])<<16) << (x & 7))
		}
		// Pixel x is bit x+1 of its plane row: the frame first.
		row := fg[(y+1)*rb : (y+2)*rb]
		var carry uint64
		for j := 0; j+8 <= len(row); j += 8 {
			v := binary.LittleEndian.Uint64(bits[j:])
			binary.LittleEndian.PutUint64(row[j:], v<<1|carry)
			carry = v >> 63
		}
	}
	return nil
}

// rowDepthFirst writes into g[i] the mask bits of pixels 8i…8i+7 of a row
// (pixel 8i+k in bit k), testing their depths first, then whether they are
// greyish, then looking up their colours. It returns how many groups the
// depth test rejected and how many the band test did.
func (t *Threshold) rowDepthFirst(g, src []byte, dep []uint16, over, under uint64, lo0 bool, band *[3]uint64) (depthOut, grey int) {
	for i := range g {
		// depth8, written out: it runs on every group.
		d := dep[8*i : 8*i+8 : 8*i+8]
		v0 := uint64(d[0]) | uint64(d[1])<<16 | uint64(d[2])<<32 | uint64(d[3])<<48
		v1 := uint64(d[4]) | uint64(d[5])<<16 | uint64(d[6])<<32 | uint64(d[7])<<48
		m := ^gather8(outLanes(v0, over, under, lo0), outLanes(v1, over, under, lo0))
		if m == 0 {
			depthOut++
			g[i] = 0
			continue
		}
		p := src[24*i : 24*i+24 : 24*i+24]
		w0 := binary.LittleEndian.Uint64(p[0:])
		w1 := binary.LittleEndian.Uint64(p[8:])
		w2 := binary.LittleEndian.Uint64(p[16:])
		if greyish(w0, w1, w2, band) {
			grey++
			g[i] = 0
			continue
		}
		g[i] = m & t.lookup8(w0, w1, w2)
	}
	return depthOut, grey
}

// rowBandFirst is rowDepthFirst with the band test first. It returns how
// many groups the band test rejected and how many the depth test did.
func (t *Threshold) rowBandFirst(g, src []byte, dep []uint16, over, under uint64, lo0 bool, band *[3]uint64) (grey, depthOut int) {
	if band == nil {
		depthOut, grey = t.rowDepthFirst(g, src, dep, over, under, lo0, band)
		return grey, depthOut
	}
	b0, b1, b2 := band[0], band[1], band[2]
	// The rest of the group in calls: the loop of greyish groups keeps its
	// few values in registers.
	for i := range g {
		p := src[24*i : 24*i+24 : 24*i+24]
		// greyish, with the bytes one further loaded from one further.
		w2 := binary.LittleEndian.Uint64(p[16:])
		if (binary.LittleEndian.Uint64(p[0:])^binary.LittleEndian.Uint64(p[1:]))&b0|
			(binary.LittleEndian.Uint64(p[8:])^binary.LittleEndian.Uint64(p[9:]))&b1|
			(w2^w2>>8)&b2 == 0 {
			grey++
			g[i] = 0
			continue
		}
		m := depth8(dep[8*i:8*i+8:8*i+8], over, under, lo0)
		if m == 0 {
			depthOut++
			g[i] = 0
			continue
		}
		g[i] = m & t.lookup8(binary.LittleEndian.Uint64(p[0:]), binary.LittleEndian.Uint64(p[8:]), w2)
	}
	return grey, depthOut
}

// greyish reports whether the eight pixels of the colour words w0, w1, w2
// all have their bytes in single bands (see NewThreshold): byte k of each
// XOR compares byte k of the group with byte k+1, and the masks keep the
// pairs within a pixel. A nil band (a table with a grey) makes it false.
func greyish(w0, w1, w2 uint64, band *[3]uint64) bool {
	return band != nil && (w0^(w0>>8|w1<<56))&band[0]|(w1^(w1>>8|w2<<56))&band[1]|(w2^w2>>8)&band[2] == 0
}

// depth8 returns the in-range bits of eight depths (depth k in bit k), with
// the constants of outLanes.
func depth8(d []uint16, over, under uint64, lo0 bool) byte {
	v0 := uint64(d[0]) | uint64(d[1])<<16 | uint64(d[2])<<32 | uint64(d[3])<<48
	v1 := uint64(d[4]) | uint64(d[5])<<16 | uint64(d[6])<<32 | uint64(d[7])<<48
	return ^gather8(outLanes(v0, over, under, lo0), outLanes(v1, over, under, lo0))
}

// bluesRun returns the runs entry of the 256 blues of one red and green,
// whose table bits are w.
func bluesRun(w []uint64) uint32 {
	lo, hi, runs := 255, 0, 0
	var prev uint64
	for i, x := range w {
		runs += bits.OnesCount64(x &^ (x<<1 | prev>>63)) // a set bit after a clear one
		prev = x
		if x != 0 {
			lo = min(lo, 64*i+bits.TrailingZeros64(x))
			hi = 64*i + 63 - bits.LeadingZeros64(x)
		}
	}
	e := uint32(lo | hi<<8)
	if runs > 1 {
		e |= 1 << 16
	}
	return e
}

// inRun is 1 when blue b (the low byte) lies within the run of entry e.
func inRun(e uint32, b uint64) uint64 {
	v := int64(b & 0xFF)
	return uint64(^((v - int64(e&0xFF)) | (int64(e>>8&0xFF) - v))) >> 63
}

// lookup8 returns the table bits of the eight colours of the 24 bytes w0,
// w1, w2 (colour k in bit k): colour k is bits 24k… of the bytes, its blue
// the low byte, its red and green the runs entry. Only when one of the
// eight is not a single run are the bits of lut read.
func (t *Threshold) lookup8(w0, w1, w2 uint64) byte {
	runs := &t.runs
	e0 := runs[w0>>8&0xFFFF]
	e1 := runs[w0>>32&0xFFFF]
	e2 := runs[(w0>>56|w1<<8)&0xFFFF]
	e3 := runs[w1>>16&0xFFFF]
	e4 := runs[w1>>40&0xFFFF]
	e5 := runs[w2&0xFFFF]
	e6 := runs[w2>>24&0xFFFF]
	e7 := runs[w2>>48]
	if (e0|e1|e2|e3|e4|e5|e6|e7)>>16 != 0 {
		return t.lutBits8(w0, w1, w2)
	}
	return byte(inRun(e0, w0) | inRun(e1, w0>>24)<<1 | inRun(e2, w0>>48)<<2 | inRun(e3, w1>>8)<<3 |
		inRun(e4, w1>>32)<<4 | inRun(e5, w1>>56)<<5 | inRun(e6, w2>>16)<<6 | inRun(e7, w2>>40)<<7)
}

// lutBits8 is lookup8 from the bits of lut: colour k's table word is the
// colour >> 6, its bit the colour & 63.
func (t *Threshold) lutBits8(w0, w1, w2 uint64) byte {
	lut := &t.lut
	return byte(lut[w0>>6&(lutWords-1)]>>(w0&63)&1 |
		lut[w0>>30&(lutWords-1)]>>(w0>>24&63)&1<<1 |
		lut[(w0>>54|w1<<10)&(lutWords-1)]>>(w0>>48&63)&1<<2 |
		lut[w1>>14&(lutWords-1)]>>(w1>>8&63)&1<<3 |
		lut[w1>>38&(lutWords-1)]>>(w1>>32&63)&1<<4 |
		lut[(w1>>62|w2<<2)&(lutWords-1)]>>(w1>>56&63)&1<<5 |
		lut[w2>>22&(lutWords-1)]>>(w2>>16&63)&1<<6 |
		lut[w2>>46&(lutWords-1)]>>(w2>>40&63)&1<<7)
}

// gather8 gathers bit 15 of the four 16-bit lanes of a into bits 0–3 and
// those of b into bits 4–7: the multiplier moves bit 16i and bit 16i+4 of
// their merge to bits 45+i and 49+i, and no two of its partial products
// meet below.
func gather8(a, b uint64) byte {
	x := a>>15&lane1 | b>>11&(lane1<<4)
	return byte(x * (1<<45 | 1<<30 | 1<<15 | 1) >> 45)
}
