// Package install places a bridge service on a machine, the way systemd
// expects a locally built service: the binary in /usr/local/bin (as
// file-hierarchy(7) keeps /usr/local for the local administrator), the
// template unit deploy/bridge@.service in /etc/systemd/system
// (systemd.unit(5)), the udev rules in /etc/udev/rules.d (udev(7)), the user
// in /etc/sysusers.d (sysusers.d(5)), and one configuration per robot in
// /etc/bridge, the unit's ConfigurationDirectory.
//
// Everything is written under a root directory, "/" for the running
// machine, another for a staged image or a test. The commands that make
// systemd and udev take the files up are returned, to be printed, and run
// only when asked.
//
// An install is all or nothing (txn.go): every file is written beside its
// place first, then all are renamed into place, then the commands run. An
// interrupt or a failure before the renames changes nothing; one after puts
// the previous files back and removes the new ones.
package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/labbridge/bridge/deploy"
	"github.com/labbridge/bridge/dynamixel"
)

// Paths on the target system; Options.Root is put in front of each. They
// are the paths deploy/bridge@.service names (install_test.go checks it).
const (
	BinaryPath   = "/usr/local/bin/bridge"
	UnitPath     = "/etc/systemd/system/bridge@.service"
	RulesPath    = "/etc/udev/rules.d/99-bridge.rules"
	SysusersPath = "/etc/sysusers.d/bridge.conf"
	// ConfigDir holds NAME.toml per instance, and NAME/, the instance's
	// HOME (Environment=HOME=/etc/bridge/%i), where the tracker finds
	// .config/emioapi.
	ConfigDir = "/etc/bridge"
)

// FirstMetricsPort is the metrics port of the first instance; the next take
// the following free ports.
const FirstMetricsPort = 9310

// The emioapi files of a lab that the tracker reads from
// $HOME/.config/emioapi (realsense/tracker's LoadLabFiles).
const (
	paramsFile      = "cameraparameter.json"
	calibrationFile = "camera_2d_points.csv"
)

var (
	// ErrName is an instance name that cannot name a unit, a file and a
	// device symlink all at once.
	ErrName = errors.New("install: bad instance name")
	// ErrExists is a file kept because it is there and -force was not given.
	ErrExists = errors.New("install: file exists")
	// ErrConfig is a configuration whose [service] metrics cannot be read or
	// set.
	ErrConfig = errors.New("install: bad configuration")
)

// AdapterRulesPath is the udev rules file of robot name's adapter.
func AdapterRulesPath(name string) string {
	return "/etc/udev/rules.d/99-bridge-u2d2-" + name + ".rules"
}

// ConfigPath is the configuration of instance name.
func ConfigPath(name string) string { return ConfigDir + "/" + name + ".toml" }

// EmioapiDir is where instance name's unit finds the lab's calibration:
// $HOME/.config/emioapi with the unit's HOME.
func EmioapiDir(name string) string { return ConfigDir + "/" + name + "/.config/emioapi" }

// CheckName says whether name can be an instance name: letters, digits
// and '_'. A '-' is escaped in device unit names (dev-robot\x2da.device),
// and the name is a file name and part of /dev/robot-NAME.
func CheckName(name string) error {
	ok := len(name) >= 1 && len(name) <= 32
	for _, c := range name {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_')
	}
	if !ok {
		return fmt.Errorf("%w %q: use 1 to 32 letters, digits or '_' (no '-': systemd escapes it in device names), like -name a", ErrName, name)
	}
	return nil
}

// Options say what to install where.
type Options struct {
	// Root is the directory the target system's / is in; "" is "/".
	Root string
	// Name is the instance: bridge@NAME, /etc/bridge/NAME.toml,
	// /dev/robot-NAME.
	Name string
	// Binary is the executable copied to BinaryPath (os.Executable()).
	Binary string
	// Config is the configuration file to install; "" is the embedded
	// default (bridge.toml of the repository).
	Config string
	// Force overwrites the instance's files: its configuration, its
	// adapter rule and its calibration.
	Force bool
	// Emioapi is the installing user's ~/.config/emioapi; its calibration
	// files are copied when present. "" copies nothing.
	Emioapi string
	// Serial is the USB serial number of the robot's adapter; "" looks for
	// the one adapter among Ports.
	Serial string
	// Ports lists the serial ports; nil looks for none.
	Ports func() ([]dynamixel.PortInfo, error)
	// RunCommands runs Commands once the files are in place (on the
	// running machine, Root "/"); when one fails the files are put back.
	RunCommands bool
	// Runner runs one command; nil runs it as a process, its output to
	// Install's out and to Stderr.
	Runner func(ctx context.Context, argv []string) error
	// Stderr takes the commands' error output; nil is Install's out.
	Stderr io.Writer
	// Step, when set, is called before each step that changes the system,
	// with what it is about to do ("stage PATH", "place PATH", "run CMD"):
	// a test cancels the install there.
	Step func(step string)
}

// Result is what Install did.
type Result struct {
	// Actions are the lines printed: "wrote …", "kept existing …".
	Actions []string
	// MetricsAddr is the instance's /metrics address; "" when off or when
	// an existing configuration was kept.
	MetricsAddr string
	// Commands are left to run on the target system, in order.
	Commands [][]string
}

// Install writes the files of instance o.Name under o.Root, printing each
// action to out as it happens, and returns them with the commands left to
// run, which it runs when o.RunCommands. The binary, the unit, the common
// udev rules and the sysusers entry are replaced (they belong to the
// bridge); the instance's configuration, adapter rule and calibration are
// kept when present unless o.Force. When ctx is done or a step fails, the
// files are as they were before, and the error says so (and wraps
// ctx.Err() when interrupted).
func Install(ctx context.Context, o Options, out io.Writer) (*Result, error) {
	if err := CheckName(o.Name); err != nil {
		return nil, err
	}
	if o.Root == "" {
		o.Root = "/"
	}
	r := &Result{}
	t := &txn{out: out, result: r, step: o.Step}
	at := func(p string) string { return filepath.Join(o.Root, p) }

	if err := installBinary(o.Binary, at(BinaryPath), t); err != nil {
		return r, err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{UnitPath, deploy.Unit()},
		{RulesPath, deploy.Rules()},
		{SysusersPath, deploy.Sysusers()},
	} {
		t.write(at(f.path), f.data, 0o644, "wrote "+at(f.path))
	}
	if err := installAdapterRule(o, at(AdapterRulesPath(o.Name)), t); err != nil {
		return r, err
	}
	addr, err := installConfig(o, at, t)
	if err != nil {
		return r, err
	}
	r.MetricsAddr = addr
	if err := installCalibration(o, at(EmioapiDir(o.Name)), t); err != nil {
		return r, err
	}
	cmds := Commands(o.Name)
	if o.RunCommands {
		run := o.Runner
		if run == nil {
			run = execRunner(out, o.Stderr)
		}
		err = t.do(ctx, cmds, run)
	} else {
		err = t.do(ctx, nil, nil)
	}
	if err != nil {
		return r, err
	}
	r.Commands = cmds
	return r, nil
}

// installBinary copies the running executable, unless it is the installed
// one already.
func installBinary(src, dst string, t *txn) error {
	if src == "" {
		return fmt.Errorf("install: no binary to copy: give Options.Binary (os.Executable())")
	}
	if same(src, dst) {
		t.note("kept %s (it is the running binary)", dst)
		return nil
	}
	t.copy(dst, src, 0o755, "wrote "+dst)
	return nil
}

// same reports whether a and b are one file.
func same(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// installCalibration copies the lab's emioapi files to dir.
func installCalibration(o Options, dir string, t *txn) error {
	if o.Emioapi == "" {
		t.note("no calibration to copy: put %s in %s", joinNames(), dir)
		return nil
	}
	n := 0
	for _, name := range []string{paramsFile, calibrationFile} {
		src := filepath.Join(o.Emioapi, name)
		st, err := os.Stat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		n++
		dst := filepath.Join(dir, name)
		if exists(dst) && !o.Force {
			t.note("kept existing %s (-force overwrites it)", dst)
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("install: read the calibration: %w", err)
		}
		t.write(dst, b, 0o644, fmt.Sprintf("copied %s to %s", src, dst))
	}
	if n == 0 {
		t.note("no calibration in %s: the tracker uses emioapi's defaults; put %s in %s", o.Emioapi, joinNames(), dir)
	}
	return nil
}

func joinNames() string { return paramsFile + " and " + calibrationFile }

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
