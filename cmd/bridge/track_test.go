package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/emio/camera"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/realsense/tracker"
)

// bridge sim saves the frames it renders, with the virtual camera's
// calibration; bridge track finds the same marker in them offline.
func TestTrackSavedFrames(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir) // no lab files of the machine running the test
	frames := filepath.Join(dir, "frames")
	cfg := strings.Replace(string(defaultconfig.TOML()), `save_frames = ""`, `save_frames = "`+frames+`"`, 1)
	cfg = strings.Replace(cfg, `save_every = 30`, `save_every = 10`, 1)
	path := filepath.Join(dir, "bridge.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// Run until two frames are saved: the saver skips frames while it
	// writes one, and a loaded machine writes slowly.
	ctx, cancel := context.WithCancel(context.Background())
	var simOut, simErr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sim", "-config", path, "-ephemeral", "-metrics", ""}, &simOut, &simErr)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if saved, _ := filepath.Glob(filepath.Join(frames, "frame-*-depth.png")); len(saved) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("two frames were not saved in 2 minutes\n%s\n%s", simOut.String(), simErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("sim: %d\n%s\n%s", code, simOut.String(), simErr.String())
	}
	// The virtual camera numbers frames on its own clock: the first one
	// the tracker sees is not necessarily frame 1.
	saved, _ := filepath.Glob(filepath.Join(frames, "frame-*-color.png"))
	slices.Sort(saved)
	if len(saved) == 0 {
		t.Fatal("no colour frame saved")
	}
	color := saved[0]
	depth := strings.Replace(color, "-color.png", "-depth.png", 1)
	calib := filepath.Join(frames, "camera_2d_points.csv")
	mask := filepath.Join(dir, "mask.png")
	for _, p := range []string{color, depth, calib} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("bridge sim did not save %s: %v", p, err)
		}
	}
	prev := -10
	for _, f := range saved {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(f), "frame-%d-color.png", &n); err != nil || n-prev < 10 {
			t.Errorf("saved %s after frame %d: want only every 10th frame tracked", f, prev)
		}
		prev = n
	}
	code, out, stderr := runCLI(t, "track", "-color", color, "-depth", depth, "-calibration", calib, "-mask", mask, "-json")
	if code != 0 {
		t.Fatalf("track: %d\n%s\n%s", code, out, stderr)
	}
	var got tracker.Report
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("track -json: %v\n%s", err, out)
	}
	if len(got.Markers) != 1 || got.Held || len(got.Vector) != 3 || got.Side != "plan" {
		t.Fatalf("track -json: %+v", got)
	}
	m := got.Markers[0]
	// The first frame shows the robot near its rest pose y0 = (-5, -150, 30)
	// (the partner has barely started to move it); the "plan" side puts the
	// marker on the plane x = -5.
	if m.MM[0] < -5.001 || m.MM[0] > -4.999 {
		t.Errorf("plan x = %v, want -5", m.MM[0])
	}
	if m.MM[1] < -160 || m.MM[1] > -140 || m.MM[2] < 20 || m.MM[2] > 40 || m.DepthMM < 200 || m.DepthMM > 350 || m.Area <= 100 {
		t.Errorf("marker %+v: not near the rest pose", m)
	}
	if st, err := os.Stat(mask); err != nil || st.Size() == 0 {
		t.Errorf("mask not written: %v", err)
	}

	// The text output names the files used.
	code, out, _ = runCLI(t, "track", "-color", color, "-depth", depth, "-calibration", calib, "-side", "top")
	if code != 0 || !strings.Contains(out, "1 marker(s)") || !strings.Contains(out, "calibration: "+calib) || !strings.Contains(out, "side top") {
		t.Errorf("track text output: %d\n%s", code, out)
	}
	// Two markers expected, one found: the vector is held, as emioapi holds it.
	code, out, _ = runCLI(t, "track", "-color", color, "-depth", depth, "-nb_markers", "2", "-json")
	if code != 0 || !strings.Contains(out, `"held":true`) || !strings.Contains(out, `"vector":null`) {
		t.Errorf("held vector: %d\n%s", code, out)
	}
}

func TestTrackErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	color := filepath.Join(dir, "c.png")
	small := filepath.Join(dir, "d.png")
	if err := camera.WriteColorPNG(color, make([]byte, 3*64*48), 64, 48); err != nil {
		t.Fatal(err)
	}
	if err := camera.WriteDepthPNG(small, make([]uint16, 32*24), 32, 24); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"track"}, 2, "-color is required"},
		{[]string{"track", "-color", filepath.Join(dir, "none.png")}, 1, "no such file"},
		{[]string{"track", "-color", color, "-depth", small}, 1, "want the same size"},
		{[]string{"track", "-color", color, "-depth", color}, 1, "want 16-bit greyscale"},
		{[]string{"track", "-color", color, "-side", "left"}, 1, "left"},
		{[]string{"track", "-color", color, "-sort", "x"}, 1, "x"},
		{[]string{"track", "-color", color, "-intrinsics", "1,2,3"}, 1, "fx,fy,ppx,ppy"},
		{[]string{"track", "-color", color, "-depth_min", "10", "-depth_max", "5"}, 1, "depth range"},
		{[]string{"track", "-color", color, "-params", filepath.Join(dir, "none.json")}, 1, "none.json"},
	} {
		code, out, stderr := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr+out, tc.want) {
			t.Errorf("%v: exit %d (want %d)\n%s%s", tc.args, code, tc.code, out, stderr)
		}
	}
	// An empty black frame: no marker, and the vector is held at zeros.
	code, out, _ := runCLI(t, "track", "-color", color, "-params", writeParams(t, dir), "-calibration", "", "-json")
	if code != 0 || !strings.Contains(out, `"markers":[]`) || !strings.Contains(out, `"held":true`) {
		t.Errorf("empty frame: %d %s", code, out)
	}
}

func writeParams(t *testing.T, dir string) string {
	p := filepath.Join(dir, "cameraparameter.json")
	if err := os.WriteFile(p, []byte(`{"hue_h": 90, "hue_l": 73, "sat_h": 255, "sat_l": 138, "value_h": 255, "value_l": 35, "erosion_size": 0, "area": 100}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBenchTracker(t *testing.T) {
	code, out, stderr := runCLI(t, "bench", "tracker", "-frames", "10", "-json")
	if code != 0 {
		t.Fatalf("bench tracker: %d\n%s%s", code, out, stderr)
	}
	var res struct {
		Width, Height int
		Scenes        []struct {
			Scene    string
			Contours int
			Markers  int
			MedianMs float64 `json:"median_ms"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if res.Width != 848 || len(res.Scenes) != 3 {
		t.Fatalf("result %+v", res)
	}
	for _, s := range res.Scenes {
		if s.Markers != 4 || s.Contours < 5 || s.MedianMs <= 0 {
			t.Errorf("scene %+v: want 4 markers and a time", s)
		}
	}
	if code, _, _ := runCLI(t, "bench", "tracker", "-frames", "1"); code != 1 {
		t.Errorf("-frames 1 accepted")
	}
}
