package tracker

import (
	"encoding/binary"
	"fmt"
)

// Iterations is how many times emioapi applies cv2.erode and cv2.dilate.
const Iterations = 3

// MaxErosion bounds the erosion size accepted by NewMorph; emioapi's slider
// goes far lower.
const MaxErosion = 255

// Morph is emioapi's opening for one image size and erosion size e:
// cv2.erode(mask, kernel, iterations=3) then cv2.dilate(…, iterations=3),
// kernel an all-ones (2e+1)×(2e+1) rectangle with anchor (e, e). OpenCV runs
// three iterations of that rectangle as one (6e+1)×(6e+1) rectangle anchored
// at its centre, and its default morphology border value is +∞ for erode and
// −∞ for dilate: pixels outside the image never take part. Erosion is then the
// minimum and dilation the maximum over the window clipped to the image.
//
// Morph computes both separably on 64-bit words: along each row by doubling
// (extrema over spans of 1, 2, 4, … pixels, then two overlapping spans per
// window), down the columns with the van Herk/Gil–Werman running extrema. It
// works for any byte values, eight pixels per word; on images of 0 and 255
// only (masks) the extrema reduce to AND and OR on 64 pixels per word. The
// buffers belong to the Morph, which is not safe for concurrent use.
type Morph struct {
	w, h, e, r int
	stage      []byte   // 64·len(line): a row padded with r border values
	line       []uint64 // the padded row as words, plus one word of slack
	tmp        []uint64 // h·ws: the horizontal pass
	g, s       []uint64 // (h+2r)·ws each: vertical running extrema, padded rows
}

// A layout is how pixels sit in words: a byte each (8 per word), or a bit
// each (64 per word) for images of 0 and 255 only.
type layout struct {
	bits int // bits per pixel: 8 or 1
	ws   int // words per image row
	lw   int // words per padded row, plus one of slack
}

func (m *Morph) layout(o op) layout {
	bits := 8
	if o == opAnd || o == opOr {
		bits = 1
	}
	ppw := 64 / bits
	return layout{bits: bits, ws: (m.w + ppw - 1) / ppw, lw: (m.w+2*m.r+ppw-1)/ppw + 1}
}

// NewMorph allocates the buffers for w×h masks and erosion size e
// (0 ≤ e ≤ MaxErosion; 0 makes every operation a copy).
func NewMorph(w, h, e int) (*Morph, error) {
	if _, err := pixels(w, h); err != nil {
		return nil, err
	}
	if e < 0 || e > MaxErosion {
		return nil, fmt.Errorf("tracker: erosion size %d out of range 0–%d: %w", e, MaxErosion, ErrSize)
	}
	m := &Morph{w: w, h: h, e: e, r: Iterations * e}
	if e > 0 {
		// The byte layout needs the most words; the bit layout the most
		// staging bytes.
		l := m.layout(opMin)
		m.line = make([]uint64, l.lw)
		m.stage = make([]byte, 64*m.layout(opAnd).lw)
		m.tmp = make([]uint64, h*l.ws)
		m.g = make([]uint64, (h+2*m.r)*l.ws)
		m.s = make([]uint64, (h+2*m.r)*l.ws)
	}
	return m, nil
}

// Size returns the width, height and erosion size m was built for.
func (m *Morph) Size() (w, h, e int) { return m.w, m.h, m.e }

// Erode writes into dst cv2.erode(src, kernel, iterations=3). dst and src
// hold w·h bytes and may be the same buffer.
func (m *Morph) Erode(dst, src []byte) error {
	return m.apply(dst, src, true)
}

// Dilate writes into dst cv2.dilate(src, kernel, iterations=3). dst and src
// hold w·h bytes and may be the same buffer.
func (m *Morph) Dilate(dst, src []byte) error {
	return m.apply(dst, src, false)
}

// Open writes into dst emioapi's opening of src: Erode, then Dilate. dst and
// src hold w·h bytes and may be the same buffer.
func (m *Morph) Open(dst, src []byte) error {
	n := m.w * m.h
	if m.r == 0 || len(src) < n || len(dst) < n || !binaryImage(src[:n]) {
		if err := m.apply(dst, src, true); err != nil {
			return err
		}
		return m.apply(dst, dst, false)
	}
	// A mask: erode and dilate on bits, without unpacking in between.
	l := m.layout(opAnd)
	m.rows(src[:n], 255, opAnd, l)
	m.cols(nil, 255, opAnd, l)
	m.rowsFromBits(l)
	m.cols(dst[:n], 0, opOr, l)
	return nil
}

func (m *Morph) apply(dst, src []byte, erode bool) error {
	n := m.w * m.h
	if len(src) < n {
		return fmt.Errorf("tracker: morphology source of %d bytes, want %d for %dx%d: %w", len(src), n, m.w, m.h, ErrSize)
	}
	if len(dst) < n {
		return fmt.Errorf("tracker: morphology destination of %d bytes, want %d for %dx%d: %w", len(dst), n, m.w, m.h, ErrSize)
	}
	if m.r == 0 {
		copy(dst[:n], src[:n])
		return nil
	}
	// The border value: +∞ saturates to 255 for erode, −∞ to 0 for dilate.
	var pad byte
	o := opMax
	if erode {
		pad = 255
		o = opMin
	}
	if binaryImage(src[:n]) {
		o += opAnd - opMin
	}
	l := m.layout(o)
	m.rows(src[:n], pad, o, l)
	m.cols(dst[:n], pad, o, l)
	return nil
}

// rows runs the horizontal pass from src into m.tmp.
func (m *Morph) rows(src []byte, pad byte, o op, l layout) {
	w, r, ws := m.w, m.r, l.ws
	k := 2*r + 1
	np := w + 2*r
	st := m.stage
	for i := range st {
		st[i] = pad
	}
	line := m.line[:l.lw]
	for y := 0; y < m.h; y++ {
		copy(st[r:r+w], src[y*w:(y+1)*w])
		pack(line, st, l.bits)
		window(m.tmp[y*ws:(y+1)*ws], line, np, k, o, l)
	}
}

// rowsFromBits runs the horizontal pass of a dilation on the bit rows of
// m.tmp, in place: the dilation of an opening, after the erosion.
func (m *Morph) rowsFromBits(l layout) {
	w, r, ws := m.w, m.r, l.ws
	k := 2*r + 1
	line := m.line[:l.lw]
	q, sh := r/64, uint(r%64)
	var last uint64 = 1<<(w%64) - 1 // the pixels of a partial last word
	if w%64 == 0 {
		last = ^uint64(0)
	}
	for y := 0; y < m.h; y++ {
		row := m.tmp[y*ws : (y+1)*ws]
		fillWords(line, 0) // the border value of dilate
		for i, v := range row {
			if i == ws-1 {
				v &= last
			}
			line[q+i] |= v << sh
			if sh != 0 {
				line[q+i+1] |= v >> (64 - sh)
			}
		}
		window(row, line, w+2*r, k, opOr, l)
	}
}

// window sets pixel x of dst, for x in the image row, to the extremum of
// pixels x … x+k−1 of the padded row in line (np pixels), overwriting line.
// After the doubling step of span s, pixel x of line holds the extremum of
// pixels x … x+2s−1, valid for x < n; a window is then two overlapping spans,
// x … x+span−1 and x+k−span … x+k−1.
func window(dst, line []uint64, np, k int, o op, l layout) {
	n, span := np, 1
	for ; 2*span <= k; span *= 2 {
		n -= span
		shiftCombine(line[:(n*l.bits+63)/64], line, span*l.bits, o)
	}
	shiftCombineTo(dst, line, (k-span)*l.bits, o)
}

// pack fills line from the padded row st: a byte per pixel as is (bits = 8),
// or the top bit of each byte (bits = 1), pixel x in bit x%64 of word x/64.
func pack(line []uint64, st []byte, bits int) {
	if bits == 8 {
		for i := range line {
			line[i] = binary.LittleEndian.Uint64(st[8*i:])
		}
		return
	}
	for i := range line {
		b := st[64*i : 64*i+64]
		var v uint64
		for j := 0; j < 64; j += 8 {
			x := binary.LittleEndian.Uint64(b[j:j+8]) & 0x8080808080808080
			v |= (x * 0x0002040810204081 >> 56) << j
		}
		line[i] = v
	}
}

// unpack writes the len(d) pixels of row into d, the inverse of pack.
func unpack(d []byte, row []uint64, bits int) {
	w := len(d)
	i := 0
	if bits == 8 {
		for ; i+8 <= w; i += 8 {
			binary.LittleEndian.PutUint64(d[i:], row[i/8])
		}
		for ; i < w; i++ {
			d[i] = byte(row[i/8] >> (8 * (i % 8)))
		}
		return
	}
	for ; i+64 <= w; i += 64 {
		v := row[i/64]
		b := d[i : i+64]
		for j := 0; j < 64; j += 8 {
			t := (v >> j & 0xFF) * 0x0101010101010101 & 0x8040201008040201 // bit j in byte j
			t = (t | (t + 0x7F7F7F7F7F7F7F7F)) & 0x8080808080808080
			binary.LittleEndian.PutUint64(b[j:j+8], (t>>7)*0xFF)
		}
	}
	for ; i < w; i++ {
		d[i] = byte(0 - (row[i/64] >> (i % 64) & 1))
	}
}

// shiftCombine is shiftCombineTo with dst being line[:len(dst)] itself:
// each word is written after the words it reads at or above it.
func shiftCombine(dst, line []uint64, shift int, o op) {
	shiftCombineTo(dst, line, shift, o)
}

// shiftCombineTo sets the pixel at bit offset x of dst to op(the pixel at bit
// x of line, the pixel at bit x+shift of line). line must hold len(dst) +
// shift/64 + 1 words.
func shiftCombineTo(dst, line []uint64, shift int, o op) {
	q := shift / 64
	sh := uint(shift % 64)
	rs := (63 - sh) & 63 // b1<<1<<rs is b1<<(64−sh), and 0 for sh = 0
	a := line[:len(dst)]
	b0 := line[q : q+len(dst)]
	b1 := line[q+1 : q+1+len(dst)]
	switch o {
	case opAnd:
		for i := range dst {
			dst[i] = a[i] & (b0[i]>>sh | b1[i]<<1<<rs)
		}
	case opOr:
		for i := range dst {
			dst[i] = a[i] | (b0[i]>>sh | b1[i]<<1<<rs)
		}
	case opMin:
		for i := range dst {
			x, y := a[i], b0[i]>>sh|b1[i]<<1<<rs
			dst[i] = y ^ ((x ^ y) & less8(x, y))
		}
	default:
		for i := range dst {
			x, y := a[i], b0[i]>>sh|b1[i]<<1<<rs
			dst[i] = x ^ ((x ^ y) & less8(x, y))
		}
	}
}

// cols runs the vertical pass from m.tmp into dst, a row at a time: padded
// row j is row j−r of m.tmp, or the border value outside the image. With a
// nil dst the result stays in m.tmp, which the last step no longer reads.
func (m *Morph) cols(dst []byte, pad byte, o op, l layout) {
	w, h, r, ws := m.w, m.h, m.r, l.ws
	k := 2*r + 1
	nr := h + 2*r
	padWord := uint64(pad) * 0x0101010101010101
	row := func(j int) []uint64 { return m.tmp[(j-r)*ws : (j-r+1)*ws] }
	inside := func(j int) bool { return j >= r && j < r+h }
	// Forward running extrema, restarting at every multiple of k; the border
	// value is neutral, so a border row only carries the extremum on.
	for j := 0; j < nr; j++ {
		gj := m.g[j*ws : (j+1)*ws]
		switch {
		case j%k == 0 && inside(j):
			copy(gj, row(j))
		case j%k == 0:
			fillWords(gj, padWord)
		case inside(j):
			combine(gj, m.g[(j-1)*ws:j*ws], row(j), o)
		default:
			copy(gj, m.g[(j-1)*ws:j*ws])
		}
	}
	// Backward running extrema, restarting at every block end and at the last row.
	for j := nr - 1; j >= 0; j-- {
		sj := m.s[j*ws : (j+1)*ws]
		start := j%k == k-1 || j == nr-1
		switch {
		case start && inside(j):
			copy(sj, row(j))
		case start:
			fillWords(sj, padWord)
		case inside(j):
			combine(sj, m.s[(j+1)*ws:(j+2)*ws], row(j), o)
		default:
			copy(sj, m.s[(j+1)*ws:(j+2)*ws])
		}
	}
	// Window y … y+k−1 of padded rows: the backward extremum of row y and
	// the forward extremum of row y+k−1 (one block boundary lies between).
	out := m.g[:ws] // free by now: reused as the output row
	for y := 0; y < h; y++ {
		if dst == nil {
			out = m.tmp[y*ws : (y+1)*ws]
		}
		combine(out, m.s[y*ws:(y+1)*ws], m.g[(y+k-1)*ws:(y+k)*ws], o)
		if dst != nil {
			unpack(dst[y*w:(y+1)*w], out, l.bits)
		}
	}
}

// op selects the extremum: the minimum (erode) or maximum (dilate), and a
// faster form of each for images of 0 and 255 only, where they are AND and
// OR.
type op uint8

const (
	opMin op = iota
	opMax
	opAnd
	opOr
)

// combine sets dst[i] to op(a[i], b[i]) bytewise.
func combine(dst, a, b []uint64, o op) {
	a = a[:len(dst)]
	b = b[:len(dst)]
	switch o {
	case opAnd:
		for i := range dst {
			dst[i] = a[i] & b[i]
		}
	case opOr:
		for i := range dst {
			dst[i] = a[i] | b[i]
		}
	case opMin:
		for i := range dst {
			x, y := a[i], b[i]
			dst[i] = y ^ ((x ^ y) & less8(x, y)) // x where x < y
		}
	default:
		for i := range dst {
			x, y := a[i], b[i]
			dst[i] = x ^ ((x ^ y) & less8(x, y)) // y where x < y
		}
	}
}

// binaryImage reports whether every byte of b is 0 or 255: then every
// minimum is an AND and every maximum an OR.
func binaryImage(b []byte) bool {
	const low7 = 0x7F7F7F7F7F7F7F7F
	var acc uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		acc |= (x ^ x>>1) & low7 // a bit differing from the one above it
	}
	for ; i < len(b); i++ {
		if b[i] != 0 && b[i] != 255 {
			return false
		}
	}
	return acc == 0
}

// less8 compares the eight bytes of x and y as unsigned numbers and returns
// 0xFF in each byte where x < y, 0 elsewhere: the borrow out of bit 7 of a
// bytewise x − y.
func less8(x, y uint64) uint64 {
	const hi = 0x8080808080808080
	d := ((x | hi) - (y &^ hi)) ^ ((x ^ ^y) & hi) // bytewise x − y
	borrow := ((^x & y) | (^(x ^ y) & d)) & hi
	return (borrow >> 7) * 0xFF
}

func fillWords(b []uint64, v uint64) {
	for i := range b {
		b[i] = v
	}
}
