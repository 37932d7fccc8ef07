package tracker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Benchmark scenes: the whole-frame scenes of docs/realsense.md §10 at the D435's 848×480: four
// green markers (r = 20, 16, 12, 8), one green disk too small to count
// (r = 4) and one red disk (r = 18), all with Gaussian colour noise σ = 8,
// and a zero-depth hole at the centre of the r = 16 marker (the median
// fallback). Backgrounds:
//   - clean: grey 110 ± 12, all depth in range;
//   - emio: uniform RGB noise, depth in range only in a 350×200 patch
//     around the disks, as a camera looking at the robot;
//   - stress: uniform RGB noise, all depth in range (the worst case:
//     tens of thousands of contours at erosion 0).
const benchSceneList = "clean emio stress"

// BenchWidth and BenchHeight are the scenes' size: a D435 at 848×480.
const BenchWidth, BenchHeight = 848, 480

// BenchScenes returns the scene names: clean, emio, stress.
func BenchScenes() []string { return strings.Fields(benchSceneList) }

// benchDisk is one disk of the scenes: centre, radius and BGR colour.
type benchDisk struct {
	x, y, r int
	bgr     [3]float64
}

// benchDisks are the disks of every scene: four markers, one disk too small
// to count, one red disk.
func benchDisks() []benchDisk {
	green, red := [3]float64{40, 200, 40}, [3]float64{40, 40, 220}
	return []benchDisk{
		{300, 200, 20, green},
		{380, 200, 16, green},
		{450, 200, 12, green},
		{510, 200, 8, green},
		{330, 280, 4, green},
		{430, 280, 18, red},
	}
}

// BenchConfig is the bridge's tracker configuration for the scenes:
// emioapi's default parameters (erosion 0), depth 0–1000 mm, four markers.
// scripts/bench_tracker.py repeats the intrinsics.
func BenchConfig() Config {
	return Config{
		Width: BenchWidth, Height: BenchHeight,
		Params:   DefaultParams(),
		DepthMin: BridgeDepthMin, DepthMax: BridgeDepthMax,
		Intrinsics: Intrinsics{Width: BenchWidth, Height: BenchHeight, PPX: 424.5, PPY: 240.25, FX: 421.75, FY: 421.75},
		Pose:       IdentityPose(),
		Side:       Top,
		NbMarkers:  4,
	}
}

// BenchScene renders a scene deterministically (PCG seeded per scene) into
// new buffers. Every scene holds exactly four markers.
func BenchScene(name string) (bgr []byte, depth []uint16, err error) {
	if !slices.Contains(BenchScenes(), name) {
		return nil, nil, fmt.Errorf("tracker: benchmark scene %q: want one of %s", name, benchSceneList)
	}
	seed := uint64(1234)
	for _, c := range name {
		seed = seed*31 + uint64(c)
	}
	patch := [4]int{249, 140, 599, 340} // the emio scene's in-range depth (x0, y0, x1, y1)
	rng := rand.New(rand.NewPCG(1234, seed))
	n := BenchWidth * BenchHeight
	bgr = make([]byte, 3*n)
	depth = make([]uint16, n)
	for i := range n {
		x, y := i%BenchWidth, i/BenchWidth
		switch name {
		case "clean":
			g := byte(98 + rng.IntN(25))
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = g, g, g
			depth[i] = uint16(300 + rng.IntN(400))
		default:
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))
			depth[i] = uint16(300 + rng.IntN(400))
			if name == "emio" && (x < patch[0] || x >= patch[2] || y < patch[1] || y >= patch[3]) {
				depth[i] = uint16(1100 + rng.IntN(2000)) // beyond the bridge's 1000 mm
			}
		}
	}
	disks := benchDisks()
	for _, d := range disks {
		for y := d.y - d.r; y <= d.y+d.r; y++ {
			for x := d.x - d.r; x <= d.x+d.r; x++ {
				if (x-d.x)*(x-d.x)+(y-d.y)*(y-d.y) > d.r*d.r {
					continue
				}
				i := y*BenchWidth + x
				for c := range 3 {
					v := math.Round(d.bgr[c] + 8*rng.NormFloat64())
					bgr[3*i+c] = byte(min(max(v, 0), 255))
				}
				depth[i] = uint16(450 + rng.IntN(20))
			}
		}
	}
	// The hole: invalid depth around the r = 16 marker's centre.
	h := disks[1]
	for y := h.y - 2; y <= h.y+2; y++ {
		for x := h.x - 2; x <= h.x+2; x++ {
			depth[y*BenchWidth+x] = 0
		}
	}
	return bgr, depth, nil
}
