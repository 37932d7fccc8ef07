//go:build cgo

package realsense

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Find and Probe against the real library: no camera on this machine, or
// whichever is plugged in; the fixture's recording probed.
func TestFindAndProbe(t *testing.T) {
	loadLib(t) // skips, or fails in CI, without librealsense2
	needFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	serial, seen, err := Find(ctx, "auto")
	switch {
	case len(seen) == 0 && !errors.Is(err, ErrNoCamera):
		t.Errorf("no camera seen: Find = %q, %v, want ErrNoCamera", serial, err)
	case len(seen) > 0 && (err != nil || serial != seen[0].Serial):
		t.Errorf("cameras %v: Find = %q, %v, want the first", seen, serial, err)
	}
	if s, _, err := Find(ctx, "000000000000"); s != "000000000000" || !errors.Is(err, ErrNotConnected) {
		t.Errorf("an absent serial: %q, %v, want it back with ErrNotConnected", s, err)
	}
	desc, err := Probe(ctx, fixture)
	if err != nil || !strings.Contains(desc, "colour 640x480, depth 640x480") {
		t.Errorf("Probe(%s) = %q, %v", fixture, desc, err)
	}
	if _, err := Probe(ctx, "testdata/absent.bag"); err == nil {
		t.Error("Probe of an absent file: no error")
	}
}
