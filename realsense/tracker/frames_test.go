package tracker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var frameScenes = BenchScenes()

func frameConfig() Config { return BenchConfig() }

func genFrame(name string) (bgr []byte, depth []uint16) {
	bgr, depth, err := BenchScene(name)
	if err != nil {
		panic(err) // the scene names are BenchScenes'
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
			for _, d := range benchDisks()[:4] {
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

// TestFrameTimes times every Process call of BRIDGE_TRACKER_TIMES frames per
// scene (after 10 untimed ones, with the garbage collector running as usual)
// and prints one JSON BenchRow per scene and clock, prefixed "frametimes ",
// for scripts/bench_tracker.py: the median, p99 and max per frame, on the
// wall clock and, on Linux, on the thread's CPU clock, which leaves out the
// time other processes held the core, and on the wall clock of the frames
// during which the thread was not switched out ("run", with the count of
// those that were).
func TestFrameTimes(t *testing.T) {
	env := os.Getenv("BRIDGE_TRACKER_TIMES")
	if env == "" {
		t.Skip("set BRIDGE_TRACKER_TIMES=<frames> to time each frame of the benchmark scenes")
	}
	frames, err := strconv.Atoi(env)
	if err != nil || frames < 1 {
		t.Fatalf("BRIDGE_TRACKER_TIMES=%q: want a frame count ≥ 1", env)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	clocks := map[string]func() int64{"wall": func() int64 { return int64(time.Since(start)) }}
	if cpu, ok := threadClock(); ok {
		clocks["cpu"] = cpu
	}
	for _, clock := range []string{"wall", "cpu"} {
		now := clocks[clock]
		if now == nil {
			continue
		}
		rows, err := Bench(context.Background(), frames, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			b, err := json.Marshal(struct {
				Clock string `json:"clock"`
				BenchRow
			}{clock, r})
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("frametimes %s\n", b)
		}
	}
	if switches, ok := threadSwitches(); ok {
		for _, r := range unswitchedTimes(t, frames, switches) {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("frametimes %s\n", b)
		}
	}
}

// runRow is a BenchRow on the wall clock of the frames during which the
// thread was never switched out (clock "run"), with the count of the others.
type runRow struct {
	Clock string `json:"clock"`
	BenchRow
	Switched int `json:"switched_frames"`
}

// unswitchedTimes times frames frames of each scene on the wall clock, as
// Bench, and keeps those during which switches did not move: the wall-clock
// tail that is the tracker's own, without the time other threads held the
// core. The calling goroutine is locked to its thread.
func unswitchedTimes(t *testing.T, frames int, switches func() int64) []runRow {
	t.Helper()
	tr := frameTracker(t)
	var rows []runRow
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		var res Result
		var err error
		for range 10 {
			if res, err = tr.Process(bgr, depth); err != nil {
				t.Fatal(err)
			}
		}
		ns := make([]int64, 0, frames)
		switched := 0
		start := time.Now()
		for range frames {
			s0 := switches()
			t0 := time.Since(start)
			if _, err := tr.Process(bgr, depth); err != nil {
				t.Fatal(err)
			}
			t1 := time.Since(start)
			if switches() != s0 {
				switched++
				continue
			}
			ns = append(ns, int64(t1-t0))
		}
		goal := 1.5
		if name == "stress" {
			goal = 5
		}
		r := runRow{Clock: "run", BenchRow: BenchRow{Scene: name, Contours: res.Contours, Markers: len(res.Markers), GoalMs: goal}, Switched: switched}
		if len(ns) > 0 {
			slices.Sort(ns)
			ms := func(q float64) float64 {
				return float64(ns[min(len(ns)-1, int(q*float64(len(ns))))]) / float64(time.Millisecond)
			}
			r.MedianMs, r.P99Ms, r.MaxMs = ms(0.5), ms(0.99), float64(ns[len(ns)-1])/float64(time.Millisecond)
		}
		rows = append(rows, r)
	}
	return rows
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

// TestFrameMask checks that Tracker.Mask, which unpacks the contour plane
// when there is no opening, gives Threshold.Mask's bytes on every scene.
func TestFrameMask(t *testing.T) {
	tr := frameTracker(t)
	cfg := frameConfig()
	thr := NewThreshold(NewHSV(), cfg.Params.Range())
	want := make([]byte, BenchWidth*BenchHeight)
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		if _, err := tr.Process(bgr, depth); err != nil {
			t.Fatal(err)
		}
		if err := thr.Mask(want, bgr, depth, BenchWidth, BenchHeight, cfg.DepthMin, cfg.DepthMax); err != nil {
			t.Fatal(err)
		}
		sameBytes(t, name+" mask", tr.Mask(), want, BenchWidth, 1)
		sameBytes(t, name+" mask read again", tr.Mask(), want, BenchWidth, 1)
		if a := testing.AllocsPerRun(3, func() { tr.Mask() }); a != 0 {
			t.Errorf("%s: Mask allocates %v", name, a)
		}
	}
}

// BenchmarkPlane is the threshold as Process runs it without an opening:
// Threshold.Plane into the contour plane, on each scene.
func BenchmarkPlane(b *testing.B) {
	cfg := frameConfig()
	thr := NewThreshold(NewHSV(), cfg.Params.Range())
	c, err := NewContours(BenchWidth, BenchHeight, 4*BenchWidth*BenchHeight+4)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range frameScenes {
		bgr, depth := genFrame(name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := thr.Plane(c, bgr, depth, cfg.DepthMin, cfg.DepthMax); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
