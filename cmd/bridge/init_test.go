package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/realsense"
)

// simServosAt serves simulated servos ids on a pseudo-terminal linked at
// path until the test ends.
func simServosAt(t *testing.T, path, ids string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { runCLIctx(ctx, append([]string{"sim", "servos", "-ids", ids, "-link", path}, args...)...) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the simulated servos never appeared at %s", path)
		}
	}
}

func runCLIctx(ctx context.Context, args ...string) int {
	var out, errb strings.Builder
	return run(ctx, args, &out, &errb)
}

// bridge init on simulated servos behind a /dev/serial/by-id-like link
// finds the four servos, says what it did not find, and writes a file that
// bridge check passes and that names the link, the baud and the IDs.
func TestInitFindsSimulatedServos(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "serial", "by-id", "usb-FTDI_USB__-__Serial_Converter_FT66WCAW-if00-port0")
	os.MkdirAll(filepath.Dir(link), 0o755)
	simServosAt(t, link, "0,1,2,3")
	out := filepath.Join(dir, "emio.toml")
	code, stdout, stderr := runCLI(t, "init", "-port", link, "-ids", "0-5", "-camera", "none", "-latency-timer", simulatedLatency, "-out", out)
	if code != 0 {
		t.Fatalf("init: %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"servo 0: XM430-W210", "servo 3: XM430-W210", "wrote " + out, "next: bridge check -config " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("init said no %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "servo 4") {
		t.Errorf("init found a servo 4 that does not exist:\n%s", stdout)
	}
	if code, o, e := runCLI(t, "check", "-config", out); code != 0 || !strings.Contains(o, "ok, 1 link(s)") {
		t.Fatalf("check of the written file: %d %s %s", code, o, e)
	}
	c, err := config.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Links[0].Plant.(*config.EmioPlant)
	if p.Port != link || p.Baud != 1000000 || len(p.IDs) != 4 || p.Camera.Kind != "none" || c.Links[0].Clock != "timer" {
		t.Errorf("written: port %q baud %d ids %v camera %q clock %q", p.Port, p.Baud, p.IDs, p.Camera.Kind, c.Links[0].Clock)
	}
	text, _ := os.ReadFile(out)
	if !strings.Contains(string(text), "# Found: servos 0,1,2,3 at 1000000 baud on "+link) {
		t.Errorf("the file does not say what was found:\n%s", text)
	}
	// An existing file is kept.
	if code, _, stderr := runCLI(t, "init", "-sim", "-out", out); code != 1 || !strings.Contains(stderr, "exists; keep it") {
		t.Errorf("init over an existing file: %d %q", code, stderr)
	}
}

// initOn runs bridge init with args on simulated servos ids and returns
// the file it was told to write and what it said.
func initOn(t *testing.T, ids string, args ...string) (out string, code int, stdout, stderr string) {
	return initOnAt(t, ids, 0, args...)
}

// initOnAt is initOn with the servos at baud (0: the simulator's default).
func initOnAt(t *testing.T, ids string, baud int, args ...string) (out string, code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	link := filepath.Join(dir, "u2d2")
	var sim []string
	if baud != 0 {
		sim = []string{"-baud", strconv.Itoa(baud)}
	}
	simServosAt(t, link, ids, sim...)
	out = filepath.Join(dir, "emio.toml")
	code, stdout, stderr = runCLI(t, append([]string{"init", "-port", link, "-latency-timer", simulatedLatency, "-out", out}, args...)...)
	return out, code, stdout, stderr
}

// Three servos at 57600 baud: init tries the bauds in order, writes the
// baud and IDs found, and says the Emio has four.
func TestInitFewerServosOtherBaud(t *testing.T) {
	out, code, stdout, stderr := initOnAt(t, "1,2,3", 57600, "-ids", "0-3", "-bauds", "57600", "-camera", "none")
	if code != 0 || !strings.Contains(stdout, "found 3") || !strings.Contains(stdout, "found at 57600 baud") {
		t.Fatalf("init: %d\n%s%s", code, stdout, stderr)
	}
	c, err := config.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Links[0].Plant.(*config.EmioPlant); p.Baud != 57600 || len(p.IDs) != 3 || len(p.Min) != 3 {
		t.Errorf("written baud %d ids %v min %v", p.Baud, p.IDs, p.Min)
	}
}

// Nothing answers on the port: init says so, writes the file anyway with
// the keys to change, and the file passes check.
func TestInitNoServos(t *testing.T) {
	out, code, stdout, stderr := initOn(t, "7", "-ids", "0-3", "-bauds", "1000000", "-camera", "none")
	if code != 0 || !strings.Contains(stdout, "no servo answered") || !strings.Contains(stdout, "not found: the servos") {
		t.Fatalf("init: %d\n%s%s", code, stdout, stderr)
	}
	if code, o, e := runCLI(t, "check", "-config", out); code != 0 {
		t.Errorf("check: %d %s %s", code, o, e)
	}
}

// bridge init with a RealSense recording plays its first frame and writes
// it as the camera.
func TestInitRecordedCamera(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lib, err := realsense.LoadAny(ctx)
	if err != nil {
		testutil.RequirePeer(t, "librealsense2", "pip install pyrealsense2", err)
	}
	lib.Close()
	bag, _ := filepath.Abs("../../realsense/testdata/single_depth_color_640x480.bag")
	out, code, stdout, stderr := initOn(t, "0,1,2,3", "-ids", "0-3", "-playback", bag)
	if code != 0 || !strings.Contains(stdout, "camera: the recording "+bag+", colour 640x480, depth 640x480") {
		t.Fatalf("init: %d\n%s%s", code, stdout, stderr)
	}
	c, err := config.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if cam := c.Links[0].Plant.(*config.EmioPlant).Camera; cam.Kind != "realsense" || cam.Playback != bag {
		t.Errorf("camera %+v", cam)
	}
}

// -sim writes the simulated Emio; config -print writes the effective
// configuration, which reads back; both pass check.
func TestInitSimAndConfigPrint(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "init", "-sim", "-out", "-")
	if code != 0 || !strings.Contains(stdout, `port = "sim"`) || !strings.Contains(stdout, "# Simulated") {
		t.Fatalf("init -sim: %d\n%s%s", code, stdout, stderr)
	}
	sim := filepath.Join(dir, "sim.toml")
	os.WriteFile(sim, []byte(stdout), 0o644)
	if code, o, e := runCLI(t, "check", "-config", sim); code != 0 {
		t.Fatalf("check: %d %s %s", code, o, e)
	}
	code, printed, stderr := runCLI(t, "config", "-print")
	if code != 0 || !strings.Contains(printed, "effective configuration of embedded bridge.toml") || strings.Count(printed, "[[link]]") != 3 {
		t.Fatalf("config -print: %d\n%s%s", code, printed, stderr)
	}
	if _, err := config.Parse([]byte(printed)); err != nil {
		t.Errorf("printed configuration refused: %v", err)
	}
	if code, _, stderr := runCLI(t, "config"); code != 2 || !strings.Contains(stderr, "-print") {
		t.Errorf("config without -print: %d %q", code, stderr)
	}
}

// cancelOn cancels when what is written contains a word: Ctrl-C at a known
// moment of a command's output.
type cancelOn struct {
	mu     sync.Mutex
	b      strings.Builder
	word   string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.word) {
		w.cancel()
	}
	return len(p), nil
}

func (w *cancelOn) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.b.String() }

// Ctrl-C during bridge init's servo scan, with -force over a good file:
// init stops with 130, says it wrote nothing, and the file is as it was,
// with no temporary file beside it.
func TestInitInterruptedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "u2d2")
	simServosAt(t, link, "0,1,2,3")
	out := filepath.Join(dir, "bridge.toml")
	const good = "# a configuration that works\n"
	if err := os.WriteFile(out, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The interrupt comes as the first servo is found (whichever a busy
	// machine lets answer first), mid-scan.
	stdout := &cancelOn{word: "XM430", cancel: cancel}
	var stderr strings.Builder
	code := run(ctx, []string{"init", "-port", link, "-ids", "0-20", "-bauds", "1000000,57600", "-camera", "none", "-latency-timer", simulatedLatency, "-force", "-out", out}, stdout, &stderr)
	if code != 130 || !strings.Contains(stderr.String(), "interrupted; "+out+" was not written") {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != good {
		t.Errorf("%s after the interrupt: %q, %v; want it as it was", out, b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files left in the folder: %v, want the link and the file", names)
	}
}

// A file init cannot write is an error naming it, and nothing is left.
func TestInitUnwritable(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	code, _, stderr := runCLI(t, "init", "-sim", "-out", filepath.Join(notDir, "bridge.toml"))
	if code != 1 || !strings.Contains(stderr, "cannot write "+filepath.Join(notDir, "bridge.toml")) {
		t.Fatalf("init: exit %d %s", code, stderr)
	}
}
