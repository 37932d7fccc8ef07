package tracker

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// fillOf traces the single external contour of the w×h mask given as rows of
// '#' and '.', fills it and returns the filled image as rows.
func fillOf(t *testing.T, rows []string) []string {
	t.Helper()
	h, w := len(rows), len(rows[0])
	mask := make([]byte, w*h)
	for y, r := range rows {
		for x := range w {
			if r[x] == '#' {
				mask[y*w+x] = 255
			}
		}
	}
	c, err := NewContours(w, h, 4*w*h+4)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := c.Find(mask, w, h, nil)
	if err != nil || len(blobs) != 1 {
		t.Fatalf("%d blobs, %v", len(blobs), err)
	}
	f := newFiller(w, h, 4*w*h+4)
	f.fill(c.Contour(0))
	out := make([]string, h)
	for y := range h {
		b := make([]byte, w)
		for x := range w {
			b[x] = '.'
			if f.img[y*w+x] != 0 {
				b[x] = '#'
			}
		}
		out[y] = string(b)
	}
	return out
}

func TestFillShapes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mask, want []string
	}{
		{"ring: the hole counts", []string{
			".......",
			".#####.",
			".#...#.",
			".#...#.",
			".#####.",
			".......",
		}, []string{
			".......",
			".#####.",
			".#####.",
			".#####.",
			".#####.",
			".......",
		}},
		{"diagonal line", []string{
			"#....",
			".#...",
			"..#..",
			"...#.",
		}, []string{
			"#....",
			".#...",
			"..#..",
			"...#.",
		}},
		{"single pixel", []string{"...", ".#.", "..."}, []string{"...", ".#.", "..."}},
		{"diamond with a hole and a spur", []string{
			"....#....",
			"...#.#...",
			"..#...#..",
			".#.....##",
			"..#...#..",
			"...#.#...",
			"....#....",
		}, []string{
			"....#....",
			"...###...",
			"..#####..",
			".########",
			"..#####..",
			"...###...",
			"....#....",
		}},
		{"U shape: the notch is outside", []string{
			"#...#",
			"#...#",
			"#####",
		}, []string{
			"#...#",
			"#...#",
			"#####",
		}},
		{"touches the border", []string{
			"###",
			"#.#",
			"###",
		}, []string{
			"###",
			"###",
			"###",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fillOf(t, tc.mask)
			if !slices.Equal(got, tc.want) {
				t.Errorf("fill\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// TestFillMatchesComponents checks on random blobs without holes that the
// filled contour is exactly the blob (its pixels, their holes filled).
func TestFillMatchesComponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const w, h = 40, 30
	c, err := NewContours(w, h, 4*w*h+4)
	if err != nil {
		t.Fatal(err)
	}
	f := newFiller(w, h, 4*w*h+4)
	mask := make([]byte, w*h)
	for trial := range 300 {
		clear(mask)
		// A random walk of a few thick strokes: one blob, possibly with holes.
		x, y := w/2, h/2
		for range 5 + rng.IntN(60) {
			x = min(max(x+rng.IntN(3)-1, 0), w-1)
			y = min(max(y+rng.IntN(3)-1, 0), h-1)
			mask[y*w+x] = 255
			if trial%2 == 0 && x+1 < w {
				mask[y*w+x+1] = 255
			}
		}
		blobs, err := c.Find(mask, w, h, nil)
		if err != nil || len(blobs) != 1 {
			t.Fatalf("trial %d: %d blobs, %v", trial, len(blobs), err)
		}
		f.fill(c.Contour(0))
		want := filledHoles(mask, w, h)
		for i := range want {
			if (f.img[i] != 0) != want[i] {
				t.Fatalf("trial %d: pixel (%d, %d) filled %v, want %v", trial, i%w, i/w, f.img[i] != 0, want[i])
			}
		}
		clear(f.img)
	}
}

// filledHoles returns the mask with its holes filled: every pixel not
// 4-connected to the image border through background.
func filledHoles(mask []byte, w, h int) []bool {
	out := make([]bool, w*h)
	for i := range out {
		out[i] = true
	}
	var stack []int
	push := func(x, y int) {
		if x < 0 || y < 0 || x >= w || y >= h {
			return
		}
		i := y*w + x
		if mask[i] == 0 && out[i] {
			out[i] = false
			stack = append(stack, i)
		}
	}
	for x := range w {
		push(x, 0)
		push(x, h-1)
	}
	for y := range h {
		push(0, y)
		push(w-1, y)
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		x, y := i%w, i/w
		push(x+1, y)
		push(x-1, y)
		push(x, y+1)
		push(x, y-1)
	}
	return out
}

func TestMedian(t *testing.T) {
	const w, h = 6, 4
	f := newFiller(w, h, 100)
	sq := []Point{{1, 0}, {1, 3}, {4, 3}, {4, 0}} // 4×4 square
	depth := make([]uint16, w*h)
	if got := f.median(sq, depth); got != 0 {
		t.Errorf("no depth: median %v, want 0", got)
	}
	depth[0*w+1], depth[1*w+2] = 7, 10 // even count: mean of the two
	depth[0*w+0] = 1000                // outside the square
	if got := f.median(sq, depth); got != 8.5 {
		t.Errorf("median %v, want 8.5", got)
	}
	depth[3*w+4] = 3
	if got := f.median(sq, depth); got != 7 {
		t.Errorf("median %v, want 7", got)
	}
	clear(depth)
	depth[2*w+3], depth[2*w+2] = 65535, 65532 // no uint16 overflow
	if got := f.median(sq, depth); got != 65533.5 {
		t.Errorf("median %v, want 65533.5", got)
	}
	for i, v := range f.img {
		if v != 0 {
			t.Fatalf("mark left at %d", i)
		}
	}
}
