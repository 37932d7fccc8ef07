//go:build cgo

package realsense

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// recordMoving has the real librealsense2 record a multi-frame session from a
// software device (testdata/record_moving.py) and returns its path.
func recordMoving(t *testing.T, frames int) string {
	t.Helper()
	dir := t.TempDir()
	var failures []string
	// librealsense 2.59 records ROS 2 .db3 files, earlier versions ROS 1 .bag:
	// each attempt's output is kept, since the last one alone can hide why
	// the right one failed.
	for _, ext := range []string{".db3", ".bag"} {
		path := filepath.Join(dir, "moving"+ext)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		out, err := exec.CommandContext(ctx, "python3", "testdata/record_moving.py", path, strconv.Itoa(frames)).CombinedOutput()
		cancel()
		if err == nil {
			return path
		}
		if strings.Contains(string(out), "No module named") {
			testutil.RequirePeer(t, "python3 with pyrealsense2 and numpy", "pip install pyrealsense2 numpy", errors.New(strings.TrimSpace(lastLine(out))))
		}
		failures = append(failures, fmt.Sprintf("%s: %v\n%s", ext, err, out))
	}
	t.Fatalf("recording with librealsense2 failed:\n%s", strings.Join(failures, "\n"))
	return ""
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// A recording made by the real library plays back through the binding as
// playback promises: framesets in order (depth and colour numbers equal,
// strictly increasing, none twice, none beyond the recording), each showing
// what was recorded under its number (a disk moving 10 px per frame), the
// recording's last frameset reached, then the end reported as ErrTimeout.
// How many framesets a busy machine delivers is not part of the promise.
func TestPlaybackRecordedSession(t *testing.T) {
	const frames = 10
	lib := loadLib(t)
	path := recordMoving(t, frames)
	cam, err := lib.OpenCamera(Config{PlaybackFile: path, Color: true, Depth: true, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cam.Close()
	if _, d := cam.Intrinsics(); d.Width != 640 || d.FX != 400 || d.PPX != 320 {
		t.Errorf("depth intrinsics %+v, want the recorded 640x480 fx 400 ppx 320", d)
	}
	f := cam.NewFrame()
	ctx := context.Background()
	var last uint64
	var read []uint64
	for {
		err := cam.Read(ctx, f)
		if errors.Is(err, ErrTimeout) {
			break // the end of a recording played once
		}
		if err != nil {
			t.Fatalf("after frame %d: %v", last, err)
		}
		n := f.FrameNumber
		read = append(read, n)
		if f.ColorFrameNumber != n || n <= last || n > frames {
			t.Fatalf("frame numbers depth %d colour %d after %d (read so far %v)", n, f.ColorFrameNumber, last, read)
		}
		last = n
		x, y := 200+10*int(n-1), 240
		i := y*640 + x
		if f.Depth[i] != 300 || f.Depth[y*640+x+30] != 600 {
			t.Errorf("frame %d: depth %d at the disk, %d beside it; want 300 and 600", n, f.Depth[i], f.Depth[y*640+x+30])
		}
		if c := f.Color[3*i : 3*i+3]; c[0] != 40 || c[1] != 200 || c[2] != 40 {
			t.Errorf("frame %d: colour %v at the disk, want BGR 40 200 40", n, c)
		}
	}
	t.Logf("read frames %v", read)
	if last != frames {
		t.Errorf("read frames %v: the recording's last frame #%d never came", read, frames)
	}
}
