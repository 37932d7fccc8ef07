// Package deploy_test checks the deployment files beside it against the
// real tools that read them: systemd-analyze, systemd-sysusers, udev's rule
// syntax, promtool, and the metric names the bridge exports.
package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/deploy"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/metrics"
)

// systemd-analyze verify accepts the unit, template and instance, with no
// warning at all (it exits 0 on warnings, so stderr is what counts).
func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testutil.RequirePeer(t, "systemd-analyze", "apt-get install systemd", err)
	}
	unit, err := os.ReadFile("bridge@.service")
	if err != nil {
		t.Fatal(err)
	}
	// ExecStart must name an executable that exists here.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit = []byte(strings.Replace(string(unit), "/usr/local/bin/bridge", self, 1))
	dir := t.TempDir()
	for _, name := range []string{"bridge@.service", "bridge@a.service"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, unit, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sa, "verify", path).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
	// The settings, comments left out (they name what never to set).
	var settings []string
	for _, line := range strings.Split(string(unit), "\n") {
		if !strings.HasPrefix(line, "#") {
			settings = append(settings, line)
		}
	}
	// Whole lines: CapabilityBoundingSet= and AmbientCapabilities= empty.
	for _, must := range []string{"Type=notify", "LimitRTPRIO=80", "LimitNICE=-10", "LimitMEMLOCK=infinity", "Restart=on-failure",
		"SupplementaryGroups=dialout plugdev video", "DeviceAllow=char-ttyUSB rw", "DeviceAllow=/dev/cpu_dma_latency rw",
		"DeviceAllow=char-usb_device rw", "ConfigurationDirectory=bridge", "Environment=HOME=/etc/bridge/%i",
		"SystemCallFilter=sched_setattr sched_setaffinity setpriority", "CapabilityBoundingSet=", "AmbientCapabilities="} {
		if !slices.Contains(settings, must) {
			t.Errorf("unit lacks the line %q", must)
		}
	}
	if !slices.ContainsFunc(settings, func(l string) bool { return strings.HasPrefix(l, "WatchdogSec=") }) {
		t.Error("unit lacks WatchdogSec=")
	}
	for _, line := range settings {
		for _, never := range []string{"CPUSchedulingPolicy=", "RestrictRealtime=yes", "PrivateDevices=yes", "PrivateUsers=yes", "PrivateNetwork=yes"} {
			if strings.HasPrefix(line, never) {
				t.Errorf("unit has %s, which breaks serial, UDP or real-time (docs/realtime.md §12–13)", never)
			}
		}
		// The unit starts without the adapter and survives its unplugging:
		// it neither binds to nor requires the device (the bridge reopens
		// it).
		for _, never := range []string{"BindsTo=", "Requires=", "Requisite=", "PartOf=", "StopWhenUnneeded="} {
			if strings.HasPrefix(line, never) {
				t.Errorf("unit has %q: systemd would stop it with the adapter, or not start it without", line)
			}
		}
	}
}

// instance writes bridge@a.service with ExecStart naming an executable that
// exists here, and returns its path.
func instance(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.Replace(string(deploy.Unit()), "/usr/local/bin/bridge", self, 1)
	path := filepath.Join(t.TempDir(), "bridge@a.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The unit's overall exposure in systemd-analyze security is 2.0 or better
// ("OK"): the hardening holds, with serial, USB, UDP and real time allowed.
func TestSystemdSecurity(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testutil.RequirePeer(t, "systemd-analyze", "apt-get install systemd", err)
	}
	path := instance(t)
	cmd := exec.Command(sa, "security", "--offline=true", "--no-pager", path)
	cmd.Dir = filepath.Dir(path)
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for bridge@a\.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security: %v, no exposure level in\n%s", err, out)
	}
	level, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	if level > 2.0 {
		t.Errorf("exposure %.1f, want 2.0 or better:\n%s", level, out)
	}
}

// The files bridge install places are the ones beside this test.
func TestDeployEmbedded(t *testing.T) {
	for name, got := range map[string][]byte{"bridge@.service": deploy.Unit(), "99-bridge.rules": deploy.Rules(), "bridge.sysusers": deploy.Sysusers()} {
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the embedded %s differs from the file", name)
		}
	}
}

// systemd-sysusers creates the user and group bridge, in dialout, plugdev
// and video, in a root of its own.
func TestSystemdSysusers(t *testing.T) {
	su, err := exec.LookPath("systemd-sysusers")
	if err != nil {
		testutil.RequirePeer(t, "systemd-sysusers", "apt-get install systemd", err)
	}
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "group"), []byte("root:x:0:\ndialout:x:20:\nvideo:x:44:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("bridge.sysusers")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(su, "--root="+root, abs).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, _ := os.ReadFile(filepath.Join(etc, "passwd"))
	group, _ := os.ReadFile(filepath.Join(etc, "group"))
	if !regexp.MustCompile(`(?m)^bridge:x:\d+:\d+:[^:]*:[^:]*:\S*nologin$`).Match(passwd) {
		t.Errorf("no system user bridge without a login:\n%s", passwd)
	}
	for _, g := range []string{"bridge", "dialout", "plugdev", "video"} {
		re := regexp.MustCompile(`(?m)^` + g + `:x:\d+:(.*)$`)
		m := re.FindSubmatch(group)
		switch {
		case m == nil:
			t.Errorf("no group %s:\n%s", g, group)
		case g != "bridge" && !strings.Contains(","+string(m[1])+",", ",bridge,"):
			t.Errorf("bridge is not in %s:\n%s", g, group)
		}
	}
}

func TestPrometheusConfigChecks(t *testing.T) {
	pt, err := exec.LookPath("promtool")
	if err != nil {
		testutil.RequirePeer(t, "promtool", "apt-get install prometheus", err)
	}
	if out, err := exec.Command(pt, "check", "config", "prometheus.yml").CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

// exported returns the metric family names the bridge exports.
func exported(t *testing.T) map[string]bool {
	reg := metrics.NewRegistry()
	set, err := metrics.New(reg, metrics.BuildInfo{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	link, err := set.Link("emio", time.Second/30)
	if err != nil {
		t.Fatal(err)
	}
	link.RealTime(metrics.RealTimeInfo{Policy: "SCHED_FIFO", Priority: 80, CPUs: "1"})
	if err := set.Servos("emio", func(dst []metrics.ServoReading) []metrics.ServoReading {
		return append(dst, metrics.ServoReading{ID: 0, TemperatureC: 30, LimitC: 80})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Faults("emio", []string{"no_partner"}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Camera("emio", time.Second/30); err != nil {
		t.Fatal(err)
	}
	relay, err := set.Relay("meca500", func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	relay.RobotError(1011) // vectors show once they have a child
	relay.SafetyStop(3070, 1)
	if _, err := set.Scene("vrep", time.Second/20, []string{"refused"}); err != nil {
		t.Fatal(err)
	}
	lock := metrics.LockReading{State: "locked", States: []string{"locking", "locked", "lost"}}
	if err := set.FrameLock("emio", func() metrics.LockReading { return lock }); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	return names
}
