package defaultconfig_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/labbridge/bridge"

// leaves are the base packages: each does one job (the device contract, a
// histogram's scale, a real-time thread's set-up, the camera-locked clock,
// a file written whole, a log line, the tap's wire format), imports no package of ours but another
// leaf, and may be imported by any package. Sharing them is what they are
// for; a copy of one elsewhere is a fact with two owners.
var leaves = []string{"plant", "internal/latency", "realtime", "realtime/framelock", "internal/pty", "internal/sdnotify", "internal/fault", "internal/logging", "internal/matfile", "tap/payload", "internal/atomicfile"}

// imports lists, for every package of the module that is not a leaf, the
// packages of the module besides the leaves it may import directly
// (docs/architecture.md "Packages"): the rules against depending upward or
// sideways. A new package has to be added here or to leaves, with a thought
// about where it stands.
var imports = map[string][]string{
	".": {},
	// The deployment files, embedded, and the adapter's udev rule with the
	// USB IDs its driver owns.
	"deploy": {"dynamixel"},
	// The service's installer: the files and the default configuration,
	// and the U2D2 as its driver tells it among the ports; no loop.
	"internal/install": {".", "deploy", "dynamixel"},
	// Protocols and devices: the leaves and nothing else of ours.
	"simulink":          {},
	"dynamixel":         {},
	"realsense":         {},
	"realsense/tracker": {},
	"meca500":           {},
	"vrep/zmtp":         {},
	// A V-REP scene speaks AZ, or the ZMQ remote API over ZMTP.
	"vrep": {"vrep/zmtp"},
	// … but a robot is made of devices, and a camera of a source and a
	// tracker.
	"emio":        {"dynamixel"},
	"emio/camera": {"realsense", "realsense/tracker"},
	// Simulators import what they simulate.
	"dynamixel/dxlsim": {"dynamixel"},
	"meca500/mecasim":  {},
	"vrep/vrepsim":     {"vrep/zmtp"},
	// The scene's exchange measured: the scene, its simulator, the bench.
	"vrep/vrepbench": {"internal/loopbench", "vrep", "vrep/vrepsim"},
	"emio/sim":       {"emio", "emio/camera", "dynamixel", "dynamixel/dxlsim", "realsense/tracker"},
	// The loop, link and supervisor know no device and no configuration.
	"bridge":  {"simulink"},
	"metrics": {"simulink"},
	// The status page takes its data through a function.
	"internal/statuspage": {},
	// The terminal's status rows are drawn from the page's snapshot of a link.
	"internal/termview":  {"internal/statuspage"},
	"internal/loopbench": {"bridge", "simulink"},
	// The telemetry tap is a link's recorder: it takes the link's record.
	"tap": {"bridge", "simulink"},
	// The report of a recording reads the recorder's CSV files: nothing of
	// ours (the status names are those of docs/tap.md §5).
	"internal/report": {},
	// The recorder reads taps: their payload (a leaf), nothing of the loop.
	"internal/record": {},
	// The configuration builds links: it may import every library.
	"internal/config": {".", "bridge", "emio/camera", "dynamixel", "dynamixel/dxlsim", "emio", "meca500", "meca500/mecasim", "metrics",
		"internal/loopbench", "vrep", "vrep/vrepsim", "realsense", "realsense/tracker", "emio/sim", "simulink", "internal/statuspage", "tap", "internal/shadow"},
	// The running bridge: the configuration's links supervised, the
	// metrics server and its status page, systemd's notifications.
	"internal/service": {"bridge", "internal/config", "internal/statuspage", "metrics"},
	// Test support: headless Chromium for the tests that look at a page.
	"internal/headless": {"internal/testutil"},
	// Test support: waits, a shared buffer, and the switch that makes a
	// missing peer skip or fail.
	"internal/testutil": {},
	// A simulator's console: typed lines and an HTTP endpoint carried to a
	// function; nothing of ours.
	"internal/console": {},
	// A recording played back into its link: the configuration builds the
	// link, the report's reader reads the recording, the recorder names
	// its columns.
	"internal/replay": {"bridge", "simulink", "internal/config", "internal/report", "internal/record"},
	// The shadow twin: a model run beside a link's plant from its tick
	// records.
	"internal/shadow": {"bridge", "simulink"},
	// Servos found and pinged for a person: the bus is the driver's.
	"internal/servoscan": {"dynamixel"},
	// A simulated device served to a person: the simulators, their
	// console, and the commands' checks of a duration.
	"internal/simserve": {"dynamixel", "dynamixel/dxlsim", "meca500/mecasim", "vrep", "vrep/vrepsim", "internal/console", "internal/config"},
	"cmd/bridge":        nil, // anything but another command
}

// never lists what a protocol or device package may not depend on, even
// through another package: the loop, the configuration, the metrics, the
// simulators, the command.
var never = []string{"bridge", "internal/config", "metrics", "internal/loopbench", "emio/sim", "dynamixel/dxlsim", "meca500/mecasim", "vrep/vrepsim", "vrep/vrepbench", "cmd/bridge"}

// drivers may not depend on one another.
var drivers = []string{"simulink", "dynamixel", "realsense", "realsense/tracker", "meca500", "vrep"}

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
		leaf := slices.Contains(leaves, pkg)
		switch {
		case leaf && known:
			t.Errorf("package %s is both a leaf and in the import rules (architecture_test.go)", pkg)
		case !leaf && !known:
			t.Errorf("package %s is not in the import rules (architecture_test.go, docs/architecture.md): say what it may import, or make it a leaf", pkg)
			continue
		case pkg == "cmd/bridge":
			continue
		}
		for _, imp := range got {
			switch {
			case slices.Contains(leaves, imp):
			case leaf:
				t.Errorf("%s imports %s: a leaf imports no package of ours but another leaf", pkg, imp)
			case !slices.Contains(allowed, imp):
				t.Errorf("%s imports %s: not allowed (it may import the leaves and %v)", pkg, imp, allowed)
			}
		}
	}
	for _, leaf := range leaves {
		if _, ok := direct[leaf]; !ok {
			t.Errorf("leaf %s is not a package of the module", leaf)
		}
	}
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}:{{join .Deps \" \"}}", "./...")
	for _, pkg := range []string{"plant", "simulink", "vrep/zmtp", "dynamixel", "realsense", "realsense/tracker", "meca500", "vrep", "emio", "emio/camera"} {
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

// cmdLines is the most non-test lines cmd/bridge may hold: it parses flags
// and wires, and what it does besides belongs to a library.
const cmdLines = 1500

// cmd/bridge does not grow back.
func TestCmdStaysThin(t *testing.T) {
	files, err := filepath.Glob("cmd/bridge/*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "\n")
	}
	if n > cmdLines {
		t.Errorf("cmd/bridge has %d non-test lines, more than %d: move what is not wiring or drawing into a library", n, cmdLines)
	}
	t.Logf("cmd/bridge: %d non-test lines (bound %d)", n, cmdLines)
}

// Every docs/… note a source comment cites is in the repository, with the
// section it names: a heading ("## 8.", "### 8.4") or a labelled item
// ("**14.2.3").
func TestDocsCitationsResolve(t *testing.T) {
	cite := regexp.MustCompile(`docs/([a-z0-9-]+\.md)`)
	section := regexp.MustCompile(`§\s?([0-9]+(?:\.[0-9]+)*)`)
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "." && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir // .git, .ci
		case d.IsDir() || !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".py"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		for _, m := range cite.FindAllStringSubmatchIndex(text, -1) {
			n++
			name := text[m[2]:m[3]]
			doc, err := os.ReadFile(filepath.Join("docs", name))
			if err != nil {
				t.Errorf("%s cites docs/%s, which is not in the repository", path, name)
				continue
			}
			// The sections cited are those up to the end of the line or
			// parenthesis, or the next citation.
			rest := text[m[1]:]
			if i := strings.IndexAny(rest, ")\n"); i >= 0 {
				rest = rest[:i]
			}
			rest, _, _ = strings.Cut(rest, "docs/")
			for _, s := range section.FindAllStringSubmatch(rest, -1) {
				q := regexp.QuoteMeta(s[1])
				if !regexp.MustCompile(`(?m)^#{2,4} ` + q + `[. ]|\*\*` + q + ` `).Match(doc) {
					t.Errorf("%s cites docs/%s §%s, which has no such section", path, name, s[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Errorf("only %d citations found: the scan is broken", n)
	}
}

// The README's table of packages names every package of the module.
func TestReadmeNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	for pkg := range goList(t, "-f", "{{.ImportPath}}:", "./...") {
		if pkg == "." {
			continue
		}
		if !slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, "`"+pkg+"`") }) {
			t.Errorf("README.md's table of packages does not name %s", pkg)
		}
	}
}

// No package registers anything at start-up: a library takes what it
// needs as parameters, and a table is built where it is used
// (docs/architecture.md "Packages").
func TestNoInit(t *testing.T) {
	init := regexp.MustCompile(`(?m)^func init\(\)`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if init.Match(b) {
			t.Errorf("%s has a func init(): build the table where it is used, or take it as a parameter", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
