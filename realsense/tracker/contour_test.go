package tracker

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// refContour is one contour of testdata/contour_ref.txt.gz.
type refContour struct {
	area, m00, m10, m01 float64
	points              []Point
}

// refMask is one mask of testdata/contour_ref.txt.gz with OpenCV's contours.
type refMask struct {
	name     string
	w, h     int
	mask     []byte
	contours []refContour
}

// loadContourRef parses the format testdata/gen_contours.py writes.
func loadContourRef(t testing.TB, path string) []refMask {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<24)
	scenes := map[string]*scene{}
	var out []refMask
	var cur *refMask
	line := 0
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		return v
	}
	atoi := func(s string) int {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		return v
	}
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "opencv":
		case "mask":
			if len(f) != 5 {
				t.Fatalf("line %d: %q", line, sc.Text())
			}
			out = append(out, refMask{name: f[1], w: atoi(f[2]), h: atoi(f[3])})
			cur = &out[len(out)-1]
			if src, ok := strings.CutPrefix(f[4], "scene:"); ok {
				sn, array, _ := strings.Cut(src, ":")
				s := scenes[sn]
				if s == nil {
					s = loadScene(t, "testdata", sn)
					scenes[sn] = s
				}
				cur.mask = s.bytes(t, array)
				if s.Width != cur.w || s.Height != cur.h {
					t.Fatalf("line %d: scene %s is %dx%d", line, sn, s.Width, s.Height)
				}
				continue
			}
			for range cur.h {
				if !sc.Scan() {
					t.Fatalf("mask %s: short", cur.name)
				}
				line++
				row := sc.Text()
				if len(row) != cur.w {
					t.Fatalf("line %d: row of %d, want %d", line, len(row), cur.w)
				}
				for _, ch := range []byte(row) {
					v := byte(0)
					if ch == '#' {
						v = 255
					}
					cur.mask = append(cur.mask, v)
				}
			}
		case "contour":
			if cur == nil || len(f) != 6 {
				t.Fatalf("line %d: %q", line, sc.Text())
			}
			cur.contours = append(cur.contours, refContour{area: num(f[2]), m00: num(f[3]), m10: num(f[4]), m01: num(f[5])})
			if n := atoi(f[1]); n < 1 {
				t.Fatalf("line %d: %d points", line, n)
			}
		case "points":
			c := &cur.contours[len(cur.contours)-1]
			for i := 1; i+1 < len(f); i += 2 {
				c.points = append(c.points, Point{int32(atoi(f[i])), int32(atoi(f[i+1]))})
			}
		case "end":
			cur = nil
		default:
			t.Fatalf("line %d: %q", line, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameFloat is bitwise float64 equality.
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// TestContoursOpenCV compares contours, points, areas and moments with
// cv2.findContours, cv2.contourArea and cv2.moments, bit for bit.
func TestContoursOpenCV(t *testing.T) {
	refs := loadContourRef(t, "testdata/contour_ref.txt.gz")
	if len(refs) < 20 {
		t.Fatalf("%d reference masks", len(refs))
	}
	total := 0
	for _, r := range refs {
		t.Run(r.name, func(t *testing.T) {
			c, err := NewContours(r.w, r.h, 4*r.w*r.h+8)
			if err != nil {
				t.Fatal(err)
			}
			blobs, err := c.Find(r.mask, r.w, r.h, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(blobs) != len(r.contours) {
				t.Fatalf("%d contours, OpenCV %d", len(blobs), len(r.contours))
			}
			bad := 0
			for i, b := range blobs {
				want := r.contours[i]
				got := c.Contour(i)
				if !slices.Equal(got, want.points) || b.Points != len(want.points) {
					if bad < 3 {
						t.Errorf("contour %d: points %v, OpenCV %v", i, got, want.points)
					}
					bad++
					continue
				}
				if !sameFloat(b.Area, want.area) || !sameFloat(b.M00, want.m00) || !sameFloat(b.M10, want.m10) || !sameFloat(b.M01, want.m01) {
					if bad < 3 {
						t.Errorf("contour %d: area %v moments %v %v %v, OpenCV %v %v %v %v", i, b.Area, b.M00, b.M10, b.M01, want.area, want.m00, want.m10, want.m01)
					}
					bad++
				}
				if want.m00 != 0 {
					cx, cy := want.m10/want.m00, want.m01/want.m00
					if !sameFloat(b.CX, cx) || !sameFloat(b.CY, cy) || b.X != int(cx) || b.Y != int(cy) {
						t.Errorf("contour %d: centroid %v %v (%d, %d), want %v %v", i, b.CX, b.CY, b.X, b.Y, cx, cy)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d contours differ", bad, len(blobs))
			}
			total += len(blobs)
		})
	}
	if !t.Failed() {
		t.Logf("%d contours of %d masks bit-identical", total, len(refs))
	}
}

// TestContoursGeneratorReproduces reruns testdata/gen_contours.py with the
// installed OpenCV and checks that it reproduces the committed data.
func TestContoursGeneratorReproduces(t *testing.T) {
	py := testutil.Python(t, "pip install opencv-python-headless==4.11.0.86 numpy", "cv2", "numpy")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "testdata/gen_contours.py", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("gen_contours.py: %v\n%s", err, out)
	}
	got, want := loadContourRef(t, filepath.Join(dir, "contour_ref.txt.gz")), loadContourRef(t, "testdata/contour_ref.txt.gz")
	if len(got) != len(want) {
		t.Fatalf("%d masks, committed %d", len(got), len(want))
	}
	for i := range got {
		a, b := got[i], want[i]
		if a.name != b.name || !bytes.Equal(a.mask, b.mask) || len(a.contours) != len(b.contours) {
			t.Errorf("mask %s: differs from the committed one", b.name)
			continue
		}
		for j := range a.contours {
			x, y := a.contours[j], b.contours[j]
			if !slices.Equal(x.points, y.points) || !sameFloat(x.area, y.area) || !sameFloat(x.m00, y.m00) || !sameFloat(x.m10, y.m10) || !sameFloat(x.m01, y.m01) {
				t.Errorf("mask %s contour %d: OpenCV now gives %+v, committed %+v", b.name, j, x, y)
			}
		}
	}
}

// parseRows turns '#'/'.' rows into a 0/255 mask.
func parseRows(rows ...string) ([]byte, int, int) {
	var m []byte
	for _, r := range rows {
		for _, ch := range []byte(r) {
			if ch == '#' {
				m = append(m, 255)
			} else {
				m = append(m, 0)
			}
		}
	}
	return m, len(rows[0]), len(rows)
}

func TestContoursTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rows   []string
		points [][]Point
		areas  []float64
	}{
		{"empty", []string{"...", "..."}, nil, nil},
		{"single pixel", []string{"...", ".#.", "..."}, [][]Point{{{1, 1}}}, []float64{0}},
		{"whole image", []string{"###", "###"}, [][]Point{{{0, 0}, {0, 1}, {2, 1}, {2, 0}}}, []float64{2}},
		{"row", []string{"....", ".###"}, [][]Point{{{1, 1}, {3, 1}}}, []float64{0}},
		{"column", []string{"#.", "#.", "#."}, [][]Point{{{0, 0}, {0, 2}}}, []float64{0}},
		{"diagonal", []string{"#..", ".#.", "..#"}, [][]Point{{{0, 0}, {2, 2}}}, []float64{0}},
		{"anti-diagonal", []string{"..#", ".#.", "#.."}, [][]Point{{{2, 0}, {0, 2}}}, []float64{0}},
		{"square with hole", []string{"###", "#.#", "###"}, [][]Point{{{0, 0}, {0, 2}, {2, 2}, {2, 0}}}, []float64{4}},
		{"blob in a hole is not external", []string{"#####", "#...#", "#.#.#", "#...#", "#####"},
			[][]Point{{{0, 0}, {0, 4}, {4, 4}, {4, 0}}}, []float64{16}},
		{"bottom blob first", []string{"##..", "....", "..##"},
			[][]Point{{{2, 2}, {3, 2}}, {{0, 0}, {1, 0}}}, []float64{0, 0}},
		{"raster order of first pixels", []string{"...#", "#..#", "#..."},
			[][]Point{{{0, 1}, {0, 2}}, {{3, 0}, {3, 1}}}, []float64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, w, h := parseRows(tc.rows...)
			c, err := NewContours(w, h, 64)
			if err != nil {
				t.Fatal(err)
			}
			blobs, err := c.Find(m, w, h, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(blobs) != len(tc.points) {
				t.Fatalf("%d blobs, want %d", len(blobs), len(tc.points))
			}
			for i, b := range blobs {
				if got := c.Contour(i); !slices.Equal(got, tc.points[i]) {
					t.Errorf("contour %d: %v, want %v", i, got, tc.points[i])
				}
				if b.Area != tc.areas[i] {
					t.Errorf("contour %d: area %v, want %v", i, b.Area, tc.areas[i])
				}
			}
			if c.Contour(len(blobs)) != nil || c.Contour(-1) != nil {
				t.Error("Contour out of range is not nil")
			}
		})
	}
}

func TestMarkers(t *testing.T) {
	blobs := []Blob{{Area: 100}, {Area: 100.5}, {Area: 3}, {Area: 250}}
	got := Markers(blobs, MinArea)
	if len(got) != 2 || got[0].Area != 100.5 || got[1].Area != 250 {
		t.Errorf("Markers: %+v", got)
	}
}

func TestCentroidTruncates(t *testing.T) {
	// A right triangle: centroid (2/3·3, 1/3·3) = (2, 1) exactly; a shifted
	// square with centroid x.5 truncates toward zero.
	m, w, h := parseRows(".....", ".###.", ".###.", ".###.", ".....")
	c, err := NewContours(w, h, 16)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := c.Find(m, w, h, nil)
	if err != nil || len(blobs) != 1 {
		t.Fatal(blobs, err)
	}
	if b := blobs[0]; b.CX != 2 || b.CY != 2 || b.X != 2 || b.Y != 2 || b.M00 != 4 {
		t.Errorf("%+v", b)
	}
	m, w, h = parseRows("##", "##")
	c, _ = NewContours(w, h, 16)
	blobs, _ = c.Find(m, w, h, nil)
	if b := blobs[0]; b.CX != 0.5 || b.CY != 0.5 || b.X != 0 || b.Y != 0 {
		t.Errorf("%+v", b)
	}
}

func TestContoursErrors(t *testing.T) {
	if _, err := NewContours(0, 5, 10); !errors.Is(err, ErrSize) {
		t.Errorf("width 0: %v", err)
	}
	if _, err := NewContours(5, 5, 0); !errors.Is(err, ErrSize) {
		t.Errorf("no points: %v", err)
	}
	c, err := NewContours(4, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mask []byte
		w, h int
	}{
		{"short mask", make([]byte, 11), 4, 3},
		{"other size", make([]byte, 12), 3, 4},
		{"too many points", []byte{255, 0, 255, 0, 0, 0, 0, 0, 255, 0, 255, 0}, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blobs, err := c.Find(tc.mask, tc.w, tc.h, nil)
			if !errors.Is(err, ErrSize) || !strings.HasPrefix(err.Error(), "tracker: ") {
				t.Fatalf("error %v, want ErrSize", err)
			}
			if len(blobs) != 0 || c.Contour(0) != nil {
				t.Errorf("results after an error: %v", blobs)
			}
		})
	}
	blobs, err := c.Find([]byte{255, 0, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 4, 3, nil)
	if err != nil || len(blobs) != 2 {
		t.Errorf("after an error: %v %v", blobs, err)
	}
}

func TestContoursAllocs(t *testing.T) {
	mask := benchMask(true)
	c, err := NewContours(benchW, benchH, benchW*benchH)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]Blob, 0, benchW*benchH/2)
	if n := testing.AllocsPerRun(5, func() {
		var err error
		if dst, err = c.Find(mask, benchW, benchH, dst); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per Find", n)
	}
	if len(dst) < 1000 {
		t.Errorf("only %d blobs in the stress mask", len(dst))
	}
}

// refBlobs is a simple reference: the 8-connected components of mask that
// are not enclosed by another (their 4-connected background touches the
// outside), in reverse raster order of their first pixels, with their
// pixel counts and their first pixel.
func refBlobs(mask []byte, w, h int) (first []Point, pixels []int) {
	W, H := w+2, h+2
	lab := make([]int32, W*H) // -1 outside background, 0 other, >0 component
	fg := func(i int) bool {
		x, y := i%W-1, i/W-1
		return x >= 0 && y >= 0 && x < w && y < h && mask[y*w+x] != 0
	}
	stack := []int{0}
	lab[0] = -1
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		x, y := i%W, i/W
		for _, d := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
			nx, ny := x+d[0], y+d[1]
			if nx < 0 || ny < 0 || nx >= W || ny >= H {
				continue
			}
			j := ny*W + nx
			if lab[j] == 0 && !fg(j) {
				lab[j] = -1
				stack = append(stack, j)
			}
		}
	}
	n := int32(0)
	for i := range lab {
		if lab[i] != 0 || !fg(i) {
			continue
		}
		n++
		lab[i] = n
		count, external := 0, false
		stack = append(stack[:0], i)
		for len(stack) > 0 {
			k := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			count++
			x, y := k%W, k/W
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					j := (y+dy)*W + x + dx
					if lab[j] == -1 && (dx == 0 || dy == 0) {
						external = true
					}
					if lab[j] == 0 && fg(j) {
						lab[j] = n
						stack = append(stack, j)
					}
				}
			}
		}
		if external {
			first = append(first, Point{int32(i%W - 1), int32(i/W - 1)})
			pixels = append(pixels, count)
		}
	}
	slices.Reverse(first)
	slices.Reverse(pixels)
	return first, pixels
}

// FuzzContours checks that arbitrary masks never panic and give the
// external components of the reference, in its order, each contour
// starting at the component's first pixel, vertices on the component, an
// area equal to |m00| and within the vertices' bounding box.
func FuzzContours(f *testing.F) {
	f.Add(uint8(3), []byte{1, 0, 1, 1, 0, 1, 1, 1, 0})
	f.Add(uint8(5), []byte("\x01\x01\x01\x01\x01\x01\x00\x00\x00\x01\x01\x00\x01\x00\x01\x01\x00\x00\x00\x01\x01\x01\x01\x01\x01"))
	f.Add(uint8(1), []byte{7})
	f.Fuzz(func(t *testing.T, w8 uint8, data []byte) {
		w := int(w8%64) + 1
		h := len(data) / w
		if h == 0 || h > 64 {
			return
		}
		mask := data[:w*h]
		c, err := NewContours(w, h, 4*w*h+4)
		if err != nil {
			t.Fatal(err)
		}
		blobs, err := c.Find(mask, w, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		first, pixels := refBlobs(mask, w, h)
		if len(blobs) != len(first) {
			t.Fatalf("%d blobs, reference %d", len(blobs), len(first))
		}
		for i, b := range blobs {
			pts := c.Contour(i)
			if len(pts) != b.Points || len(pts) == 0 || pts[0] != first[i] {
				t.Fatalf("blob %d: points %v, first pixel %v", i, pts, first[i])
			}
			if b.Area != math.Abs(b.M00) && b.M00 != 0 {
				t.Fatalf("blob %d: area %v, m00 %v, %d pixels", i, b.Area, b.M00, pixels[i])
			}
			x0, y0, x1, y1 := pts[0].X, pts[0].Y, pts[0].X, pts[0].Y
			for _, p := range pts {
				x0, y0, x1, y1 = min(x0, p.X), min(y0, p.Y), max(x1, p.X), max(y1, p.Y)
			}
			if b.Area > float64((x1-x0)*(y1-y0)) {
				t.Fatalf("blob %d: area %v beyond its %dx%d bounding box", i, b.Area, x1-x0, y1-y0)
			}
			for _, p := range pts {
				if p.X < 0 || p.Y < 0 || int(p.X) >= w || int(p.Y) >= h || mask[int(p.Y)*w+int(p.X)] == 0 {
					t.Fatalf("blob %d: vertex %v off the mask", i, p)
				}
			}
		}
	})
}

// benchMask is a 848×480 mask: three solid marker blocks and disks on an
// empty background (clean), or the same on 30 % random pixels (stress).
func benchMask(stress bool) []byte {
	rng := rand.New(rand.NewPCG(99, 7))
	m := make([]byte, benchW*benchH)
	if stress {
		for i := range m {
			if rng.UintN(10) < 3 {
				m[i] = 255
			}
		}
	}
	for _, b := range [][4]int{{100, 100, 140, 140}, {400, 200, 432, 232}, {700, 300, 724, 324}} {
		for y := b[1]; y < b[3]; y++ {
			for x := b[0]; x < b[2]; x++ {
				m[y*benchW+x] = 255
			}
		}
	}
	for _, d := range [][3]int{{250, 350, 20}, {600, 80, 16}} {
		for y := d[1] - d[2]; y <= d[1]+d[2]; y++ {
			for x := d[0] - d[2]; x <= d[0]+d[2]; x++ {
				if (x-d[0])*(x-d[0])+(y-d[1])*(y-d[1]) <= d[2]*d[2] {
					m[y*benchW+x] = 255
				}
			}
		}
	}
	return m
}

func BenchmarkContours(b *testing.B) {
	for _, stress := range []bool{false, true} {
		name := "clean"
		if stress {
			name = "stress"
		}
		mask := benchMask(stress)
		c, err := NewContours(benchW, benchH, benchW*benchH)
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]Blob, 0, benchW*benchH/2)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if dst, err = c.Find(mask, benchW, benchH, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
