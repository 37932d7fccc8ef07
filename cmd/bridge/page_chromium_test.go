package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/headless"
	"github.com/labbridge/bridge/internal/testutil"
)

// The status page of a live bridge sim, in Chromium: the page shows each
// link of the embedded default (the Emio, the Meca500, the V-REP scene)
// running and the camera's thumbnail; then the bridge stops on SIGTERM and
// the browser with the test. Nothing waits on a virtual time budget, so
// the page's polling for ever does not hold the test.
func TestSimPageInChromium(t *testing.T) {
	// The bridge is a process of its own (the test binary as main, see
	// TestMain), as CI's smoke run starts it.
	var out, errb testutil.SyncBuffer
	sim := exec.Command(os.Args[0])
	sim.Dir = t.TempDir() // no ./bridge.toml: the embedded default
	sim.Env = append(os.Environ(), "BRIDGE_TEST_MAIN=1", "BRIDGE_TEST_ARGS=sim -ephemeral -metrics=127.0.0.1:0")
	sim.Stdout, sim.Stderr = &out, &errb
	// Killed if the test binary dies: a test timeout's panic runs no
	// cleanup, and an orphaned bridge would load the machine for ever.
	sim.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		// The death signal follows the thread that started the process:
		// this goroutine keeps that thread until the bridge has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := sim.Start()
		started <- err
		if err == nil {
			exited <- sim.Wait()
		}
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			sim.Process.Kill()
			<-exited
		}
	})

	// Generous: a loaded two-core machine; every wait below is on what
	// the bridge or the page says, never a fixed time.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	base := ""
	for base == "" {
		if m := regexp.MustCompile(`metrics: (http://\S+)/metrics`).FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("bridge sim exited before it served its page: %v\n%s\n%s", err, out.String(), errb.String())
		case <-ctx.Done():
			t.Fatalf("bridge sim never said where its page is\n%s\n%s", out.String(), errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}

	b := headless.Start(t)
	if err := b.Resize(ctx, 1280, 1000); err != nil {
		t.Fatal(err)
	}
	if err := b.Navigate(ctx, base+"/"); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what, expr string) {
		t.Helper()
		if err := b.Wait(ctx, expr); err != nil {
			text, _ := b.Text(context.WithoutCancel(ctx))
			t.Fatalf("the page never showed %s: %v\nit shows:\n%s\nbridge's log:\n%s", what, err, text, errb.String())
		}
	}
	// A busy machine can degrade a link for a moment, between two looks
	// of the test: the page itself records, as it renders each snapshot,
	// every link it has shown running.
	waitFor("its link cards' place", `document.getElementById("links")`)
	if err := b.Eval(ctx, `(() => {
  window.shownRunning = new Set();
  const look = () => {
    for (const c of document.querySelectorAll("#links .card")) {
      if (c.querySelector(".badge")?.textContent === "running") shownRunning.add(c.querySelector(".kind")?.textContent);
    }
  };
  new MutationObserver(look).observe(document.getElementById("links"), {subtree: true, childList: true, characterData: true});
  look();
})()`, nil); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"emio", "meca500", "vrep"} {
		waitFor("a "+kind+" link running", `shownRunning.has("`+kind+`")`)
	}
	// The camera renders the simulated robot, and its thumbnail loads whole.
	waitFor("the camera's thumbnail", `document.querySelector(".thumb img")?.naturalWidth > 0`)

	shot := filepath.Join(t.TempDir(), "sim-statuspage.png")
	if err := b.Screenshot(ctx, shot); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", shot, err)
	}
	if r := img.Bounds(); r.Dx() < 1280 || r.Dy() < 1000 || len(data) < 20<<10 {
		t.Errorf("%s: %v, %d bytes: want at least the 1280x1000 viewport, drawn", shot, r, len(data))
	}
	if dir := os.Getenv("BRIDGE_SCREENSHOT_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(shot)), data, 0o644); err != nil {
			t.Error(err)
		}
	}

	// The bridge stops as the service does, the page still polling it.
	sim.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("bridge sim after SIGTERM: %v\n%s", err, errb.String())
		}
	case <-ctx.Done():
		t.Fatalf("bridge sim did not stop on SIGTERM\n%s", errb.String())
	}
}
