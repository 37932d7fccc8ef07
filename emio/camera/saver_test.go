package camera

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// The camera's frame hook only copies: the saver's own Serve writes the
// PNGs, a frame offered while one is being written is not saved, and frames
// that are not due cost nothing.
func TestSaverOffThePath(t *testing.T) {
	dir := t.TempDir()
	const w, h = 64, 48
	s, err := NewSaver(dir, 2, w, h, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f := &Frame{Color: make([]byte, 3*w*h), Depth: make([]uint16, w*h)}
	s.busy.Store(true) // as if a frame were being written
	f.Number = 1
	s.Offer(f, nil) // due, but the saver is busy: skipped
	s.busy.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Serve(ctx) })
	for n := uint64(2); n <= 5; n++ {
		f.Number = n
		s.Offer(f, nil)
		for s.busy.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	if n := testing.AllocsPerRun(100, func() { s.seen = 1; s.Offer(f, nil) }); n != 0 {
		t.Errorf("a frame that is not due allocates %v times", n)
	}
	cancel()
	wg.Wait()
	saved, _ := filepath.Glob(filepath.Join(dir, "frame-*-color.png"))
	if len(saved) != 2 || !strings.HasSuffix(saved[0], "frame-000003-color.png") || !strings.HasSuffix(saved[1], "frame-000005-color.png") {
		t.Errorf("saved %v, want frames 3 and 5 (every 2nd, frame 1 skipped while busy)", saved)
	}
	if _, err := NewSaver(dir, 0, w, h, nil); err == nil {
		t.Error("a saver of every 0th frame was accepted")
	}
}

// Frames survive the PNG round trip bit for bit: colour as 8-bit RGB, depth
// as 16-bit grey (big-endian in the file), masks as 8-bit grey.
func TestFramePNGRoundTrip(t *testing.T) {
	dir := t.TempDir()
	const w, h = 7, 5
	bgr := make([]byte, 3*w*h)
	depth := make([]uint16, w*h)
	for i := range bgr {
		bgr[i] = byte(i * 37)
	}
	for i := range depth {
		depth[i] = uint16(i*4099 + 1)
	}
	cp, dp := filepath.Join(dir, "c.png"), filepath.Join(dir, "d.png")
	if err := WriteColorPNG(cp, bgr, w, h); err != nil {
		t.Fatal(err)
	}
	if err := WriteDepthPNG(dp, depth, w, h); err != nil {
		t.Fatal(err)
	}
	gotC, cw, ch, err := ReadColorPNG(cp)
	if err != nil || cw != w || ch != h || string(gotC) != string(bgr) {
		t.Fatalf("colour round trip: %v %dx%d equal=%v", err, cw, ch, string(gotC) == string(bgr))
	}
	gotD, dw, dh, err := ReadDepthPNG(dp)
	if err != nil || dw != w || dh != h {
		t.Fatalf("depth round trip: %v %dx%d", err, dw, dh)
	}
	for i := range depth {
		if gotD[i] != depth[i] {
			t.Fatalf("depth[%d] = %d, want %d", i, gotD[i], depth[i])
		}
	}
	mask := make([]byte, w*h)
	mask[3] = 255
	if err := WriteMaskPNG(filepath.Join(dir, "m.png"), mask, w, h); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ReadColorPNG(filepath.Join(dir, "none.png")); err == nil {
		t.Fatal("missing file read")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.png"), []byte("not a png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ReadDepthPNG(filepath.Join(dir, "bad.png")); err == nil || !strings.Contains(err.Error(), "bad.png") {
		t.Fatalf("corrupt PNG: %v", err)
	}
	if _, _, _, err := ReadDepthPNG(cp); err == nil || !strings.Contains(err.Error(), "want 16-bit greyscale") {
		t.Fatalf("colour PNG read as depth: %v", err)
	}
}

// A saved frame reads back whole: colour and depth of the same size, or
// zeros for a frame saved without depth.
func TestReadFramePNG(t *testing.T) {
	dir := t.TempDir()
	c, d, small := filepath.Join(dir, "c.png"), filepath.Join(dir, "d.png"), filepath.Join(dir, "s.png")
	if err := errors.Join(WriteColorPNG(c, make([]byte, 3*8*6), 8, 6), WriteDepthPNG(d, make([]uint16, 8*6), 8, 6),
		WriteDepthPNG(small, make([]uint16, 4*3), 4, 3)); err != nil {
		t.Fatal(err)
	}
	if f, w, h, err := ReadFramePNG(c, d); err != nil || w != 8 || h != 6 || len(f.Color) != 144 || len(f.Depth) != 48 {
		t.Errorf("frame: %dx%d %v", w, h, err)
	}
	if f, _, _, err := ReadFramePNG(c, ""); err != nil || len(f.Depth) != 48 {
		t.Errorf("frame without depth: %v", err)
	}
	if _, _, _, err := ReadFramePNG(c, small); err == nil || !strings.Contains(err.Error(), "want the same size") {
		t.Errorf("sizes that differ: %v", err)
	}
}

// The save folder removed while the camera runs: each frame that cannot be
// written is counted, the failure is logged once at WARN with the folder
// and the reason, Serve runs on, and frames are saved again once the
// folder is back. No half PNG and no temporary file is ever in the folder.
func TestSaverWriteFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "frames")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const w, h = 32, 24
	var logged testutil.SyncBuffer
	s, err := NewSaver(dir, 1, w, h, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var served error
	wg.Go(func() { served = s.Serve(ctx) })
	defer func() {
		cancel()
		wg.Wait()
		if served != nil {
			t.Errorf("Serve: %v", served)
		}
	}()
	f := &Frame{Color: make([]byte, 3*w*h), Depth: make([]uint16, w*h)}
	// offer offers frame n once the saver is idle, and waits until it is
	// written or has failed.
	offer := func(n uint64) {
		t.Helper()
		testutil.WaitFor(t, "the saver idle", func() bool { return !s.busy.Load() })
		f.Number = n
		s.Offer(f, nil)
		testutil.WaitFor(t, "the frame handled", func() bool { return !s.busy.Load() })
	}
	offer(1)
	if s.Saved() != 1 || s.Failed() != 0 {
		t.Fatalf("saved %d failed %d, want 1 and 0", s.Saved(), s.Failed())
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for n := uint64(2); n <= 4; n++ {
		offer(n)
	}
	if s.Saved() != 1 || s.Failed() != 3 {
		t.Errorf("saved %d failed %d, want 1 and 3", s.Saved(), s.Failed())
	}
	var warns []string
	for _, l := range logged.Lines() {
		if strings.Contains(l, "level=WARN") {
			warns = append(warns, l)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "folder="+dir) ||
		!strings.Contains(warns[0], "the folder "+dir+" does not exist; create it or choose another save_frames") {
		t.Errorf("want one WARN naming the folder and the reason, got %q", warns)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	offer(5)
	if s.Saved() != 2 || !logged.Contains("frames are saved again") {
		t.Errorf("saved %d after the folder came back; log:\n%s", s.Saved(), logged.String())
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "frame-000005-color.png frame-000005-depth.png" {
		t.Errorf("the folder holds %v", names)
	}
}
