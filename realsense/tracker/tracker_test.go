package tracker

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// markerBGR is the marker green of the synthetic scenes: HSV (60, 204, 200).
var markerBGR = [3]byte{40, 200, 40}

// synthDisk is a filled disk of a synthetic scene.
type synthDisk struct {
	cx, cy, r int
	bgr       [3]byte
	depth     uint16 // depth at the centre; it grows by 1 mm every 4 px in x
	hole      bool   // a 5×5 patch of zero depth at the centre
}

// synthScene is a synthetic w×h frame: a grey background (110 ± 12) on a
// depth plane, or uniform colour noise with depth in range only in a patch,
// and disks drawn over it (with colour noise σ = 8 when noisy).
type synthScene struct {
	w, h  int
	noisy bool
	seed  uint64
	disks []synthDisk
}

func (s synthScene) render() (bgr []byte, depth []uint16) {
	rng := rand.New(rand.NewPCG(s.seed, 99))
	w, h := s.w, s.h
	bgr = make([]byte, 3*w*h)
	depth = make([]uint16, w*h)
	for y := range h {
		for x := range w {
			i := y*w + x
			if s.noisy {
				bgr[3*i], bgr[3*i+1], bgr[3*i+2] = byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256))
				depth[i] = 1500
				if x >= w/6 && x < w*5/6 && y >= h/5 && y < h*4/5 {
					depth[i] = uint16(300 + rng.UintN(400))
				}
			} else {
				g := byte(98 + rng.UintN(25))
				bgr[3*i], bgr[3*i+1], bgr[3*i+2] = g, g, g
				depth[i] = uint16(500 + (x+y)/8)
			}
		}
	}
	for _, d := range s.disks {
		for y := max(d.cy-d.r, 0); y <= min(d.cy+d.r, h-1); y++ {
			for x := max(d.cx-d.r, 0); x <= min(d.cx+d.r, w-1); x++ {
				dx, dy := x-d.cx, y-d.cy
				if dx*dx+dy*dy > d.r*d.r {
					continue
				}
				i := y*w + x
				for c := range 3 {
					v := int(d.bgr[c])
					if s.noisy {
						v += int(math.Round(rng.NormFloat64() * 8))
					}
					bgr[3*i+c] = byte(min(max(v, 0), 255))
				}
				depth[i] = d.depth + uint16(dx/4)
				if d.hole && dx >= -2 && dx <= 2 && dy >= -2 && dy <= 2 {
					depth[i] = 0
				}
			}
		}
	}
	return bgr, depth
}

// cleanScene has four markers (r = 20, 16, 12, 8), one disk too small to be
// a marker (r = 4) and a red disk; the r = 16 marker has a zero-depth hole at
// its centre.
func cleanScene(w, h int) synthScene {
	return synthScene{w: w, h: h, seed: 1234, disks: []synthDisk{
		{cx: 120, cy: 100, r: 20, bgr: markerBGR, depth: 400},
		{cx: 400, cy: 180, r: 16, bgr: markerBGR, depth: 420, hole: true},
		{cx: 250, cy: 330, r: 12, bgr: markerBGR, depth: 380},
		{cx: 520, cy: 400, r: 8, bgr: markerBGR, depth: 450},
		{cx: 560, cy: 60, r: 4, bgr: markerBGR, depth: 400},
		{cx: 300, cy: 200, r: 18, bgr: [3]byte{40, 40, 220}, depth: 400},
	}}
}

// noisyScene is cleanScene's disks on uniform colour noise.
func noisyScene(w, h int) synthScene {
	s := cleanScene(w, h)
	s.noisy = true
	s.seed = 4321
	return s
}

// d435 are typical depth intrinsics of a D435 at 640×480 (float32 values).
func d435() Intrinsics {
	return Intrinsics{Width: 640, Height: 480, PPX: 318.8026428222656, PPY: 241.1585235595703, FX: 383.0118103027344, FY: 383.0118103027344}
}

// testPose is a camera about 400 mm above the board, looking down, tilted.
func testPose() Pose {
	return lookDown([3]float64{0.2, 0.1, 1}, 0.35, [3]float64{12, 175, -40})
}

// defaultTable is the colour table of DefaultParams, built once for all
// tests (it takes about 70 ms, much more under -race).
var defaultTable = sync.OnceValue(func() *Threshold {
	return NewThreshold(NewHSV(), DefaultParams().Range())
})

func testConfig(side Side, nb int) Config {
	return Config{
		Width: 640, Height: 480,
		Params:   DefaultParams(),
		DepthMin: BridgeDepthMin, DepthMax: BridgeDepthMax,
		Intrinsics: d435(), Pose: testPose(),
		Side: side, Sort: SortY, NbMarkers: nb,
	}
}

func newTestTracker(t testing.TB, cfg Config) *Tracker {
	t.Helper()
	tr, err := newTracker(cfg, defaultTable())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTrackerClean(t *testing.T) {
	sc := cleanScene(640, 480)
	bgr, depth := sc.render()
	tr := newTestTracker(t, testConfig(Top, 4))
	res, err := tr.Process(bgr, depth)
	if err != nil {
		t.Fatal(err)
	}
	if res.Contours != 5 || len(res.Markers) != 4 || res.Held {
		t.Fatalf("contours %d, markers %d, held %v; want 5, 4, false", res.Contours, len(res.Markers), res.Held)
	}
	// OpenCV order: the blob whose first pixel is lowest comes first.
	order := []int{3, 2, 1, 0}
	in, ps := d435(), testPose()
	for k, m := range res.Markers {
		d := sc.disks[order[k]]
		if abs(m.PX-d.cx) > 1 || abs(m.PY-d.cy) > 1 {
			t.Errorf("marker %d at (%d, %d), want about (%d, %d)", k, m.PX, m.PY, d.cx, d.cy)
		}
		wantD := float64(d.depth + uint16((m.PX-d.cx)/4))
		if d.hole {
			// The median of the disk's depths: d.depth + dx/4 over the
			// disk without the hole is symmetric about d.depth.
			wantD = float64(d.depth)
		}
		if m.DepthMM != wantD {
			t.Errorf("marker %d depth %v, want %v", k, m.DepthMM, wantD)
		}
		if m.Camera != in.Deproject(float64(m.PX), float64(m.PY), m.DepthMM) || m.World != ps.Apply(m.Camera) {
			t.Errorf("marker %d: camera %v world %v", k, m.Camera, m.World)
		}
		for c := range 3 {
			if res.Vector[3*k+c] != m.World[c] {
				t.Errorf("top vector %v, marker %d world %v", res.Vector, k, m.World)
			}
		}
		if m.Area <= 100 {
			t.Errorf("marker %d area %v", k, m.Area)
		}
	}
	// The filled disks with r = 20 … 8 have contourArea 1200, 752, 408, 174
	// when drawn by cv2.circle; this rasterisation is close to it.
	if a := res.Markers[3].Area; a < 1150 || a > 1260 {
		t.Errorf("r = 20 area %v", a)
	}
	mask := tr.Mask()
	if len(mask) != 640*480 || mask[100*640+120] != 255 || mask[200*640+300] != 0 || mask[0] != 0 {
		t.Error("mask")
	}
	if tr.Config().MaxPoints != 4*640*480+4 {
		t.Errorf("default MaxPoints %d", tr.Config().MaxPoints)
	}
}

func abs(x int) int { return max(x, -x) }

func TestTrackerSides(t *testing.T) {
	sc := cleanScene(640, 480)
	bgr, depth := sc.render()
	for _, tc := range []struct {
		side Side
		sort Sort
	}{{Top, SortY}, {Front, SortY}, {Front, SortZ}, {Plan, SortY}, {Plan, SortZ}} {
		t.Run(tc.side.String()+"-"+tc.sort.String(), func(t *testing.T) {
			cfg := testConfig(tc.side, 4)
			cfg.Sort = tc.sort
			tr := newTestTracker(t, cfg)
			res, err := tr.Process(bgr, depth)
			if err != nil || res.Held || len(res.Vector) != 12 {
				t.Fatalf("held %v, vector %d, %v", res.Held, len(res.Vector), err)
			}
			// Independent reference: compute every point, then an exchange
			// sort on the column (the keys are distinct here).
			var pts [][3]float64
			in, ps := cfg.Intrinsics, cfg.Pose
			for _, m := range res.Markers {
				switch tc.side {
				case Top:
					pts = append(pts, m.World)
				case Front:
					x := (float64(m.PX)-319.475)/382.605*249 - 2.2
					y := (float64(m.PY)-240.962)/382.605*249 + 195.8
					pts = append(pts, [3]float64{m.DepthMM - 254, -y, x})
				case Plan:
					p, ok := PlanPoint(&in, &ps, m.PX, m.PY)
					if !ok {
						t.Fatal("no intersection")
					}
					if math.Abs(p[0]+5) > 1e-9 {
						t.Errorf("plan point %v not on x = −5", p)
					}
					pts = append(pts, p)
				}
			}
			if tc.side != Top {
				col := 1 + int(tc.sort)
				for i := range pts {
					for j := i + 1; j < len(pts); j++ {
						if pts[j][col] < pts[i][col] {
							pts[i], pts[j] = pts[j], pts[i]
						}
					}
				}
			}
			for i, p := range pts {
				for c := range 3 {
					if res.Vector[3*i+c] != p[c] {
						t.Fatalf("vector %v, want %v", res.Vector, pts)
					}
				}
			}
		})
	}
}

func TestTrackerHold(t *testing.T) {
	sc := cleanScene(640, 480)
	bgr, depth := sc.render()
	empty := synthScene{w: 640, h: 480, seed: 1}
	ebgr, edepth := empty.render()
	tr := newTestTracker(t, testConfig(Front, 3))
	res, err := tr.Process(bgr, depth) // 4 markers, 3 wanted
	if err != nil || !res.Held || len(res.Markers) != 4 {
		t.Fatalf("held %v, markers %d, %v", res.Held, len(res.Markers), err)
	}
	for _, v := range res.Vector {
		if v != 0 {
			t.Fatalf("first held vector %v, want zeros", res.Vector)
		}
	}
	// Drop the r = 8 marker: now 3.
	sc.disks[3].bgr = [3]byte{110, 110, 110}
	bgr3, depth3 := sc.render()
	res, err = tr.Process(bgr3, depth3)
	if err != nil || res.Held || len(res.Markers) != 3 {
		t.Fatalf("held %v, markers %d, %v", res.Held, len(res.Markers), err)
	}
	want := append([]float64(nil), res.Vector...)
	if want[0] == 0 {
		t.Fatalf("vector %v", want)
	}
	res, err = tr.Process(ebgr, edepth) // no contours at all
	if err != nil || !res.Held || res.Contours != 0 || len(res.Markers) != 0 {
		t.Fatalf("empty frame: held %v contours %d markers %d, %v", res.Held, res.Contours, len(res.Markers), err)
	}
	for i := range want {
		if res.Vector[i] != want[i] {
			t.Fatalf("held vector %v, want %v", res.Vector, want)
		}
	}
	tr.Reset()
	for _, v := range res.Vector {
		if v != 0 {
			t.Fatalf("after Reset %v", res.Vector)
		}
	}
}

func TestTrackerNoIntersection(t *testing.T) {
	sc := cleanScene(640, 480)
	bgr, depth := sc.render()
	cfg := testConfig(Plan, 4)
	tr := newTestTracker(t, cfg)
	good, err := tr.Process(bgr, depth)
	if err != nil || good.Held {
		t.Fatal(err)
	}
	want := append([]float64(nil), good.Vector...)
	// A pose whose first row is zero makes every ray parallel to x = −5.
	cfg.Pose.R[0], cfg.Pose.R[1], cfg.Pose.R[2] = 0, 0, 0
	tr2 := newTestTracker(t, cfg)
	copy(tr2.vec, want)
	for i := range 3 {
		res, err := tr2.Process(bgr, depth)
		if err != nil || !res.Held || !res.NoIntersection || len(res.Markers) != 4 {
			t.Fatalf("held %v, no intersection %v, %v", res.Held, res.NoIntersection, err)
		}
		if tr2.NoIntersection() != uint64(i+1) {
			t.Errorf("counter %d after %d frames", tr2.NoIntersection(), i+1)
		}
		for k := range want {
			if res.Vector[k] != want[k] {
				t.Fatalf("vector %v changed, want %v", res.Vector, want)
			}
		}
	}
}

func TestTrackerErosion(t *testing.T) {
	sc := noisyScene(640, 480)
	bgr, depth := sc.render()
	cfg := testConfig(Top, 4)
	cfg.Params.Erosion = 1
	tr := newTestTracker(t, cfg)
	res, err := tr.Process(bgr, depth)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Markers) != 4 || res.Held {
		t.Fatalf("erosion 1 on noise: %d markers of %d contours", len(res.Markers), res.Contours)
	}
}

func TestNewErrors(t *testing.T) {
	base := testConfig(Top, 1)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		err  error
		msg  string
	}{
		{"width", func(c *Config) { c.Width = 0 }, ErrSize, "width 0"},
		{"params", func(c *Config) { c.Params.HueL = 200 }, ErrParams, "hue_l = 200"},
		{"depth", func(c *Config) { c.DepthMin = 10; c.DepthMax = 5 }, ErrConfig, "depth range 10–5"},
		{"fx", func(c *Config) { c.Intrinsics.FX = 0 }, ErrCalibration, "focal length"},
		{"pose", func(c *Config) { c.Pose.T[1] = math.Inf(1) }, ErrCalibration, "T[1] = +Inf"},
		{"side", func(c *Config) { c.Side = 3 }, ErrConfig, "side 3"},
		{"sort", func(c *Config) { c.Sort = -1 }, ErrConfig, "sort -1"},
		{"nb_markers 0", func(c *Config) { c.NbMarkers = 0 }, ErrConfig, "nb_markers 0"},
		{"nb_markers 17", func(c *Config) { c.NbMarkers = 17 }, ErrConfig, "nb_markers 17"},
		{"max points", func(c *Config) { c.MaxPoints = -1 }, ErrConfig, "contour point limit -1"},
	} {
		cfg := base
		tc.mod(&cfg)
		tr, err := newTracker(cfg, defaultTable())
		if tr != nil || !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "tracker:") {
			t.Errorf("%s: %v, want %v %q", tc.name, err, tc.err, tc.msg)
		}
	}
}

func TestProcessErrors(t *testing.T) {
	cfg := testConfig(Top, 1)
	cfg.Width, cfg.Height = 64, 48
	tr := newTestTracker(t, cfg)
	bgr, depth := make([]byte, 3*64*48), make([]uint16, 64*48)
	if _, err := tr.Process(bgr[:10], depth); !errors.Is(err, ErrSize) {
		t.Errorf("short BGR: %v", err)
	}
	if _, err := tr.Process(bgr, depth[1:]); !errors.Is(err, ErrSize) {
		t.Errorf("short depth: %v", err)
	}
	// A vertex budget too small for the frame is an error, not a panic.
	cfg.MaxPoints = 3
	tr = newTestTracker(t, cfg)
	for i := range depth {
		bgr[3*i], bgr[3*i+1], bgr[3*i+2] = markerBGR[0], markerBGR[1], markerBGR[2]
		if i%3 == 0 {
			bgr[3*i+1] = 0
		}
	}
	res, err := tr.Process(bgr, depth)
	if !errors.Is(err, ErrSize) || !res.Held || len(res.Vector) != 3 {
		t.Errorf("vertex budget: %v, held %v", err, res.Held)
	}
}

func TestProcessAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, noisy := range []bool{false, true} {
		sc := cleanScene(640, 480)
		if noisy {
			sc = noisyScene(640, 480)
		}
		bgr, depth := sc.render()
		for _, side := range []Side{Top, Front, Plan} {
			for _, e := range []int{0, 1} {
				cfg := testConfig(side, 4)
				cfg.Params.Erosion = e
				tr := newTestTracker(t, cfg)
				if _, err := tr.Process(bgr, depth); err != nil {
					t.Fatal(err)
				}
				n := testing.AllocsPerRun(5, func() {
					if _, err := tr.Process(bgr, depth); err != nil {
						t.Fatal(err)
					}
				})
				if n != 0 {
					t.Errorf("noisy %v, side %v, erosion %d: %v allocations per Process", noisy, side, e, n)
				}
			}
		}
	}
}

func BenchmarkProcess(b *testing.B) {
	for _, noisy := range []bool{false, true} {
		sc := cleanScene(640, 480)
		name := "clean"
		if noisy {
			sc, name = noisyScene(640, 480), "noisy"
		}
		bgr, depth := sc.render()
		for _, e := range []int{0, 1} {
			cfg := testConfig(Plan, 4)
			cfg.Params.Erosion = e
			tr := newTestTracker(b, cfg)
			b.Run(name+"/e"+string(rune('0'+e)), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := tr.Process(bgr, depth); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
