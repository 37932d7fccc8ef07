package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/realtime"
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
	c := &Config{Service: Service{Nice: new(want)}, Links: make([]LinkTable, 2)}
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

// SimLinks builds what bench links runs: n sim links with the loop given,
// each its own loop table, validated; a bad loop value is refused as a
// file's would be.
func TestSimLinks(t *testing.T) {
	cpu, dma := 1, false
	c, err := SimLinks(3, 500, LoopTable{Priority: 80, CPU: &cpu, DMALatency: &dma})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Links) != 3 || c.Links[2].Name != "link-02" || c.Links[0].RateHz != 500 || c.Links[1].Plant.Kind() != "sim" ||
		*c.Links[0].Loop.CPU != 1 || *c.Links[0].Loop.DMALatency || c.Service.Metrics != "" {
		t.Fatalf("%+v", c.Links)
	}
	if c.Links[0].Loop.CPU == c.Links[1].Loop.CPU {
		t.Error("two links share one loop table's CPU")
	}
	bad := 2000
	if _, err := SimLinks(1, 500, LoopTable{Priority: 80, CPU: &bad}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "loop.cpu") {
		t.Errorf("cpu 2000: %v", err)
	}
}

// bench link's configuration: one link on either plant, the loop as given,
// every other key at its default; an unknown plant refused by name.
func TestBenchLinkConfig(t *testing.T) {
	cpu, dma := 1, false
	for _, plant := range []string{"sim", "emio"} {
		c, err := BenchLink(500, LoopTable{Priority: 70, CPU: &cpu, DMALatency: &dma}, plant)
		if err != nil {
			t.Fatalf("%s: %v", plant, err)
		}
		l := c.Links[0]
		if l.Name != "bench" || l.RateHz != 500 || l.Loop.Priority != 70 || *l.Loop.CPU != 1 || *l.Loop.DMALatency || l.Plant.Kind() != plant || c.Service.Metrics != "" {
			t.Errorf("%s: %+v", plant, l)
		}
	}
	if _, err := BenchLink(500, LoopTable{}, "arm"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `plant "arm"`) {
		t.Errorf("plant arm: %v", err)
	}
}

// The process's spin guard starts when a SCHED_FIFO loop asks for it (the
// default), not when none does, and a built link's loop gets it.
func TestStartSpinGuard(t *testing.T) {
	if !realtime.SpinGuardBuilt {
		t.Skip("built without cgo: no spin guard (CGO_ENABLED=1)")
	}
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name     string
		priority int
		guard    bool
		want     bool
	}{
		{"real-time loops", 80, true, true},
		{"spin_guard = false", 80, false, false},
		{"normal priority", 0, true, false},
	} {
		c, err := SimLinks(2, 100, LoopTable{Priority: tc.priority, SpinGuard: new(tc.guard)})
		if err != nil {
			t.Fatal(err)
		}
		g := c.StartSpinGuard(log)
		if (g != nil) != tc.want {
			t.Errorf("%s: guard %v, want one: %v", tc.name, g, tc.want)
		}
		if g != nil {
			if err := g.Close(); err != nil {
				t.Error(err)
			}
		}
	}
	c, err := SimLinks(1, 100, LoopTable{Priority: 80})
	if err != nil {
		t.Fatal(err)
	}
	if !*c.Links[0].Loop.SpinGuard {
		t.Error("loop.spin_guard defaults to false, want true")
	}
}
