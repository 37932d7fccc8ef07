package realtime

import (
	"os"
	"runtime/debug"
	"testing"
)

// unsetenv removes key for the test and puts it back after.
func unsetenv(t *testing.T, key string) {
	t.Setenv(key, "") // restores the value at the end
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// Apply sets the percent and the limit, and restore puts back what was.
func TestGCApply(t *testing.T) {
	unsetenv(t, "GOGC")
	unsetenv(t, "GOMEMLIMIT")
	before, beforeLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(before)
	restore := GC{Percent: 700, Limit: 300 << 20}.Apply()
	percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(percent)
	restore()
	after, afterLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(after)
	if percent != 700 || limit != 300<<20 {
		t.Errorf("applied: percent %d, limit %d; want 700 and %d", percent, limit, 300<<20)
	}
	if after != before || afterLimit != beforeLimit {
		t.Errorf("restored: percent %d, limit %d; want %d and %d", after, afterLimit, before, beforeLimit)
	}
}

// What the environment sets is a person's choice: Apply leaves it.
func TestGCApplyLeavesTheEnvironment(t *testing.T) {
	t.Setenv("GOGC", "100")
	t.Setenv("GOMEMLIMIT", "1GiB")
	before, beforeLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(before)
	restore := DefaultGC().Apply()
	defer restore()
	percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(percent)
	if percent != before || limit != beforeLimit {
		t.Errorf("with GOGC and GOMEMLIMIT set: percent %d, limit %d; want %d and %d unchanged", percent, limit, before, beforeLimit)
	}
}
