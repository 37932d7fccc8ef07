//go:build cgo

package realsense

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stressCyclesEnv overrides the number of open/stream/stop cycles of
// TestStressOpenStreamStop (default 200).
const stressCyclesEnv = "REALSENSE_STRESS_CYCLES"

// The open/stream/stop cycle, repeated, in every state a stop can meet the
// library's threads in: right after the start (the playback thread reading
// the file), with a frameset just read (the thread delivering or reaching
// the end of a recording played once), after the end (the device stopped
// itself), and in a looped recording (the pipeline restarting it). A stop
// racing those threads corrupted the heap (docs/realsense.md §6.5); with
// MALLOC_CHECK_=3 glibc aborts on the first misuse instead of later.
func TestStressOpenStreamStop(t *testing.T) {
	if testing.Short() {
		t.Skip("200 open/stream/stop cycles; run without -short")
	}
	needFixture(t)
	lib := loadLib(t)
	cycles := 200
	if s := os.Getenv(stressCyclesEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of cycles", stressCyclesEnv, s)
		}
		cycles = n
	}
	ctx := context.Background()
	start := time.Now()
	for i := range cycles {
		mode := i % 4
		// The timeout is never what ends a read here: the end of the recording
		// is reported as soon as it is reached, and a looped one rewinds.
		cfg := Config{PlaybackFile: fixture, Color: true, Depth: true, Loop: mode == 3, Timeout: 30 * time.Second}
		cam, err := lib.OpenCamera(cfg)
		if err != nil {
			t.Fatalf("cycle %d: open: %v", i, err)
		}
		f := cam.NewFrame()
		switch mode {
		case 1:
			// The syncer can split the fixture's only frameset in two, each
			// lacking a stream: the recording then ends without a complete one.
			if err := cam.Read(ctx, f); err != nil && !errors.Is(err, ErrTimeout) {
				t.Fatalf("cycle %d: read: %v", i, err)
			}
		case 2:
			err := cam.Read(ctx, f)
			for err == nil {
				err = cam.Read(ctx, f)
			}
			if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "has ended") {
				t.Fatalf("cycle %d: read past the end: %v, want the end of the recording", i, err)
			}
		case 3:
			// The fixture holds one frameset: the second read is the rewound recording's.
			if err := cam.Read(ctx, f); err != nil {
				t.Fatalf("cycle %d: read: %v", i, err)
			}
			first := f.FrameNumber
			if err := cam.Read(ctx, f); err != nil {
				t.Fatalf("cycle %d: read after the rewind: %v", i, err)
			}
			if f.FrameNumber != first {
				t.Fatalf("cycle %d: the rewound recording starts at frame #%d, want #%d again", i, f.FrameNumber, first)
			}
		}
		if err := cam.Close(); err != nil {
			t.Fatalf("cycle %d: close: %v", i, err)
		}
		if err := cam.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("cycle %d: second close: %v, want ErrClosed", i, err)
		}
	}
	t.Logf("%d cycles in %v", cycles, time.Since(start).Round(time.Millisecond))
}

// A camera claimed by a Read or Close in progress refuses another call
// instead of stopping the pipeline under it.
func TestBusyCameraRefusesCalls(t *testing.T) {
	needFixture(t)
	lib := loadLib(t)
	cam := openPlayback(t, lib, Config{Color: true, Depth: true})
	f := cam.NewFrame()
	cam.busy.Store(true) // as a Read on another goroutine would
	if err := cam.Read(context.Background(), f); !errors.Is(err, ErrBusy) {
		t.Errorf("Read of a busy camera: %v, want ErrBusy", err)
	}
	if err := cam.Close(); !errors.Is(err, ErrBusy) {
		t.Errorf("Close of a busy camera: %v, want ErrBusy", err)
	}
	cam.busy.Store(false)
	if err := cam.Read(context.Background(), f); err != nil {
		t.Errorf("Read once free: %v", err)
	}
	if err := cam.Close(); err != nil {
		t.Errorf("Close once free: %v", err)
	}
}
