package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
)

// ErrCommand is a command of Run that failed.
var ErrCommand = errors.New("install: command failed")

// Commands are what makes the running system take up instance name's
// files, in order: the configuration checked, the user, the udev rules (the adapter's rule starts the
// instance when the adapter is there; "add" so that the FTDI latency rule
// applies too), the unit, and the instance, enabled for the next boots.
func Commands(name string) [][]string {
	return [][]string{
		{BinaryPath, "check", "-config", ConfigPath(name)},
		{"systemd-sysusers"},
		{"udevadm", "control", "--reload"},
		{"udevadm", "trigger", "--action=add", "--subsystem-match=tty", "--subsystem-match=usb-serial",
			"--subsystem-match=misc", "--subsystem-match=usb"},
		{"systemctl", "daemon-reload"},
		{"systemctl", "enable", "--now", "bridge@" + name},
	}
}

// PrintCommands writes the commands left to run, one a line, to w.
func PrintCommands(w io.Writer, cmds [][]string) {
	fmt.Fprintln(w, "then run, as root:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %s\n", strings.Join(c, " "))
	}
}

// execRunner runs a command as a process, its output to stdout and
// stderr (nil: stdout).
func execRunner(stdout, stderr io.Writer) func(context.Context, []string) error {
	if stderr == nil {
		stderr = stdout
	}
	return func(ctx context.Context, argv []string) error {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		return cmd.Run()
	}
}

// CallerEmioapi is ~/.config/emioapi of the user who ran the command: the
// one sudo names in SUDO_USER (sudo sets HOME to root's), else the user of
// HOME. It is "" when neither has a home.
func CallerEmioapi(getenv func(string) string) string {
	home := getenv("HOME")
	if name := getenv("SUDO_USER"); name != "" {
		if u, err := user.Lookup(name); err == nil && u.HomeDir != "" {
			home = u.HomeDir
		}
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "emioapi")
}
