package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// RequireEnv names the environment variable that turns a missing external
// peer from a skip into a failure. CI sets it (BRIDGE_REQUIRE_PEERS=1):
// there every peer is installed, and a peer test that skips did not run.
const RequireEnv = "BRIDGE_REQUIRE_PEERS"

// RequirePeer ends a test whose external peer (a program, a Python package,
// a library) is missing: what names the peer, install says how to install
// it, err is what looking for it returned. Without BRIDGE_REQUIRE_PEERS the
// test skips, saying so; with BRIDGE_REQUIRE_PEERS=1 it fails.
func RequirePeer(t testing.TB, what, install string, err error) {
	t.Helper()
	msg := what + " is not available"
	if err != nil {
		msg += " (" + strings.TrimSpace(err.Error()) + ")"
	}
	if PeersRequired() {
		t.Fatalf("%s; it is required (%s=1): install it with %s", msg, RequireEnv, install)
	}
	t.Skipf("%s: install it with %s", msg, install)
}

// PeersRequired reports whether BRIDGE_REQUIRE_PEERS asks for every peer.
func PeersRequired() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0"
}

// Python returns the path of python3 once it imports every one of modules
// (a module may be dotted: "mecademicpy.robot"). When python3 or a module
// is missing, RequirePeer ends the test with install as the remedy.
func Python(t testing.TB, install string, modules ...string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		RequirePeer(t, "python3", "apt-get install python3", err)
		return "" // a fake testing.TB may return
	}
	if len(modules) == 0 {
		return py
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, py, "-c", "import "+strings.Join(modules, ", "))
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if last := lastLine(stderr.String()); last != "" {
			err = fmt.Errorf("%w: %s", err, last)
		}
		RequirePeer(t, "python3 with "+strings.Join(modules, ", "), install, err)
		return ""
	}
	return py
}

// RunPython runs the python3 that Python found on args (a script and its
// arguments, or -c and a program) with a generous deadline tied to the
// test, and returns its standard output and standard error. err is the
// run's error; a caller that reads a summary from stdout reads it even then.
func RunPython(t testing.TB, py string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out, errOut strings.Builder
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("testutil: python3 %s: no end within 2m0s: %w", strings.Join(args, " "), err)
	}
	return []byte(out.String()), []byte(errOut.String()), err
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
