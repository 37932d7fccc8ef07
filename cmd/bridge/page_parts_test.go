package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/statuspage"
)

// The status page of the default Emio link in the virtual lab: the loop's
// lateness, the servos with their angles and temperatures, the camera with
// a thumbnail that shows the rendered marker found, and a warning logged.
func TestStatusPageParts(t *testing.T) {
	cfg, err := config.Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Links = cfg.Links[:1] // the Emio with its simulated camera
	logger := slog.New(logging.WithRing(slog.DiscardHandler, &logging.Ring{}))
	a, err := wire(cfg, "test.toml", config.Env{Logger: logger, Partner: true, Ephemeral: true}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.serve(ctx, io.Discard, 0) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	base := fmt.Sprintf("http://%v", a.MetricsAddr())

	// Until the camera has tracked frames and every servo's temperature
	// was read (one register every few ticks): however loaded the machine,
	// never a fixed time.
	deadline := time.Now().Add(2 * time.Minute)
	var l statuspage.LinkStatus
	var snap statuspage.Snapshot
	for {
		snap = statuspage.Snapshot{}
		if body, code := fetch(base + "/status.json"); code == http.StatusOK && json.Unmarshal(body, &snap) == nil && len(snap.Links) == 1 {
			l = snap.Links[0]
			if l.Camera != nil && l.Camera.Frames >= 3 && l.Camera.FPS > 0 && l.Lateness != nil && len(l.Servos) == 4 && allRead(l.Servos) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed the camera, the servos and the lateness: %+v", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if l.Lateness.Ticks == 0 || l.Lateness.MaxMs < l.Lateness.P99Ms || l.Lateness.P99Ms < 0 {
		t.Errorf("lateness %+v", l.Lateness)
	}
	for i, s := range l.Servos {
		if s.ID != i || s.AngleRad == nil || *s.LimitC <= 0 || *s.TempC <= 0 || s.HardwareError != "" {
			t.Errorf("servo %d: %+v", i, s)
		}
	}
	c := l.Camera
	if !c.Streaming || c.Found != 1 || c.AgeMs == nil || *c.AgeMs < 0 || c.Thumbnail != "camera/emio.jpg" {
		t.Errorf("camera %+v", c)
	}
	// A warning reaches the page's last errors. The page keeps the last
	// ten, which a loaded machine's own warnings (a missed servo read, an
	// overrun) can fill between a log line and a poll: the line is logged
	// again before each poll until one poll shows it.
	deadline = time.Now().Add(time.Minute)
	for found := false; !found; {
		logger.Warn("a test warning", "link", "emio", "err", "it went wrong")
		var s statuspage.Snapshot
		if body, code := fetch(base + "/status.json"); code == http.StatusOK && json.Unmarshal(body, &s) == nil {
			for _, e := range s.Errors {
				if e.Message == "a test warning" && e.Link == "emio" && e.Level == "WARN" && e.Detail == "err=it went wrong" {
					found = true
				}
			}
		}
		if !found && time.Now().After(deadline) {
			t.Fatalf("the warning is not among the page's errors: %+v", s.Errors)
		}
	}

	// The first ask starts the copies; a thumbnail follows.
	var img image.Image
	for {
		body, code := fetch(base + "/" + c.Thumbnail)
		if code == http.StatusOK {
			if img, err = jpeg.Decode(bytes.NewReader(body)); err != nil {
				t.Fatalf("thumbnail: %v", err)
			}
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %s", c.Thumbnail, code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b := img.Bounds(); b.Dx() != statuspage.ThumbnailWidth || b.Dy() != statuspage.ThumbnailWidth*3/4 {
		t.Errorf("thumbnail %v, want 320x240", b)
	}
	// The rendered marker, found: the tracker's mask tinted magenta and
	// the marker drawn in yellow (within JPEG's losses).
	var magenta, yellow int
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r > 150 && bl > 120 && g < 110 {
				magenta++
			}
			if r > 200 && g > 170 && bl < 90 {
				yellow++
			}
		}
	}
	if magenta < 10 || yellow < 10 {
		t.Errorf("thumbnail: %d mask pixels, %d marker pixels; want the marker found and drawn", magenta, yellow)
	}
	for _, p := range []string{"/camera/nolink.jpg"} {
		if _, code := fetch(base + p); code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, code)
		}
	}
}

func allRead(ss []statuspage.Servo) bool {
	for _, s := range ss {
		if s.TempC == nil || s.LimitC == nil {
			return false
		}
	}
	return true
}

func fetch(url string) ([]byte, int) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b, resp.StatusCode
}
