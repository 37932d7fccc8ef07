package statuspage

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/headless"
)

// The page renders the links from what it polls and follows a changing
// snapshot, in one real browser session: what the server says next shows
// in the page already loaded.
func TestPageInChromium(t *testing.T) {
	var stage atomic.Int64
	stage.Store(1)
	var thumbs atomic.Int64
	srv := httptest.NewServer(New(Config{Snapshot: func() Snapshot {
		n := stage.Load()
		s := testSnapshot()
		s.Links[0].Status = append(s.Links[0].Status, fmt.Sprintf("stage %d", n))
		if n > 1 {
			// The partner lost: the link degrades and its counters move on.
			s.Links[0].State = "degraded"
			s.Links[0].Seq = 5678
		}
		s.Links = append(s.Links, LinkStatus{Name: "meca500", Kind: "meca500", State: "degraded", RateHz: 100, Seq: 52,
			Measurement: []Vector{{Name: "joints", Unit: "°", Values: []float64{0, 0, 0, 0, 0, 0}}},
			Command:     []Vector{{Name: "speeds", Unit: "°/s", Values: []float64{0, 0, 0, 0, 0, 0}}},
			Faults: []Fault{{Name: "stopped", Title: "the robot is stopped and waits for a person",
				Detail: "meca500: the robot at 192.168.0.100:10000 is stopped: emergency stop released but not reset: reset it at the power supply, then run `bridge resume meca500`",
				Since:  time.Date(2026, 1, 2, 3, 4, 8, 0, time.UTC)}}})
		return s
	}, Thumbnail: func(link string, width int) (image.Image, bool) {
		thumbs.Add(1)
		return testThumbnail(link, width)
	}}))
	defer srv.Close()

	b := headless.Start(t)
	// Generous: a loaded CI machine; the test waits on what the page
	// shows, never on how fast.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := b.Resize(ctx, 1280, 1400); err != nil {
		t.Fatal(err)
	}
	if err := b.Navigate(ctx, srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what, expr string) {
		t.Helper()
		if err := b.Wait(ctx, expr); err != nil {
			text, _ := b.Text(context.WithoutCancel(ctx))
			t.Fatalf("the page never showed %s: %v\nit shows:\n%s", what, err, text)
		}
	}
	const (
		emio  = `[...document.querySelectorAll(".card")].find(c => c.querySelector("h2").textContent === "emio")`
		badge = emio + `.querySelector(".badge").textContent`
		text  = `document.body.innerText`
		thumb = `document.querySelector(".thumb img")`
	)

	waitFor("the first snapshot with the camera's thumbnail",
		text+`.includes("stage 1") && `+thumb+`?.dataset.natural`)
	var dom string
	if err := b.Eval(ctx, `document.documentElement.outerHTML`, &dom); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"emio", "vrep", "running", "handshaking", "v1.2.3", "/etc/bridge/emio.toml",
		"a servo is hot", "servo 2: 74 °C", "markers", "speeds", "lock locked 30.0029 Hz",
		// The loop's lateness, on the card and beside its plot.
		"tick late p99", "42 µs", "tick late max", "1.25 ms", "tick lateness",
		// The servos: angle, temperature against the limit, alerts.
		"+0.250", "74 °C", "/ 80", "overheating", "alerts 12", "missed 3", "not read yet",
		// The camera: its numbers and a thumbnail that loaded whole.
		"30.0", "13 ms", `data-natural="320x240"`,
		// The last warnings and errors.
		"Last warnings and errors", "partner lost", "err=timeout after 3 ticks", "simulated device stopped",
		"1 error, 1 warning",
		// The shadow twin: its faults, open and ended, and each value
		// against its threshold, one past it marked.
		"shadow twin", "1700 ticks", "servo 2 does not follow its goal (12.0° from the model, up to 14.3°, for 2s)",
		`<div class="twinfault ended">servo 1 does not follow`, "ended · began 1m 35s ago", `<span class="over">+0.210</span>`,
		"robot − model, % of threshold", "angles 210 %",
		// A stop that waits for a person offers the person's action.
		"the robot is stopped and waits for a person", `<button class="resume" data-link="meca500">Resume: I have checked the robot</button>`} {
		if !bytes.Contains([]byte(dom), []byte(want)) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	// Rendered rows, not the script's text that makes them.
	if n := len(regexp.MustCompile(`<tr class="servo"><td class="id">\d`).FindAllString(dom, -1)); n != 4 {
		t.Errorf("%d servo rows, want 4", n)
	}
	if n := len(regexp.MustCompile(`<tr class="logline"><td class="t" title="2026`).FindAllString(dom, -1)); n != 2 {
		t.Errorf("%d log lines, want 2", n)
	}
	var first struct {
		Badge, Thumb string
	}
	if err := b.Eval(ctx, `({Badge: `+badge+`, Thumb: `+thumb+`.src})`, &first); err != nil {
		t.Fatal(err)
	}
	if first.Badge != "running" {
		t.Errorf("the emio card's badge says %q, want running", first.Badge)
	}

	// The server's next snapshot, in the same page.
	stage.Store(2)
	waitFor("the next snapshot", badge+` === "degraded" && `+text+`.includes("stage 2") && !`+text+`.includes("stage 1") && `+
		emio+`.querySelector(".stats").innerText.includes("5678")`)
	// The thumbnail keeps coming too.
	waitFor("a newer thumbnail", thumb+`?.src !== `+fmt.Sprintf("%q", first.Thumb))
	if thumbs.Load() < 2 {
		t.Errorf("the server served %d thumbnails, the page showed two", thumbs.Load())
	}

	path := filepath.Join(t.TempDir(), "statuspage.png")
	if err := b.Screenshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	checkScreenshot(t, path, 1280, 1400)
}

// checkScreenshot checks that path is a PNG at least w × h with something
// drawn in it (a blank page is a few colours), and copies it where
// BRIDGE_SCREENSHOT_DIR says, for a person to look at.
func checkScreenshot(t *testing.T, path string, w, h int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := img.Bounds()
	if r.Dx() < w || r.Dy() < h {
		t.Errorf("%s is %dx%d, want at least %dx%d", path, r.Dx(), r.Dy(), w, h)
	}
	colours := map[[3]uint32]bool{}
	for y := r.Min.Y; y < r.Max.Y; y += 3 {
		for x := r.Min.X; x < r.Max.X; x += 3 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			colours[[3]uint32{cr >> 8, cg >> 8, cb >> 8}] = true
		}
	}
	if len(colours) < 50 || len(data) < 20<<10 {
		t.Errorf("%s: %d bytes, %d colours: nearly blank", path, len(data), len(colours))
	}
	if dir := os.Getenv("BRIDGE_SCREENSHOT_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), data, 0o644); err != nil {
			t.Error(err)
		}
	}
}
