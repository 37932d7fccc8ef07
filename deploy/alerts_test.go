package deploy_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/testutil"
)

// The alerts the lab relies on; each must be in bridge-alerts.yml.
var wantAlerts = []string{
	"BridgeDown", "BridgeLinkDown", "BridgeOverruns", "BridgeServoHot",
	"BridgeServoHardwareError", "BridgeCameraDown", "BridgeLatenessP99High", "BridgeKernelDrops",
}

// TestAlertRules runs promtool on the alert rules and their unit tests, and
// checks that every alert has a severity, a summary and a description, and
// a unit test where it fires and one where it does not.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testutil.RequirePeer(t, "promtool", "apt-get install prometheus", err)
	}
	if out, err := exec.Command(promtool, "check", "rules", "bridge-alerts.yml").CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := exec.Command(promtool, "test", "rules", "bridge-alerts_test.yml").CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}

	// The checks below read the YAML by its layout (no YAML package is a
	// dependency of this module); promtool has already validated it.
	rules, err := os.ReadFile("bridge-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	blocks := splitBefore(string(rules), regexp.MustCompile(`(?m)^\s*- alert: `))
	var names []string
	for _, b := range blocks[1:] {
		name := strings.Fields(b)[2]
		names = append(names, name)
		if !regexp.MustCompile(`(?m)^\s+severity: (critical|warning)$`).MatchString(b) {
			t.Errorf("%s: no severity: critical or warning label", name)
		}
		for _, a := range []string{"summary", "description"} {
			if !regexp.MustCompile(`(?m)^\s+` + a + `: \S`).MatchString(b) {
				t.Errorf("%s: no %s annotation", name, a)
			}
		}
	}
	for _, a := range wantAlerts {
		if !slices.Contains(names, a) {
			t.Errorf("bridge-alerts.yml has no alert %s", a)
		}
	}

	tests, err := os.ReadFile("bridge-alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	cases := splitBefore(string(tests), regexp.MustCompile(`(?m)^\s*- eval_time: `))
	alertname := regexp.MustCompile(`(?m)^\s+alertname: (\S+)$`)
	for _, c := range cases[1:] {
		m := alertname.FindStringSubmatch(c)
		if m == nil {
			t.Errorf("test case without alertname:\n%s", c)
			continue
		}
		if strings.Contains(c, "exp_alerts: []") {
			quiet[m[1]] = true
		} else if strings.Contains(c, "exp_labels:") {
			fires[m[1]] = true
		}
	}
	for _, a := range names {
		if !fires[a] || !quiet[a] {
			t.Errorf("%s: bridge-alerts_test.yml lacks a case where it fires (%v) or one where it does not (%v)", a, fires[a], quiet[a])
		}
	}
}

// splitBefore splits s before each match of re; the first part is what
// comes before the first match.
func splitBefore(s string, re *regexp.Regexp) []string {
	var parts []string
	last := 0
	for _, loc := range re.FindAllStringIndex(s, -1) {
		parts = append(parts, s[last:loc[0]])
		last = loc[0]
	}
	return append(parts, s[last:])
}
