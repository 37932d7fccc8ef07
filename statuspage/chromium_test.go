package statuspage

import (
	"bytes"
	"fmt"
	"image"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/headless"
)

// The page renders the links from what it polls, and follows a changing
// snapshot, in a real browser.
func TestPageInChromium(t *testing.T) {
	var polls atomic.Int64
	var thumbs atomic.Int64
	srv := httptest.NewServer(New(Config{Snapshot: func() Snapshot {
		n := polls.Add(1)
		s := testSnapshot()
		s.Links[0].Seq = 1000 + n
		s.Links[0].Status = append(s.Links[0].Status, fmt.Sprintf("poll %d", n))
		s.Links[0].RTTMs = 0.1 + 0.01*float64(n%10)
		s.Links = append(s.Links, Link{Name: "meca500", Kind: "meca500", State: "degraded", RateHz: 100, Seq: 52,
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

	pollRe := regexp.MustCompile(`poll (\d+)`)
	servoRowRe := regexp.MustCompile(`<tr class="servo"><td class="id">\d`)
	logRowRe := regexp.MustCompile(`<tr class="logline"><td class="t" title="2026`)
	var seen []int
	for range 2 {
		dom := string(headless.Chromium(t, srv.URL+"/", "--dump-dom", "--virtual-time-budget=3000"))
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
			// A stop that waits for a person offers the person's action.
			"the robot is stopped and waits for a person", `<button class="resume" data-link="meca500">Resume: I have checked the robot</button>`} {
			if !bytes.Contains([]byte(dom), []byte(want)) {
				t.Errorf("the rendered page lacks %q", want)
			}
		}
		// Rendered rows, not the script's text that makes them.
		if n := len(servoRowRe.FindAllString(dom, -1)); n != 4 {
			t.Errorf("%d servo rows, want 4", n)
		}
		if n := len(logRowRe.FindAllString(dom, -1)); n != 2 {
			t.Errorf("%d log lines, want 2", n)
		}
		m := pollRe.FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("the rendered page shows no poll:\n%s", dom)
		}
		n, _ := strconv.Atoi(m[1])
		seen = append(seen, n)
	}
	if seen[1] <= seen[0] {
		t.Errorf("polls shown: %v, want the second page to show a later snapshot", seen)
	}
	if thumbs.Load() == 0 {
		t.Error("the page never asked for the camera's thumbnail")
	}

	png := filepath.Join(t.TempDir(), "statuspage.png")
	headless.Chromium(t, srv.URL+"/", "--screenshot="+png, "--window-size=1280,1400", "--virtual-time-budget=3000")
	img, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(img, []byte("\x89PNG")) {
		t.Fatalf("%s is not a PNG", png)
	}
	if dir := os.Getenv("BRIDGE_SCREENSHOT_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "statuspage.png"), img, 0o644); err != nil {
			t.Error(err)
		}
	}
}
