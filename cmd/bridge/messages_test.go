package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/internal/config"
)

// Messages name the flag and what it accepts, before anything runs.
func TestFlagValuesRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"partner", "-controller", "foo"}, `bridge partner: -controller "foo": want hold, constant, sine or jacobian`},
		{[]string{"partner", "-rate", "-5"}, "bridge partner: -rate -5: want a rate above 0 Hz"},
		{[]string{"partner", "-rate", "NaN"}, "bridge partner: -rate NaN: want a rate above 0 Hz"},
		{[]string{"partner", "-duration", "-5s"}, "bridge partner: -duration -5s: want 0 (run until Ctrl-C or SIGTERM) or a positive duration"},
		{[]string{"partner", "-drop", "1.5"}, "bridge partner: -drop 1.5: want a probability from 0 to 1"},
		{[]string{"partner", "-reply-delay", "-1ms"}, "bridge partner: -reply-delay -1ms: want 0"},
		{[]string{"partner", "-motors", "0"}, "bridge partner: -motors 0: want 1 or more"},
		{[]string{"run", "-duration", "-5s"}, "bridge run: -duration -5s: want 0 (run until Ctrl-C or SIGTERM)"},
		{[]string{"sim", "-duration", "-5s"}, "bridge sim: -duration -5s: want 0"},
		{[]string{"startUDP", "-duration", "-5s"}, "bridge startUDP: -duration -5s: want 0"},
		{[]string{"sim", "meca500", "-duration", "-5s"}, "bridge sim meca500: -duration -5s: want 0"},
		{[]string{"sim", "servos", "-duration", "-5s"}, "bridge sim servos: -duration -5s: want 0"},
		{[]string{"bench", "link", "-duration", "-5s"}, "bridge bench link: -duration -5s: want a positive duration"},
		{[]string{"bench", "link", "-rate", "0"}, "bridge bench link: -rate 0: want a rate above 0 Hz"},
		{[]string{"bench", "link", "-plant", "arm"}, `bridge bench link: -plant "arm": want sim (in-memory motors) or emio`},
		{[]string{"bench", "link", "-lead", "soon"}, `bridge bench link: -lead "soon": want auto or a duration`},
		{[]string{"bench", "loop", "-duration", "0s"}, "bridge bench loop: -duration 0s: want a positive duration"},
		{[]string{"bench", "loop", "-rate", "-1"}, "bridge bench loop: -rate -1: want a rate above 0 Hz"},
		{[]string{"bench", "links", "-rate", "-1"}, "bridge bench links: -rate -1: want a rate above 0 Hz"},
	} {
		code, _, stderr := runCLI(t, tc.args...)
		if code != 1 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	for cmd, want := range map[string]string{"rnu": "run", "simm": "sim", "partenr": "partner", "camera": "cameras", "startudp2": "startUDP"} {
		code, _, stderr := runCLI(t, cmd)
		prefix := fmt.Sprintf("bridge: unknown command %q; did you mean %q?\n\nbridge: a real-time gateway", cmd, want)
		if code != 2 || !strings.HasPrefix(stderr, prefix) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", cmd, code, stderr, prefix)
		}
	}
	// Nothing close: no guess.
	if code, _, stderr := runCLI(t, "xyzzy"); code != 2 || !strings.HasPrefix(stderr, "bridge: unknown command \"xyzzy\"\n\n") {
		t.Errorf("xyzzy: exit %d, %q", code, stderr)
	}
}

// -help says what -metrics defaults to, without a sentinel.
func TestMetricsHelp(t *testing.T) {
	for _, cmd := range []string{"run", "sim"} {
		code, _, stderr := runCLI(t, cmd, "-help")
		if code != 0 || !strings.Contains(stderr, "  -metrics address\n") || !strings.Contains(stderr, `listen address of /metrics and /healthz, like 127.0.0.1:9310 (default: the configuration's [service] metrics; "" = off)`) ||
			strings.Contains(stderr, `(default "-")`) {
			t.Errorf("%s -help: %d %q", cmd, code, stderr)
		}
	}
	var m metricsFlag
	if got := m.resolve("127.0.0.1:9310"); got != "127.0.0.1:9310" {
		t.Errorf("unset: %q", got)
	}
	m.Set("")
	if got := m.resolve("127.0.0.1:9310"); got != "" {
		t.Errorf(`set to "": %q`, got)
	}
	if got := (*metricsFlag)(nil).resolve("x"); got != "x" {
		t.Errorf("nil: %q", got)
	}
}

// Every flag of bench link shows its type, not a word of its usage.
func TestBenchLinkHelp(t *testing.T) {
	code, _, stderr := runCLI(t, "bench", "link", "-help")
	if code != 0 || !strings.Contains(stderr, "  -partner string\n") || strings.Contains(stderr, "`") {
		t.Errorf("bench link -help: %d %q", code, stderr)
	}
}

// A configured UDP port that another program holds: the message says which
// port, who may hold it and what to do; the library's error is kept. The
// test holds a port of its own (port 0, as the kernel picks it) and writes
// it into the first link's listen, every other configured port 0, so that
// it never depends on a fixed port being free.
func TestPortInUseAdvice(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held := strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port)
	doc := regexp.MustCompile(`(?m)^(bind|listen) = "0\.0\.0\.0:\d+"`).ReplaceAllString(string(defaultconfig.TOML()), `$1 = "0.0.0.0:0"`)
	doc = strings.Replace(doc, `listen = "0.0.0.0:0"`, `listen = "0.0.0.0:`+held+`"`, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "bridge.toml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "sim", "-config", path, "-metrics", "")
	for _, want := range []string{"bridge sim: ", "simulink: bind 0.0.0.0:" + held + ": address already in use",
		"UDP port " + held + " is held by another program (often Simulink on this PC, or another bridge)", `run "bridge sim -ephemeral"`} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("sim: exit %d, %q; want 1 and %q", code, stderr, want)
		}
	}
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	lib := fmt.Errorf("link %q: simulink: bind 0.0.0.0:%s: %w", "emio", held, syscall.EADDRINUSE)
	err = cfg.AddrInUse("run", lib)
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), `"ss -lunp | grep `+held+`"`) ||
		!strings.HasPrefix(err.Error(), "bridge run: link \"emio\": simulink: bind") {
		t.Errorf("run: %v", err)
	}
	// Other errors pass unchanged.
	other := errors.New("x")
	if cfg.AddrInUse("run", other) != other {
		t.Error("an unrelated error was changed")
	}
}
