package tracker

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// MinArea is emioapi's default area threshold: a contour is a marker when
// its contourArea is strictly greater.
const MinArea = 100

// Point is a contour vertex in pixel coordinates.
type Point struct{ X, Y int32 }

// Blob is one external contour with OpenCV's shape values: Area is
// cv2.contourArea, M00, M10 and M01 are cv2.moments of the contour points
// (polygon moments), CX and CY the centroid M10/M00 and M01/M00 (0 when M00
// is 0), X and Y the centroid truncated toward zero as emioapi's int(…).
// Points is the number of CHAIN_APPROX_SIMPLE vertices.
type Blob struct {
	Area          float64
	CX, CY        float64
	M00, M10, M01 float64
	X, Y          int
	Points        int
}

// Contours finds the external contours of w×h masks as
// cv2.findContours(mask, RETR_EXTERNAL, CHAIN_APPROX_SIMPLE): Suzuki–Abe
// border following on 8-connected foreground (any non-zero byte), pixels
// outside the image count as background, contours in OpenCV's order (the
// reverse of the raster order of their first pixels) and vertices in
// OpenCV's order. Its buffers are allocated once by NewContours; it is not
// safe for concurrent use.
type Contours struct {
	w, h  int
	shift uint   // log2 of stride, the bits per padded row (≥ w+2, ≥ 64)
	fg    []byte // (h+2) padded rows of stride bits: 1 foreground, 0 background
	marks []byte // the marks of the pixels of fg byte i: bytes 2i (marked) and 2i+1 (markRight)
	// rowBits holds one row's mask bits for Threshold.Plane before they are
	// shifted into their plane row: stride bits.
	rowBits []byte
	pts     []Point    // vertices of all contours of the last Find
	starts  []int32    // start of each contour's vertices, in raster order, plus the end
	sums    [][3]int64 // twice the signed area, 6·m10 and 6·m01 of each contour, in raster order
	n       int        // contours of the last Find
	exact   int        // contours of at most this many vertices have exact integer sums
	// first is firstDir of neighbourTables; next is its nextDir indexed by
	// the direction the tracer came in (prevS<<9 | key), with the bit index
	// step of the new direction above the byte: one load for the tracer's
	// next pixel.
	first [512]uint8
	next  [8 << 9]int32
}

// planeSlack lets the tracer load two bytes at the last pixels of a plane;
// the slack stays zero.
const planeSlack = 8

// NewContours allocates the buffers for w×h masks and at most maxPoints
// contour vertices in all per frame (maxPoints ≥ 1).
func NewContours(w, h, maxPoints int) (*Contours, error) {
	if _, err := pixels(w, h); err != nil {
		return nil, err
	}
	if maxPoints < 1 || maxPoints > 1<<30 {
		return nil, fmt.Errorf("tracker: contour point limit %d out of range 1–2^30: %w", maxPoints, ErrSize)
	}
	// Blobs never share a 2×2 block and each contour has a vertex; one more
	// contour may start before the point limit stops Find.
	maxContours := min(((w+1)/2)*((h+1)/2), maxPoints) + 1
	// OpenCV sums the shoelace terms in float64; they are integers, so the
	// sums are exact, and equal to int64 sums, while every partial sum stays
	// within 2^53: n terms of at most maxTerm each.
	maxTerm := 2 * (w - 1) * (h - 1) * max(w-1, h-1)
	exact := math.MaxInt
	if maxTerm > 0 {
		exact = (1 << 53) / maxTerm
	}
	// A power of two: the tracer finds a pixel's coordinates with a shift
	// and a mask.
	shift := uint(max(6, bits.Len(uint(w+1))))
	size := (h+2)<<shift/8 + planeSlack
	c := &Contours{
		w: w, h: h, shift: shift,
		fg:      make([]byte, size),
		marks:   make([]byte, 2*size),
		rowBits: make([]byte, 1<<shift/8),
		pts:     make([]Point, 0, maxPoints),
		starts:  make([]int32, 0, maxContours+1),
		sums:    make([][3]int64, 0, maxContours),
		exact:   exact,
	}
	stride := 1 << shift
	deltas := [8]int{1, -stride + 1, -stride, -stride - 1, -1, stride - 1, stride, stride + 1}
	var nextDir *[8 << 9]uint8
	c.first, nextDir = neighbourTables()
	for prevS := range 8 {
		for key := range 512 {
			e := nextDir[(prevS+4)&7<<9|key]
			c.next[prevS<<9|key] = int32(deltas[e&7])<<8 | int32(e)
		}
	}
	return c, nil
}

// Byte-parallel constants: the low seven bits and the top bit of every byte
// of a word.
const (
	low8 = 0x7F7F7F7F7F7F7F7F
	msb8 = 0x8080808080808080
)

// nonzero8 returns 0x80 in each byte of v that is not zero, 0 elsewhere
// (exact: no borrow crosses bytes).
func nonzero8(v uint64) uint64 { return ((v & low8) + low8 | v) & msb8 }

// pack8 gathers the non-zero test of the eight bytes of v into a byte, byte
// i in bit i.
func pack8(v uint64) uint64 { return nonzero8(v) * 0x0002040810204081 >> 56 }

// Find traces the external contours of mask and appends one Blob per contour
// to dst[:0], in OpenCV's contour order. It allocates nothing when dst has
// room for every contour. The vertices stay available through Contour until
// the next call.
func (c *Contours) Find(mask []byte, w, h int, dst []Blob) ([]Blob, error) {
	dst = dst[:0]
	c.pts = c.pts[:0]
	c.starts = c.starts[:0]
	c.sums = c.sums[:0]
	c.n = 0
	if w != c.w || h != c.h {
		return dst, fmt.Errorf("tracker: %dx%d mask for contours of %dx%d: %w", w, h, c.w, c.h, ErrSize)
	}
	if len(mask) != w*h {
		return dst, fmt.Errorf("tracker: mask buffer of %d bytes, want %d for %dx%d: %w", len(mask), w*h, w, h, ErrSize)
	}
	c.pack(mask)
	return c.FindPlane(dst)
}

// FindPlane is Find on the foreground plane as Threshold.Plane left it.
func (c *Contours) FindPlane(dst []Blob) ([]Blob, error) {
	dst = dst[:0]
	c.pts = c.pts[:0]
	c.starts = c.starts[:0]
	c.sums = c.sums[:0]
	c.n = 0
	clear(c.marks)
	if err := c.scan(); err != nil {
		c.starts = c.starts[:0]
		c.sums = c.sums[:0]
		c.n = 0
		return dst, err
	}
	c.starts = append(c.starts, int32(len(c.pts)))

	if cap(dst) < c.n {
		dst = slices.Grow(dst, c.n) // once: Find then allocates nothing
	}
	dst = dst[:c.n]
	starts := c.starts[:c.n+1]
	sums := c.sums[:c.n]
	for j := range dst {
		i := c.n - 1 - j
		b := &dst[j]
		switch np := int(starts[i+1] - starts[i]); {
		case np > c.exact:
			*b = blobOf(c.pts[starts[i]:starts[i+1]])
		case sums[i][0] == 0: // single pixels, lines: no area, no moments
			*b = Blob{Points: np}
		default:
			blobOfSums(b, np, &sums[i])
		}
	}
	return dst, nil
}

// pack fills the foreground plane from mask: pixel (x, y) is bit x+1 of
// padded row y+1; the frame and the padding stay background.
func (c *Contours) pack(mask []byte) {
	w, h := c.w, c.h
	rb := 1 << c.shift / 8 // bytes per padded row
	fg := c.fg
	clear(fg[:rb])
	clear(fg[(h+1)*rb:])
	for y := range h {
		src := mask[y*w : (y+1)*w]
		row := fg[(y+1)*rb : (y+2)*rb]
		var carry uint64 // bits shifted out of the previous word: the frame first
		j := 0
		x := 0
		for ; x+64 <= w; x += 64 {
			s := src[x : x+64]
			v := pack8(binary.LittleEndian.Uint64(s[0:])) |
				pack8(binary.LittleEndian.Uint64(s[8:]))<<8 |
				pack8(binary.LittleEndian.Uint64(s[16:]))<<16 |
				pack8(binary.LittleEndian.Uint64(s[24:]))<<24 |
				pack8(binary.LittleEndian.Uint64(s[32:]))<<32 |
				pack8(binary.LittleEndian.Uint64(s[40:]))<<40 |
				pack8(binary.LittleEndian.Uint64(s[48:]))<<48 |
				pack8(binary.LittleEndian.Uint64(s[56:]))<<56
			binary.LittleEndian.PutUint64(row[8*j:], v<<1|carry)
			carry = v >> 63
			j++
		}
		if x < w {
			var v uint64
			i := 0
			for ; x+8 <= w; x += 8 {
				v |= pack8(binary.LittleEndian.Uint64(src[x:])) << i
				i += 8
			}
			for ; x < w; x++ {
				if src[x] != 0 {
					v |= 1 << i
				}
				i++
			}
			binary.LittleEndian.PutUint64(row[8*j:], v<<1|carry)
			carry = v >> 63
			j++
		}
		for ; 8*j < rb; j++ {
			binary.LittleEndian.PutUint64(row[8*j:], carry)
			carry = 0
		}
	}
}

// scan is Suzuki–Abe's raster scan for outer borders, 64 pixels a word: a
// border starts at an unmarked foreground pixel after a background one when
// the last marked pixel met on the row (OpenCV's lnbd) is the frame or a
// markRight pixel (negative in OpenCV's image), and not a markInside one.
// Only that last mark matters, so words without a candidate start cost a
// few bit operations.
func (c *Contours) scan() error {
	h := c.h
	rb := 1 << c.shift / 8
	fg, marks := c.fg, c.marks
	for y := 1; y <= h; y++ {
		inside := false // the last mark was a markInside one: the frame first
		var prev uint64 // the previous foreground word of the row
		for o := y * rb; o < (y+1)*rb; o += 8 {
			f := binary.LittleEndian.Uint64(fg[o:])
			if f == 0 {
				// No candidate, and no mark: marks are on foreground.
				prev = 0
				continue
			}
			bg := ^(f<<1 | prev>>63) // the left neighbour is background
			prev = f
			m, r := markWords(marks[2*o:])
			cand := f &^ m & bg
			for cand != 0 {
				k := uint(bits.TrailingZeros64(cand))
				if below := m & (1<<k - 1); below != 0 {
					inside = r>>(uint(bits.Len64(below))-1)&1 == 0
				}
				if inside { // a hole's border
					cand &^= 1 << k
					continue
				}
				single, err := c.follow(8*o + int(k))
				if err != nil {
					return err
				}
				c.n++
				if single {
					// Known marks: reading them back right after the
					// narrower store would stall on store forwarding.
					m |= 1 << k
					r |= 1 << k
				} else {
					// The border may have marked later pixels of this word.
					m, r = markWords(marks[2*o:])
				}
				cand = f &^ m & bg & (^uint64(0) << (k + 1))
			}
			if m != 0 {
				inside = r>>(uint(bits.Len64(m))-1)&1 == 0
			}
		}
	}
	return nil
}

// markWords returns the marked and markRight bits of 64 pixels from their
// 16 interleaved mark bytes.
func markWords(b []byte) (marked, right uint64) {
	u0 := binary.LittleEndian.Uint64(b[0:16])
	u1 := binary.LittleEndian.Uint64(b[8:16])
	return evenBytes(u0) | evenBytes(u1)<<32, evenBytes(u0>>8) | evenBytes(u1>>8)<<32
}

// evenBytes gathers bytes 0, 2, 4 and 6 of u into its low 32 bits.
func evenBytes(u uint64) uint64 {
	u &= 0x00FF00FF00FF00FF
	u = (u | u>>8) & 0x0000FFFF0000FFFF
	return (u | u>>16) & 0xFFFFFFFF
}

// neighbourTables returns the tracer's neighbourhood tables. A 3×3
// neighbourhood is a 9-bit key, bit 3·row+col (rows top to bottom, columns
// left to right, the centre ignored). firstDir[key] is where
// icvFetchContour's first, clockwise search from direction 3 stops (4 when
// there is no neighbour: a single pixel). nextDir[s<<9|key] is where its
// counter-clockwise search from direction s+1 stops (the low three bits),
// plus 0x80 when that search passed over an empty right neighbour (direction
// 0): the pixel is then marked markRight.
func neighbourTables() (firstDir [512]uint8, nextDir *[8 << 9]uint8) {
	dirBit := [8]uint{5, 2, 1, 0, 3, 6, 7, 8} // the key bit of each chain code's neighbour
	nextDir = new([8 << 9]uint8)
	for key := range 512 {
		set := func(d int) bool { return key>>dirBit[d&7]&1 != 0 }
		f := 4
		for _, d := range []int{3, 2, 1, 0, 7, 6, 5} {
			if set(d) {
				f = d
				break
			}
		}
		firstDir[key] = uint8(f)
		for s := range 8 {
			// As the tracer's loop: up to s+8, the pixel it came from.
			t := s + 1
			for t < s+8 && !set(t) {
				t++
			}
			e := uint8(t & 7)
			if uint(t&7-1) < uint(s) {
				e |= 0x80
			}
			nextDir[s<<9|key] = e
		}
	}
	return firstDir, nextDir
}

// follow traces the outer border starting at bit index b0, as OpenCV's
// icvFetchContour with CHAIN_APPROX_SIMPLE, and appends its vertices and
// their shoelace sums. It reads the neighbourhoods from the foreground plane,
// which it never writes: the marks go to their own plane, off the tracer's
// chain of dependent loads. Few values live across its loop, so that they
// stay in registers. It reports whether the border was a single pixel.
func (c *Contours) follow(b0 int) (single bool, err error) {
	fg, marks := c.fg, c.marks
	shift := c.shift
	stride := 1 << shift
	rb := stride / 8
	first := len(c.pts)
	c.starts = append(c.starts, int32(first))
	c.sums = append(c.sums, [3]int64{})
	// The key of bit b: the three bits from b−1 of the rows above, at and
	// below; stride is a whole number of bytes, so all three share a shift.
	key := func(b int) int {
		o, sh := (b-1)>>3, uint(b-1)&7
		up := (uint(fg[o-rb]) | uint(fg[o-rb+1])<<8) >> sh & 7
		mid := (uint(fg[o]) | uint(fg[o+1])<<8) >> sh & 5
		down := (uint(fg[o+rb]) | uint(fg[o+rb+1])<<8) >> sh & 7
		return int(up | mid<<3 | down<<6)
	}
	// mark sets the marks of bit b: marked, and markRight when right is 1.
	mark := func(b int, right uint16) {
		q := marks[2*(b>>3) : 2*(b>>3)+2]
		binary.LittleEndian.PutUint16(q, binary.LittleEndian.Uint16(q)|(1|right<<8)<<(b&7))
	}
	point := func(b int) Point { return Point{int32(b&(stride-1)) - 1, int32(b>>shift) - 1} }
	s := int(c.first[key(b0)])
	if s == 4 { // a single pixel
		mark(b0, 1)
		if first == cap(c.pts) {
			return true, fmt.Errorf("tracker: more than %d contour points: %w", cap(c.pts), ErrSize)
		}
		c.pts = append(c.pts, point(b0))
		return true, nil
	}
	deltas := [8]int{1, -stride + 1, -stride, -stride - 1, -1, stride - 1, stride, stride + 1}
	buf := c.pts[:cap(c.pts)]
	n := first
	// The trace ends on stepping from the second pixel b1 back to b0: in
	// direction s^4 from b1.
	end := (b0+deltas[s])<<3 | (s ^ 4)
	b3 := b0
	prevS := s ^ 4 // the search starts from (prevS+4)&7: s at first
	next := &c.next
	for {
		e := next[uint(prevS<<9|key(b3))&uint(len(next)-1)]
		ns := int(e & 7)
		// Branch-free marking and vertex output: both are data-dependent.
		// A markRight pixel stays one, as in OpenCV.
		mark(b3, uint16(e>>7&1))
		d := 0
		if ns != prevS {
			d = 1
		}
		if n < len(buf) {
			buf[n] = Point{int32(b3), int32(b3 >> 32)} // the bit index, made a point below
			n += d
		} else if d != 0 {
			c.pts = buf[:n]
			return false, fmt.Errorf("tracker: more than %d contour points: %w", cap(c.pts), ErrSize)
		}
		prevS = ns
		if b3<<3|ns == end {
			break
		}
		b3 += int(e >> 8)
	}
	c.pts = buf[:n]
	// The shoelace sums of contourArea and contourMoments, from the last
	// vertex to the first and on, in integers.
	pts := buf[first:n]
	if len(pts) == 0 {
		return false, nil
	}
	for i, p := range pts {
		pts[i] = point(int(p.Y)<<32 | int(uint32(p.X)))
	}
	p := pts[len(pts)-1]
	x1, y1 := int64(p.X), int64(p.Y)
	var a00, a10, a01 int64
	for _, p := range pts {
		x, y := int64(p.X), int64(p.Y)
		dxy := x1*y - x*y1
		a00 += dxy
		a10 += dxy * (x1 + x)
		a01 += dxy * (y1 + y)
		x1, y1 = x, y
	}
	c.sums[len(c.sums)-1] = [3]int64{a00, a10, a01}
	return false, nil
}

// Contour returns the vertices of the i-th blob of the last Find (same
// order as its result). The slice is valid until the next Find.
func (c *Contours) Contour(i int) []Point {
	if i < 0 || i >= c.n {
		return nil
	}
	j := c.n - 1 - i
	return c.pts[c.starts[j]:c.starts[j+1]:c.starts[j+1]]
}

// blobOfSums sets b to blobOf from exact shoelace sums with a non-zero
// area: OpenCV's float64 sums of the same integer terms are these integers,
// so the results are identical.
func blobOfSums(b *Blob, points int, s *[3]int64) {
	a00 := s[0]
	db12, db16 := 0.5, 0.16666666666666666666666666666667
	if a00 < 0 {
		db12, db16 = -0.5, -0.16666666666666666666666666666667
	}
	// |a00| ≥ 1 > FLT_EPSILON: OpenCV computes the moments.
	m00 := float64(a00) * db12
	m10 := float64(s[1]) * db16
	m01 := float64(s[2]) * db16
	cx, cy := m10/m00, m01/m00
	*b = Blob{
		Area: m00, // |a00|·0.5, as contourArea
		CX:   cx, CY: cy,
		M00: m00, M10: m10, M01: m01,
		X: int(cx), Y: int(cy),
		Points: points,
	}
}

// blobOf computes cv2.contourArea and cv2.moments (m00, m10, m01) of a
// polygon with OpenCV's formulas and summation order; Find uses it for
// contours too long for exact integer sums.
func blobOf(pts []Point) Blob {
	b := Blob{Points: len(pts)}
	if len(pts) == 0 {
		return b
	}
	// contourArea: points as float32, products and sum in float64.
	last := pts[len(pts)-1]
	px, py := float64(float32(last.X)), float64(float32(last.Y))
	var area float64
	for _, p := range pts {
		x, y := float64(float32(p.X)), float64(float32(p.Y))
		area += float64(px*y) - float64(py*x)
		px, py = x, y
	}
	area *= 0.5
	if area < 0 {
		area = -area
	}
	b.Area = area

	// moments: contourMoments on integer points.
	xi1, yi1 := float64(last.X), float64(last.Y)
	var a00, a10, a01 float64
	for _, p := range pts {
		xi, yi := float64(p.X), float64(p.Y)
		dxy := float64(xi1*yi) - float64(xi*yi1)
		a00 += dxy
		a10 += float64(dxy * (xi1 + xi))
		a01 += float64(dxy * (yi1 + yi))
		xi1, yi1 = xi, yi
	}
	const fltEpsilon = 1.1920928955078125e-07
	if a00 > fltEpsilon || a00 < -fltEpsilon {
		db12, db16 := 0.5, 0.16666666666666666666666666666667
		if a00 < 0 {
			db12, db16 = -0.5, -0.16666666666666666666666666666667
		}
		b.M00 = a00 * db12
		b.M10 = a10 * db16
		b.M01 = a01 * db16
		b.CX = b.M10 / b.M00
		b.CY = b.M01 / b.M00
		b.X, b.Y = int(b.CX), int(b.CY)
	}
	return b
}

// Markers keeps, in place and in order, the blobs whose Area is strictly
// greater than minArea, as emioapi's contourArea(c) > area test.
func Markers(blobs []Blob, minArea float64) []Blob {
	out := blobs[:0]
	for _, b := range blobs {
		if b.Area > minArea {
			out = append(out, b)
		}
	}
	return out
}

// unpack writes the foreground plane back as a w·h mask of 0 and 255 bytes:
// eight pixels a step, each bit spread to a byte.
func (c *Contours) unpack(mask []byte) {
	w := c.w
	rb := 1 << c.shift / 8
	for y := range c.h {
		row := c.fg[(y+1)*rb : (y+2)*rb]
		dst := mask[y*w : (y+1)*w]
		x := 0
		for ; x+8 <= w; x += 8 {
			b := uint64(binary.LittleEndian.Uint16(row[(x+1)>>3:]) >> ((x + 1) & 7) & 0xFF)
			// b in every byte, bit i kept in byte i, then each non-zero
			// byte made 0xFF.
			s := ((b*0x0101010101010101&0x8040201008040201 + low8) >> 7 & 0x0101010101010101) * 0xFF
			binary.LittleEndian.PutUint64(dst[x:], s)
		}
		for ; x < w; x++ {
			dst[x] = byte(0 - (row[(x+1)>>3] >> ((x + 1) & 7) & 1))
		}
	}
}
