//go:build cgo

package realsense

import (
	"context"
	"errors"
	"os"
	"strconv"
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
		cfg := Config{PlaybackFile: fixture, Color: true, Depth: true, Loop: mode == 3, Timeout: 30 * time.Second}
		if mode == 2 {
			// Reading past the end waits this long for nothing.
			cfg.Timeout = 200 * time.Millisecond
		}
		cam, err := lib.OpenCamera(cfg)
		if err != nil {
			t.Fatalf("cycle %d: open: %v", i, err)
		}
		f := cam.NewFrame()
		switch mode {
		case 1, 3:
			if err := cam.Read(ctx, f); err != nil && !(mode == 1 && errors.Is(err, ErrTimeout)) {
				t.Fatalf("cycle %d: read: %v", i, err)
			}
		case 2:
			for cam.Read(ctx, f) == nil {
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
