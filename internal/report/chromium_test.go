package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/headless"
)

// The report of a three-link recording, opened in a real browser: every
// link has its plots, with axes labelled with their units.
func TestReportInChromium(t *testing.T) {
	dir := t.TempDir()
	rec, err := Open(writeRecording(t, dir, "run", threeLinks))
	if err != nil {
		t.Fatal(err)
	}
	r := Build(rec)
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	dom := string(headless.Chromium(t, url, "--dump-dom"))
	sections := regexp.MustCompile(`<section class="link" id="link-\d+">`).Split(dom, -1)
	if len(sections) != 4 {
		t.Fatalf("%d link sections in the rendered page, want 3", len(sections)-1)
	}
	common := []string{"time (s)", "lateness (µs)", "reply latency (µs)", "deviation (µs)", "ticks", "status", "state", "lost"}
	for i, want := range []struct {
		name   string
		labels []string
	}{
		{"emio", []string{"markers (mm)", "angles (rad)"}},
		{"meca500", []string{"joints (deg)", "age (s)", "joint_velocity (deg/s)"}},
		{"vrep", []string{"sim_time (s)", "angles (rad)", "speeds (rad/s)"}},
	} {
		s := sections[i+1]
		if !strings.Contains(s, "<h2>"+want.name) {
			t.Errorf("section %d is not %s", i+1, want.name)
		}
		// A timeline, two histograms, the deviation, two measured fields
		// and one commanded.
		if n := strings.Count(s, "<svg"); n != 7 {
			t.Errorf("%s: %d <svg> plots, want 7", want.name, n)
		}
		texts := map[string]bool{}
		for _, m := range regexp.MustCompile(`<text[^>]*>([^<]*)</text>`).FindAllStringSubmatch(s, -1) {
			texts[m[1]] = true
		}
		for _, l := range append(common, want.labels...) {
			if !texts[l] {
				t.Errorf("%s: no axis labelled %q", want.name, l)
			}
		}
	}
	for _, w := range []string{"TIMEOUT", "RECONNECTED", "48 ticks lost", "5 ticks lost", "Thursday 1 January 2026"} {
		if !strings.Contains(dom, w) {
			t.Errorf("the rendered page lacks %q", w)
		}
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	headless.Chromium(t, url, "--screenshot="+shot, "--window-size=1400,2600")
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", shot, err)
	}
	// The OK band of the first link's timeline is drawn.
	green := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 == 0x59 && g>>8 == 0xa1 && b>>8 == 0x4f {
				green++
			}
		}
	}
	if green < 1000 {
		t.Errorf("the screenshot shows %d samples of the OK band's green, want a band", green)
	}
	t.Logf("screenshot: %s", shot)
	if d := os.Getenv("BRIDGE_SCREENSHOT_DIR"); d != "" {
		if err := os.WriteFile(filepath.Join(d, "report.png"), b, 0o644); err != nil {
			t.Error(err)
		}
	}
}
