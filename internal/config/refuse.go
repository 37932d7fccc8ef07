package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"unicode"
	"unicode/utf8"
)

// maxShown bounds a value echoed in a message: a rejected
// 1.5-million-element array must not come back as a 9 MB error.
const maxShown = 60

// maxErrors bounds how many errors one file gets: the first ones say what
// to fix; a generated file with thousands of bad links needs no more.
const maxErrors = 12

// show is a value as a message echoes it: non-printable bytes escaped as
// strconv.Quote does and at most maxShown runes, cut with "…".
func show(val any) string { return shorten(fmt.Sprint(val), maxShown) }

// shorten escapes the non-printable bytes of s and cuts it to n runes.
func shorten(s string, n int) string {
	var b strings.Builder
	count := 0
	for i, r := range s {
		if count == n {
			b.WriteString("…")
			break
		}
		count++
		switch {
		case r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
		}
	}
	return b.String()
}

// capErrors joins errs, the first maxErrors of them.
func capErrors(errs []error) error {
	if len(errs) > maxErrors {
		n := len(errs) - maxErrors
		errs = append(errs[:maxErrors:maxErrors], fmt.Errorf("%w: %d more errors not shown: fix these first and run bridge check again", ErrConfig, n))
	}
	return errors.Join(errs...)
}

// notText refuses a file that is not text before the TOML library echoes
// its bytes: a NUL byte or invalid UTF-8 in the first KB.
func notText(data []byte) error {
	head := data[:min(len(data), 1024)]
	if len(data) > len(head) {
		head = trimPartialRune(head)
	}
	if strings.IndexByte(string(head), 0) >= 0 || !utf8.Valid(head) {
		return fmt.Errorf("%w: the file is not a TOML text file (a NUL byte or invalid UTF-8 in its first KB): give the path of a bridge.toml, a UTF-8 text file", ErrConfig)
	}
	return nil
}

// trimPartialRune drops a rune cut in two by the 1 KB limit.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return b
}

// zeroRefused are the keys whose written 0 used to become the default
// silently; absent, they still take it.
func zeroRefused() []struct{ table, key, want string } {
	return []struct{ table, key, want string }{
		{"", "rate_hz", "1..10000 ticks per second; remove the key for the default, 30"},
		{"udp", "max_timeouts", "1..1000000 consecutive timeouts before a re-handshake; remove the key for the default, 3"},
		{"udp", "max_desyncs", "1..1000000 consecutive desyncs before a re-handshake; remove the key for the default, 5"},
		{"udp", "handshake_interval", `1ms..10s, like "50ms"; remove the key for the default, 50ms`},
		{"udp", "recv_timeout", `0 < t ≤ 10s, like "100ms"; remove the key for the default, 100ms`},
	}
}

// rawChecks finds in the decoded file what the typed decode cannot see: a
// NaN or infinite float anywhere, and a 0 written where 0 is no value. A
// non-finite number refuses the file at once: every check derived from it
// would report nonsense (a period of -2562047h).
func rawChecks(raw map[string]any) (errs []error, stop bool) {
	links, _ := raw["link"].([]map[string]any)
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				errs = append(errs, fmt.Errorf("%w: %s = %v: want a finite number (TOML's nan and inf are no setting); write a number", ErrConfig, prefix, x))
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(prefix+"."+k, x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		case []map[string]any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		}
	}
	for _, k := range sortedKeys(raw) {
		if k == "link" {
			continue
		}
		walk(k, raw[k])
	}
	for i, l := range links {
		name, _ := l["name"].(string)
		for _, k := range sortedKeys(l) {
			walk(linkKey(i, name)+"."+k, l[k])
		}
	}
	if len(errs) > 0 {
		return errs, true
	}
	for i, l := range links {
		name, _ := l["name"].(string)
		for _, z := range zeroRefused() {
			t := l
			if z.table != "" {
				t, _ = l[z.table].(map[string]any)
			}
			v, ok := t[z.key]
			key := z.key
			if z.table != "" {
				key = z.table + "." + key
			}
			if ok && isZero(v) {
				errs = append(errs, fmt.Errorf("%w: %s.%s = %s: want %s", ErrConfig, linkKey(i, name), key, show(tomlValue(v)), z.want))
			}
		}
	}
	return errs, false
}

func isZero(v any) bool {
	switch x := v.(type) {
	case int64:
		return x == 0
	case float64:
		return x == 0
	case string:
		d, err := time.ParseDuration(x)
		return err == nil && d == 0
	}
	return false
}

// tomlValue is v as the file wrote it: strings quoted.
func tomlValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// checkName refuses a link name a log line or a metric label would mangle.
func checkName(v *validator, name string) {
	// It becomes a metric label and a log field, where a control character
	// or a space would be lost.
	ok := strings.IndexFunc(name, func(r rune) bool {
		return !(r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'))
	}) < 0
	if name != "" && !ok {
		v.bad("name", quote(name), `letters, digits, '_', '-' and '.' only, like "emio"`)
	}
}

// udpPort is one socket a link opens, for the check that no two links
// open the same one.
type udpPort struct {
	link, key string
	ap        netip.AddrPort
}

// CheckPorts refuses two links that bind the same UDP port: they pass the
// other checks and fail at run time with "address already in use".
// LoadFile checks a file's links; Parse does not, because a
// generated document (bench links) or start-udp's flags give each link
// ephemeral ports at build.
func (c *Config) CheckPorts() error { return capErrors(c.portClashes()) }

func (c *Config) portClashes() []error {
	var seen []udpPort
	var errs []error
	for i := range c.Links {
		l := &c.Links[i]
		for _, k := range [...]struct{ key, val string }{{"udp.bind", l.UDP.Bind}, {"udp.listen", l.UDP.Listen}} {
			ap, err := netip.ParseAddrPort(k.val)
			if err != nil || ap.Port() == 0 {
				continue // refused elsewhere, or a port the system picks
			}
			p := udpPort{link: linkKey(i, l.Name), key: k.key, ap: ap}
			for _, o := range seen {
				if o.ap.Port() == ap.Port() && (o.ap.Addr() == ap.Addr() || o.ap.Addr().IsUnspecified() || ap.Addr().IsUnspecified()) {
					errs = append(errs, fmt.Errorf("%w: %s.%s = %q: UDP port %d is already %s's %s: give each link its own ports (and its Simulink model the matching ones)",
						ErrConfig, p.link, p.key, k.val, ap.Port(), o.link, o.key))
					break
				}
			}
			seen = append(seen, p)
		}
	}
	return errs
}

// mismatch rewrites the TOML library's type error ("incompatible types:
// TOML value has type string; destination has type float") into the
// user's words: the key as written, its value, what it wants, and the fix.
// table is the decoded table the key is in once strip is cut from the
// library's dotted key; name prefixes the key in the message ("link
// \"emio\"." or "").
func mismatch(err error, name, strip string, table map[string]any) (error, bool) {
	_, lastKey, dest, ok := typeError(err)
	if !ok || !strings.HasPrefix(lastKey, strip) {
		return nil, false
	}
	key := strings.TrimPrefix(lastKey, strip)
	var val any = table
	for _, seg := range strings.Split(key, ".") {
		m, ok := val.(map[string]any)
		if !ok {
			return nil, false
		}
		val = m[seg]
	}
	want, example := keyWant(key)
	if want == "" {
		want = map[string]string{"integer": "a whole number", "float": "a number", "string": `text in quotes, like "abc"`, "bool": "true or false"}[dest]
		if want == "" {
			want = "a value of another type (bridge.toml shows each key)"
		}
	}
	last := key[strings.LastIndexByte(key, '.')+1:]
	fix := ""
	if s, isText := val.(string); isText {
		if _, perr := strconv.ParseFloat(strings.TrimSpace(s), 64); perr == nil && example != "" {
			fix = fmt.Sprintf(" (write %s = %s, without quotes)", last, show(strings.TrimSpace(s)))
		}
	}
	if fix == "" && example != "" {
		fix = fmt.Sprintf(" (write %s = %s)", last, example)
	}
	return fmt.Errorf("%w: %s%s = %s is %s: want %s%s", ErrConfig, name, key, show(tomlValue(val)), typeName(val), want, fix), true
}

// typeName says what a TOML value is, in the words of the file.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "text"
	case bool:
		return "true/false"
	case int64, float64:
		return "a number"
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// keyWant is what the numeric keys most often mistyped want, and an
// example; other keys get the type of their field.
func keyWant(key string) (want, example string) {
	switch key {
	case "rate_hz":
		return "a number of ticks per second, 1..10000", "30"
	case "udp.max_timeouts":
		return "a whole number of timeouts, 1..1000000", "3"
	case "udp.max_desyncs":
		return "a whole number of desyncs, 1..1000000", "5"
	case "udp.recv_buffer":
		return "a whole number of bytes, 0..67108864 (0 = the system's)", "0"
	case "loop.priority":
		return "a whole number, 0..99", "80"
	case "loop.cpu":
		return "a CPU number, or -1 for no pinning", "-1"
	case "gomaxprocs":
		return "a whole number, 0..256 (0 = automatic)", "0"
	case "nice":
		return "a whole number, -20..19 (0 = leave it)", "-10"
	case "baud":
		return "a whole number of bits per second, like 1000000", "1000000"
	case "nb_markers":
		return "a whole number of markers, 0..16", "1"
	}
	return "", ""
}

// linkAtLine is the index of the [[link]] table that line (from 1) of data
// is in, or -1: the TOML library names a key by its dotted path, which does
// not say which link.
func linkAtLine(data []byte, line int) int {
	idx := -1
	for i, l := range strings.SplitN(string(data), "\n", line+1) {
		if i >= line {
			break
		}
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "[[") && strings.TrimSpace(strings.Trim(t[:strings.IndexByte(t+"]", ']')], "[")) == "link" {
			idx++
		}
	}
	return idx
}

// typeError reads the TOML library's type error, a plain error of the form
// `toml: line 3 (last key "link.rate_hz"): incompatible types: TOML value
// has type string; destination has type float`.
func typeError(err error) (line int, key, dest string, ok bool) {
	msg := err.Error()
	rest, found := strings.CutPrefix(msg, "toml: line ")
	if !found || !strings.Contains(msg, "incompatible types") {
		return 0, "", "", false
	}
	num, rest, _ := strings.Cut(rest, " ")
	line, _ = strconv.Atoi(num)
	_, rest, _ = strings.Cut(rest, `(last key "`)
	key, _, _ = strings.Cut(rest, `")`)
	_, dest, _ = strings.Cut(msg, "destination has type ")
	return line, key, dest, key != ""
}
