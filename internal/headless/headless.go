// Package headless runs Debian's headless Chromium for the tests that look
// at what a person would see (the status page, the report). It is test
// support: only _test files import it.
//
// Chromium renders a page once, for a static page; Start drives one
// browser session over the DevTools protocol, in real time, for a page
// that keeps changing.
package headless

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// Chromium runs headless Chromium on url with args (--dump-dom,
// --screenshot=…, --virtual-time-budget=…), in a profile of its own, and
// returns what it wrote to stdout. Without chromium the test skips, saying
// how to install it (testutil.RequirePeer: fails where peers are required).
func Chromium(t *testing.T, url string, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		testutil.RequirePeer(t, "chromium", "apt-get install chromium", err)
		return nil // a fake testing.TB may return
	}
	// Generous: a cold start on a loaded CI machine; the tests check what
	// is rendered, not how fast.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}
