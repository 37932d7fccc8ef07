package tracker

import "fmt"

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
	w, h   int
	img    []int8  // (w+2)×(h+2): 0 background, 1 foreground, 2/−126 marked
	pts    []Point // vertices of all contours of the last Find
	starts []int32 // start of each contour's vertices, in raster order, plus the end
	n      int     // contours of the last Find
}

// NewContours allocates the buffers for w×h masks and at most maxPoints
// contour vertices in all per frame (maxPoints ≥ 1).
func NewContours(w, h, maxPoints int) (*Contours, error) {
	n, err := pixels(w, h)
	if err != nil {
		return nil, err
	}
	if maxPoints < 1 || maxPoints > 1<<30 {
		return nil, fmt.Errorf("tracker: contour point limit %d out of range 1–2^30: %w", maxPoints, ErrSize)
	}
	return &Contours{
		w: w, h: h,
		img:    make([]int8, (w+2)*(h+2)),
		pts:    make([]Point, 0, maxPoints),
		starts: make([]int32, 0, n/2+2),
	}, nil
}

// codeDeltas are the steps of the 8 chain codes (0 right, counter-clockwise).
var codeDeltas = [8]Point{{1, 0}, {1, -1}, {0, -1}, {-1, -1}, {-1, 0}, {-1, 1}, {0, 1}, {1, 1}}

const (
	markInside = 2
	markRight  = 2 | -128 // a border pixel whose right neighbour is background
)

// Find traces the external contours of mask and appends one Blob per contour
// to dst[:0], in OpenCV's contour order. It allocates nothing when dst has
// room for every contour. The vertices stay available through Contour until
// the next call.
func (c *Contours) Find(mask []byte, w, h int, dst []Blob) ([]Blob, error) {
	dst = dst[:0]
	c.pts = c.pts[:0]
	c.starts = c.starts[:0]
	c.n = 0
	if w != c.w || h != c.h {
		return dst, fmt.Errorf("tracker: %dx%d mask for contours of %dx%d: %w", w, h, c.w, c.h, ErrSize)
	}
	if len(mask) != w*h {
		return dst, fmt.Errorf("tracker: mask buffer of %d bytes, want %d for %dx%d: %w", len(mask), w*h, w, h, ErrSize)
	}
	step := w + 2
	img := c.img
	for x := range step {
		img[x] = 0
		img[(h+1)*step+x] = 0
	}
	for y := range h {
		row := img[(y+1)*step : (y+2)*step]
		row[0], row[w+1] = 0, 0
		src := mask[y*w : (y+1)*w]
		for x, v := range src {
			var b int8
			if v != 0 {
				b = 1
			}
			row[x+1] = b
		}
	}
	deltas := [16]int{1, -step + 1, -step, -step - 1, -1, step - 1, step, step + 1}
	copy(deltas[8:], deltas[:8])

	for y := 1; y <= h; y++ {
		row := y * step
		lnbd := row // the last marked pixel met on this row (the frame at first)
		prev := int8(0)
		for x := 1; x <= w; x++ {
			p := img[row+x]
			if p == prev {
				continue
			}
			if prev == 0 && p == 1 && img[lnbd] <= 0 {
				if err := c.follow(row+x, Point{int32(x - 1), int32(y - 1)}, &deltas); err != nil {
					c.starts = c.starts[:0]
					c.n = 0
					return dst, err
				}
				c.n++
				// The start pixel is marked now: it is the new lnbd.
				lnbd = row + x
				prev = img[row+x]
				continue
			}
			prev = p
			if prev != 0 && prev != 1 {
				lnbd = row + x
			}
		}
	}
	c.starts = append(c.starts, int32(len(c.pts)))

	for i := c.n - 1; i >= 0; i-- {
		dst = append(dst, blobOf(c.pts[c.starts[i]:c.starts[i+1]]))
	}
	return dst, nil
}

// follow traces the outer border starting at image offset i0 (pixel pt), as
// OpenCV's icvFetchContour with CHAIN_APPROX_SIMPLE, and appends its vertices.
func (c *Contours) follow(i0 int, pt Point, deltas *[16]int) error {
	img := c.img
	c.starts = append(c.starts, int32(len(c.pts)))
	s, sEnd := 4, 4
	for {
		s = (s - 1) & 7
		if img[i0+deltas[s]] != 0 || s == sEnd {
			break
		}
	}
	if s == sEnd { // a single pixel
		img[i0] = markRight
		return c.push(pt)
	}
	i1 := i0 + deltas[s]
	i3 := i0
	prevS := s ^ 4
	for {
		sEnd = s
		i4 := 0
		for s < 15 {
			s++
			i4 = i3 + deltas[s]
			if img[i4] != 0 {
				break
			}
		}
		s &= 7
		if uint(s-1) < uint(sEnd) {
			img[i3] = markRight
		} else if img[i3] == 1 {
			img[i3] = markInside
		}
		if s != prevS {
			if err := c.push(pt); err != nil {
				return err
			}
			prevS = s
		}
		pt.X += codeDeltas[s].X
		pt.Y += codeDeltas[s].Y
		if i4 == i0 && i3 == i1 {
			return nil
		}
		i3 = i4
		s = (s + 4) & 7
	}
}

func (c *Contours) push(p Point) error {
	if len(c.pts) == cap(c.pts) {
		return fmt.Errorf("tracker: more than %d contour points: %w", cap(c.pts), ErrSize)
	}
	c.pts = append(c.pts, p)
	return nil
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

// blobOf computes cv2.contourArea and cv2.moments (m00, m10, m01) of a
// polygon with OpenCV's formulas and summation order.
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
