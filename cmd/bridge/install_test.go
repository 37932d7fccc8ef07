package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/internal/install"
)

func installCLI(t *testing.T, ports func() ([]dynamixel.PortInfo, error), args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := installWith(context.Background(), args, &out, &errb, ports)
	return out.String(), errb.String(), err
}

func fakePorts(ports ...dynamixel.PortInfo) func() ([]dynamixel.PortInfo, error) {
	return func() ([]dynamixel.PortInfo, error) { return ports, nil }
}

// -print-udev prints the rule of the adapter plugged in, byte for byte, and
// nothing else.
func TestInstallPrintUdevCLI(t *testing.T) {
	ports := fakePorts(dynamixel.PortInfo{Path: "/dev/ttyS0"}, dynamixel.PortInfo{IsUSB: true, Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: "FT4TFSV1"})
	out, errs, err := installCLI(t, ports, "-print-udev", "-name", "a")
	want := `SUBSYSTEM=="tty", ATTRS{idVendor}=="0403", ATTRS{idProduct}=="6014", ATTRS{serial}=="FT4TFSV1", SYMLINK+="robot-a", ` +
		`GROUP="dialout", MODE="0660", ENV{ID_MM_DEVICE_IGNORE}="1", ATTR{device/latency_timer}="1", TAG+="systemd", ` +
		`ENV{SYSTEMD_WANTS}+="bridge@a.service"` + "\n"
	if err != nil || out != want || errs != "" {
		t.Errorf("%v\nstdout %q\nstderr %q\nwant %q", err, out, errs, want)
	}
	// No adapter: a clear error, a non-zero exit, nothing on stdout.
	out, _, err = installCLI(t, fakePorts(dynamixel.PortInfo{Path: "/dev/ttyS0"}), "-print-udev", "-name", "a")
	if !errors.Is(err, install.ErrNoAdapter) || out != "" || !strings.Contains(err.Error(), "plug it in") {
		t.Errorf("no adapter: %v, stdout %q", err, out)
	}
}

// The command installs into a staged root, prints every action and the
// commands left, and runs none of them.
func TestInstallCLI(t *testing.T) {
	root := t.TempDir()
	emioapi := filepath.Join(t.TempDir(), "emioapi")
	out, errs, err := installCLI(t, fakePorts(), "-name", "a", "-root", root, "-emioapi", emioapi, "-serial", "FT66WCAW")
	if err != nil {
		t.Fatalf("%v\n%s", err, errs)
	}
	out = strings.ReplaceAll(out, root, "$ROOT")
	want := `wrote $ROOT/usr/local/bin/bridge
wrote $ROOT/etc/systemd/system/bridge@.service
wrote $ROOT/etc/udev/rules.d/99-bridge.rules
wrote $ROOT/etc/sysusers.d/bridge.conf
wrote $ROOT/etc/udev/rules.d/99-bridge-u2d2-a.rules (adapter serial FT66WCAW, /dev/robot-a)
wrote $ROOT/etc/bridge/a.toml from the embedded default (metrics on 127.0.0.1:9310)
no calibration in ` + emioapi + `: the tracker uses emioapi's defaults; put cameraparameter.json and camera_2d_points.csv in $ROOT/etc/bridge/a/.config/emioapi
then run, as root:
  /usr/local/bin/bridge check -config /etc/bridge/a.toml
  systemd-sysusers
  udevadm control --reload
  udevadm trigger --action=add --subsystem-match=tty --subsystem-match=usb-serial --subsystem-match=misc --subsystem-match=usb
  systemctl daemon-reload
  systemctl enable --now bridge@a
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	self, _ := os.Executable()
	a, _ := os.ReadFile(self)
	b, _ := os.ReadFile(filepath.Join(root, "usr/local/bin/bridge"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Error("the installed binary is not this one")
	}
	// The installed configuration passes bridge check.
	if code, out, errs := runCLI(t, "check", "-config", filepath.Join(root, "etc/bridge/a.toml")); code != 0 {
		t.Errorf("bridge check: %d\n%s%s", code, out, errs)
	}
	// A second install keeps the configuration.
	out, _, err = installCLI(t, fakePorts(), "-name", "a", "-root", root, "-emioapi", emioapi)
	if err != nil || !strings.Contains(out, "kept existing "+root+"/etc/bridge/a.toml (-force overwrites it)\n") {
		t.Errorf("again: %v\n%s", err, out)
	}
}

func TestInstallCLIUsage(t *testing.T) {
	for _, args := range [][]string{
		{}, // no -name
		{"-name", "a", "-root", t.TempDir(), "-run-systemctl"}, // would run on this machine for a staged root
		{"-name", "a", "extra"},
	} {
		if _, _, err := installCLI(t, fakePorts(), args...); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v", args, err)
		}
	}
	if code, _, stderr := runCLI(t, "install", "-help"); code != 0 || !strings.Contains(stderr, "Usage: bridge install") {
		t.Errorf("install -help: %d %q", code, stderr)
	}
}

// Ctrl-C during bridge install exits 130 and leaves the root as it was:
// no file, no folder, no temporary file.
func TestInstallInterruptedCLI(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the signal came as the install began
	var out, errb bytes.Buffer
	code := run(ctx, []string{"install", "-name", "a", "-root", root, "-emioapi", "", "-serial", "FT66WCAW"}, &out, &errb)
	if code != 130 || !strings.Contains(errb.String(), "nothing was changed") {
		t.Errorf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("left in the root: %v", left)
	}
}
