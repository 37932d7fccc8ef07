package report

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile replaces a page only with a whole one, and a failure leaves
// the older page as it was and nothing else in the folder.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	r := Build(&Recording{Name: "small", Links: []*LinkFile{bigLink(100)}})
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := r.WriteHTML(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the page: %v, %d bytes, want %d", err, len(got), want.Len())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}

	// A folder in the way of the rename: the write fails at the end.
	blocked := filepath.Join(dir, "blocked.html")
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blocked, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(blocked); err == nil {
		t.Error("a page written over a folder")
	}
	missing := filepath.Join(dir, "none", "report.html")
	if err := r.WriteFile(missing); !errors.Is(err, fs.ErrNotExist) ||
		err.Error() != "report: cannot write "+missing+": the folder "+filepath.Dir(missing)+" does not exist; create it or choose another place" {
		t.Errorf("missing folder: %v", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 2 {
		t.Errorf("left in the folder: %v", left)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, got) {
		t.Error("the older page changed")
	}
}

// A replay's page: per field the overlay and the difference, the table of
// differences; ticks not replayed leave a gap, not a zero.
func TestComparison(t *testing.T) {
	n := 200
	at := make([]float64, n)
	rec, rep := make([][]float64, n), make([][]float64, n)
	got := make([]bool, n)
	for i := range n {
		at[i] = float64(i) / 100
		rec[i] = []float64{math.Sin(at[i]), math.Cos(at[i]), 250}
		rep[i] = []float64{math.Sin(at[i]) + 0.01, math.Cos(at[i]), 250}
		got[i] = i%50 != 7
	}
	c := NewComparison("run.arm.csv", "applied commands into the plant", []string{"replayed 196 of 200"},
		[]string{"meas_angles_1_rad", "meas_angles_2_rad", "meas_depth_mm"}, at, rec, rep, got)
	c.Diffs = []Diff{{Column: "meas_angles_1_rad", Max: 0.01, RMS: 0.01, At: "3"}}
	if !math.IsNaN(c.Replayed[0].Values[7]) || c.Replayed[0].Values[8] != rep[8][0] {
		t.Errorf("a tick not replayed is %v, want NaN", c.Replayed[0].Values[7])
	}
	if c.Recorded[0].Field != "angles" || c.Recorded[0].Index != 1 || c.Recorded[2].Field != "depth" || c.Recorded[2].Unit != "mm" {
		t.Errorf("columns parsed as %+v, %+v", *c.Recorded[0], *c.Recorded[2])
	}
	var b strings.Builder
	if err := c.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<h1>run.arm.csv<small>replayed</small></h1>", "applied commands into the plant", "replayed 196 of 200",
		"<td>meas_angles_1_rad</td><td>0.01</td>", "<b>angles (rad)</b>", "<b>replayed − recorded, angles (rad)</b>", "<b>depth (mm)</b>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if got := strings.Count(page, "<svg"); got != 4 {
		t.Errorf("%d plots, want 4 (two fields, overlay and difference)", got)
	}
}

// A shadow twin's stream (LINK_shadow, no command) is shown as the twin of
// its link: robot − model plotted, none of a link's timing or statuses.
func TestTwinStream(t *testing.T) {
	dir := t.TempDir()
	links := []synthLink{
		{name: "emio", rateHz: 30, seconds: 4, meas: []synthField{{"angles", "rad", 4}}, cmd: []synthField{{"angles", "rad", 4}}, replyUs: 200},
		{name: "emio_shadow", rateHz: 30, seconds: 4, meas: []synthField{{"angles", "rad", 4}}},
	}
	rec, err := Open(writeRecording(t, dir, "run", links))
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := Build(rec).WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	i := strings.Index(html, `<h2>emio_shadow`)
	if i < 0 {
		t.Fatal("no section for the twin's stream")
	}
	twin := html[i:]
	twin = twin[:strings.Index(twin, "</section>")]
	for _, want := range []string{"The shadow twin of <b>emio</b>", "Robot − model", "angles (rad)"} {
		if !strings.Contains(twin, want) {
			t.Errorf("the twin's section lacks %q", want)
		}
	}
	for _, not := range []string{"<caption>Timing</caption>", "Command received and applied", "<h3>Status</h3>"} {
		if strings.Contains(twin, not) {
			t.Errorf("the twin's section shows %q", not)
		}
	}
	if !strings.Contains(html, "robot − model of emio") {
		t.Error("the links' list does not say what the twin's stream is")
	}
}
