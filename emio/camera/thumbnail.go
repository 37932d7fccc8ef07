package camera

import (
	"image"
	"image/color"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/realsense/tracker"
)

// The thumbnail of the status page: the newest frame with the tracker's
// mask over it and the markers it found. Tracking runs in Feed.run on
// the camera's goroutine (or its own thread with a priority) for every
// clock of the link: "timer" and "camera" only take the published vector at
// the send, "frame" is woken by the eventfd after it. The frame is copied
// there, after the vector is published and the loop signalled, and only
// while a viewer asked recently; the loop thread, which only calls Markers
// and LatchMarkers, never sees the tap. Scaling and drawing happen on the
// viewer's goroutine (Thumbnail).

// ThumbnailWant is how long one Thumbnail call keeps the camera copying
// frames: a page refreshing a few times a second keeps it on, a closed
// page stops it soon.
const ThumbnailWant = 2 * time.Second

// maxTapMarkers bounds the markers kept with a copy: the buffer is made
// once, and a frame full of blobs needs no more to be seen as such.
const maxTapMarkers = 64

// frameTap is the copy of the newest frame a viewer asked for.
type frameTap struct {
	// until is the camera clock (ns) until which a viewer wants frames.
	until atomic.Int64
	// mu guards what follows. The camera goroutine only TryLocks it, so it
	// never waits for a viewer: a frame that finds it held is not copied.
	mu      sync.Mutex
	w, h    int
	color   []byte // BGR8
	mask    []byte // 0 or 255 per pixel
	markers []tracker.Marker
	frame   uint64
	valid   bool
}

// resize makes the buffers for a w×h stream; at open, never per frame.
func (t *frameTap) resize(w, h int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == w && t.h == h {
		return
	}
	t.w, t.h, t.valid = w, h, false
	t.color, t.mask = make([]byte, 3*w*h), make([]byte, w*h)
	t.markers = make([]tracker.Marker, 0, maxTapMarkers)
}

// offer copies a tracked frame when a viewer wants one at now and none is
// reading the last copy. It allocates nothing.
func (t *frameTap) offer(now int64, f *Frame, mask []byte, markers []tracker.Marker) {
	if now >= t.until.Load() || !t.mu.TryLock() {
		return
	}
	if len(f.Color) == len(t.color) && len(mask) == len(t.mask) {
		copy(t.color, f.Color)
		copy(t.mask, mask)
		t.markers = append(t.markers[:0], markers[:min(len(markers), cap(t.markers))]...)
		t.frame, t.valid = f.Number, true
	}
	t.mu.Unlock()
}

// Thumbnail draws the newest copied frame width pixels wide (the aspect
// kept; at most the frame's width) with the tracker's mask tinted over it
// and a circle and crosshair on each marker found, and returns its frame
// number. It also asks the camera to copy frames for ThumbnailWant, so
// that the next call gets a newer one: ok is false until a frame was
// copied (the first call after a while, or a camera not streaming yet). It
// runs on the caller's goroutine and holds the copy only while scaling.
func (c *Feed) Thumbnail(width int) (img *image.RGBA, frame uint64, ok bool) {
	t := &c.tap
	t.until.Store(c.cfg.Clock.Now() + int64(ThumbnailWant))
	t.mu.Lock()
	if !t.valid || t.w <= 0 || t.h <= 0 {
		t.mu.Unlock()
		return nil, 0, false
	}
	w, h := t.w, t.h
	dw := min(max(width, 16), w)
	dh := max(int(math.Round(float64(h)*float64(dw)/float64(w))), 1)
	img = image.NewRGBA(image.Rect(0, 0, dw, dh))
	scaleMasked(img, t.color, t.mask, w, h)
	var marks [maxTapMarkers]tracker.Marker
	n := copy(marks[:], t.markers)
	frame = t.frame
	t.mu.Unlock()

	sx, sy := float64(dw)/float64(w), float64(dh)/float64(h)
	for _, m := range marks[:n] {
		r := math.Sqrt(max(m.Area, 0)/math.Pi) * sx
		drawMarker(img, (float64(m.PX)+0.5)*sx, (float64(m.PY)+0.5)*sy, r)
	}
	return img, frame, true
}

// maskTint is the colour of the tracker's mask over the frame.
var maskTint = [3]float64{255, 0, 200}

// scaleMasked averages the w×h BGR frame and its mask into dst, box by
// box, and tints each pixel by the part of its box that the mask holds.
func scaleMasked(dst *image.RGBA, bgr, mask []byte, w, h int) {
	b := dst.Bounds()
	dw, dh := b.Dx(), b.Dy()
	for dy := range dh {
		y0 := dy * h / dh
		y1 := max((dy+1)*h/dh, y0+1)
		row := dst.Pix[dy*dst.Stride:]
		for dx := range dw {
			x0 := dx * w / dw
			x1 := max((dx+1)*w/dw, x0+1)
			var sb, sg, sr, sm, n int
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					i := y*w + x
					sb += int(bgr[3*i])
					sg += int(bgr[3*i+1])
					sr += int(bgr[3*i+2])
					sm += int(mask[i] & 1) // 255 or 0
					n++
				}
			}
			a := 0.6 * float64(sm) / float64(n)
			px := row[4*dx : 4*dx+4 : 4*dx+4]
			px[0] = blend(float64(sr)/float64(n), maskTint[0], a)
			px[1] = blend(float64(sg)/float64(n), maskTint[1], a)
			px[2] = blend(float64(sb)/float64(n), maskTint[2], a)
			px[3] = 255
		}
	}
}

func blend(v, tint, a float64) uint8 { return uint8(math.Round(v*(1-a) + tint*a)) }

var (
	markColor   = color.RGBA{255, 214, 0, 255}
	markOutline = color.RGBA{20, 24, 32, 255}
)

// drawMarker rings the marker of radius r at (cx, cy) with a circle and
// four crosshair ticks outside it, in a bright colour with a dark outline
// so that it shows on any background; the marker and its mask inside stay
// visible.
func drawMarker(img *image.RGBA, cx, cy, r float64) {
	ring := r + 5
	for pass, c := range [2]color.RGBA{markOutline, markColor} {
		half := 1.6 - 0.8*float64(pass) // the outline is the wider stroke
		steps := int(2*math.Pi*ring) + 8
		for k := range steps {
			a := 2 * math.Pi * float64(k) / float64(steps)
			dot(img, cx+ring*math.Cos(a), cy+ring*math.Sin(a), half, c)
		}
		for d := ring - 2; d <= ring+7; d += 0.5 {
			dot(img, cx+d, cy, half, c)
			dot(img, cx-d, cy, half, c)
			dot(img, cx, cy+d, half, c)
			dot(img, cx, cy-d, half, c)
		}
	}
}

// dot fills the pixels within half of (x, y), clipped to img.
func dot(img *image.RGBA, x, y, half float64, c color.RGBA) {
	b := img.Bounds()
	for py := int(math.Floor(y - half)); py <= int(math.Floor(y+half)); py++ {
		for px := int(math.Floor(x - half)); px <= int(math.Floor(x+half)); px++ {
			if image.Pt(px, py).In(b) {
				img.SetRGBA(px, py, c)
			}
		}
	}
}
