package config

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/realtime"
)

// The process's other threads go to the CPUs no loop is pinned to, only
// when every real-time loop is pinned and one CPU is left.
func TestOtherCPUs(t *testing.T) {
	loop := func(priority, cpu int) LinkTable {
		return LinkTable{Name: "l", Loop: LoopTable{Priority: priority, CPU: new(cpu)}}
	}
	for _, tc := range []struct {
		name    string
		links   []LinkTable
		allowed []int
		want    []int
		warns   string // a part of the warning; "" for none
	}{
		{"nothing pinned", []LinkTable{loop(80, -1), loop(80, -1)}, []int{0, 1}, nil, ""},
		{"one pinned loop", []LinkTable{loop(80, 1)}, []int{0, 1}, []int{0}, ""},
		{"two loops on one CPU", []LinkTable{loop(80, 1), loop(80, 1)}, []int{0, 1, 2, 3}, []int{0, 2, 3}, ""},
		{"two CPUs of loops", []LinkTable{loop(80, 3), loop(80, 1)}, []int{0, 1, 2, 3}, []int{0, 2}, ""},
		{"an ordinary loop may stay with the others", []LinkTable{loop(80, 1), loop(0, -1)}, []int{0, 1}, []int{0}, ""},
		{"a real-time loop left unpinned", []LinkTable{loop(80, 1), loop(80, -1)}, []int{0, 1}, nil, "set [link.loop] cpu"},
		{"loops on every CPU", []LinkTable{loop(80, 0), loop(80, 1)}, []int{0, 1}, nil, "leave one CPU free"},
		{"a CPU the process may not use", []LinkTable{loop(80, 5)}, []int{0, 1}, []int{0, 1}, ""},
	} {
		c := &Config{Links: tc.links}
		got, warning := c.otherCPUs(tc.allowed)
		if !slices.Equal(got, tc.want) || (warning == "") != (tc.warns == "") || !strings.Contains(warning, tc.warns) {
			t.Errorf("%s: %v, %q; want %v, a warning with %q", tc.name, got, warning, tc.want, tc.warns)
		}
	}
}

// A camera thread pinned with its loop runs at the loop's priority at least;
// unpinned, or at the normal priority, it keeps its own.
func TestCameraPriorityWithItsLoop(t *testing.T) {
	for _, tc := range []struct{ camera, loop, cpu, want int }{
		{70, 80, -1, 70},
		{70, 80, 1, 80},
		{90, 80, 1, 90},
		{0, 80, 1, 0},
		{70, 0, 1, 70},
	} {
		if got := cameraPriority(tc.camera, LoopTable{Priority: tc.loop, CPU: new(tc.cpu)}); got != tc.want {
			t.Errorf("camera %d, loop %d on CPU %d: %d, want %d", tc.camera, tc.loop, tc.cpu, got, tc.want)
		}
	}
}

// ConfineOthers moves every thread of the process off the pinned loops'
// CPU, as bridge run does before its links start.
func TestConfineOthers(t *testing.T) {
	allowed, err := realtime.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		t.Skipf("needs 2 CPUs: one for the loop, one for the rest; this process may use %v", allowed)
	}
	defer func() {
		if err := realtime.Confine(allowed); err != nil {
			t.Fatalf("giving the CPUs back: %v", err)
		}
	}()
	loopCPU := allowed[len(allowed)-1]
	c := &Config{Links: []LinkTable{{Name: "l", Loop: LoopTable{Priority: 80, CPU: new(loopCPU)}}}}
	cpus, warning := c.ConfineOthers()
	if want := allowed[:len(allowed)-1]; warning != "" || !slices.Equal(cpus, want) {
		t.Fatalf("ConfineOthers() = %v, %q; want %v", cpus, warning, want)
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue // exited meanwhile
		}
		if set.IsSet(loopCPU) {
			t.Errorf("thread %d may still run on the loop's CPU %d", tid, loopCPU)
		}
	}
}

// A loop pinned where another link's camera tracks at real-time priority is
// warned about; the camera's own loop, and a loop elsewhere, are not.
func TestCameraCPUWarnings(t *testing.T) {
	emio := func(cpu, camPriority int) LinkTable {
		return LinkTable{Name: "emio", Loop: LoopTable{Priority: 80, CPU: new(cpu)},
			Plant: &EmioPlant{Camera: CameraTable{Kind: "sim", Priority: camPriority}}}
	}
	other := func(cpu int) LinkTable {
		return LinkTable{Name: "meca500", Loop: LoopTable{Priority: 80, CPU: new(cpu)}}
	}
	for _, tc := range []struct {
		name  string
		links []LinkTable
		warns bool
	}{
		{"shared CPU", []LinkTable{emio(1, 70), other(1)}, true},
		{"CPUs of their own", []LinkTable{emio(1, 70), other(2)}, false},
		{"camera at normal priority", []LinkTable{emio(1, 0), other(1)}, false},
		{"nothing pinned", []LinkTable{emio(-1, 70), other(-1)}, false},
	} {
		w := (&Config{Links: tc.links}).cameraCPUWarnings()
		if (len(w) > 0) != tc.warns {
			t.Errorf("%s: %q; want a warning: %v", tc.name, w, tc.warns)
		}
		if tc.warns && (len(w) != 1 || !strings.Contains(w[0], `"meca500"`) || !strings.Contains(w[0], "loop.cpu")) {
			t.Errorf("%s: %q does not name the link and what to set", tc.name, w)
		}
	}
}
