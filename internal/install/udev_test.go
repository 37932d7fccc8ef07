package install

import (
	"bytes"
	"errors"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labbridge/bridge/dynamixel"
)

// -print-udev writes the one rule line of the adapter found, serial filled
// in, byte for byte.
func TestInstallPrintUdev(t *testing.T) {
	var out bytes.Buffer
	if err := PrintUdev(&out, "a", "", onePort("FT4TFSV1")); err != nil {
		t.Fatal(err)
	}
	want := `SUBSYSTEM=="tty", ATTRS{idVendor}=="0403", ATTRS{idProduct}=="6014", ATTRS{serial}=="FT4TFSV1", SYMLINK+="robot-a", ` +
		`GROUP="dialout", MODE="0660", ENV{ID_MM_DEVICE_IGNORE}="1", ATTR{device/latency_timer}="1", TAG+="systemd", ` +
		`ENV{SYSTEMD_WANTS}+="bridge@a.service"` + "\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	// The U2D2 as the driver tells it: hex by value, in either case ("403"
	// is "0403").
	out.Reset()
	upper := func() ([]dynamixel.PortInfo, error) {
		return []dynamixel.PortInfo{{IsUSB: true, Path: "/dev/ttyUSB3", VID: "403", PID: "6014", Serial: "X9"}}, nil
	}
	if err := PrintUdev(&out, "arm_2", "", upper); err != nil || !strings.Contains(out.String(), `ATTRS{serial}=="X9", SYMLINK+="robot-arm_2"`) {
		t.Errorf("%v %s", err, out.String())
	}
	// -serial needs no port list.
	out.Reset()
	if err := PrintUdev(&out, "a", "FTABCDEF", nil); err != nil || !strings.Contains(out.String(), `ATTRS{serial}=="FTABCDEF"`) {
		t.Errorf("%v %s", err, out.String())
	}
}

func TestInstallPrintUdevRefuses(t *testing.T) {
	none := func() ([]dynamixel.PortInfo, error) {
		return []dynamixel.PortInfo{{Path: "/dev/ttyS0"}, {IsUSB: true, Path: "/dev/ttyACM0", VID: "2341", PID: "0043"}}, nil
	}
	two := func() ([]dynamixel.PortInfo, error) {
		return []dynamixel.PortInfo{{IsUSB: true, Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: "A"}, {IsUSB: true, Path: "/dev/ttyUSB1", VID: "0403", PID: "6014", Serial: "B"}}, nil
	}
	noSerial := func() ([]dynamixel.PortInfo, error) {
		return []dynamixel.PortInfo{{IsUSB: true, Path: "/dev/ttyUSB0", VID: "0403", PID: "6014"}}, nil
	}
	failing := func() ([]dynamixel.PortInfo, error) { return nil, errors.New("no /sys") }
	for _, c := range []struct {
		name, serial string
		list         func() ([]dynamixel.PortInfo, error)
		want         error
		says         string
	}{
		{"a", "", none, ErrNoAdapter, "install: no U2D2 adapter (USB 0403:6014) found among 2 serial port(s): plug it in"},
		{"a", "", nil, ErrNoAdapter, "give -serial"},
		{"a", "", two, ErrManyAdapters, "(/dev/ttyUSB0 serial A, /dev/ttyUSB1 serial B): give -serial"},
		{"a", "", noSerial, ErrSerial, "/dev/ttyUSB0 reports none"},
		{"a", `FT"1`, nil, ErrSerial, "printable serial"},
		{"a", "FT 1", nil, ErrSerial, ""},
		{"a-b", "FT1", nil, ErrName, "no '-'"},
		{"a", "", failing, nil, "install: list the serial ports: no /sys"},
	} {
		var out bytes.Buffer
		err := PrintUdev(&out, c.name, c.serial, c.list)
		if err == nil || c.want != nil && !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s %q: %v, want %v saying %q", c.name, c.serial, err, c.want, c.says)
		}
		if out.Len() != 0 {
			t.Errorf("%s %q: printed %q", c.name, c.serial, out.String())
		}
	}
}

func TestInstallCommands(t *testing.T) {
	var out bytes.Buffer
	PrintCommands(&out, Commands("a"))
	want := `then run, as root:
  /usr/local/bin/bridge check -config /etc/bridge/a.toml
  systemd-sysusers
  udevadm control --reload
  udevadm trigger --action=add --subsystem-match=tty --subsystem-match=usb-serial --subsystem-match=misc --subsystem-match=usb
  systemctl daemon-reload
  systemctl enable --now bridge@a
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// The calibration comes from the home of the user who ran sudo, not from
// root's.
func TestInstallCallerEmioapi(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if got := CallerEmioapi(env(map[string]string{"HOME": "/home/lab"})); got != "/home/lab/.config/emioapi" {
		t.Errorf("HOME: %s", got)
	}
	if got := CallerEmioapi(env(nil)); got != "" {
		t.Errorf("no home: %q", got)
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no current user to stand for SUDO_USER: %v", err)
	}
	got := CallerEmioapi(env(map[string]string{"HOME": "/root", "SUDO_USER": u.Username}))
	if got != filepath.Join(u.HomeDir, ".config", "emioapi") {
		t.Errorf("SUDO_USER=%s: %s", u.Username, got)
	}
}
