package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/labbridge/bridge/config"
	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/internal/atomicfile"
	"github.com/labbridge/bridge/realsense"
)

// cmdConfig is `bridge config -print`: the configuration a bridge would run
// with, every default filled in, every key with its comment.
func cmdConfig(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("config", "config -print [-config FILE]", stderr)
	cfgPath := fs.String("config", "", "configuration file (default ./bridge.toml, else the embedded default)")
	show := fs.Bool("print", false, "print the effective configuration: every key with the value it runs with and its comment")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*show {
		fmt.Fprintln(stderr, "bridge config: say what to do: -print writes the effective configuration")
		fs.Usage()
		return errUsage
	}
	cfg, from, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	return cfg.Write(stdout, config.DefaultNotes(), fmt.Sprintf("The effective configuration of %s: every key with the value the\nbridge runs with, defaults filled in (bridge config -print).", from))
}

// cmdInit is `bridge init`: find the Emio's U2D2 and servos and its
// RealSense camera, and write a commented bridge.toml for them, saying what
// was found and what was not.
func cmdInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("init", "init [-out bridge.toml] [-sim] [-port auto] [-ids 0-15] [-bauds 1000000,57600] [-camera auto|none|SERIAL] [-playback FILE.bag] [-nb_markers 1] [-force]", stderr)
	out := fs.String("out", "bridge.toml", `file to write; "-" = standard output`)
	simulate := fs.Bool("sim", false, "write the configuration of the simulated Emio (servos on a pseudo-terminal, the virtual camera) without looking for hardware")
	port := fs.String("port", "auto", `the servos' serial port: "auto" (the only U2D2, FTDI 0403:6014), a path, a /dev/serial/by-id name or "usb:VID:PID[:SERIAL]"`)
	idRange := fs.String("ids", "0-15", "servo IDs to ping: a range lo-hi or a comma-separated list (the Emio's are 0-3)")
	bauds := fs.String("bauds", "1000000,57600", "baud rates to try, in order (the Emio's is 1000000; new servos come at 57600)")
	cam := fs.String("camera", "auto", `"auto" (the first RealSense camera), "none", or a camera's serial number`)
	playback := fs.String("playback", "", "a RealSense recording (.bag) to use instead of a camera")
	nbMarkers := fs.Int("nb_markers", 1, "markers the Simulink model expects (its mask value: jacobian 1, state space 2)")
	force := fs.Bool("force", false, "overwrite an existing file")
	latency := fs.Duration("latency-timer", 0, "the adapter's latency timer (0 = read it from sysfs, else 16ms)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *nbMarkers < 1 || *nbMarkers > 16 {
		fmt.Fprintf(stderr, "bridge init: -nb_markers %d: want 1..16, the Simulink model's mask value\n", *nbMarkers)
		return errUsage
	}
	if *out != "-" && !*force {
		if _, err := os.Stat(*out); err == nil {
			return fmt.Errorf("bridge init: %s exists; keep it, or write another with -out FILE, or replace it with -force", *out)
		}
	}
	hw := config.Hardware{Port: "sim", Camera: "sim", NbMarkers: *nbMarkers}
	var found, missing []string
	if !*simulate {
		var err error
		hw, found, missing, err = findEmio(ctx, findFlags{
			port: *port, ids: *idRange, bauds: *bauds, camera: *cam, playback: *playback, latency: *latency,
			ports: dynamixel.ListPorts,
		}, stdout, stderr)
		if err != nil {
			return err
		}
		hw.NbMarkers = *nbMarkers
	}
	if err := ctx.Err(); err != nil {
		// Interrupted while looking: what was found is incomplete, and a
		// file saying "not found" would replace a good one.
		return fmt.Errorf("bridge init: interrupted; %s was not written: %w", *out, err)
	}
	header := initHeader(*simulate, found, missing)
	text, cfg, err := config.EmioFile(hw, header)
	if err != nil {
		return fmt.Errorf("bridge init: %w", err)
	}
	if *out == "-" {
		_, err := stdout.Write(text)
		return err
	}
	// Whole or not at all: a failed write leaves the file that was there.
	if err := atomicfile.WriteBytes(*out, 0o644, text); err != nil {
		return fmt.Errorf("bridge init: %w", atomicfile.Flagged(err, "-out"))
	}
	l := cfg.Links[0]
	fmt.Fprintf(stdout, "wrote %s: %s\n", *out, l.Plant.Summary())
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	flag := ""
	if *out != "bridge.toml" {
		flag = " -config " + *out
	}
	fmt.Fprintf(stdout, "next: bridge check%s, then bridge run%s (and start the Simulink model)\n", flag, flag)
	if len(missing) > 0 {
		fmt.Fprintf(stdout, "not found: %s; the file says what to change, or run bridge init again when it is connected\n", strings.Join(missing, ", "))
	}
	return nil
}

// findFlags are bridge init's hardware flags.
type findFlags struct {
	port, ids, bauds, camera, playback string
	latency                            time.Duration
	ports                              func() ([]dynamixel.PortInfo, error) // dynamixel.ListPorts
}

// findEmio looks for the servos and the camera, printing what it does, and
// returns the hardware to write with what it found and what it did not.
func findEmio(ctx context.Context, f findFlags, stdout, stderr io.Writer) (hw config.Hardware, found, missing []string, err error) {
	ids, err := dynamixel.ParseIDs(f.ids)
	if err != nil {
		return hw, nil, nil, err
	}
	rates, err := dynamixel.ParseBauds(f.bauds)
	if err != nil {
		return hw, nil, nil, err
	}
	// The servos' line.
	hw.Port = f.port
	if f.port == "auto" {
		ports, _ := f.ports() // none listed: ChooseU2D2 says there is no U2D2
		if u, err := dynamixel.ChooseU2D2(ports); err != nil {
			fmt.Fprintf(stdout, "servos: %v\n", err)
			missing = append(missing, "the U2D2")
		} else {
			hw.Port = u.Port.Spec()
			fmt.Fprintf(stdout, "servos: %s\n", u)
		}
	}
	if hw.Port != "auto" {
		hw.Baud, hw.IDs = pingServos(ctx, hw.Port, rates, ids, f.latency, stdout, stderr)
		switch {
		case len(hw.IDs) == 0:
			missing = append(missing, "the servos")
		case hw.Baud != 1000000:
			fmt.Fprintf(stdout, "servos: found at %d baud; the Emio's servos run at 1000000 (set Baud Rate, address 8, to 3 with Dynamixel Wizard), or keep baud = %d\n", hw.Baud, hw.Baud)
		}
		if len(hw.IDs) > 0 {
			found = append(found, fmt.Sprintf("servos %s at %d baud on %s", idList(hw.IDs), hw.Baud, hw.Port))
			if len(hw.IDs) != 4 {
				fmt.Fprintf(stdout, "servos: the Emio has 4 servos (IDs 0-3); found %d: check the daisy chain and the power supply\n", len(hw.IDs))
			}
		}
	}
	// The camera.
	hw.Camera = "realsense"
	switch {
	case f.camera == "none":
		hw.Camera = "none"
		fmt.Fprintln(stdout, "camera: none (-camera none): the markers are zeros; the Simulink model gets no feedback")
	case f.playback != "":
		desc, err := realsense.Probe(ctx, f.playback)
		if err != nil {
			fmt.Fprintf(stdout, "camera: the recording %s cannot be played: %v\n", f.playback, err)
			missing = append(missing, "a playable recording")
		} else {
			abs, _ := filepath.Abs(f.playback)
			hw.Playback = abs
			fmt.Fprintf(stdout, "camera: the recording %s, %s\n", abs, desc)
			found = append(found, "the recording "+abs)
		}
	default:
		serial, ok := findCamera(ctx, f.camera, stdout)
		hw.Serial = serial
		if ok {
			found = append(found, "RealSense camera "+serial)
		} else {
			missing = append(missing, "a RealSense camera")
		}
	}
	return hw, found, missing, nil
}

// pingServos finds the baud at which ids answer (dynamixel.FindBaud),
// saying what each baud gave.
func pingServos(ctx context.Context, spec string, rates []int, ids []byte, latency time.Duration, stdout, stderr io.Writer) (int, []int) {
	open := func(baud int) (*dynamixel.Bus, func(), error) {
		return openBus(spec, baud, latency, 500*time.Microsecond, prefixed{stdout, "servos: "})
	}
	baud, present, err := dynamixel.FindBaud(ctx, open, rates, ids, func(baud int, replies []dynamixel.Found) {
		for _, f := range replies {
			l := fmt.Sprintf("servo %d: %s (model %d), firmware %d, at %d baud", f.ID, dynamixel.ModelName(f.Model), f.Model, f.Firmware, baud)
			switch {
			case !f.Present():
				l = fmt.Sprintf("servo %d at %d baud answered badly: %v", f.ID, baud, f.Err)
			case f.Err != nil:
				l += "; ALERT: " + f.Err.Error()
			}
			fmt.Fprintln(stdout, "servos: "+l)
		}
		if !slices.ContainsFunc(replies, dynamixel.Found.Present) {
			fmt.Fprintf(stdout, "servos: none of IDs %s answered at %d baud\n", idList(bytesToInts(ids)), baud)
		}
	})
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(stdout, "servos: scan stopped: %v\n", err)
	case err != nil:
		fmt.Fprintf(stdout, "servos: cannot open %s: %v\n", spec, err)
		if errors.Is(err, os.ErrPermission) {
			fmt.Fprintln(stdout, "  add yourself to the dialout group (sudo usermod -aG dialout $USER, then log in again)")
		}
	case baud == 0:
		fmt.Fprintln(stdout, "servos: no servo answered: check the Emio's power supply (12 V), the cable to the U2D2, and -ids")
	}
	return baud, bytesToInts(present)
}

// prefixed writes each write to w after prefix: one line of advice.
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// findCamera looks for a RealSense camera (realsense.Find), saying what it
// sees and what to do when it finds none.
func findCamera(ctx context.Context, want string, stdout io.Writer) (serial string, ok bool) {
	serial, seen, err := realsense.Find(ctx, want)
	if serial == "" && want != "auto" {
		serial = want // written as asked, for a camera plugged in later
	}
	for _, d := range seen {
		fmt.Fprintf(stdout, "camera: %s, serial %s, firmware %s\n", d.Name, d.Serial, d.Firmware)
	}
	switch {
	case err == nil:
		return serial, true
	case seen == nil && !errors.Is(err, realsense.ErrNoCamera):
		fmt.Fprintf(stdout, "camera: cannot look for a RealSense camera: %v\n", err)
		fmt.Fprintln(stdout, "  install librealsense2 (pip install pyrealsense2), then run bridge init again")
	default:
		fmt.Fprintf(stdout, "camera: %v\n", err)
	}
	return serial, false
}

// initHeader is the comment at the top of the written file.
func initHeader(simulated bool, found, missing []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bridge.toml for an Emio, written by bridge init on %s.\n", time.Now().Format("2006-01-02 15:04"))
	if simulated {
		b.WriteString("Simulated: servos on a pseudo-terminal and the virtual camera (bridge init -sim).\nFor the robot, run bridge init with the U2D2 and the camera connected.\n")
	} else {
		for _, f := range found {
			b.WriteString("Found: " + f + ".\n")
		}
		for _, m := range missing {
			b.WriteString("Not found: " + m + ": connect it and run bridge init again, or edit the keys below.\n")
		}
	}
	b.WriteString("\nEvery key is documented below; bridge check -config FILE validates the file\nand bridge config -print shows what the bridge runs with.")
	return b.String()
}

func idList(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}

func bytesToInts(b []byte) []int {
	out := make([]int, len(b))
	for i, v := range b {
		out[i] = int(v)
	}
	return out
}
