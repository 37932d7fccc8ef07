package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/camera"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"

	defaultconfig "github.com/labbridge/bridge"
)

// The virtual camera renders a frame from the simulated servos' positions
// without allocating, at its own pace.
func TestSimSourceAllocs(t *testing.T) {
	cfg, err := bridge.ParseConfig(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	lf := &cfg.Links[0]
	lf.Camera.FPS = 90 // keep the test short
	clock := realtime.NewClock()
	s, err := newSimSource(lf, clock)
	if err != nil {
		t.Fatal(err)
	}
	bc := dxlsim.DefaultBusConfig()
	bc.IDs = []byte{0, 1, 2, 3}
	bus, err := dxlsim.NewBus(bc)
	if err != nil {
		t.Fatal(err)
	}
	s.setAngles(servoAngles(bus, bc.IDs))
	st, err := s.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := &camera.Frame{Color: make([]byte, 3*st.Width*st.Height), Depth: make([]uint16, st.Width*st.Height)}
	if err := s.Read(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10, func() {
		if err := s.Read(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a virtual frame allocates %v times", n)
	}
	if f.Number < 11 || f.Time == 0 {
		t.Fatalf("frame number %d time %d", f.Number, f.Time)
	}
}

// The repository's RealSense recording, played through the real
// librealsense2 into the camera goroutine and the tracker.
const bagFixture = "../../../shared/fixtures/single_depth_color_640x480.bag"

func TestRealsensePlaybackThroughCamera(t *testing.T) {
	if _, err := os.Stat(bagFixture); err != nil {
		t.Skipf("no recording at %s: %v", bagFixture, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if lib, err := loadRealsense(ctx); err != nil {
		t.Skipf("librealsense2 not available (%v): pip install pyrealsense2", err)
	} else {
		lib.Close()
	}
	clock := realtime.NewClock()
	src := &rsSource{clock: clock, pace: int64(time.Second / 30), cfg: realsense.Config{
		PlaybackFile: bagFixture, Loop: true, Color: true, Depth: true, Timeout: 30 * time.Second,
	}}
	defer src.closeLib()
	var got camera.Stream
	c, err := camera.New(camera.Config{
		Name: "bag", Source: src, NbMarkers: 1, Clock: clock, StallAfter: 30 * time.Second, // each loop re-parses the file: slow on a loaded machine
		Tracker: func(st camera.Stream) (*tracker.Tracker, error) {
			got = st
			return trackerFor(visionFiles{params: tracker.DefaultParams()}, tracker.Top, tracker.SortY, 1, 0, 1000)(st)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Serve(sctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for c.Frames() < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c.Frames() < 5 {
		t.Fatalf("%d frames tracked from the recording", c.Frames())
	}
	// The recording's depth stream (docs/realsense.md §6.2): 640×480, the
	// intrinsics pyrealsense2 reports for it.
	if got.Width != 640 || got.Height != 480 || got.Intrinsics.FX != float64(float32(390.43146)) || got.Intrinsics.PPX != float64(float32(331.38788)) {
		t.Errorf("stream %+v", got)
	}
	s := c.Latest(make([]float64, 3))
	if !s.Valid || s.Frame == 0 {
		t.Errorf("sample %+v", s)
	}
	t.Logf("%d frames tracked, last frame number %d, %d marker(s) found", c.Frames(), s.Frame, s.Found)
}

func TestCamerasCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lib, err := loadRealsense(ctx)
	if err != nil {
		code, _, stderr := runCLI(t, "cameras")
		if code != 1 || !strings.Contains(stderr, "pyrealsense2") && !strings.Contains(stderr, "cgo") {
			t.Errorf("without librealsense2: exit %d, %q: want the install hint", code, stderr)
		}
		t.Skipf("librealsense2 not available (%v): pip install pyrealsense2", err)
	}
	lib.Close()
	code, out, stderr := runCLI(t, "cameras")
	if code != 0 || !strings.Contains(out, "librealsense2 2.") {
		t.Errorf("cameras: exit %d\n%s%s", code, out, stderr)
	}
}

// A camera that cannot stream makes /healthz fail and say why, while the
// link itself keeps running on its servos; the virtual camera streams and
// the same link is healthy.
func TestHealthReportsCameraDown(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, tc := range []struct {
		kind, serial string
		code         int
		body         string
	}{
		{"sim", "", http.StatusOK, "ok"},
		{"realsense", "no-such-camera", http.StatusServiceUnavailable, "camera is not streaming"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			cfg, err := bridge.ParseConfig(defaultconfig.TOML())
			if err != nil {
				t.Fatal(err)
			}
			lf := &cfg.Links[0]
			lf.Camera.Kind, lf.Camera.Serial, lf.Clock = tc.kind, tc.serial, "timer"
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			a, err := wire(cfg, wireOpts{partner: true, ephemeral: true}, "127.0.0.1:0", slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.sup.Serve(ctx) }()
			defer func() {
				cancel()
				<-done
				a.close()
			}()
			url := fmt.Sprintf("http://%v/healthz", a.server.Addr())
			deadline := time.Now().Add(20 * time.Second)
			for {
				resp, err := http.Get(url)
				if err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode == tc.code && strings.Contains(string(body), tc.body) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("/healthz: %d %q, want %d %q", resp.StatusCode, body, tc.code, tc.body)
					}
				} else if time.Now().After(deadline) {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// A session recorded by the real librealsense2 (a disk moving 10 px per
// frame) replayed through the camera goroutine: the tracker finds the disk
// where it was recorded, frame by frame.
func TestRecordedSessionThroughTracker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lib, err := loadRealsense(ctx)
	if err != nil {
		t.Skipf("librealsense2 not available (%v): pip install pyrealsense2", err)
	}
	lib.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "moving.db3")
	if out, err := exec.CommandContext(ctx, "python3", "../../realsense/testdata/record_moving.py", path, "10").CombinedOutput(); err != nil {
		if strings.Contains(string(out), "No module named") {
			t.Skipf("python3 lacks pyrealsense2 or numpy: pip install pyrealsense2 numpy")
		}
		t.Fatalf("recording: %v\n%s", err, out)
	}
	clock := realtime.NewClock()
	src := &rsSource{clock: clock, pace: int64(time.Second / 30), cfg: realsense.Config{
		PlaybackFile: path, Loop: true, Color: true, Depth: true, Timeout: 30 * time.Second,
	}}
	defer src.closeLib()
	type seen struct {
		px, py int
		depth  float64
		n      int
	}
	var mu sync.Mutex
	got := map[uint64]seen{}
	c, err := camera.New(camera.Config{
		Name: "recorded", Source: src, NbMarkers: 1, Clock: clock, StallAfter: 30 * time.Second,
		Tracker: trackerFor(visionFiles{params: tracker.DefaultParams()}, tracker.Top, tracker.SortY, 1, 0, 1000),
		OnFrame: func(f *camera.Frame, r *tracker.Result) {
			s := seen{n: len(r.Markers)}
			if len(r.Markers) == 1 {
				s.px, s.py, s.depth = r.Markers[0].PX, r.Markers[0].PY, r.Markers[0].DepthMM
			}
			mu.Lock()
			got[f.Number] = s
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Serve(sctx) }()
	for c.Frames() < 12 && sctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Playback may drop a frameset when it starts or loops; every frame
	// tracked must show the disk where it was recorded under its number.
	if len(got) < 9 {
		t.Fatalf("frame numbers seen: %v, want most of 1..10", got)
	}
	for k, s := range got {
		want := 200 + 10*int(k-1)
		if k < 1 || k > 10 || s.n != 1 || s.px != want || s.py != 240 || s.depth != 300 {
			t.Errorf("frame %d: %+v, want one marker at (%d, 240), 300 mm", k, s, want)
		}
	}
}

// The camera's frame hook only copies: the saver's goroutine writes the
// PNGs, a frame offered while one is being written is skipped, and frames
// that are not due cost nothing.
func TestFrameSaverOffThePath(t *testing.T) {
	dir := t.TempDir()
	const w, h = 64, 48
	s := newFrameSaver(dir, 2, w, h, slog.New(slog.DiscardHandler))
	f := &camera.Frame{Color: make([]byte, 3*w*h), Depth: make([]uint16, w*h)}
	s.busy.Store(true) // as if a frame were being written
	f.Number = 1
	s.offer(f, nil) // due, but the saver is busy: skipped
	s.busy.Store(false)
	var wg sync.WaitGroup
	wg.Go(s.run)
	for n := uint64(2); n <= 5; n++ {
		f.Number = n
		s.offer(f, nil)
		for s.busy.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	if n := testing.AllocsPerRun(100, func() { s.seen = 1; s.offer(f, nil) }); n != 0 {
		t.Errorf("a frame that is not due allocates %v times", n)
	}
	s.close()
	wg.Wait()
	saved, _ := filepath.Glob(filepath.Join(dir, "frame-*-color.png"))
	if len(saved) != 2 || !strings.HasSuffix(saved[0], "frame-000003-color.png") || !strings.HasSuffix(saved[1], "frame-000005-color.png") {
		t.Errorf("saved %v, want frames 3 and 5 (every 2nd, frame 1 skipped while busy)", saved)
	}
}
