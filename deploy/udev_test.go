package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labbridge/bridge/deploy"
)

// udevKey is what udev(7) allows of a key: matching (== !=), assigning
// (= += -= :=), and whether it takes {attribute}.
type udevKey struct {
	match, assign bool
	attr          int // 0: none, 1: required, 2: optional
}

func udevKeys() map[string]udevKey {
	m, a, both := udevKey{match: true}, udevKey{assign: true}, udevKey{match: true, assign: true}
	withAttr := func(k udevKey, n int) udevKey { k.attr = n; return k }
	return map[string]udevKey{
		"ACTION": m, "DEVPATH": m, "KERNEL": m, "KERNELS": m, "SUBSYSTEM": m, "SUBSYSTEMS": m,
		"DRIVER": m, "DRIVERS": m, "TAGS": m, "PROGRAM": m, "RESULT": m,
		"ATTRS": withAttr(m, 1), "CONST": withAttr(m, 1), "TEST": withAttr(m, 2),
		"NAME": both, "SYMLINK": both, "TAG": both,
		"ATTR": withAttr(both, 1), "SYSCTL": withAttr(both, 1), "ENV": withAttr(both, 1),
		"OWNER": a, "GROUP": a, "MODE": a, "LABEL": a, "GOTO": a, "OPTIONS": a,
		"SECLABEL": withAttr(a, 1), "RUN": withAttr(a, 2), "IMPORT": withAttr(a, 2),
	}
}

// udevItem is one KEY{attr}OP"value" of a rule.
type udevItem struct{ key, attr, op, value string }

// parseUdev checks a rules file the way udev reads it: continuation lines
// joined, comments skipped, each rule a comma-separated list of known keys
// with an operator their kind allows, at least one match per rule.
func parseUdev(text string) ([][]udevItem, error) {
	keys := udevKeys()
	// item takes one KEY{attr}OP"value" off the front of a rule.
	item := regexp.MustCompile(`^\s*([A-Z_]+)(?:\{([^{}]+)\})?\s*(==|!=|\+=|-=|:=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)`)
	octal := regexp.MustCompile(`^0[0-7]{3}$`)
	var rules [][]udevItem
	logical := strings.ReplaceAll(text, "\\\n", "")
	for n, line := range strings.Split(logical, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var rule []udevItem
		matches := 0
		for rest := line; rest != ""; {
			m := item.FindStringSubmatch(rest)
			if m == nil {
				return nil, fmt.Errorf("rule %d: cannot parse %q", n+1, rest)
			}
			rest = rest[len(m[0]):]
			if m[5] == "," && strings.TrimSpace(rest) == "" {
				return nil, fmt.Errorf("rule %d: trailing comma", n+1)
			}
			it := udevItem{key: m[1], attr: m[2], op: m[3], value: m[4]}
			k, ok := keys[it.key]
			switch {
			case !ok:
				return nil, fmt.Errorf("rule %d: unknown key %s", n+1, it.key)
			case k.attr == 0 && it.attr != "", k.attr == 1 && it.attr == "":
				return nil, fmt.Errorf("rule %d: %s{%s}: wrong attribute use", n+1, it.key, it.attr)
			}
			isMatch := it.op == "==" || it.op == "!="
			if isMatch && !k.match || !isMatch && !k.assign {
				return nil, fmt.Errorf("rule %d: %s %s: operator not allowed for this key", n+1, it.key, it.op)
			}
			if isMatch {
				matches++
			}
			if it.key == "MODE" && !octal.MatchString(it.value) {
				return nil, fmt.Errorf("rule %d: MODE %q is not octal", n+1, it.value)
			}
			rule = append(rule, it)
		}
		if matches == 0 {
			return nil, fmt.Errorf("rule %d: no match key: it would apply to every device", n+1)
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

func TestUdevParserRefuses(t *testing.T) {
	for _, bad := range []string{
		`SUBSYSTEM="tty", GROUP="dialout"`,               // assignment to a match-only key
		`SUBSYSTEM=="tty", GROUP=="dialout"`,             // match on an assign-only key
		`SUBSYSTEM=="tty", ATTRS=="x"`,                   // no attribute
		`SUBSYSTEM=="tty", FOO="x"`,                      // unknown key
		`SUBSYSTEM=="tty", MODE="660"`,                   // not octal
		`SUBSYSTEM=="tty" GROUP="dialout"`,               // no comma
		`SUBSYSTEM=="tty", GROUP="dialout",`,             // trailing comma
		`GROUP="dialout"`,                                // no match
		`SUBSYSTEM=="tty", SYMLINK+="robot-a`,            // open quote
		`SUBSYSTEM=="tty", ENV{SYSTEMD_WANTS}+=bridge@a`, // no quotes
	} {
		if _, err := parseUdev(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// The rules files parse.
func TestUdevRulesSyntax(t *testing.T) {
	for _, name := range []string{"99-bridge.rules", "99-bridge-u2d2.rules"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rules, err := parseUdev(string(b))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if len(rules) == 0 {
			t.Errorf("%s: no rule", name)
		}
	}
}

// Where the installed udevadm can verify rules (systemd 254 and later), it
// accepts them.
func TestUdevRulesVerify(t *testing.T) {
	ua, err := exec.LookPath("udevadm")
	if err != nil {
		t.Skip("udevadm not found: install Debian package udev (its verify command needs systemd 254 or later); TestUdevRulesSyntax checks the syntax")
	}
	if exec.Command(ua, "verify", "--help").Run() != nil {
		t.Skip("this udevadm has no verify command (systemd 254 or later): TestUdevRulesSyntax checks the syntax")
	}
	for _, name := range []string{"99-bridge.rules", "99-bridge-u2d2.rules"} {
		abs, _ := filepath.Abs(name)
		if out, err := exec.Command(ua, "verify", abs).CombinedOutput(); err != nil {
			t.Errorf("udevadm verify %s: %v\n%s", name, err, out)
		}
	}
}

// The example rule file holds what AdapterRule writes for robot "a", and
// that rule makes the symlink, asks for the instance and binds nothing.
func TestUdevAdapterRule(t *testing.T) {
	b, err := os.ReadFile("99-bridge-u2d2.rules")
	if err != nil {
		t.Fatal(err)
	}
	rule := deploy.AdapterRule("a", "FT66WCAW")
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || lines[0] != rule {
		t.Errorf("99-bridge-u2d2.rules holds\n%q\nwant AdapterRule(\"a\", \"FT66WCAW\")\n%q", lines, rule)
	}
	items, err := parseUdev(deploy.AdapterRule("b_2", "A1B2C3"))
	if err != nil || len(items) != 1 {
		t.Fatalf("AdapterRule: %v", err)
	}
	got := map[string]string{}
	for _, it := range items[0] {
		got[it.key+"{"+it.attr+"}"+it.op] = it.value
	}
	for k, v := range map[string]string{
		"SUBSYSTEM{}==": "tty", "ATTRS{idVendor}==": "0403", "ATTRS{idProduct}==": "6014", "ATTRS{serial}==": "A1B2C3",
		"SYMLINK{}+=": "robot-b_2", "TAG{}+=": "systemd", "ENV{SYSTEMD_WANTS}+=": "bridge@b_2.service", "GROUP{}=": "dialout",
	} {
		if got[k] != v {
			t.Errorf("%s%q: got %q", k, v, got[k])
		}
	}
}
