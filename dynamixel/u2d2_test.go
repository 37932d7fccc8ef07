package dynamixel

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.bug.st/serial/enumerator"
)

// ChooseU2D2 and Resolve("auto") find the same U2D2, by the value of its
// USB IDs in whatever form the system reports them; anything else is not
// one.
func TestChooseU2D2(t *testing.T) {
	cp2102 := PortInfo{Path: "/dev/ttyUSB3", VID: "10C4", PID: "EA60", Serial: "0001", IsUSB: true}
	ft232r := PortInfo{Path: "/dev/ttyUSB2", VID: "0403", PID: "6001", Serial: "A1", IsUSB: true}
	serial := PortInfo{Path: "/dev/ttyS0"}
	for _, tc := range []struct {
		name string
		u2d2 PortInfo
	}{
		{"as sysfs reports them", PortInfo{Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: "FT66WCAW", IsUSB: true}},
		{"short hex", PortInfo{Path: "/dev/ttyUSB0", VID: "403", PID: "6014", Serial: "FT66WCAW", IsUSB: true}},
		{"leading zeros", PortInfo{Path: "/dev/ttyUSB0", VID: "0403", PID: "06014", Serial: "FT66WCAW", IsUSB: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ports := []PortInfo{tc.u2d2, ft232r, cp2102, serial}
			c, err := ChooseU2D2(ports)
			if err != nil {
				t.Fatal(err)
			}
			if c.Port != tc.u2d2 || len(c.All) != 1 {
				t.Errorf("chose %+v of %+v, want %+v alone", c.Port, c.All, tc.u2d2)
			}
			if path, err := resolve("auto", ports, t.TempDir()); err != nil || path != c.Port.Path {
				t.Errorf(`resolve("auto") = %q, %v; ChooseU2D2 chose %s`, path, err, c.Port.Path)
			}
		})
	}
	// The U2D2's IDs have no hex letters; another adapter's, in either
	// case, are not the U2D2's.
	for _, p := range []PortInfo{
		cp2102, {Path: "/dev/ttyUSB4", VID: "10c4", PID: "ea60", IsUSB: true}, ft232r, serial,
		{Path: "/dev/ttyACM0", VID: "0403", PID: "6014"}, // IDs, but not a USB port
		{Path: "/dev/ttyUSB5", VID: "6014", PID: "0403", IsUSB: true},
	} {
		if p.IsU2D2() {
			t.Errorf("%+v is taken for a U2D2", p)
		}
	}
}

// Without a U2D2 the error says so, names the ports there are, and what to
// do.
func TestChooseU2D2None(t *testing.T) {
	for _, ports := range [][]PortInfo{
		nil,
		{{Path: "/dev/ttyS0"}, {Path: "/dev/ttyUSB2", VID: "0403", PID: "6001", Serial: "A1", IsUSB: true}},
	} {
		_, err := ChooseU2D2(ports)
		if !errors.Is(err, ErrNoPort) {
			t.Fatalf("%+v: %v, want ErrNoPort", ports, err)
		}
		msg := err.Error()
		for _, want := range []string{"dynamixel: ", "no U2D2 (USB 0403:6014)", listPorts(ports), "plug it in"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q does not say %q", msg, want)
			}
		}
	}
}

// Of two U2D2s the first is chosen, and what is said names both.
func TestChooseU2D2Two(t *testing.T) {
	a := PortInfo{Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: "FT66WCAW", IsUSB: true}
	b := PortInfo{Path: "/dev/ttyUSB1", VID: "403", PID: "6014", Serial: "FT99ZZZZ", IsUSB: true}
	c, err := ChooseU2D2([]PortInfo{{Path: "/dev/ttyS0"}, a, b})
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != a || len(c.All) != 2 || c.All[1] != b {
		t.Fatalf("chose %+v of %+v, want the first of both", c.Port, c.All)
	}
	s := c.String()
	for _, want := range []string{"U2D2 /dev/ttyUSB0 (0403:6014 serial FT66WCAW) as usb:0403:6014:FT66WCAW", "2 U2D2", "FT66WCAW", "FT99ZZZZ", "instead of auto"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q does not say %q", s, want)
		}
	}
	if one := (U2D2Choice{Port: a, All: []PortInfo{a}}).String(); strings.Contains(one, "first of") {
		t.Errorf("one U2D2: %q", one)
	}
}

// The name written for a file is the /dev/serial/by-id link the ports were
// listed with, else the USB IDs and serial number (as Resolve reads them),
// else the path.
func TestU2D2Spec(t *testing.T) {
	dev, byID := fakeDev(t, []string{"ttyUSB0", "ttyUSB1"}, map[string]string{u2d2ByID: "ttyUSB0"})
	ports := portInfos([]*enumerator.PortDetails{
		{Name: filepath.Join(dev, "ttyUSB1"), IsUSB: true, VID: "403", PID: "6014", SerialNumber: "FT99ZZZZ"},
		{Name: filepath.Join(dev, "ttyUSB0"), IsUSB: true, VID: "0403", PID: "6014", SerialNumber: "FT66WCAW"},
	}, byID)
	c, err := ChooseU2D2(ports)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(byID, u2d2ByID); c.Port.Spec() != want {
		t.Errorf("written as %q, want its by-id link %q", c.Port.Spec(), want)
	}
	if got := c.All[1].Spec(); got != "usb:0403:6014:FT99ZZZZ" {
		t.Errorf("without a by-id link: %q", got)
	}
	if path, err := resolve(c.All[1].Spec(), ports, byID); err != nil || path != c.All[1].Path {
		t.Errorf("%s resolves to %q, %v; want %s", c.All[1].Spec(), path, err, c.All[1].Path)
	}
	if got := (PortInfo{Path: "/dev/ttyUSB7", VID: "0403", PID: "6014", IsUSB: true}).Spec(); got != "/dev/ttyUSB7" {
		t.Errorf("without a serial number: %q", got)
	}
}
