package tracker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// emioCore runs emioapi's DepthCamera.process_frame core with OpenCV and
// numpy (scripts/emio_reference.py, the reference bench_tracker.py times too)
// on the frame and configuration written in the directory argv[1].
const emioCore = `
import json, sys
import cv2
import numpy as np
sys.path.insert(0, "../../scripts")
import emio_reference
d = sys.argv[1]
cfg = json.load(open(d + "/cfg.json"))
w, h = cfg["w"], cfg["h"]
frame = np.fromfile(d + "/bgr.bin", dtype=np.uint8).reshape(h, w, 3)
depth = np.fromfile(d + "/depth.bin", dtype="<u2").reshape(h, w)
markers, contours = emio_reference.track(cv2, np, frame, depth, cfg["params"], cfg["dmin"], cfg["dmax"],
    (cfg["ppx"], cfg["ppy"], cfg["fx"], cfg["fy"]), np.array(cfg["R"]).reshape(3, 3), np.array(cfg["T"]))
out = [{"px": x, "py": y, "area": a, "depth": dz, "camera": pc.tolist(), "world": pw.tolist()}
       for x, y, a, dz, pc, pw in markers]
print(json.dumps({"contours": contours, "markers": out}))
`

type cvMarker struct {
	PX, PY int
	Area   float64
	Depth  float64
	Camera [3]float64
	World  [3]float64
}

// TestTrackerOpenCV runs the same frames through Process and through
// emioapi's OpenCV code: markers must agree bit for bit (World within 1e-9).
func TestTrackerOpenCV(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	py := testutil.Python(t, "pip install opencv-python-headless==4.11.0.86 numpy", "cv2", "numpy")
	ring := cleanScene(640, 480)
	// A ring marker whose centroid falls in its hole, where depth is zero:
	// the median must count the hole's depths (drawContours fills it).
	ring.disks = append(ring.disks,
		synthDisk{cx: 450, cy: 300, r: 25, bgr: markerBGR, depth: 600},
		synthDisk{cx: 450, cy: 300, r: 10, bgr: [3]byte{90, 90, 90}, depth: 640, hole: true})
	// A diagonal stroke and an L: thin and diagonal contour parts.
	for i := range 60 {
		ring.disks = append(ring.disks, synthDisk{cx: 40 + i, cy: 250 + i, r: 1, bgr: markerBGR, depth: 700, hole: i == 30})
	}
	for _, tc := range []struct {
		name    string
		sc      synthScene
		erosion int
		zero    bool // zero the depth at every centroid: all medians
	}{
		{"clean", cleanScene(640, 480), 0, false},
		{"clean-e1", cleanScene(640, 480), 1, false},
		{"noisy", noisyScene(640, 480), 0, false},
		{"noisy-medians", noisyScene(640, 480), 0, true},
		{"noisy-e1", noisyScene(640, 480), 1, false},
		{"noisy-e2", noisyScene(640, 480), 2, true},
		{"ring", ring, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bgr, depth := tc.sc.render()
			cfg := testConfig(Top, 4)
			cfg.Params.Erosion = tc.erosion
			if tc.name == "noisy" || tc.name == "noisy-medians" {
				cfg.Params.Area = 10 // more markers, of irregular shapes
			}
			tr := newTestTracker(t, cfg)
			res, err := tr.Process(bgr, depth)
			if err != nil {
				t.Fatal(err)
			}
			if tc.zero {
				for _, m := range res.Markers {
					depth[m.PY*640+m.PX] = 0
				}
				if res, err = tr.Process(bgr, depth); err != nil {
					t.Fatal(err)
				}
			}
			want, contours := runEmioCore(t, py, cfg, bgr, depth)
			if res.Contours != contours || len(res.Markers) != len(want) {
				t.Fatalf("%d contours, %d markers; OpenCV %d, %d", res.Contours, len(res.Markers), contours, len(want))
			}
			medians := 0
			for i, m := range res.Markers {
				o := want[i]
				if m.PX != o.PX || m.PY != o.PY || m.Area != o.Area || m.DepthMM != o.Depth || m.Camera != o.Camera {
					t.Errorf("marker %d: %+v\nOpenCV     %+v", i, m, o)
				}
				for c := range 3 {
					if math.Abs(m.World[c]-o.World[c]) > 1e-9 {
						t.Errorf("marker %d world %v, numpy %v", i, m.World, o.World)
					}
				}
				if depth[m.PY*640+m.PX] == 0 {
					medians++
				}
			}
			if tc.zero && medians != len(want) {
				t.Errorf("%d of %d markers took the median path", medians, len(want))
			}
			if tc.name == "clean" || tc.name == "clean-e1" || tc.name == "ring" {
				if medians == 0 {
					t.Error("no marker took the median path")
				}
			}
			t.Logf("%d contours, %d markers, %d median depths", contours, len(want), medians)
		})
	}
}

func runEmioCore(t *testing.T, py string, cfg Config, bgr []byte, depth []uint16) ([]cvMarker, int) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bgr.bin"), bgr, 0o600); err != nil {
		t.Fatal(err)
	}
	db := make([]byte, 2*len(depth))
	for i, v := range depth {
		binary.LittleEndian.PutUint16(db[2*i:], v)
	}
	if err := os.WriteFile(filepath.Join(dir, "depth.bin"), db, 0o600); err != nil {
		t.Fatal(err)
	}
	p := cfg.Params
	j, err := json.Marshal(map[string]any{
		"w": cfg.Width, "h": cfg.Height, "dmin": cfg.DepthMin, "dmax": cfg.DepthMax,
		"params": map[string]any{
			"hue_l": p.HueL, "hue_h": p.HueH, "sat_l": p.SatL, "sat_h": p.SatH,
			"value_l": p.ValueL, "value_h": p.ValueH, "erosion_size": p.Erosion, "area": p.Area,
		},
		"ppx": cfg.Intrinsics.PPX, "ppy": cfg.Intrinsics.PPY, "fx": cfg.Intrinsics.FX, "fy": cfg.Intrinsics.FY,
		"R": cfg.Pose.R[:], "T": cfg.Pose.T[:],
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cfg.json"), j, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", emioCore, dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var r struct {
		Contours int
		Markers  []struct {
			PX, PY int
			Area   float64
			Depth  float64
			Camera []float64
			World  []float64
		}
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("python output: %v", err)
	}
	ms := make([]cvMarker, len(r.Markers))
	for i, m := range r.Markers {
		ms[i] = cvMarker{PX: m.PX, PY: m.PY, Area: m.Area, Depth: m.Depth}
		copy(ms[i].Camera[:], m.Camera)
		copy(ms[i].World[:], m.World)
	}
	return ms, r.Contours
}
