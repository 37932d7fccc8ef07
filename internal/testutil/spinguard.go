package testutil

import (
	"testing"

	"github.com/labbridge/bridge/realtime"
)

// SpinGuard starts a realtime.SpinGuard for the test and closes it after,
// or skips the test saying what it needs: a build with cgo, and SCHED_FIFO
// for the guard's thread.
func SpinGuard(t testing.TB) *realtime.SpinGuard {
	t.Helper()
	if !realtime.SpinGuardBuilt {
		t.Skip("built without cgo: no spin guard (CGO_ENABLED=1)")
	}
	g, err := realtime.StartSpinGuard(realtime.SpinGuardConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Refused(); err != nil {
		t.Skipf("the guard's thread needs SCHED_FIFO (run as root or with CAP_SYS_NICE): %v", err)
	}
	return g
}
