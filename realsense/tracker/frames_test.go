package tracker

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Whole-frame scenes of docs/realsense.md §10 at the D435's 848×480: four
// green markers (r = 20, 16, 12, 8), one green disk too small to count
// (r = 4) and one red disk (r = 18), all with Gaussian colour noise σ = 8,
// and a zero-depth hole at the centre of the r = 16 marker (the median
// fallback). Backgrounds:
//   - clean: grey 110 ± 12, all depth in range;
//   - emio: uniform RGB noise, depth in range only in a 350×200 patch
//     around the disks, as a camera looking at the robot;
//   - stress: uniform RGB noise, all depth in range (the worst case:
//     tens of thousands of contours at erosion 0).
var frameScenes = []string{"clean", "emio", "stress"}

// frameDisk is one disk of the scenes: centre, radius and BGR colour.
type frameDisk struct {
	x, y, r int
	bgr     [3]float64
}

var (
	frameGreen = [3]float64{40, 200, 40}
	frameRed   = [3]float64{40, 40, 220}
	frameDisks = []frameDisk{
		{300, 200, 20, frameGreen},
		{380, 200, 16, frameGreen},
		{450, 200, 12, frameGreen},
		{510, 200, 8, frameGreen},
		{330, 280, 4, frameGreen},
		{430, 280, 18, frameRed},
	}
	// framePatch is the in-range depth patch of the emio scene (x0, y0, x1, y1).
	framePatch = [4]int{249, 140, 599, 340}
)

// frameConfig is the bridge's tracker configuration for the scenes:
// emioapi's default parameters (erosion 0), depth 0–1000 mm, four markers.
// scripts/bench_tracker.py repeats the intrinsics.
func frameConfig() Config {
	return Config{
		Width: benchW, Height: benchH,
		Params:   DefaultParams(),
		DepthMin: BridgeDepthMin, DepthMax: BridgeDepthMax,
		Intrinsics: Intrinsics{Width: benchW, Height: benchH, PPX: 424.5, PPY: 240.25, FX: 421.75, FY: 421.75},
		Pose:       IdentityPose(),
		Side:       Top,
		NbMarkers:  4,
	}
}

// genFrame renders a scene deterministically (PCG seeded per scene).
func genFrame(name string) (bgr []byte, depth []uint16) {
	seed := uint64(1234)
	for _, c := range name {
		seed = seed*31 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(1234, seed))
	n := benchW * benchH
	bgr = make([]byte, 3*n)
	depth = make([]uint16, n)
	for i := range n {
		x, y := i%benchW, i/benchW
		switch name {
		case "clean":
			g := byte(98 + rng.IntN(25))
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = g, g, g
			depth[i] = uint16(300 + rng.IntN(400))
		default:
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))
			depth[i] = uint16(300 + rng.IntN(400))
			if name == "emio" && (x < framePatch[0] || x >= framePatch[2] || y < framePatch[1] || y >= framePatch[3]) {
				depth[i] = uint16(1100 + rng.IntN(2000)) // beyond the bridge's 1000 mm
			}
		}
	}
	for _, d := range frameDisks {
		for y := d.y - d.r; y <= d.y+d.r; y++ {
			for x := d.x - d.r; x <= d.x+d.r; x++ {
				if (x-d.x)*(x-d.x)+(y-d.y)*(y-d.y) > d.r*d.r {
					continue
				}
				i := y*benchW + x
				for c := range 3 {
					v := math.Round(d.bgr[c] + 8*rng.NormFloat64())
					bgr[3*i+c] = byte(min(max(v, 0), 255))
				}
				depth[i] = uint16(450 + rng.IntN(20))
			}
		}
	}
	// The hole: invalid depth around the r = 16 marker's centre.
	h := frameDisks[1]
	for y := h.y - 2; y <= h.y+2; y++ {
		for x := h.x - 2; x <= h.x+2; x++ {
			depth[y*benchW+x] = 0
		}
	}
	return bgr, depth
}

// frameTracker builds the tracker of the scenes.
func frameTracker(tb testing.TB) *Tracker {
	tb.Helper()
	tr, err := New(frameConfig())
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

func frameAbs(x int) int { return max(x, -x) }

// TestFrameMarkers checks that every scene yields exactly the four green
// markers, whatever their background.
func TestFrameMarkers(t *testing.T) {
	tr := frameTracker(t)
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		res, err := tr.Process(bgr, depth)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Markers) != 4 || res.Held {
			t.Fatalf("%s: %d markers (held %v), want 4", name, len(res.Markers), res.Held)
		}
		for _, m := range res.Markers {
			near := false
			for _, d := range frameDisks[:4] {
				if frameAbs(m.PX-d.x) <= 2 && frameAbs(m.PY-d.y) <= 2 {
					near = true
				}
			}
			if !near || m.DepthMM < 440 || m.DepthMM > 470 {
				t.Errorf("%s: marker %+v off every disk", name, m)
			}
		}
		t.Logf("%s: %d contours, markers %v", name, res.Contours, frameMarkerText(res.Markers))
	}
}

// frameMarkerText is one line per marker: px py area depth.
func frameMarkerText(ms []Marker) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%d %d %v %v\n", m.PX, m.PY, m.Area, m.DepthMM)
	}
	return b.String()
}

// BenchmarkFrame is the tracker's whole per-frame work (Tracker.Process) on
// each scene; docs/realsense.md §11's goals are 1.5 ms on a realistic scene
// and 5 ms on the stress scene, on one core.
func BenchmarkFrame(b *testing.B) {
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		tr := frameTracker(b)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.Process(bgr, depth); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestFrameAllocs checks docs/realsense.md §11's 0 allocations per frame.
func TestFrameAllocs(t *testing.T) {
	tr := frameTracker(t)
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		if a := testing.AllocsPerRun(5, func() {
			if _, err := tr.Process(bgr, depth); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: %v allocations per frame", name, a)
		}
	}
}

// TestWriteFrames writes the scenes for scripts/bench_tracker.py into the
// directory named by BRIDGE_TRACKER_FRAMES: <scene>.bgr (BGR8), <scene>.z16
// (little-endian uint16) and <scene>.markers (the Tracker's markers, one
// "px py area depth" line each).
func TestWriteFrames(t *testing.T) {
	dir := os.Getenv("BRIDGE_TRACKER_FRAMES")
	if dir == "" {
		t.Skip("set BRIDGE_TRACKER_FRAMES=/dir to write the benchmark scenes there")
	}
	tr := frameTracker(t)
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		z := make([]byte, 2*len(depth))
		for i, d := range depth {
			binary.LittleEndian.PutUint16(z[2*i:], d)
		}
		res, err := tr.Process(bgr, depth)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for ext, data := range map[string][]byte{".bgr": bgr, ".z16": z, ".markers": []byte(frameMarkerText(res.Markers))} {
			if err := os.WriteFile(filepath.Join(dir, name+ext), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkFrameStages splits BenchmarkFrame: the fused threshold and the
// contour search on each scene's mask.
func BenchmarkFrameStages(b *testing.B) {
	thr := NewThreshold(NewHSV(), DefaultParams().Range())
	c, err := NewContours(benchW, benchH, 4*benchW*benchH+4)
	if err != nil {
		b.Fatal(err)
	}
	blobs := make([]Blob, 0, benchW*benchH/4+benchW)
	mask := make([]byte, benchW*benchH)
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		b.Run("threshold/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := thr.Mask(mask, bgr, depth, benchW, benchH, BridgeDepthMin, BridgeDepthMax); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("find/"+name, func(b *testing.B) {
			if err := thr.Mask(mask, bgr, depth, benchW, benchH, BridgeDepthMin, BridgeDepthMax); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if blobs, err = c.Find(mask, benchW, benchH, blobs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
