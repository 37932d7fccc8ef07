package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/loopbench"
	"github.com/labbridge/bridge/realsense"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsageAndVersion(t *testing.T) {
	if code, _, stderr := runCLI(t); code != 2 || !strings.Contains(stderr, "bridge sim") {
		t.Errorf("no args: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "fly"); code != 2 || !strings.Contains(stderr, `unknown command "fly"`) {
		t.Errorf("unknown: %d %q", code, stderr)
	}
	if code, out, _ := runCLI(t, "version"); code != 0 || !strings.HasPrefix(out, "bridge ") {
		t.Errorf("version: %d %q", code, out)
	}
	for _, cmd := range []string{"run", "sim", "partner", "check", "startUDP"} {
		if code, _, stderr := runCLI(t, cmd, "-help"); code != 0 || !strings.Contains(stderr, "Usage: bridge "+cmd) {
			t.Errorf("%s -help: %d %q", cmd, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "bench", "loop", "-help"); code != 0 || !strings.Contains(stderr, "-rate") {
		t.Errorf("bench loop -help: %d %q", code, stderr)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	os.WriteFile(good, defaultconfig.TOML(), 0o644)
	if code, out, stderr := runCLI(t, "check", "-config", good); code != 0 || !strings.Contains(out, "ok, 1 link") {
		t.Errorf("check good: %d %q %q", code, out, stderr)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, bytes.Replace(defaultconfig.TOML(), []byte("rate_hz = 30"), []byte("rate_hz = 0.1"), 1), 0o644)
	if code, _, stderr := runCLI(t, "check", "-config", bad); code != 1 || !strings.Contains(stderr, `link "emio".rate_hz = 0.1: want 1..10000`) {
		t.Errorf("check bad: %d %q", code, stderr)
	}
	// A file of the earlier layout says what to rename.
	if code, _, stderr := runCLI(t, "check", "-config", "../../config/testdata/bridge-0.toml"); code != 1 ||
		!strings.Contains(stderr, "rename the table [link.camera] to [link.plant.camera]") {
		t.Errorf("check of the earlier layout: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "check", "-config", filepath.Join(dir, "missing.toml")); code != 1 || !strings.Contains(stderr, "no such file") {
		t.Errorf("check missing: %d %q", code, stderr)
	}
}

// emioapi's startUDP flags are parsed as emioapi spells them and checked
// (config.ApplyStartUDP has the rules).
func TestStartUDPFlags(t *testing.T) {
	if code, _, stderr := runCLI(t, "startUDP", "--fps", "45"); code != 1 || !strings.Contains(stderr, "--fps 45") {
		t.Errorf("startUDP --fps 45: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "startUDP", "--nb_markers", "0"); code != 1 || !strings.Contains(stderr, "--nb_markers 0") {
		t.Errorf("startUDP --nb_markers 0: %d %q", code, stderr)
	}
}

// bridge sim on the embedded default closes the loop: the Jacobian partner
// drives the simulated markers to its target.
func TestSimRuns(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	os.Chdir(dir) // no ./bridge.toml: the embedded default
	defer os.Chdir(wd)
	code, out, stderr := runCLI(t, "sim", "-duration", "4s", "-ephemeral", "-metrics", "")
	if code != 0 {
		t.Fatalf("sim: %d\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "embedded bridge.toml") || !strings.Contains(out, "built-in partner, jacobian") {
		t.Errorf("sim output:\n%s", out)
	}
	if !strings.Contains(stderr, `"to":"running"`) {
		t.Errorf("the link never ran:\n%s", stderr)
	}
	// The last status line carries the command and the tracked markers. The
	// whole virtual lab ran: simulated servos on a pty, frames rendered from
	// their positions, the real tracker ("plan" side, the virtual camera's
	// calibration), UDP to the built-in Jacobian partner. The markers reach
	// its target y0 + r = (-5, -135, 10) mm, with
	// sin(q) = pinv(J)·r: q = asin(±0.25) = ±0.2527 on motors 1 and 2.
	checkVector(t, out, `cmd \[([^\]]+)\]`, []float64{0, 0.2527, -0.2527, 0}, 0.02)
	checkVector(t, out, `markers \[([^\]]+)\]`, []float64{-5, -135, 10}, 1.5)
}

// checkVector finds the values of re's group in out and compares them.
func checkVector(t *testing.T, out, re string, want []float64, tol float64) {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, out)
	}
	got := strings.Fields(m[1])
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", m[0], len(got), len(want))
	}
	for i, f := range got {
		v, _ := strconv.ParseFloat(f, 64)
		if d := v - want[i]; d > tol || d < -tol {
			t.Errorf("%s: value %d is %v, want %v ± %v (not converged)", m[0], i, v, want[i], tol)
		}
	}
}

func TestBenchLinkShort(t *testing.T) {
	code, out, stderr := runCLI(t, "bench", "link", "-rate", "200", "-duration", "1s", "-json")
	if code != 0 {
		t.Fatalf("%d %s %s", code, out, stderr)
	}
	var res loopbench.LinkReport
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if res.Ticks < 50 || res.Replies < 10 || res.LatencyUs.P50 <= 0 || res.Status["OK_NO_DELAY"] == 0 {
		t.Errorf("result %+v", res)
	}
}

func TestPartnerCommand(t *testing.T) {
	code, out, stderr := runCLI(t, "partner", "-listen", "127.0.0.1:0", "-accept", "", "-reply-to", "127.0.0.1:9", "-controller", "constant", "-u", "0.1,0.2,0.3,0.4", "-duration", "200ms")
	if code != 0 || !strings.Contains(out, "partner: listening on 127.0.0.1:") || !strings.Contains(out, "received 0") {
		t.Errorf("partner: %d %q %q", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "partner", "-controller", "constant", "-u", "1,x"); code != 1 || !strings.Contains(stderr, "-u") {
		t.Errorf("bad -u: %d %q", code, stderr)
	}
}

// bench link against `bridge partner` in a process of its own.
func TestBenchLinkPartnerProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second process")
	}
	bin := filepath.Join(t.TempDir(), "bridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "bench", "link", "-rate", "200", "-duration", "1s", "-partner", "process", "-json").Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var res loopbench.LinkReport
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if res.Replies < 10 || res.Status["OK_NO_DELAY"] == 0 {
		t.Errorf("result %+v", res)
	}
}

// bridge sim servos serves a virtual U2D2 that bridge ping and bridge scan
// find through the real serial path.
func TestSimServosScanPing(t *testing.T) {
	link := filepath.Join(t.TempDir(), "u2d2")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var simOut bytes.Buffer
	go func() {
		done <- run(ctx, []string{"sim", "servos", "-ids", "0,1,2,3", "-link", link}, &simOut, &simOut)
	}()
	waitLink := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(link); err == nil {
			break
		}
		if time.Now().After(waitLink) {
			t.Fatal("the simulated servos never appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, out, stderr := runCLI(t, "ping", "-port", link, "-ids", "0,1,2,3", "-latency-timer", "1ms")
	if code != 0 || strings.Count(out, "model 1030 firmware 46") != 4 {
		t.Errorf("ping: %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "ping", "-port", link, "-ids", "7", "-latency-timer", "1ms")
	if code != 1 || !strings.Contains(out, "ID   7: dynamixel: ID 7, instruction 0x01: no status packet") {
		t.Errorf("ping absent: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "scan", "-port", link, "-bauds", "1000000", "-ids", "0-5", "-latency-timer", "1ms")
	if code != 0 || !strings.Contains(out, "4 servo(s) found") || !strings.Contains(out, "ID   3  baud 1000000  model 1030 (XM430-W210)") {
		t.Errorf("scan: %d\n%s", code, out)
	}
	cancel()
	if c := <-done; c != 0 {
		t.Errorf("sim servos exit %d: %s", c, simOut.String())
	}
}

// bridge cameras lists the cameras and the library, or says how to get one.
func TestCamerasCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lib, err := realsense.LoadAny(ctx)
	if err != nil {
		code, _, stderr := runCLI(t, "cameras")
		if code != 1 || !strings.Contains(stderr, "pyrealsense2") && !strings.Contains(stderr, "cgo") {
			t.Errorf("without librealsense2: exit %d, %q: want the install hint", code, stderr)
		}
		t.Skipf("librealsense2 not available (%v): pip install pyrealsense2", err)
	}
	lib.Close()
	code, out, stderr := runCLI(t, "cameras")
	if code != 0 || !strings.Contains(out, "librealsense2 2.") {
		t.Errorf("cameras: exit %d\n%s%s", code, out, stderr)
	}
}
