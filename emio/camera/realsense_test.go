package camera

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

// recording is a real D4xx's, from librealsense's unit tests (see
// realsense/testdata/NOTICE).
const recording = "../../realsense/testdata/single_depth_color_640x480.bag"

// needLibrealsense skips unless a real librealsense2 loads.
func needLibrealsense(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lib, err := realsense.LoadAny(ctx)
	if err != nil {
		testutil.RequirePeer(t, "librealsense2", "pip install pyrealsense2", err)
	}
	lib.Close()
}

func topTracker() func(Stream) (*tracker.Tracker, error) {
	return TrackerFor(TrackerSettings{Files: tracker.LabFiles{Params: tracker.DefaultParams()}, Side: tracker.Top, Sort: tracker.SortY,
		NbMarkers: 1, DepthMax: 1000})
}

// The repository's recording, played through the real librealsense2 into
// the camera goroutine and the tracker: the stream has the recording's
// size and intrinsics, and frames are tracked.
func TestRealSensePlaybackThroughCamera(t *testing.T) {
	needLibrealsense(t)
	clock := realtime.NewClock()
	src := NewRealSense(realsense.Config{PlaybackFile: recording, Loop: true, Color: true, Depth: true, Timeout: 30 * time.Second}, 30, clock)
	defer src.Unload()
	var mu sync.Mutex
	var got Stream
	track := topTracker()
	c, err := New(Config{
		Name: "bag", Source: src, NbMarkers: 1, Clock: clock, StallAfter: 30 * time.Second, // each loop re-parses the file: slow on a loaded machine
		Tracker: func(st Stream) (*tracker.Tracker, error) {
			mu.Lock()
			got = st
			mu.Unlock()
			return track(st)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
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
	mu.Lock()
	defer mu.Unlock()
	if got.Width != 640 || got.Height != 480 || got.Intrinsics.FX != float64(float32(390.43146)) || got.Intrinsics.PPX != float64(float32(331.38788)) {
		t.Errorf("stream %+v", got)
	}
	s := c.Latest(make([]float64, 3))
	if !s.Valid || s.Frame == 0 {
		t.Errorf("sample %+v", s)
	}
}

// A session recorded by the real librealsense2 (a disk moving 10 px per
// frame) replayed through the camera goroutine: the tracker finds the disk
// where it was recorded, frame by frame.
func TestRecordedSessionThroughTracker(t *testing.T) {
	needLibrealsense(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "moving.db3")
	if out, err := exec.CommandContext(ctx, "python3", "../../realsense/testdata/record_moving.py", path, "10").CombinedOutput(); err != nil {
		if strings.Contains(string(out), "No module named") {
			testutil.RequirePeer(t, "python3 with pyrealsense2 and numpy", "pip install pyrealsense2 numpy", err)
		}
		t.Fatalf("recording: %v\n%s", err, out)
	}
	clock := realtime.NewClock()
	src := NewRealSense(realsense.Config{PlaybackFile: path, Loop: true, Color: true, Depth: true, Timeout: 30 * time.Second}, 30, clock)
	defer src.Unload()
	type seen struct {
		px, py int
		depth  float64
		n      int
	}
	var mu sync.Mutex
	got := map[uint64]seen{}
	c, err := New(Config{
		Name: "recorded", Source: src, NbMarkers: 1, Clock: clock, StallAfter: 30 * time.Second,
		Tracker: topTracker(),
		OnFrame: func(f *Frame, r *tracker.Result) {
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

// A camera that does not stream says so in its health, naming itself, and
// in its status; a build without the library cannot be retried.
func TestHealthAndStatus(t *testing.T) {
	clock := realtime.NewClock()
	src := &fakeSource{clock: clock, period: 2 * time.Millisecond}
	c, err := New(Config{Name: "emio", Source: src, Tracker: newTracker, NbMarkers: 1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(); !errors.Is(err, ErrNotStreaming) || !strings.Contains(err.Error(), "camera emio") {
		t.Errorf("health before Serve: %v", err)
	}
	if s := c.Status(); s != "camera: no frame yet" {
		t.Errorf("status before a frame: %q", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for c.Frames() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no frames")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.Health(); err != nil {
		t.Errorf("health while streaming: %v", err)
	}
	if s := c.Status(); !strings.HasPrefix(s, "frame ") || !strings.Contains(s, "found 1") {
		t.Errorf("status while streaming: %q", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Unplugged: the health says why, without the camera's name twice.
	src.mu.Lock()
	src.gone = true
	src.mu.Unlock()
	if err := c.Serve(context.Background()); err == nil {
		t.Fatal("Serve on an unplugged camera: no error")
	}
	if got, want := c.Why(), "open: fake: no device: "+ErrDisconnected.Error(); got != want {
		t.Errorf("Why %q, want %q", got, want)
	}
	if err := c.Health(); !errors.Is(err, ErrNotStreaming) || !strings.HasSuffix(err.Error(), "("+c.Why()+")") {
		t.Errorf("health unplugged: %v", err)
	}
	// Without cgo, a RealSense source fails for good: the supervisor must
	// not retry it for ever.
	if _, err := NewRealSense(realsense.Config{Width: 640, Height: 480, FPS: 30, Color: true, Depth: true}, 30, clock).Open(context.Background()); errors.Is(err, realsense.ErrNoCgo) && !errors.Is(err, plant.ErrPermanent) {
		t.Errorf("a build without cgo: %v, want a permanent failure", err)
	}
}
