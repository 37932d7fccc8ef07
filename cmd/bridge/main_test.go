package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/internal/statuspage"
	"github.com/labbridge/bridge/internal/testutil"
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
	if code, out, stderr := runCLI(t, "check", "-config", good); code != 0 || !strings.Contains(out, "ok, 3 link(s)") || !strings.Contains(out, "a simulated Meca500") ||
		!strings.Contains(out, "a simulated scene over the AZ socket") {
		t.Errorf("check good: %d %q %q", code, out, stderr)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, bytes.Replace(defaultconfig.TOML(), []byte("rate_hz = 30"), []byte("rate_hz = 0.1"), 1), 0o644)
	if code, _, stderr := runCLI(t, "check", "-config", bad); code != 1 || !strings.Contains(stderr, `link "emio".rate_hz = 0.1: want 1..10000`) {
		t.Errorf("check bad: %d %q", code, stderr)
	}
	// A file of the earlier layout says what to rename.
	if code, _, stderr := runCLI(t, "check", "-config", "../../internal/config/testdata/bridge-0.toml"); code != 1 ||
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

// bridge sim on the embedded default runs the whole virtual lab: simulated
// servos on a pty, frames rendered from their positions, the real tracker,
// UDP to the built-in Jacobian partner, /metrics; it stops on its context
// and prints each link's last status (config's TestBuildDefaultRuns checks
// that the loop converges).
func TestSimRuns(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	os.Chdir(dir) // no ./bridge.toml: the embedded default
	defer os.Chdir(wd)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"sim", "-ephemeral", "-metrics", "127.0.0.1:0"}, &out, &stderr) }()
	// Until the link runs and the camera has tracked a few frames, as
	// /metrics tells: however loaded the machine, never a fixed time.
	deadline := time.Now().Add(2 * time.Minute)
	url := ""
	for {
		if m := regexp.MustCompile(`metrics: (http://\S+/metrics)`).FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		if url != "" {
			if body := httpGet(url); strings.Contains(body, `bridge_link_state{link="emio",state="running"} 1`) &&
				regexp.MustCompile(`bridge_camera_frames_total\{link="emio"\} ([3-9]|\d\d)`).MatchString(body) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the link never ran with camera frames\n%s\n%s", out.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkStatusPage(t, strings.TrimSuffix(url, "/metrics"))
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("sim: %d\n%s\n%s", code, out.String(), stderr.String())
	}
	o := out.String()
	if !strings.Contains(o, "embedded bridge.toml") || !strings.Contains(o, "built-in partner, jacobian") {
		t.Errorf("sim output:\n%s", o)
	}
	// The last status line: the command, the measurement by field (the
	// markers; the angles echo the command), the camera's newest frame.
	if !regexp.MustCompile(`emio +stopped .* cmd \[\S+ \S+ \S+ \S+\] markers \[\S+ \S+ \S+\] frame \d+ found 1`).MatchString(o) {
		t.Errorf("status line:\n%s", o)
	}
}

// checkStatusPage reads the status page of a running Emio link: the
// snapshot holds what the terminal row shows, by field.
func checkStatusPage(t *testing.T, base string) {
	t.Helper()
	if page := httpGet(base + "/"); !strings.Contains(page, "<!DOCTYPE html>") {
		t.Errorf("GET / is not the status page:\n%.200s", page)
	}
	// A busy machine can make the simulated servos miss their replies and
	// the link degrade for a moment: wait for a snapshot of it running,
	// never a fixed time.
	var snap statuspage.Snapshot
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		snap = statuspage.Snapshot{}
		if err := json.Unmarshal([]byte(httpGet(base+"/status.json")), &snap); err != nil {
			t.Fatalf("/status.json: %v", err)
		}
		if len(snap.Links) > 0 && snap.Links[0].State == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the link never showed running on the page: %+v", snap)
		}
	}
	if snap.Version != version || snap.Config == "" || snap.Started.IsZero() || len(snap.Links) == 0 {
		t.Fatalf("snapshot %+v", snap)
	}
	l := snap.Links[0] // the default's first link
	if l.Name != "emio" || l.Kind != "emio" || l.StateSince.IsZero() || l.RateHz <= 0 || l.Exchanges == 0 {
		t.Errorf("link %+v", l)
	}
	if len(l.Measurement) == 0 || l.Measurement[0].Name != "markers" || len(l.Measurement[0].Values) != 3 ||
		len(l.Command) != 1 || len(l.Command[0].Values) != 4 {
		t.Errorf("vectors: measurement %+v command %+v", l.Measurement, l.Command)
	}
	if len(l.Status) == 0 || !strings.HasPrefix(l.Status[0], "frame ") {
		t.Errorf("status lines %q, want the camera's first", l.Status)
	}
}

func httpGet(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
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
	// The built-in partner's view of the sends.
	if res.SendDeviationUs == nil || res.SendClock != "kernel" || res.SendIntervals == 0 {
		t.Errorf("partner's view %+v", res)
	}
	// Every late tick attributed, beside a concurrent cyclictest when one
	// can run.
	st := res.Stalls
	if st == nil || st.ThresholdUs != 1000 || len(st.PerLink) != 1 || st.PerLink[0].Name != "bench" {
		t.Fatalf("stalls %+v", st)
	}
	if l := st.PerLink[0]; l.Machine+l.Ours+l.CPUWait+l.Timer+l.Unattributed != l.Late-int(l.Dropped) {
		t.Errorf("late ticks not all attributed: %+v", l)
	}
	if st.Cyclictest != "ran" {
		if !strings.HasPrefix(st.Cyclictest, "did not run: ") {
			t.Errorf("cyclictest %q", st.Cyclictest)
		}
		_, err := exec.LookPath("cyclictest")
		testutil.RequirePeer(t, "a concurrent cyclictest ("+st.Cyclictest+")", "apt-get install rt-tests, and run as root", cmp.Or(err, errors.New(st.Cyclictest)))
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

// simulatedLatency is the latency timer scan, ping and init assume for
// simulated servos: they are a goroutine, which a loaded machine may
// deschedule for longer than any real servo takes to answer, and a late
// answer must not read as a missing servo. Under two busy loops beside the
// whole suite a reply took up to 0.75 s, and scan missed two servos at
// 250 ms (a 0.5 s timeout); 1 s makes each ping's timeout 2 s, which only
// an absent servo waits out.
const simulatedLatency = "1s"

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
	code, out, stderr := runCLI(t, "ping", "-port", link, "-ids", "0,1,2,3", "-latency-timer", simulatedLatency)
	if code != 0 || strings.Count(out, "model 1030 firmware 46") != 4 {
		t.Errorf("ping: %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "ping", "-port", link, "-ids", "7", "-latency-timer", simulatedLatency)
	if code != 1 || !strings.Contains(out, "ID   7: dynamixel: servo 7 did not answer Ping (0x01)") {
		t.Errorf("ping absent: %d %q", code, out)
	}
	code, out, _ = runCLI(t, "scan", "-port", link, "-bauds", "1000000", "-ids", "0-5", "-latency-timer", simulatedLatency)
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
		testutil.RequirePeer(t, "librealsense2", "pip install pyrealsense2", err)
	}
	lib.Close()
	code, out, stderr := runCLI(t, "cameras")
	if code != 0 || !strings.Contains(out, "librealsense2 2.") {
		t.Errorf("cameras: exit %d\n%s%s", code, out, stderr)
	}
}

// `bridge run -help` and `bridge sim -help` explain the status fields.
func TestHelpLegend(t *testing.T) {
	for _, sim := range []bool{false, true} {
		var stdout, stderr strings.Builder
		cmdRun(context.Background(), []string{"-help"}, &stdout, &stderr, sim)
		for _, f := range []string{"state", "ok 99.6%", "ok N/M", "timeout", "desync", "reconn", "rtt", "late", "drop", "overrun", "cmd ["} {
			if !strings.Contains(stderr.String(), "\n  "+f) {
				t.Errorf("sim=%v: -help does not explain %q:\n%s", sim, f, stderr.String())
			}
		}
	}
}
