package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// simServosWith serves `bridge sim servos` with args, linked at a new path,
// until the test ends, and returns the path.
func simServosWith(t *testing.T, args ...string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "u2d2")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out testutil.SyncBuffer
	go func() { done <- run(ctx, append([]string{"sim", "servos", "-link", link}, args...), &out, &out) }()
	t.Cleanup(func() {
		cancel()
		if c := <-done; c != 0 {
			t.Errorf("sim servos %v: exit %d: %s", args, c, out.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(link); err == nil {
			return link
		}
		if time.Now().After(deadline) {
			t.Fatalf("the simulated servos never appeared: %s", out.String())
		}
	}
}

// bridge scan finds simulated servos at their baud only, as real servos
// answer at their Baud Rate only: the four at 1 Mbps once, at 1000000; two
// at 57600 once, at 57600.
func TestScanFindsSimulatedServosAtTheirBaud(t *testing.T) {
	for _, c := range []struct {
		args      []string
		at, other string
		want      int
	}{
		{[]string{"-ids", "0,1,2,3"}, "baud 1000000", "baud   57600", 4}, // the default, as real servos
		{[]string{"-ids", "4,5", "-baud", "57600", "-any-baud=false"}, "baud   57600", "baud 1000000", 2},
	} {
		link := simServosWith(t, c.args...)
		code, out, stderr := runCLI(t, "scan", "-port", link, "-bauds", "1000000,57600", "-ids", "0-5", "-latency-timer", simulatedLatency)
		if code != 0 || strings.Count(out, c.at) != c.want || strings.Contains(out, c.other) {
			t.Errorf("scan of sim servos %v: exit %d, want %d found at %q and none at %q:\n%s%s", c.args, code, c.want, c.at, c.other, out, stderr)
		}
	}
}

// Ctrl-C during bridge scan says what it found so far and exits 130.
func TestScanInterrupted(t *testing.T) {
	link := simServosWith(t, "-ids", "0,1,2,3")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &cancelOn{word: "XM430", cancel: cancel}
	var stderr strings.Builder
	code := run(ctx, []string{"scan", "-port", link, "-bauds", "1000000,57600", "-ids", "0-252", "-latency-timer", simulatedLatency}, stdout, &stderr)
	if code != 130 || !strings.Contains(stdout.String(), "servo(s) found before the interrupt") || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("scan: exit %d\n%s%s", code, stdout, stderr.String())
	}
}

// -baud takes the servos' rates only.
func TestSimServosBaudFlag(t *testing.T) {
	var out bytes.Buffer
	err := cmdSimServos(context.Background(), []string{"-baud", "500000"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "bridge sim servos: -baud") {
		t.Errorf("-baud 500000: %v", err)
	}
}
