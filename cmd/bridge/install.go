package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/internal/install"
)

// cmdInstall is `bridge install`: the service of one robot (package
// install), or with -print-udev the udev rule of its adapter.
func cmdInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return installWith(ctx, args, stdout, stderr, dynamixel.ListPorts)
}

// installWith is cmdInstall with the port list given, for tests.
func installWith(ctx context.Context, args []string, stdout, stderr io.Writer, ports func() ([]dynamixel.PortInfo, error)) error {
	fs := newFlagSet("install", "install -name NAME [-root DIR] [-config FILE] [-force] [-serial S] [-emioapi DIR] [-print-udev] [-run-systemctl]", stderr)
	name := fs.String("name", "", "the robot id: bridge@NAME, /etc/bridge/NAME.toml, /dev/robot-NAME (letters, digits, '_')")
	root := fs.String("root", "/", "install under this directory (a staged install)")
	cfg := fs.String("config", "", "the configuration to install (default: the embedded bridge.toml)")
	force := fs.Bool("force", false, "overwrite the robot's configuration, adapter rule and calibration")
	serial := fs.String("serial", "", "the adapter's USB serial number (default: the one U2D2 plugged in)")
	emioapi := fs.String("emioapi", install.CallerEmioapi(os.Getenv), "copy the calibration files from this directory")
	printUdev := fs.Bool("print-udev", false, "only print the udev rule of the robot's adapter")
	runCmds := fs.Bool("run-systemctl", false, "run systemd-sysusers, udevadm and systemctl afterwards (with -root /)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" {
		fmt.Fprintln(stderr, "bridge install: -name is required (the robot id, like -name a)")
		return errUsage
	}
	if *printUdev {
		return install.PrintUdev(stdout, *name, *serial, ports)
	}
	staged := filepath.Clean(*root) != "/"
	if *runCmds && staged {
		fmt.Fprintln(stderr, "bridge install: -run-systemctl runs on this machine: use it with -root / only")
		return errUsage
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bridge install: find this binary: %w", err)
	}
	// All or nothing: an interrupt or a failure leaves the files as they
	// were (an interrupt exits 130).
	res, err := install.Install(ctx, install.Options{
		Root: *root, Name: *name, Binary: bin, Config: *cfg, Force: *force,
		Emioapi: *emioapi, Serial: *serial, Ports: ports, RunCommands: *runCmds, Stderr: stderr,
	}, stdout)
	if err != nil || *runCmds {
		return err
	}
	install.PrintCommands(stdout, res.Commands)
	return nil
}
