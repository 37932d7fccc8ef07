package mecasim_test

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/meca500/mecasim"
)

// The official Python client, mecademicpy, drives the simulator as a
// program would (docs/meca500.md §12): connect, activate, home, move and
// wait, stream velocities, be refused as a second client, disconnect
// (testdata/mecademicpy_interop.py).
func TestMecademicpy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs mecademicpy for a few seconds")
	}
	py := testutil.Python(t, "pip install mecademicpy==3.0.3", "mecademicpy.robot")
	// 9.1 takes the path without the silent prefix, 9.3 the one with it, and
	// 10.2.1 takes the paused and end-of-block states from 2007 only (§10);
	// one robot answers silent requests with prefixed replies (§2.1).
	for _, c := range []struct {
		fw     string
		prefix bool
	}{{"9.1.0", false}, {"9.3.0", false}, {"10.2.1", true}} {
		t.Run(c.fw, func(t *testing.T) {
			r, addr := serve(t, mecasim.Config{Firmware: c.fw, PrefixReplies: c.prefix})
			runInterop(t, py, addr)
			// The script's Disconnect reaches the robot.
			testutil.WaitFor(t, "the robot sees the client leave", func() bool { return !r.Status().Connected })
		})
	}
}

func runInterop(t *testing.T, py, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "testdata/mecademicpy_interop.py", host, port).Output()
	var summary struct {
		OK     bool
		Checks []struct {
			Check string
			OK    bool
		}
	}
	if jerr := json.Unmarshal(out, &summary); jerr != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("mecademicpy_interop.py: %v, %v\nstdout:\n%s\nstderr:\n%s", err, jerr, out, stderr)
	}
	for _, c := range summary.Checks {
		if !c.OK {
			t.Errorf("mecademicpy check %q failed", c.Check)
		}
	}
	if err != nil || !summary.OK || len(summary.Checks) == 0 {
		t.Errorf("mecademicpy_interop.py: %v\n%s", err, out)
	}
	t.Logf("%d mecademicpy checks\n%s", len(summary.Checks), out)
}
