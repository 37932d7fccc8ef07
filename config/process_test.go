package config

import (
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/labbridge/bridge/realtime"
	"golang.org/x/sys/unix"
)

// SetUpProcess applies GOMAXPROCS, the GC policy and the nice value; a nice
// value it may not set is a warning naming the grant.
func TestSetUpProcess(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	p, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := 20 - p
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
		_ = realtime.Renice(before) // permitted where lowering it was
	})
	unsetenv(t, "GOGC")
	want := before - 2
	if realtime.Renice(want) != nil || realtime.Renice(before) != nil {
		want = before + 1 // not permitted to lower it: raise it, which stays
	}
	c := &Config{Service: Service{Nice: new(want)}, Links: make([]Link, 2)}
	var logs strings.Builder
	c.SetUpProcess(false, slog.New(slog.NewTextHandler(&logs, nil)))
	if n := runtime.GOMAXPROCS(0); n != max(runtime.NumCPU()+2, procs) {
		t.Errorf("GOMAXPROCS %d for 2 links on %d CPUs (was %d)", n, runtime.NumCPU(), procs)
	}
	if g := debug.SetGCPercent(-1); g != realtime.DefaultGC().Percent {
		t.Errorf("GC percent %d, want %d", g, realtime.DefaultGC().Percent)
	}
	debug.SetGCPercent(gc)
	if p, _ := unix.Getpriority(unix.PRIO_PROCESS, 0); 20-p != want {
		t.Errorf("nice %d, want %d", 20-p, want)
	}
	if logs.Len() != 0 {
		t.Errorf("warnings: %s", logs.String())
	}
}

func TestNiceWarning(t *testing.T) {
	w := niceWarning(-10, fmt.Errorf("%w: %w", realtime.ErrNice, unix.EACCES))
	for _, s := range []string{"service.nice = -10", "LimitNICE=-10", "CAP_SYS_NICE", "nice = 0"} {
		if !strings.Contains(w, s) {
			t.Errorf("%q lacks %q", w, s)
		}
	}
}

// unsetenv removes key for the test and puts it back after.
func unsetenv(t *testing.T, key string) {
	t.Setenv(key, "") // restores the value at the end
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
