package install

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/deploy"
	"github.com/labbridge/bridge/dynamixel"
)

// lab is a staged root, a fake binary and a user's emioapi directory with
// both calibration files.
type lab struct {
	root, binary, emioapi string
}

func newLab(t *testing.T) lab {
	t.Helper()
	dir := t.TempDir()
	l := lab{root: filepath.Join(dir, "root"), binary: filepath.Join(dir, "bridge"), emioapi: filepath.Join(dir, "home", ".config", "emioapi")}
	mustWrite(t, l.binary, "#!/bin/sh\necho bridge\n")
	mustWrite(t, filepath.Join(l.emioapi, "cameraparameter.json"), `{"hue_min": 10}`)
	mustWrite(t, filepath.Join(l.emioapi, "camera_2d_points.csv"), "1,2\n3,4\n")
	return l
}

func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func onePort(serial string) func() ([]dynamixel.PortInfo, error) {
	return func() ([]dynamixel.PortInfo, error) {
		return []dynamixel.PortInfo{
			{Path: "/dev/ttyS0"},
			{IsUSB: true, Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: serial},
			{IsUSB: true, Path: "/dev/ttyUSB1", VID: "10c4", PID: "ea60", Serial: "0001"},
		}, nil
	}
}

func (l lab) options(name string) Options {
	return Options{Root: l.root, Name: name, Binary: l.binary, Emioapi: l.emioapi, Ports: onePort("FT4TFSV1")}
}

// install runs Install and returns its printed output with the root
// written as $ROOT.
func (l lab) install(t *testing.T, o Options) (*Result, string, error) {
	t.Helper()
	var out bytes.Buffer
	r, err := Install(context.Background(), o, &out)
	return r, strings.ReplaceAll(out.String(), l.root, "$ROOT"), err
}

// A first install writes every file, says so line by line, and gives the
// instance the first metrics port.
func TestInstallWritesEveryFile(t *testing.T) {
	l := newLab(t)
	r, out, err := l.install(t, l.options("a"))
	if err != nil {
		t.Fatal(err)
	}
	want := `wrote $ROOT/usr/local/bin/bridge
wrote $ROOT/etc/systemd/system/bridge@.service
wrote $ROOT/etc/udev/rules.d/99-bridge.rules
wrote $ROOT/etc/sysusers.d/bridge.conf
wrote $ROOT/etc/udev/rules.d/99-bridge-u2d2-a.rules (adapter serial FT4TFSV1, /dev/robot-a)
wrote $ROOT/etc/bridge/a.toml from the embedded default (metrics on 127.0.0.1:9310)
copied ` + l.emioapi + `/cameraparameter.json to $ROOT/etc/bridge/a/.config/emioapi/cameraparameter.json
copied ` + l.emioapi + `/camera_2d_points.csv to $ROOT/etc/bridge/a/.config/emioapi/camera_2d_points.csv
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if len(r.Actions) != 8 || r.MetricsAddr != "127.0.0.1:9310" {
		t.Errorf("result: %+v", r)
	}
	at := func(p string) string { return filepath.Join(l.root, p) }
	for path, want := range map[string]string{
		BinaryPath:   read(t, l.binary),
		UnitPath:     string(deploy.Unit()),
		RulesPath:    string(deploy.Rules()),
		SysusersPath: string(deploy.Sysusers()),
		EmioapiDir("a") + "/cameraparameter.json": `{"hue_min": 10}`,
		EmioapiDir("a") + "/camera_2d_points.csv": "1,2\n3,4\n",
	} {
		if got := read(t, at(path)); got != want {
			t.Errorf("%s:\n%q\nwant\n%q", path, got, want)
		}
	}
	if st, err := os.Stat(at(BinaryPath)); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("binary mode: %v %v", st.Mode(), err)
	}
	rule := read(t, at(AdapterRulesPath("a")))
	if !strings.HasSuffix(rule, "\n"+deploy.AdapterRule("a", "FT4TFSV1")+"\n") || !strings.HasPrefix(rule, "# ") {
		t.Errorf("adapter rule:\n%s", rule)
	}
	// The configuration is the default with one value changed.
	cfg := read(t, at(ConfigPath("a")))
	if cfg != string(defaultconfig.TOML()) {
		t.Errorf("the first instance's configuration differs from the default (port 9310 is the default's):\n%s", cfg)
	}
	// No temporary file is left behind.
	filepath.WalkDir(l.root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".") && d.Name() != ".config" {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	if !slices.EqualFunc(r.Commands, Commands("a"), slices.Equal) {
		t.Errorf("commands: %q", r.Commands)
	}
}

// Each instance serves /metrics on a port no other configuration in
// /etc/bridge uses, whatever its file name.
func TestInstallMetricsPortPerInstance(t *testing.T) {
	l := newLab(t)
	mustWrite(t, filepath.Join(l.root, ConfigDir, "lab.toml"), "[service]\nmetrics = \"0.0.0.0:9311\"\n")
	mustWrite(t, filepath.Join(l.root, ConfigDir, "off.toml"), "[service]\nlog_level = \"debug\"\n")
	for _, c := range []struct{ name, addr string }{{"a", "127.0.0.1:9310"}, {"b", "127.0.0.1:9312"}, {"c", "127.0.0.1:9313"}} {
		r, _, err := l.install(t, l.options(c.name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := metricsOf([]byte(read(t, filepath.Join(l.root, ConfigPath(c.name)))))
		if err != nil || got != c.addr || r.MetricsAddr != c.addr {
			t.Errorf("%s: metrics %q (%v), result %q, want %s", c.name, got, err, r.MetricsAddr, c.addr)
		}
	}
	// Reinstalled with -force, a keeps its port: its own file does not count.
	o := l.options("a")
	o.Force = true
	if r, _, err := l.install(t, o); err != nil || r.MetricsAddr != "127.0.0.1:9310" {
		t.Errorf("a again: %v %+v", err, r)
	}
}

// The robot's own files are kept unless -force; the bridge's are replaced.
func TestInstallKeepsExistingUnlessForce(t *testing.T) {
	l := newLab(t)
	if _, _, err := l.install(t, l.options("a")); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(l.root, ConfigPath("a"))
	mustWrite(t, cfgPath, "# edited by the lab\n[service]\nmetrics = \"127.0.0.1:9400\"\n")
	calib := filepath.Join(l.root, EmioapiDir("a"), "camera_2d_points.csv")
	mustWrite(t, calib, "5,6\n")
	unit := filepath.Join(l.root, UnitPath)
	mustWrite(t, unit, "old unit\n")

	o := l.options("a")
	o.Ports = onePort("OTHER123")
	r, out, err := l.install(t, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"kept existing $ROOT/etc/udev/rules.d/99-bridge-u2d2-a.rules (-force overwrites it)\n",
		"kept existing $ROOT/etc/bridge/a.toml (-force overwrites it)\n",
		"kept existing $ROOT/etc/bridge/a/.config/emioapi/cameraparameter.json (-force overwrites it)\n",
		"kept existing $ROOT/etc/bridge/a/.config/emioapi/camera_2d_points.csv (-force overwrites it)\n",
		"wrote $ROOT/etc/systemd/system/bridge@.service\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	if r.MetricsAddr != "" || read(t, cfgPath) != "# edited by the lab\n[service]\nmetrics = \"127.0.0.1:9400\"\n" || read(t, calib) != "5,6\n" {
		t.Error("an existing file of the robot was changed")
	}
	if read(t, unit) != string(deploy.Unit()) {
		t.Error("the unit was not replaced")
	}
	if !strings.Contains(read(t, filepath.Join(l.root, AdapterRulesPath("a"))), "FT4TFSV1") {
		t.Error("the adapter rule was replaced")
	}

	o.Force = true
	if _, out, err = l.install(t, o); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "kept existing") {
		t.Errorf("-force kept a file:\n%s", out)
	}
	if read(t, cfgPath) != string(defaultconfig.TOML()) || read(t, calib) != "1,2\n3,4\n" ||
		!strings.Contains(read(t, filepath.Join(l.root, AdapterRulesPath("a"))), "OTHER123") {
		t.Error("-force did not overwrite the robot's files")
	}
}

// Without an adapter the service installs all the same, and the output
// says how to add the rule later.
func TestInstallWithoutAdapter(t *testing.T) {
	l := newLab(t)
	o := l.options("a")
	o.Ports = func() ([]dynamixel.PortInfo, error) { return []dynamixel.PortInfo{{Path: "/dev/ttyS0"}}, nil }
	o.Emioapi = filepath.Join(t.TempDir(), "none")
	_, out, err := l.install(t, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"no adapter rule written: install: no U2D2 adapter (USB 0403:6014) found among 1 serial port(s): plug it in (`bridge scan -list` lists the ports) or give -serial; " +
			"later: bridge install -print-udev -name a > /etc/udev/rules.d/99-bridge-u2d2-a.rules\n",
		"no calibration in " + o.Emioapi + ": the tracker uses emioapi's defaults; put cameraparameter.json and camera_2d_points.csv in $ROOT/etc/bridge/a/.config/emioapi\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks\n%q\nin\n%s", line, out)
		}
	}
	if _, err := os.Stat(filepath.Join(l.root, AdapterRulesPath("a"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("adapter rule written without an adapter: %v", err)
	}
}

// A configuration given with -config keeps every byte but the metrics
// value; one with metrics off stays off.
func TestInstallGivenConfig(t *testing.T) {
	l := newLab(t)
	mustWrite(t, filepath.Join(l.root, ConfigDir, "a.toml"), "[service]\nmetrics = '127.0.0.1:9310'\n")
	src := filepath.Join(t.TempDir(), "mine.toml")
	text := "# my lab\n[ service ]   # the process\nlog_level = \"debug\"\n  metrics = \"0.0.0.0:9310\"   # scraped from the lab's server\n[[link]]\nname = \"x\"\n"
	mustWrite(t, src, text)
	o := l.options("b")
	o.Config = src
	_, out, err := l.install(t, o)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(text, "0.0.0.0:9310", "0.0.0.0:9311", 1)
	if got := read(t, filepath.Join(l.root, ConfigPath("b"))); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(out, "wrote $ROOT/etc/bridge/b.toml from "+src+" (metrics on 0.0.0.0:9311)\n") {
		t.Errorf("output:\n%s", out)
	}

	off := filepath.Join(t.TempDir(), "off.toml")
	mustWrite(t, off, "[service]\nmetrics = \"\"\n")
	o = l.options("c")
	o.Config = off
	if _, out, err = l.install(t, o); err != nil || !strings.Contains(out, "(metrics off, as there)") {
		t.Errorf("metrics off: %v\n%s", err, out)
	}
	if got := read(t, filepath.Join(l.root, ConfigPath("c"))); got != "[service]\nmetrics = \"\"\n" {
		t.Errorf("metrics off changed: %q", got)
	}
}

func TestInstallRefuses(t *testing.T) {
	l := newLab(t)
	for _, name := range []string{"", "robot-a", "a b", "../a", strings.Repeat("a", 33)} {
		if _, _, err := l.install(t, l.options(name)); !errors.Is(err, ErrName) {
			t.Errorf("name %q: %v", name, err)
		}
	}
	mustWrite(t, filepath.Join(l.root, ConfigDir, "broken.toml"), "[service\n")
	_, _, err := l.install(t, l.options("a"))
	if !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "install: ") || !strings.Contains(err.Error(), "broken.toml") {
		t.Errorf("broken neighbour: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	mustWrite(t, bad, "[service]\nmetrics = \"localhost:9310\"\n")
	o := l.options("b")
	o.Root, o.Config = t.TempDir(), bad
	if _, _, err := l.install(t, o); !errors.Is(err, ErrConfig) {
		t.Errorf("metrics with a host name: %v", err)
	}
	o.Binary = ""
	if _, _, err := l.install(t, o); err == nil {
		t.Error("no binary: no error")
	}
}

// The unit runs the binary and the configuration where Install puts them,
// with the HOME under which Install puts the calibration.
func TestInstallPathsMatchTheUnit(t *testing.T) {
	unit := string(deploy.Unit())
	for _, must := range []string{
		"ExecStart=" + BinaryPath + " run -config " + ConfigPath("%i") + "\n",
		"Environment=HOME=" + ConfigDir + "/%i\n",
		"ConfigurationDirectory=" + strings.TrimPrefix(ConfigDir, "/etc/") + "\n",
	} {
		if !strings.Contains(unit, must) {
			t.Errorf("the unit lacks %q", must)
		}
	}
	if EmioapiDir("%i") != ConfigDir+"/%i/.config/emioapi" {
		t.Errorf("EmioapiDir %s is not HOME/.config/emioapi", EmioapiDir("%i"))
	}
}

func TestInstallSetMetrics(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[service]\nmetrics = \"127.0.0.1:9310\"\n", "[service]\nmetrics = \"127.0.0.1:9311\"\n"},
		{"[service]\nmetrics='127.0.0.1:9310' # x\n", "[service]\nmetrics=\"127.0.0.1:9311\" # x\n"},
		{"[service]\r\nmetrics = \"1.2.3.4:1\"\r\n", "[service]\r\nmetrics = \"127.0.0.1:9311\"\r\n"},
		// Another table's metrics key is not the service's.
		{"[other]\nmetrics = \"a\"\n[service]\nmetrics = \"b\" # \"c\"\n", "[other]\nmetrics = \"a\"\n[service]\nmetrics = \"127.0.0.1:9311\" # \"c\"\n"},
	} {
		got, ok := setMetrics([]byte(c.in), "127.0.0.1:9311")
		if !ok || string(got) != c.want {
			t.Errorf("%q: %q %v, want %q", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{
		"service = { metrics = \"1.2.3.4:1\" }\n",
		"service.metrics = \"1.2.3.4:1\"\n",
		"[service]\nmetrics = \"\"\"1.2.3.4:1\"\"\"\n",
		"[service.x]\nmetrics = \"1.2.3.4:1\"\n",
	} {
		if got, ok := setMetrics([]byte(in), "127.0.0.1:9311"); ok {
			t.Errorf("%q: set, %q", in, got)
		}
	}
}
