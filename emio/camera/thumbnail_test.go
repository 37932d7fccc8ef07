package camera

import (
	"context"
	"image"
	"image/color"
	"math"
	"testing"
	"time"

	"github.com/labbridge/bridge/realtime"
)

// preparedCamera is a camera with its buffers made and one frame drawn
// with the square centred at (cx, cy), not serving.
func preparedCamera(t *testing.T, cx, cy int) *Feed {
	t.Helper()
	clock := realtime.NewClock()
	c, err := New(Config{Name: "t", Source: &fakeSource{clock: clock}, Tracker: newTracker, NbMarkers: 1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.prepare(Stream{Width: testW, Height: testH, FPS: 30, Intrinsics: testIntr}); err != nil {
		t.Fatal(err)
	}
	draw(&c.frame, cx, cy)
	c.frame.Number = 7
	return c
}

// No viewer, no copy: the camera copies frames only after Thumbnail asked.
// Then the thumbnail is the frame scaled, the mask tinted over the marker
// and the marker drawn.
func TestThumbnail(t *testing.T) {
	c := preparedCamera(t, 300, 200)
	if err := c.track(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.Thumbnail(320); ok {
		t.Fatal("a thumbnail before any viewer asked: the camera copied a frame nobody wanted")
	}
	if err := c.track(); err != nil { // the frame after the ask is copied
		t.Fatal(err)
	}
	img, frame, ok := c.Thumbnail(320)
	if !ok {
		t.Fatal("no thumbnail after a frame was tracked with a viewer asking")
	}
	if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 240 || frame != 7 {
		t.Fatalf("thumbnail %v of frame %d, want 320x240 of frame 7", b, frame)
	}
	// The square (21 px, centre (150, 100) in the thumbnail) is ringed
	// 5 px out, the crosshair's ticks beyond; the square itself is left
	// visible, green under the magenta mask.
	r := math.Sqrt(21*21/math.Pi) / 2
	for _, p := range []image.Point{{150 + int(r+5+4), 100}, {150, 100 - int(r+5+4)}} {
		if got := img.RGBAAt(p.X, p.Y); got != markColor {
			t.Errorf("crosshair at %v is %v, want the marker colour %v", p, got, markColor)
		}
	}
	for _, p := range []image.Point{{150, 100}, {146, 96}} {
		if in := img.RGBAAt(p.X, p.Y); !(in.R > 100 && in.B > 100 && in.G < 150) {
			t.Errorf("inside the masked square at %v: %v, want tinted magenta", p, in)
		}
	}
	// The background far from it: the frame's grey (BGR 110), untinted.
	if got := img.RGBAAt(20, 220); got != (color.RGBA{110, 110, 110, 255}) {
		t.Errorf("background %v, want grey 110", got)
	}
	// A width asked wider than the frame gives the frame's size; a silly
	// one does not panic.
	for _, w := range []int{10_000, 0, -5} {
		img, _, ok := c.Thumbnail(w)
		if !ok || img.Bounds().Dx() > testW || img.Bounds().Dx() < 1 {
			t.Errorf("Thumbnail(%d): %v %v", w, img.Bounds(), ok)
		}
	}
}

// The copy for a viewer allocates nothing, whole track included, and a
// viewer reading the copy never makes the camera wait.
func TestThumbnailCopyAllocs(t *testing.T) {
	c := preparedCamera(t, 320, 240)
	c.tap.until.Store(c.cfg.Clock.Now() + int64(time.Hour))
	if n := testing.AllocsPerRun(20, func() {
		c.tap.offer(c.cfg.Clock.Now(), &c.frame, c.tr.Mask(), c.res.Markers)
	}); n != 0 && !raceEnabled {
		t.Errorf("copying a frame for the thumbnail allocates %v times", n)
	}
	if n := testing.AllocsPerRun(10, func() {
		if err := c.track(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 && !raceEnabled {
		t.Errorf("tracking a frame with a viewer allocates %v times", n)
	}
	c.tap.mu.Lock()
	if !c.tap.valid || len(c.tap.markers) != 1 {
		t.Errorf("after tracking with a viewer: copy valid %v with %d markers, want 1", c.tap.valid, len(c.tap.markers))
	}
	// A viewer holds the copy: the camera goes on without copying.
	c.frame.Number = 99
	done := make(chan error, 1)
	go func() { done <- c.track() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // generous: a deadlock never ends
		t.Fatal("track waited for a viewer holding the copy")
	}
	if c.tap.frame == 99 {
		t.Error("the copy was written while a viewer held it")
	}
	c.tap.mu.Unlock()
}

// A serving camera: the page asks, and a thumbnail comes; Info says the
// frames, the rate and the age.
func TestThumbnailServing(t *testing.T) {
	clock := realtime.NewClock()
	c, err := New(Config{Name: "t", Source: &fakeSource{clock: clock, period: 2 * time.Millisecond}, Tracker: newTracker, NbMarkers: 1, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if in := c.Info(); in.Streaming || in.Frames != 0 || in.FPS != 0 || in.Age != 0 {
		t.Fatalf("before Serve: %+v", in)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	deadline := time.Now().Add(time.Minute) // generous: a loaded machine
	for {
		if img, _, ok := c.Thumbnail(160); ok {
			if b := img.Bounds(); b.Dx() != 160 || b.Dy() != 120 {
				t.Fatalf("thumbnail %v, want 160x120", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no thumbnail from a serving camera")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for c.Info().FPS == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no frame rate from a serving camera")
		}
		time.Sleep(5 * time.Millisecond)
	}
	in := c.Info()
	if !in.Streaming || in.Frames < 2 || !in.Sample.Valid || in.Sample.Found != 1 || in.FPS <= 0 || in.Age < 0 || in.Why != "" {
		t.Errorf("Info() = %+v", in)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
