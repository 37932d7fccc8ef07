// Command bridge is the real-time gateway between lab robots and
// Simulink-style hosts: a drop-in for the emioapi UDP bridge
// (docs/simulink-udp.md). This package only parses flags and wires the
// library packages together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/labbridge/bridge/metrics"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `bridge: a real-time gateway for robotics labs (emioapi-compatible Simulink UDP bridge)

Usage:
  bridge run [-config FILE]         run the configured links and wait for Simulink
  bridge sim [-config FILE]         run them on simulated devices with a built-in Simulink partner
  bridge partner [flags]            be the Simulink side (a stand-in for the shipped models)
  bridge init [-sim] [-out FILE]    find the U2D2, the servos and the camera, write a commented bridge.toml
  bridge check -config FILE         validate a configuration without touching hardware
  bridge config -print              print the effective configuration, every key commented
  bridge scan [-port SPEC]          list serial ports and find Dynamixel servos (IDs, bauds, models)
  bridge ping [-port SPEC] [-ids]   ping servos
  bridge sim servos [-ids 0,1,2,3]  serve simulated servos on a pseudo-terminal (a virtual U2D2)
  bridge sim meca500 [-listen ADDR] serve a simulated Meca500 arm on a TCP port
  bridge sim vrep [-protocol az|zmq] serve a simulated V-REP/CoppeliaSim scene (-listen ADDR)
  bridge record -out run.csv        record the taps of bridge run/sim -tap: one CSV per link (-listen, -pcap)
  bridge resume LINK                a person's go after an emergency stop, a protective stop or a servo's hardware error
  bridge report run.csv             one HTML page of a recording: timing, statuses, losses, signals (-out)
  bridge replay run.LINK.csv        play a recording's commands into its link's (simulated) plant, compare the measurements
  bridge cameras                    list the connected RealSense cameras by serial
  bridge install -name NAME         install the systemd service of robot NAME (-root DIR, -print-udev)
  bridge track -color FILE.png      run the marker tracker on saved images (-depth, -params, -json, -mask)
  bridge bench loop|link|links|servos|tracker|vrep  measure the loop, a link on loopback, many links in one process, the servo cycle, the tracker, a scene
  bridge startUDP [emioapi flags]   emioapi's "python -m emioapi startUDP", flags honoured
  bridge version                    print the version

Without -config, ./bridge.toml is used when present, else the embedded default.
Run "bridge COMMAND -help" for the flags of a command.
`

func main() {
	// A closed pipe or terminal must not kill a bridge that drives a
	// robot: writes to it fail instead, and the links go on.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals(os.Args[1:])...)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// stopSignals are the signals whose default action would end the process:
// each one stops the bridge as SIGTERM does, every link halted, and the
// signal named in the log (docs/faults.md §5). Closing the terminal that
// started `bridge run` sends SIGHUP. SIGKILL and SIGSTOP cannot be caught:
// what they leave is each device's own dead-man (docs/faults.md §5).
// bridge partner keeps SIGUSR1 and SIGUSR2 for its faults.
func stopSignals(args []string) []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGXCPU,
		syscall.SIGXFSZ, syscall.SIGALRM, syscall.SIGVTALRM, syscall.SIGPWR, syscall.SIGSTKFLT}
	if len(args) == 0 || args[0] != "partner" {
		sigs = append(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	}
	return sigs
}

// run dispatches a command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "run":
		err = cmdRun(ctx, rest, stdout, stderr, false)
	case "sim":
		switch {
		case len(rest) > 0 && rest[0] == "servos":
			err = cmdSimServos(ctx, rest[1:], stdout, stderr)
		case len(rest) > 0 && rest[0] == "meca500":
			err = cmdSimMeca500(ctx, rest[1:], stdout, stderr)
		case len(rest) > 0 && rest[0] == "vrep":
			err = cmdSimVREP(ctx, rest[1:], stdout, stderr)
		default:
			err = cmdRun(ctx, rest, stdout, stderr, true)
		}
	case "partner":
		err = cmdPartner(ctx, rest, stdout, stderr)
	case "resume":
		err = cmdResume(ctx, rest, stdout, stderr)
	case "check":
		err = cmdCheck(rest, stdout, stderr)
	case "init":
		err = cmdInit(ctx, rest, stdout, stderr)
	case "config":
		err = cmdConfig(rest, stdout, stderr)
	case "scan":
		err = cmdScan(ctx, rest, stdout, stderr)
	case "ping":
		err = cmdPing(ctx, rest, stdout, stderr)
	case "bench":
		err = cmdBench(ctx, rest, stdout, stderr)
	case "track":
		err = cmdTrack(ctx, rest, stdout, stderr)
	case "cameras":
		err = cmdCameras(ctx, rest, stdout, stderr)
	case "record":
		err = cmdRecord(ctx, rest, stdout, stderr)
	case "report":
		err = cmdReport(ctx, rest, stdout, stderr)
	case "replay":
		err = cmdReplay(ctx, rest, stdout, stderr)
	case "install":
		err = cmdInstall(ctx, rest, stdout, stderr)
	case "startUDP", "startudp":
		err = cmdStartUDP(ctx, rest, stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionString())
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		if hint := suggestCommand(cmd); hint != "" {
			fmt.Fprintf(stderr, "bridge: unknown command %q; did you mean %q?\n\n%s", cmd, hint, usage)
		} else {
			fmt.Fprintf(stderr, "bridge: unknown command %q\n\n%s", cmd, usage)
		}
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// Stopped by Ctrl-C or another signal before it was done: the
		// shell's code for an interrupted command.
		fmt.Fprintln(stderr, err)
		return 130
	}
	fmt.Fprintln(stderr, err)
	return 1
}

// errUsage marks a command-line mistake already reported by the flag package.
var errUsage = errors.New("bridge: usage")

// parseFlags parses args, reporting errors the way the flag package does.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "bridge %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}

// parseWithFile parses args that name one file, before or after the
// flags; without one it says missing and shows the usage.
func parseWithFile(fs *flag.FlagSet, args []string, missing string) (string, error) {
	var file string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return "", err
			}
			return "", errUsage
		}
		if fs.NArg() == 0 {
			break
		}
		if file != "" {
			fmt.Fprintf(fs.Output(), "bridge %s: unexpected argument %q: one recording at a time\n", fs.Name(), fs.Arg(0))
			return "", errUsage
		}
		file, args = fs.Arg(0), fs.Args()[1:]
	}
	if file == "" {
		fmt.Fprintln(fs.Output(), missing)
		fs.Usage()
		return "", errUsage
	}
	return file, nil
}

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: bridge %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stderr, "Usage: bridge bench loop [flags]   timing of the clock-master loop (lateness percentiles)\n"+
			"       bridge bench link [flags]   a whole link against a partner on loopback (reply latency)\n"+
			"       bridge bench links [flags]  N links in one process, a thread each or one scheduler (lateness per link)\n"+
			"       bridge bench servos [flags] the 4-servo cycle on a pseudo-terminal against the wire time\n"+
			"       bridge bench tracker [flags] the marker tracker's time per 848x480 frame on three scenes\n"+
			"       bridge bench vrep [flags]   one tick's exchange with a V-REP / CoppeliaSim scene (round trip)\n")
		if len(args) == 0 {
			return errUsage
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "loop":
		return benchLoop(ctx, args[1:], stdout, stderr)
	case "link":
		return benchLink(ctx, args[1:], stdout, stderr)
	case "links":
		return benchLinks(ctx, args[1:], stdout, stderr)
	case "servos":
		return benchServos(ctx, args[1:], stdout, stderr)
	case "tracker":
		return benchTracker(ctx, args[1:], stdout, stderr)
	case "vrep":
		return benchVREP(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "bridge bench: unknown benchmark %q (want loop, link, links, servos, tracker or vrep)\n", args[0])
	return errUsage
}

// addrFlag is an address:port flag; "" is the zero address.
type addrFlag struct{ s string }

func (a *addrFlag) String() string { return a.s }

func (a *addrFlag) Set(s string) error {
	if s != "" {
		if _, err := netip.ParseAddrPort(s); err != nil {
			return fmt.Errorf("want address:port, like 127.0.0.1:25000")
		}
	}
	a.s = s
	return nil
}

// ap is the address; only valid values reach Set, and defaults are valid.
func (a *addrFlag) addr() netip.AddrPort {
	ap, _ := netip.ParseAddrPort(a.s)
	return ap
}

func versionString() string {
	b := metrics.ThisBuild(version)
	return fmt.Sprintf("bridge %s (commit %s, %s, %s/%s)", b.Version, b.Commit, b.GoVersion, runtime.GOOS, runtime.GOARCH)
}
