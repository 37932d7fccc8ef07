package tracker

import (
	"math"
	"slices"
)

// filler fills contour polygons the way cv2.drawContours(img, [c], −1, 255,
// −1) does, into a reused w×h buffer, and takes the median of the depths
// under them. It allocates nothing after newFiller.
//
// OpenCV fills a contour by drawing every edge as an 8-connected line and
// filling between the edge crossings of each pixel row (even–odd). Edges of a
// CHAIN_APPROX_SIMPLE contour run in one of the 8 chain directions, so their
// lines are exactly the pixels on them, and the filled set is: the pixels on
// the polygon's boundary plus the pixels inside it. Holes of the blob are
// inside the outer contour and count.
type filler struct {
	w, h  int
	img   []byte    // w·h, 1 inside the polygon being filled, 0 elsewhere
	xs    []float64 // crossings of one row
	depth []uint16  // non-zero depths under the polygon
}

// newFiller sizes the row crossings for the worst case: a crossing of row y
// is a chain step between rows y and y+1, starting at a pixel of one of the
// two rows, and a trace leaves a pixel at most four times, so a row has at
// most 8·w crossings (and never more than the contour's vertices).
func newFiller(w, h, maxPoints int) *filler {
	return &filler{
		w: w, h: h,
		img:   make([]byte, w*h),
		xs:    make([]float64, 0, min(maxPoints, 8*w+8)),
		depth: make([]uint16, 0, w*h),
	}
}

// fill marks the polygon pts in f.img and returns its bounding box clipped
// to the image (x0 > x1 when nothing is marked).
func (f *filler) fill(pts []Point) (x0, y0, x1, y1 int) {
	x0, y0, x1, y1 = f.w, f.h, -1, -1
	if len(pts) == 0 {
		return
	}
	bx0, by0, bx1, by1 := pts[0].X, pts[0].Y, pts[0].X, pts[0].Y
	for _, p := range pts {
		bx0, bx1 = min(bx0, p.X), max(bx1, p.X)
		by0, by1 = min(by0, p.Y), max(by1, p.Y)
	}
	x0, y0 = max(int(bx0), 0), max(int(by0), 0)
	x1, y1 = min(int(bx1), f.w-1), min(int(by1), f.h-1)
	if x0 > x1 || y0 > y1 {
		return f.w, f.h, -1, -1
	}
	// Interior: even–odd crossings of the line through the pixel centres of
	// row y, with the half-open rule y0 ≤ y < y1 per edge so that a vertex
	// is counted once. Pixels exactly on an edge are drawn below anyway.
	for y := y0; y <= y1; y++ {
		xs := f.xs[:0]
		prev := pts[len(pts)-1]
		for _, p := range pts {
			a, b := prev, p
			prev = p
			if a.Y == b.Y {
				continue
			}
			if a.Y > b.Y {
				a, b = b, a
			}
			if int(a.Y) > y || y >= int(b.Y) {
				continue
			}
			// Exact for the vertical and diagonal edges of a contour.
			x := float64(a.X) + float64(y-int(a.Y))*float64(b.X-a.X)/float64(b.Y-a.Y)
			if len(xs) < cap(xs) {
				xs = append(xs, x)
			}
		}
		slices.Sort(xs)
		row := f.img[y*f.w : (y+1)*f.w]
		for i := 0; i+1 < len(xs); i += 2 {
			// The pixel centres between the two crossings, inclusive.
			l, r := int(math.Ceil(xs[i])), int(math.Floor(xs[i+1]))
			l, r = max(l, 0), min(r, f.w-1)
			for x := l; x <= r; x++ {
				row[x] = 1
			}
		}
		f.xs = xs
	}
	// Boundary: every edge, with the 8-connected line OpenCV draws.
	prev := pts[len(pts)-1]
	for _, p := range pts {
		f.line(prev, p)
		prev = p
	}
	return x0, y0, x1, y1
}

// line marks the pixels of the 8-connected Bresenham line from a to b that
// lie in the image.
func (f *filler) line(a, b Point) {
	x, y := int(a.X), int(a.Y)
	dx, dy := int(b.X)-x, int(b.Y)-y
	sx, sy := 1, 1
	if dx < 0 {
		sx, dx = -1, -dx
	}
	if dy < 0 {
		sy, dy = -1, -dy
	}
	e := dx - dy
	for {
		if uint(x) < uint(f.w) && uint(y) < uint(f.h) {
			f.img[y*f.w+x] = 1
		}
		if x == int(b.X) && y == int(b.Y) {
			return
		}
		e2 := 2 * e
		if e2 > -dy {
			e -= dy
			x += sx
		}
		if e2 < dx {
			e += dx
			y += sy
		}
	}
}

// median returns numpy's median of the non-zero depths of the pixels inside
// the filled polygon pts (the mean of the two middle values for an even
// count, in float64), or 0 when there are none, and clears its marks.
func (f *filler) median(pts []Point, depth []uint16) float64 {
	x0, y0, x1, y1 := f.fill(pts)
	d := f.depth[:0]
	for y := y0; y <= y1; y++ {
		row := f.img[y*f.w : (y+1)*f.w]
		drow := depth[y*f.w : (y+1)*f.w]
		for x := x0; x <= x1; x++ {
			if row[x] != 0 {
				row[x] = 0
				if v := drow[x]; v != 0 {
					d = append(d, v)
				}
			}
		}
	}
	f.depth = d
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	m := len(d) / 2
	if len(d)%2 == 1 {
		return float64(d[m])
	}
	return (float64(d[m-1]) + float64(d[m])) / 2
}
