package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeLinkCSV writes n rows of a 100 Hz link as bridge record does
// (docs/tap.md §5), rtp_seq skipping lost.
func writeLinkCSV(t *testing.T, path string, n int, lost map[int]bool) {
	t.Helper()
	var b strings.Builder
	b.WriteString("time_s,deadline_unix_s,rtp_seq,tick,seq,status,state,lateness_us,reply_latency_us,late,applied,stale,overrun,meas_angles_1_rad,meas_angles_2_rad,cmd_angles_1_rad,cmd_angles_2_rad,applied_angles_1_rad,applied_angles_2_rad\n")
	for k := range n {
		if lost[k] {
			continue
		}
		status, reply := "1", "850.5"
		if k%50 == 7 {
			status, reply = "4", "NaN"
		}
		f := strconv.FormatFloat
		b.WriteString(strings.Join([]string{f(float64(k)/100, 'g', -1, 64), f(1767272400+float64(k)/100, 'f', 6, 64),
			strconv.Itoa(1000 + k), strconv.Itoa(k), strconv.Itoa(k), status, "2", f(5+float64(k%7), 'g', -1, 64), reply,
			"0,1,0,0", "0.1,0.2,0.3,0.4,0.3,0.4"}, ",") + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	writeLinkCSV(t, filepath.Join(dir, "run.emio.csv"), 300, map[int]bool{100: true, 101: true, 102: true})
	writeLinkCSV(t, filepath.Join(dir, "run.vrep.csv"), 200, nil)
	out := filepath.Join(dir, "page.html")
	for _, args := range [][]string{
		{"report", filepath.Join(dir, "run.csv"), "-out", out},
		{"report", "-out", out, filepath.Join(dir, "run.csv")},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "wrote "+out) ||
			!strings.Contains(lines[1], "emio: 297 rows") || !strings.Contains(lines[1], "lost 3 in 1 gap") || !strings.Contains(lines[1], "timeouts 6") ||
			!strings.Contains(lines[2], "vrep: 200 rows") || !strings.Contains(lines[2], "at 100 Hz") {
			t.Errorf("%v printed:\n%s", args, stdout.String())
		}
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || bytes.Count(page, []byte("<svg")) != 2*(4+1+1) {
			t.Errorf("the page: %d bytes, %d plots", len(page), bytes.Count(page, []byte("<svg")))
		}
		os.Remove(out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, 2, "name the recording"},
		{[]string{"report", filepath.Join(dir, "none.csv"), "-out", out}, 1, "report: "},
		{[]string{"report", "a.csv", "b.csv"}, 2, `unexpected argument "b.csv"`},
		{[]string{"reprot", "run.csv"}, 2, `did you mean "report"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, want %d; stderr %q lacks %q", c.args, code, c.code, stderr.String(), c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed report wrote its page")
	}
}

// A page that cannot be written is exit 1 with the path and the reason in
// the user's words; an older page stays whole and nothing else is left.
func TestReportOutFails(t *testing.T) {
	dir := t.TempDir()
	writeLinkCSV(t, filepath.Join(dir, "run.emio.csv"), 100, nil)
	file := filepath.Join(dir, "somefile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(dir, "none")
	old := filepath.Join(dir, "old.html")
	if err := os.Mkdir(old, 0o755); err != nil { // a folder: the rename at the end fails
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "keep"), []byte("older"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{filepath.Join(none, "page.html"), "bridge report: cannot write " + filepath.Join(none, "page.html") + ": the folder " + none + " does not exist; create it or choose another -out"},
		{filepath.Join(file, "page.html"), "bridge report: cannot write " + filepath.Join(file, "page.html") + ": " + file + " is a file, not a folder"},
		{old, "bridge report: cannot write " + old + ": "},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), []string{"report", filepath.Join(dir, "run.csv"), "-out", c.out}, &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 {
			t.Errorf("-out %s: exit %d, stdout %q, stderr %q, want exit 1 and %q", c.out, code, stdout.String(), stderr.String(), c.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 3 {
		t.Errorf("left in the folder: %v", left)
	}
	if b, err := os.ReadFile(filepath.Join(old, "keep")); err != nil || string(b) != "older" {
		t.Errorf("what was at -out changed: %q, %v", b, err)
	}
}

// bridge replay plays a recording into the in-memory plant of its
// configuration, faster than recorded, and writes the CSV and the page;
// a mistake on its command line is a usage error.
func TestReplayCommand(t *testing.T) {
	dir := t.TempDir()
	writeLinkCSV(t, filepath.Join(dir, "run.arm.csv"), 100, nil)
	cfg := filepath.Join(dir, "arm.toml")
	if err := os.WriteFile(cfg, []byte("[[link]]\nname = \"arm\"\nrate_hz = 100\n[link.loop]\npriority = 0\n[link.plant]\nkind = \"sim\"\nmotors = 2\nnb_markers = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, page := filepath.Join(dir, "replay.csv"), filepath.Join(dir, "replay.html")
	code, stdout, stderr := runCLI(t, "replay", filepath.Join(dir, "run.arm.csv"), "-config", cfg, "-speed", "5", "-out", out, "-report", page)
	if code != 0 || !strings.Contains(stdout, "replayed 100 of 100 recorded ticks") || !strings.Contains(stdout, "meas_angles_2_rad") ||
		!strings.Contains(stdout, "wrote "+out) || !strings.Contains(stdout, "wrote "+page) {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	csv, err := os.ReadFile(out)
	if err != nil || !bytes.HasPrefix(csv, []byte("tick,seq,recorded_meas_angles_1_rad,replayed_meas_angles_1_rad,diff_meas_angles_1_rad")) || bytes.Count(csv, []byte("\n")) != 101 {
		t.Errorf("the CSV: %v\n%.300s", err, csv)
	}
	if html, err := os.ReadFile(page); err != nil || bytes.Count(html, []byte("<svg")) != 2 {
		t.Errorf("the page: %v, %d plots", err, bytes.Count(html, []byte("<svg")))
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"replay"}, 2, "name the recording"},
		{[]string{"replay", "run.arm.csv", "-commands", "sent"}, 2, `-commands "sent": want applied or received`},
		{[]string{"replay", filepath.Join(dir, "none.arm.csv")}, 1, "bridge replay: report: "},
		{[]string{"replay", filepath.Join(dir, "run.arm.csv"), "-config", cfg, "-speed", "5", "-out", filepath.Join(dir, "none", "r.csv")}, 1,
			"bridge replay: cannot write " + filepath.Join(dir, "none", "r.csv") + ": the folder " + filepath.Join(dir, "none") + " does not exist; create it or choose another -out"},
		{[]string{"replay", filepath.Join(dir, "run.arm.csv"), "-config", cfg, "-speed", "5", "-report", dir}, 1, "is a folder; give -report a file name in it"},
		{[]string{"replay", filepath.Join(dir, "run.arm.csv")}, 1, `the configuration has no link "arm" (it has emio, meca500, vrep): replay into the configuration it was recorded with (-config)`},
	} {
		if code, _, stderr := runCLI(t, tc.args...); code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, tc.code, tc.want, stderr)
		}
	}
}
