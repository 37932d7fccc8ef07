// Package deploy_test checks the deployment files beside it against the
// real tools that read them: systemd-analyze, promtool, and the metric names
// the bridge exports.
package deploy_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/metrics"
)

// systemd-analyze verify accepts the unit, template and instance, with no
// warning at all (it exits 0 on warnings, so stderr is what counts).
func TestSystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not found: install Debian package systemd")
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
	for _, must := range []string{"Type=notify", "WatchdogSec=", "LimitRTPRIO=80", "SupplementaryGroups=dialout"} {
		if !strings.Contains(string(unit), must) {
			t.Errorf("unit lacks %s", must)
		}
	}
	for _, never := range []string{"CPUSchedulingPolicy=", "RestrictRealtime=yes", "PrivateDevices=yes"} {
		if strings.Contains(string(unit), never) {
			t.Errorf("unit has %s, which breaks serial or real-time (docs/realtime.md §12–13)", never)
		}
	}
}

func TestPrometheusConfigChecks(t *testing.T) {
	pt, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: install Debian package prometheus")
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
	if _, err := set.Link("emio", time.Second/30); err != nil {
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

// Every panel of the dashboard is complete and queries metrics the bridge
// really exports.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID        string
		Title      string
		Templating struct{ List []struct{ Name string } }
		Panels     []struct {
			ID          int
			Type        string
			Title       string
			Description string
			Datasource  struct{ UID string }
			Targets     []struct{ RefID, Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{"datasource", "job", "instance"} {
		if !vars[v] {
			t.Errorf("no $%s variable", v)
		}
	}
	names := exported(t)
	metricRE := regexp.MustCompile(`\bbridge_[a-z_]+`)
	seen := map[int]bool{}
	for _, p := range d.Panels {
		if seen[p.ID] || p.Title == "" || p.Description == "" || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q is incomplete", p.ID, p.Title)
		}
		seen[p.ID] = true
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "rate(") && !strings.Contains(tg.Expr, "[$__rate_interval]") {
				t.Errorf("panel %q: rate without $__rate_interval: %s", p.Title, tg.Expr)
			}
			for _, m := range metricRE.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(m, "_bucket")
				if !names[base] {
					t.Errorf("panel %q queries %s, which the bridge does not export", p.Title, m)
				}
			}
		}
	}
}
