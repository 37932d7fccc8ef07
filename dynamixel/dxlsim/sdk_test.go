package dxlsim_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/internal/testutil"
)

// The official ROBOTIS Python SDK drives the simulator over a
// pseudo-terminal: ping, timeouts, reads and writes, sync write, sync and
// fast sync read, broadcast ping (testdata/sdk_interop.py).
func TestOfficialSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Python SDK for a few seconds")
	}
	py := testutil.Python(t, "pip install dynamixel-sdk==4.1.0", "dynamixel_sdk")
	// The system clock: the script lets the servos move in real time.
	b, err := dxlsim.NewBus(dxlsim.DefaultBusConfig())
	if err != nil {
		t.Fatal(err)
	}
	link := servePTY(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "testdata/sdk_interop.py", link).Output()
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
		t.Fatalf("sdk_interop.py: %v, %v\nstdout:\n%s\nstderr:\n%s", err, jerr, out, stderr)
	}
	for _, c := range summary.Checks {
		if !c.OK {
			t.Errorf("SDK check %q failed", c.Check)
		}
	}
	if err != nil || !summary.OK || len(summary.Checks) == 0 {
		t.Errorf("sdk_interop.py: %v\n%s", err, out)
	}
	t.Logf("%d SDK checks\n%s", len(summary.Checks), out)
}
