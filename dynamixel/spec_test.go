package dynamixel

import (
	"errors"
	"slices"
	"testing"
)

func TestParseIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []byte
	}{
		{"0,1,2,3", []byte{0, 1, 2, 3}},
		{" 7 , 9", []byte{7, 9}},
		{"250-252", []byte{250, 251, 252}},
		{"5-5", []byte{5}},
	} {
		got, err := ParseIDs(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseIDs(%q) = %v, %v, want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "a", "0-253", "5-3", "-1", "1,,2", "300"} {
		if _, err := ParseIDs(in); !errors.Is(err, ErrRange) {
			t.Errorf("ParseIDs(%q) = %v, want ErrRange", in, err)
		}
	}
}

func TestParseBauds(t *testing.T) {
	if got, err := ParseBauds("1000000, 57600"); err != nil || !slices.Equal(got, []int{1000000, 57600}) {
		t.Errorf("list: %v %v", got, err)
	}
	if got, err := ParseBauds("all"); err != nil || len(got) != 8 || got[0] != 1000000 {
		t.Errorf("all: %v %v", got, err)
	}
	for _, in := range []string{"fast", "12345", ""} {
		if _, err := ParseBauds(in); !errors.Is(err, ErrBaud) {
			t.Errorf("ParseBauds(%q) = %v, want ErrBaud", in, err)
		}
	}
}

// A scan's line: the model and firmware, an alert after them, and a reply
// that is not a servo's status on its own.
func TestFoundLine(t *testing.T) {
	alert := &StatusError{ID: 3, Alert: true}
	for _, tc := range []struct {
		f    Found
		want string
	}{
		{Found{ID: 1, Model: ModelXM430W210, Firmware: 46}, "ID   1  baud 1000000  model 1030 (XM430-W210)  firmware 46"},
		{Found{ID: 3, Model: 9, Firmware: 45, Err: alert}, "ID   3  baud 1000000  model 9 (unknown model)  firmware 45  ALERT: " + alert.Error()},
		{Found{ID: 7, Err: ErrCorrupt}, "ID   7 at 1000000 baud: " + ErrCorrupt.Error()},
	} {
		if got := tc.f.Line(1000000); got != tc.want {
			t.Errorf("Line = %q, want %q", got, tc.want)
		}
	}
}
