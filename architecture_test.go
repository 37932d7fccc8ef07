package defaultconfig_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/labbridge/bridge"

// imports lists, for every package of the module, the packages of the
// module it may import directly (docs/architecture.md "Packages"). A new
// package has to be added here, with a thought about where it stands.
var imports = map[string][]string{
	".":        {},
	"plant":    {}, // the contract: a leaf
	"latency":  {},
	"pty":      {},
	"realtime": {},
	"sdnotify": {},
	"deploy":   {},
	// Protocols and devices: the contract and nothing else of ours …
	"simulink":          {"plant"},
	"dynamixel":         {"plant"},
	"realsense":         {"plant"},
	"realsense/tracker": {"plant"},
	// … but a robot is made of devices, and a camera of a source and a
	// tracker.
	"emio":   {"plant", "dynamixel"},
	"camera": {"plant", "realtime", "realsense", "realsense/tracker"},
	// Simulators import what they simulate.
	"dynamixel/dxlsim": {"dynamixel", "pty"},
	"sim":              {"plant", "realtime", "emio", "camera", "dynamixel", "dynamixel/dxlsim", "realsense/tracker"},
	// The loop, link and supervisor know no device and no configuration.
	"bridge":    {"plant", "realtime", "simulink"},
	"metrics":   {"plant", "simulink"},
	"loopbench": {"bridge", "latency", "realtime", "simulink"},
	// The configuration builds links: it may import every library.
	"config": {".", "bridge", "camera", "dynamixel", "dynamixel/dxlsim", "emio", "metrics", "plant", "realsense",
		"realsense/tracker", "realtime", "sim", "simulink"},
	"cmd/bridge": nil, // anything but another command
}

// never lists what a protocol or device package may not depend on, even
// through another package: the loop, the configuration, the metrics, the
// simulators, the command.
var never = []string{"bridge", "config", "metrics", "loopbench", "sim", "dynamixel/dxlsim", "cmd/bridge"}

// drivers may not depend on one another.
var drivers = []string{"simulink", "dynamixel", "realsense", "realsense/tracker"}

func goList(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ":")
		var own []string
		for _, d := range strings.Fields(deps) {
			if d == module {
				own = append(own, ".")
			} else if rest, ok := strings.CutPrefix(d, module+"/"); ok {
				own = append(own, rest)
			}
		}
		name := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if name == "" {
			name = "."
		}
		m[name] = own
	}
	return m
}

// The import rules of docs/architecture.md hold: each package imports only
// what its place allows, and no protocol or device package depends, even
// indirectly, on the loop, the configuration, the CLI or another driver.
func TestImportRules(t *testing.T) {
	direct := goList(t, "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", "./...")
	for pkg, got := range direct {
		allowed, known := imports[pkg]
		if !known {
			t.Errorf("package %s is not in the import rules (architecture_test.go, docs/architecture.md): say what it may import", pkg)
			continue
		}
		if pkg == "cmd/bridge" {
			continue
		}
		for _, imp := range got {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s: not allowed (it may import %v)", pkg, imp, allowed)
			}
		}
	}
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}:{{join .Deps \" \"}}", "./...")
	for _, pkg := range []string{"plant", "simulink", "dynamixel", "realsense", "realsense/tracker", "emio", "camera"} {
		for _, d := range deps[pkg] {
			if slices.Contains(never, d) {
				t.Errorf("%s depends on %s: a protocol or device package knows nothing of it", pkg, d)
			}
			if slices.Contains(drivers, pkg) && slices.Contains(drivers, d) {
				t.Errorf("%s depends on %s: drivers know nothing of each other", pkg, d)
			}
		}
	}
}
