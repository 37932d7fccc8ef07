package install

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	defaultconfig "github.com/labbridge/bridge"
)

// serviceTable is the one key of a configuration this package reads; the
// full schema is package config's, which `bridge check` applies.
type serviceTable struct {
	Service struct {
		Metrics string `toml:"metrics"`
	} `toml:"service"`
}

// metricsOf is [service] metrics of a configuration's text; "" is off.
func metricsOf(text []byte) (string, error) {
	var s serviceTable
	if _, err := toml.NewDecoder(bytes.NewReader(text)).Decode(&s); err != nil {
		return "", err
	}
	return s.Service.Metrics, nil
}

// usedPorts are the metrics ports of the configurations in dir other than
// skip: every instance serves /metrics on a port of its own.
func usedPorts(dir, skip string) (map[uint16]bool, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	used := map[uint16]bool{}
	for _, p := range paths {
		if filepath.Base(p) == skip {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("install: %w", err)
		}
		m, err := metricsOf(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w (fix it or move it away: its metrics port is needed to choose a free one)", ErrConfig, p, err)
		}
		if ap, err := netip.ParseAddrPort(m); err == nil {
			used[ap.Port()] = true
		}
	}
	return used, nil
}

// freePort is the first port from FirstMetricsPort on that is not used.
func freePort(used map[uint16]bool) uint16 {
	p := uint16(FirstMetricsPort)
	for used[p] {
		p++
	}
	return p
}

// setMetrics returns text with [service] metrics set to addr, every other
// byte (comments included) as it was, and checks the result; false when
// the key is not on a line of its own in a [service] table.
func setMetrics(text []byte, addr string) ([]byte, bool) {
	lines := strings.SplitAfter(string(text), "\n")
	inService, done := false, false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			head, _, _ := strings.Cut(t, "#")
			name := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(head), "["), "]"))
			inService = name == "service"
			continue
		}
		if !inService || done {
			continue
		}
		if before, rest, ok := cutStringValue(l, "metrics"); ok {
			lines[i] = before + strconv.Quote(addr) + rest
			done = true
		}
	}
	out := []byte(strings.Join(lines, ""))
	if got, err := metricsOf(out); !done || err != nil || got != addr {
		return nil, false
	}
	return out, true
}

// cutStringValue splits a TOML line `key = "value" # comment` around its
// quoted value (basic or literal string).
func cutStringValue(line, key string) (before, after string, ok bool) {
	rest := strings.TrimLeft(line, " \t")
	if rest, ok = strings.CutPrefix(rest, key); !ok {
		return "", "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	if rest, ok = strings.CutPrefix(rest, "="); !ok {
		return "", "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	start := len(line) - len(rest)
	if rest == "" || rest[0] != '"' && rest[0] != '\'' {
		return "", "", false
	}
	q := rest[0]
	for i := 1; i < len(rest); i++ {
		switch {
		case rest[i] == '\\' && q == '"':
			i++ // an escaped character
		case rest[i] == q:
			return line[:start], rest[i+1:], true
		}
	}
	return "", "", false
}

// installConfig writes /etc/bridge/NAME.toml from o.Config or the embedded
// default, its metrics on a port no other instance uses, and returns the
// metrics address ("" when off or kept).
func installConfig(o Options, at func(string) string, t *txn) (string, error) {
	dst := at(ConfigPath(o.Name))
	if exists(dst) && !o.Force {
		t.note("kept existing %s (-force overwrites it)", dst)
		return "", nil
	}
	text, from := defaultconfig.TOML(), "the embedded default"
	if o.Config != "" {
		b, err := os.ReadFile(o.Config)
		if err != nil {
			return "", fmt.Errorf("install: read the configuration: %w", err)
		}
		text, from = b, o.Config
	}
	m, err := metricsOf(text)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w (bridge check -config FILE says more)", ErrConfig, from, err)
	}
	addr := ""
	if m != "" {
		ap, err := netip.ParseAddrPort(m)
		if err != nil {
			return "", fmt.Errorf("%w: %s: [service] metrics = %q is not host:port with a numeric host, like \"127.0.0.1:9310\"", ErrConfig, from, m)
		}
		used, err := usedPorts(at(ConfigDir), filepath.Base(dst))
		if err != nil {
			return "", err
		}
		addr = netip.AddrPortFrom(ap.Addr(), freePort(used)).String()
		var ok bool
		if text, ok = setMetrics(text, addr); !ok {
			return "", fmt.Errorf("%w: %s: cannot set [service] metrics = %q in it: write the key on a line of its own in the [service] table",
				ErrConfig, from, addr)
		}
	}
	if addr == "" {
		t.write(dst, text, 0o644, fmt.Sprintf("wrote %s from %s (metrics off, as there)", dst, from))
	} else {
		t.write(dst, text, 0o644, fmt.Sprintf("wrote %s from %s (metrics on %s)", dst, from, addr))
	}
	return addr, nil
}
