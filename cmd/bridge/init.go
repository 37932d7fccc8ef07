package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/internal/atomicfile"
	"github.com/labbridge/bridge/internal/config"
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
		hw, found, missing, err = config.FindEmio(ctx, config.Finding{Port: *port, IDs: *idRange, Bauds: *bauds,
			Camera: *cam, Playback: *playback, Latency: *latency, Ports: dynamixel.ListPorts}, stdout)
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
	header := config.InitHeader(time.Now(), *simulate, found, missing)
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
