package mecasim

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// The framer cuts at NUL and '\n' whatever the reads (§2.1), and reports an
// overlong frame once, dropping it up to its terminator.
func TestFramer(t *testing.T) {
	long := strings.Repeat("x", maxFrame)
	cases := []struct {
		name     string
		reads    []string
		frames   []string
		overlong int
	}{
		{"one frame", []string{"A\x00"}, []string{"A"}, 0},
		{"split", []string{"Ge", "tJ", "oints\x00"}, []string{"GetJoints"}, 0},
		{"several per read", []string{"A\x00B\nC\x00"}, []string{"A", "B", "C"}, 0},
		{"empty frames are frames", []string{"\x00\n"}, []string{"", ""}, 0},
		{"no terminator yet", []string{"A", "B"}, nil, 0},
		{"the longest frame", []string{long, "\x00"}, []string{long}, 0},
		{"one byte too long", []string{long, "y\x00B\x00"}, []string{"B"}, 1},
		{"overlong in one read", []string{long + "yy\x00B\x00"}, []string{"B"}, 1},
		{"overlong across reads", []string{long, "y", "zzz", "\x00", "B\x00"}, []string{"B"}, 1},
		{"two overlong", []string{long + "y\x00" + long + "y\x00"}, nil, 2},
	}
	for _, c := range cases {
		var f framer
		var frames []string
		over := 0
		for _, r := range c.reads {
			f.feed([]byte(r), func(b []byte) { frames = append(frames, string(b)) }, func() { over++ })
		}
		if !reflect.DeepEqual(frames, c.frames) || over != c.overlong {
			t.Errorf("%s: frames %q, %d overlong; want %q, %d", c.name, frames, over, c.frames, c.overlong)
		}
	}
}

func TestParseCommand(t *testing.T) {
	cases := []struct {
		in     string
		ok     bool
		name   string
		silent bool
		args   []string
		code   int // error code, 0 for none
	}{
		{"GetJoints", true, "GetJoints", false, nil, 0},
		{"  getjoints()  ", true, "getjoints", false, nil, 0},
		{"-SetRtc(1776000000)", true, "SetRtc", true, []string{"1776000000"}, 0},
		{"MoveJoints(1, 2.5 ,-3,0,0,1e-05)\r", true, "MoveJoints", false, []string{"1", "2.5", "-3", "0", "0", "1e-05"}, 0},
		{"SetRealTimeMonitoring(all)", true, "SetRealTimeMonitoring", false, []string{"all"}, 0},
		{"Foo(,)", true, "Foo", false, []string{"", ""}, 0},
		{"Set_2(1)", true, "Set_2", false, []string{"1"}, 0},
		{"", false, "", false, nil, 0},
		{" \t\r", false, "", false, nil, 0},
		{"-", false, "", false, nil, codeUnknown},
		{"--GetJoints", false, "", false, nil, codeSyntax},
		{"GetJoints(", false, "", false, nil, codeSyntax},
		{"GetJoints)", false, "", false, nil, codeSyntax},
		{"Get Joints", false, "", false, nil, codeSyntax},
		{"A((1))", false, "", false, nil, codeSyntax},
		{"A(1)x", false, "", false, nil, codeSyntax},
		{"~GetJoints", false, "", false, nil, codeSyntax},
		{"(1)", false, "", false, nil, codeSyntax},
	}
	for _, c := range cases {
		cmd, ok, e := parseCommand([]byte(c.in))
		code := 0
		if e != nil {
			code = e.code
		}
		if ok != c.ok || code != c.code || ok && (cmd.name != c.name || cmd.silent != c.silent || !reflect.DeepEqual(cmd.args, c.args)) {
			t.Errorf("parseCommand(%q) = %+v, %v, %+v; want %q %v %q, error %d", c.in, cmd, ok, e, c.name, c.silent, c.args, c.code)
		}
	}
}

// Numbers go out in plain decimal, at most six decimals, never an exponent
// (§2.2).
func TestFmtNum(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {-1e-9, "0"}, {190, "190"}, {-1.5, "-1.5"}, {0.016666, "0.016666"},
		{1e-7, "0"}, {1.0000004, "1"}, {123.4567891, "123.456789"}, {1e21, "1000000000000000000000"},
		{math.NaN(), "nan"},
	} {
		if got := fmtNum(c.v); got != c.want {
			t.Errorf("fmtNum(%v) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := fmtList(42, 1, 2.5); got != "42,1,2.5" {
		t.Errorf("fmtList = %q", got)
	}
	if got := fmtList(-1, 1, 2.5); got != "1,2.5" {
		t.Errorf("fmtList = %q", got)
	}
	if got := string(message(true, 2083, "M500-0000")); got != "-[2083][M500-0000]\x00" {
		t.Errorf("message = %q", got)
	}
}

// Text echoed from a client cannot break the framing of the reply.
func TestQuote(t *testing.T) {
	if got := quote("a]b[c'd\x01e"); got != "a?b?c?d?e" {
		t.Errorf("quote = %q", got)
	}
	if got := quote(strings.Repeat("x", 50)); got != strings.Repeat("x", 40)+"..." {
		t.Errorf("quote = %q", got)
	}
}
