package meca500_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/labbridge/bridge/meca500"
)

// The robot's stream split every which way gives the same frames
// (docs/meca500.md §2.2): mecademicpy's own split-response case included.
func TestFramer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"mecademicpy's split banner", []string{"[3", "00", "0][Connected…]\x00"}, []string{"[3000][Connected…]"}},
		{"merged", []string{"[2230][1]\x00[2007][1,1,0,0,0,0,0]\x00"}, []string{"[2230][1]", "[2007][1,1,0,0,0,0,0]"}},
		{"empty frames skipped", []string{"\x00\x00[2043][]\x00\x00"}, []string{"[2043][]"}},
		{"newline framing", []string{"[2043][x]\n[2044][y]\x00"}, []string{"[2043][x]", "[2044][y]"}},
		{"split on the terminator", []string{"[2043][x]", "\x00", "[20", "44][y]", "\x00"}, []string{"[2043][x]", "[2044][y]"}},
		{"unterminated tail kept", []string{"[2043][x]\x00[2044"}, []string{"[2043][x]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := meca500.NewFramer(64)
			var got []string
			for _, c := range tc.chunks {
				f.Feed([]byte(c), func(b []byte) { got = append(got, string(b)) })
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("frames %q, want %q", got, tc.want)
			}
		})
	}
}

// A frame longer than the buffer is dropped whole, and the next one is read.
func TestFramerDropsOverlongFrames(t *testing.T) {
	f := meca500.NewFramer(64)
	var got []string
	f.Feed([]byte(strings.Repeat("x", 50)), func(b []byte) { got = append(got, string(b)) })
	f.Feed([]byte(strings.Repeat("y", 50)+"\x00[2043][ok]\x00"), func(b []byte) { got = append(got, string(b)) })
	f.Feed([]byte(strings.Repeat("z", 200)+"\x00[2044][ok]\x00"), func(b []byte) { got = append(got, string(b)) })
	if strings.Join(got, "|") != "[2043][ok]|[2044][ok]" || f.Discarded != 2 {
		t.Errorf("frames %q, %d discarded", got, f.Discarded)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		frame   string
		code    int
		payload string
		err     bool
	}{
		{"[2007][1,1,0,0,0,1,1]", 2007, "1,1,0,0,0,1,1", false},
		{"[3000][Connected to Meca500 R3 v9.1.0.]", 3000, "Connected to Meca500 R3 v9.1.0.", false},
		{"-[2096][1]", 2096, "1", false},
		{"[2089][{\"a\":[1]}]", 2089, "{\"a\":[1]}", false}, // up to the last ]
		{"[2043]", 2043, "", false},
		{"[2043][]", 2043, "", false},
		{"[20a3][x]", 0, "", true},
		{"[][x]", 0, "", true},
		{"[123456][x]", 0, "", true},
		{"2043", 0, "", true},
		{"[2043][x", 0, "", true},
	} {
		m, err := meca500.Parse([]byte(tc.frame))
		if (err != nil) != tc.err || !tc.err && (m.Code != tc.code || string(m.Payload) != tc.payload) {
			t.Errorf("%q: %d %q %v", tc.frame, m.Code, m.Payload, err)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		payload string
		want    []float64
		err     bool
	}{
		{"100000, 5, 0, 0, -16000", []float64{100000, 5, 0, 0, -16000}, false},
		{"1.123456789,-2", []float64{1.123456789, -2}, false},
		{"", nil, false},
		{"nan,*,1", []float64{math.NaN(), math.NaN(), 1}, false},
		{"1,,2", nil, true},
		{"1,x", nil, true},
		{"1,2,3,4,5,6,7,8,9", nil, true}, // more than dst holds
	} {
		var dst [8]float64
		n, err := meca500.Numbers([]byte(tc.payload), dst[:])
		if (err != nil) != tc.err {
			t.Errorf("%q: %v", tc.payload, err)
			continue
		}
		if !tc.err && !sameFloats(dst[:n], tc.want) {
			t.Errorf("%q: %v, want %v", tc.payload, dst[:n], tc.want)
		}
	}
}

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

// Commands are plain decimals, never an exponent, and never NaN.
func TestAppendCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []float64
		want string
	}{
		{"MoveJointsVel", []float64{1e-05, -0.1, 10, 1.0000004, -0, 123456.5}, "MoveJointsVel(0.00001,-0.1,10,1,0,123456.5)\x00"},
		{"ActivateRobot", nil, "ActivateRobot\x00"},
		{"-ConnectionWatchdog", []float64{0.25}, "-ConnectionWatchdog(0.25)\x00"},
		{"MoveJointsVel", []float64{1e-7, 1e20}, "MoveJointsVel(0,100000000000000000000)\x00"},
	} {
		b, err := meca500.AppendCommand(nil, tc.name, tc.args...)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s%v: %q %v, want %q", tc.name, tc.args, b, err, tc.want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		b, err := meca500.AppendCommand([]byte("x"), "MoveJointsVel", 1, bad)
		if !errors.Is(err, meca500.ErrNotFinite) || string(b) != "x" {
			t.Errorf("%v: %q %v", bad, b, err)
		}
	}
}

func TestParseBanner(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string
		err  bool
	}{
		{"Connected to Meca500 R3 v9.1.0.", "Meca500 R3 virtual=false 9.1.0", false},
		{"Connected to Meca500 R3-virtual v10.2.1.", "Meca500 R3 virtual=true 10.2.1", false},
		{"Connected to Meca500 R4-virtual-safe-boot v11.1.5.", "Meca500 R4 virtual=true 11.1.5", false},
		{"Hello", "", true},
		{"Connected to Meca500 R3 9.1", "", true},
	} {
		b, err := meca500.ParseBanner(tc.text)
		got := fmt.Sprintf("%s R%d virtual=%v %v", b.Model, b.Revision, b.Virtual, b.Firmware)
		if (err != nil) != tc.err || !tc.err && got != tc.want {
			t.Errorf("%q: %s %v", tc.text, got, err)
		}
	}
}

// FuzzParse feeds arbitrary bytes through the framer, the parser and the
// number reader: nothing panics, frames never hold a terminator, and a
// frame split anywhere gives the same frames.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"[2007][1,1,0,0,0,0,0]\x00", "[3000][Connected to Meca500 R3 v9.1.0.]\x00", "[2200][1,2,3,4,5,6,7]\x00[2230][1]\x00", "[", "[1][", "\x00\n", "[2089][{]}]\x00"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		var whole, split []string
		collect := func(dst *[]string) func([]byte) {
			return func(b []byte) {
				if strings.ContainsAny(string(b), "\x00\n") || len(b) == 0 {
					t.Fatalf("frame %q", b)
				}
				*dst = append(*dst, string(b))
				if m, err := meca500.Parse(b); err == nil {
					var v [8]float64
					meca500.Numbers(m.Payload, v[:])
					if m.Code < 0 || m.Code > 99999 {
						t.Fatalf("code %d", m.Code)
					}
				}
			}
		}
		fa := meca500.NewFramer(1024)
		fa.Feed(data, collect(&whole))
		fb := meca500.NewFramer(1024)
		i := int(cut) % (len(data) + 1)
		fb.Feed(data[:i], collect(&split))
		fb.Feed(data[i:], collect(&split))
		if strings.Join(whole, "\x00") != strings.Join(split, "\x00") {
			t.Fatalf("split at %d: %q vs %q", i, split, whole)
		}
		meca500.ParseBanner(string(data))
		meca500.ParseVersion(string(data))
	})
}
