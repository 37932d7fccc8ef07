package config

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// Each refused value gets one error naming the key as written, the value,
// the allowed range and the fix, byte for byte.
func TestRefusedValues(t *testing.T) {
	const link = "[[link]]\nname = \"emio\"\n"
	const emio = link + "[link.plant]\nkind = \"emio\"\n"
	const pre = "config: invalid configuration: "
	cases := []struct{ doc, want string }{
		{link + "rate_hz = 0\n", pre + `link "emio".rate_hz = 0: want 1..10000 ticks per second; remove the key for the default, 30`},
		{link + "[link.udp]\nmax_timeouts = 0\n", pre + `link "emio".udp.max_timeouts = 0: want 1..1000000 consecutive timeouts before a re-handshake; remove the key for the default, 3`},
		{link + "[link.udp]\nhandshake_interval = \"0s\"\n", pre + `link "emio".udp.handshake_interval = "0s": want 1ms..10s, like "50ms"; remove the key for the default, 50ms`},
		{link + "rate_hz = nan\n", pre + `link "emio".rate_hz = NaN: want a finite number (TOML's nan and inf are no setting); write a number`},
		{emio + "[link.plant.camera]\nclock_error_ppm = -inf\n", pre + `link "emio".plant.camera.clock_error_ppm = -Inf: want a finite number (TOML's nan and inf are no setting); write a number`},
		{"[[link]]\nname = \"em\\u0000io\"\n", pre + `link "em\x00io".name = "em\x00io": want letters, digits, '_', '-' and '.' only, like "emio"`},
		{"[[link]]\nname = \"a b\"\n", pre + `link "a b".name = "a b": want letters, digits, '_', '-' and '.' only, like "emio"`},
		{"[[link]]\nname = \"a\"\n[[link]]\nname = \"b\"\n[link.udp]\nbind = \"0.0.0.0:9091\"\nremote = \"127.0.0.1:25002\"\n",
			pre + `link "b".udp.listen = "0.0.0.0:25001": UDP port 25001 is already link "a"'s udp.listen: give each link its own ports (and its Simulink model the matching ones)`},
		{"[[link]]\nname = \"a\"\n[[link]]\nname = \"b\"\n[link.udp]\nlisten = \"127.0.0.1:9090\"\nbind = \"0.0.0.0:9091\"\n",
			pre + `link "b".udp.listen = "127.0.0.1:9090": UDP port 9090 is already link "a"'s udp.bind: give each link its own ports (and its Simulink model the matching ones)`},
		{emio + "nb_markers = 0\ny0 = [0.0, 0, 0]\nj = [0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n", pre + `link "emio".plant.nb_markers = 0: want 1..16 with y0 and j (they model the markers); or remove y0 and j`},
		{link + "rate_hz = \"30\"\n", pre + `link "emio".rate_hz = "30" is text: want a number of ticks per second, 1..10000 (write rate_hz = 30, without quotes)`},
		{emio + "baud = \"1M\"\n", pre + `link "emio".plant.baud = "1M" is text: want a whole number of bits per second, like 1000000 (write baud = 1000000)`},
		{link + "[link.udp]\nmax_desyncs = true\n", pre + `link "emio".udp.max_desyncs = true is true/false: want a whole number of desyncs, 1..1000000 (write max_desyncs = 5)`},
		{"[service]\nlog_level = 3\n[[link]]\nname = \"a\"\n", pre + `service.log_level = 3 is a number: want text in quotes, like "abc"`},
		{link + "rate_hx = 30\n", pre + `link.rate_hx unknown key (did you mean "rate_hz"?); the keys of [link]: name, rate_hz, apply, halt, window_margin, clock, loop, udp, partner, tap, shadow, plant`},
		{link + "rate_hz = [" + strings.Repeat("1, ", 100000) + "1]\n", pre + `link "emio".rate_hz = [1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1… is a list: want a number of ticks per second, 1..10000 (write rate_hz = 30)`},
		{emio + "ids = [" + strings.Repeat("1, ", 100000) + "1]\n", pre + `link "emio".plant.ids = [1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1…: want 1 to 16 servo IDs (the Emio: [0, 1, 2, 3])`},
		{link + "[link.shadow]\nhold = \"2m\"\n", pre + `link "emio".shadow.hold = "2m0s": want 0s..1m, like "500ms"; remove the key for the default, 500ms`},
		{link + "[link.shadow.threshold]\nangels = 0.1\n", pre + `link "emio".shadow.threshold.angels = 0.1: want a measured field of the plant: markers, angles (did you mean "angles"?)`},
		{link + "[link.shadow.threshold]\nangles = -1.0\n", pre + `link "emio".shadow.threshold.angles = -1: want a positive number of rad`},
		{"\x00\x01\xff\xfe garbage", pre + `the file is not a TOML text file (a NUL byte or invalid UTF-8 in its first KB): give the path of a bridge.toml, a UTF-8 text file`},
		{"# \xff\n", pre + `the file is not a TOML text file (a NUL byte or invalid UTF-8 in its first KB): give the path of a bridge.toml, a UTF-8 text file`},
		{link + "apply = \"\x1b\"\n", pre + "toml: error: TOML files cannot contain control characters: '0x1b'\n\nAt line 3, column 9:\n\n      1 | [[link]]\n      2 | name = \"emio\"\n      3 | apply = \"\\x1b\"\n                  ^\n"},
	}
	for _, c := range cases {
		cfg, err := Parse([]byte(c.doc))
		if err == nil {
			err = cfg.CheckPorts()
		}
		if !errors.Is(err, ErrConfig) || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", show(c.doc), err, c.want)
		}
	}
}

// An absent key still takes its default: only a written 0 is refused.
func TestAbsentKeysTakeDefaults(t *testing.T) {
	c, err := Parse([]byte("[[link]]\nname = \"emio\"\n[link.udp]\nremote = \"127.0.0.1:25000\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	u := c.Links[0].UDP
	if c.Links[0].RateHz != 30 || u.MaxTimeouts != 3 || u.MaxDesyncs != 5 || u.HandshakeInterval.Duration == 0 || u.RecvTimeout.Duration == 0 {
		t.Errorf("defaults %+v", c.Links[0])
	}
}

func TestShow(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{"plain", "plain"},
		{"a\x00b\xffc\u200b", `a\x00b\xffc\u200b`},
		{strings.Repeat("é", 61), strings.Repeat("é", 60) + "…"},
		{1.5, "1.5"},
	}
	for _, c := range cases {
		if got := show(c.in); got != c.want {
			t.Errorf("show(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// At 1 kHz a Dynamixel bus with a 1 ms latency timer carries about 400 Hz:
// a warning, not an error, says so; 30 Hz says nothing.
func TestBusWarnings(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[[link]]\nname = \"emio\"\nrate_hz = 1000\n[link.udp]\nmax_timeouts = 10\n[link.plant]\nkind = \"emio\"\nport = \"sim\"\nlatency_timer = \"1ms\"\n",
			`link "emio": rate_hz = 1000 asks more than the Dynamixel bus carries: one tick's servo I/O takes 2.42ms (92 bytes at 1000000 baud, latency timer 1ms, return delay 500µs) against a period of 1ms, so the loop would tick at about 413 Hz with overruns; lower rate_hz to 330 or less, set latency_timer = "1ms" on the adapter, or raise plant.baud`},
		{"[[link]]\nname = \"emio\"\nrate_hz = 60\n[link.plant]\nkind = \"emio\"\nport = \"/dev/ttyUSB0\"\n",
			`link "emio": rate_hz = 60 asks more than the Dynamixel bus carries: one tick's servo I/O takes 17.42ms (92 bytes at 1000000 baud, latency timer 16ms (latency_timer = 0: assumed the Linux default, 16 ms), return delay 500µs) against a period of 16.666666ms, so the loop would tick at about 57 Hz with overruns; lower rate_hz to 45 or less, set latency_timer = "1ms" on the adapter, or raise plant.baud`},
		{"[[link]]\nname = \"emio\"\n[link.plant]\nkind = \"emio\"\nport = \"sim\"\n", ""},
	}
	for _, c := range cases {
		// loop.priority set: its own warning is TestPriorityWarning's.
		cfg, err := Parse([]byte(strings.Replace(c.doc, "[link.", "[link.loop]\npriority = 0\n[link.", 1)))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(cfg.Warnings(), "\n")
		if got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.doc, got, c.want)
		}
	}
}

// Every message stays short and printable, whatever the file holds.
func checkMessage(t *testing.T, err error) {
	t.Helper()
	lines := strings.Split(err.Error(), "\n")
	if len(lines) > 40 {
		t.Fatalf("%d lines of errors", len(lines))
	}
	for _, l := range lines {
		if len(l) >= 1024 || !utf8.ValidString(l) || strings.ContainsFunc(l, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			t.Fatalf("message line not short and printable: %q", l)
		}
	}
}
