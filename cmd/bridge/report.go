package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/labbridge/bridge/internal/atomicfile"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/replay"
	"github.com/labbridge/bridge/internal/report"
	"github.com/labbridge/bridge/internal/termview"
)

// cmdReport is `bridge report FILE [-out report.html]`: the page of a
// recording made by bridge record (docs/tap.md §5), and a line per link.
func cmdReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "report FILE [-out report.html]  (FILE: run.csv reads the run.LINK.csv of bridge record; or one link's CSV)", stderr)
	out := fs.String("out", "report.html", "where to write the HTML `page`")
	file, err := parseWithFile(fs, args, "bridge report: name the recording, like bridge report run.csv")
	if err != nil {
		return err
	}
	rec, err := report.Open(file)
	if err != nil {
		return err
	}
	r := report.Build(rec)
	// Through a temporary file: a failure leaves an older page whole.
	if err := r.WriteFile(*out); err != nil {
		return fmt.Errorf("bridge report: %w", atomicfile.Flagged(err, "-out"))
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d link(s)\n", *out, rec.Name, len(rec.Links))
	for i, l := range rec.Links {
		fmt.Fprintf(stdout, "  %s\n", r.Summary(i))
		for _, w := range l.Warnings {
			fmt.Fprintf(stderr, "bridge report: %s: %s\n", l.File, w)
		}
	}
	return nil
}

// cmdReplay is `bridge replay FILE`: a recording's commands played into its
// link's plant, tick for tick, through the link as bridge sim runs it, and
// the measurements compared with those recorded; or, with -to-host, its
// measurements played to the Simulink host and its answers compared
// (internal/replay).
func cmdReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("replay", "replay FILE [-config FILE] [-link NAME] [-commands applied|received] [-real] [-speed N] [-step] [-to-host] [-out replay.csv] [-report replay.html]  (FILE: one link's CSV of bridge record, or run.csv with -link)", stderr)
	cfgPath := fs.String("config", "", "the configuration the recording was made with (default ./bridge.toml, else the embedded default)")
	link := fs.String("link", "", "the link to replay (default: the recording's only one)")
	commands := fs.String("commands", "applied", `"applied": as the link accepted them (clamped to its limits); "received": as the host sent them`)
	real := fs.Bool("real", false, "allow a plant with real devices: the recorded commands then move the robot, through the link's limits, dead-man and halt")
	speed := fs.Float64("speed", 1, "run this many times faster than recorded (up to 100): a plant that moves on the tick grid only (the in-memory \"sim\" kind), told the recorded times")
	step := fs.Bool("step", false, "play a tick at a time as you type: Enter plays one, a number that many, c the rest (a plant that moves on the tick grid only)")
	toHost := fs.Bool("to-host", false, "play the recorded measurements to the link's Simulink host (udp.remote) instead, as bridge run sends them, and compare its answers with those recorded; no plant is built")
	out := fs.String("out", "", "also write the replay tick by tick to this CSV `file`: recorded, replayed and their difference per measured value")
	page := fs.String("report", "", "also write a page to this HTML `file`: per field, the recorded and replayed values overlaid, and their difference")
	file, err := parseWithFile(fs, args, "bridge replay: name the recording, like bridge replay run.emio.csv")
	if err != nil {
		return err
	}
	src := replay.Applied
	switch *commands {
	case "applied":
	case "received":
		src = replay.Received
	default:
		fmt.Fprintf(stderr, "bridge replay: -commands %q: want applied or received\n", *commands)
		return errUsage
	}
	track, err := replay.Open(file, *link)
	if err != nil {
		return fmt.Errorf("bridge %w", err)
	}
	cfg, _, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	logger := logging.New(stderr, logging.Options{Format: "auto", Level: slog.LevelWarn, Terminal: termview.IsTerminal(stderr)})
	run := replay.Run
	if *toHost {
		run = replay.RunHost
		fmt.Fprintln(stdout, "waiting for the Simulink host: start the model now (Ctrl-C stops)")
	}
	o := replay.Options{Source: src, Real: *real, Speed: *speed, Logger: logger, StepOut: stdout}
	if *step {
		o.Step = os.Stdin
	}
	res, err := run(ctx, cfg, track.Link, track, o)
	if res != nil {
		res.WriteText(stdout)
	}
	if err != nil {
		return fmt.Errorf("bridge %w", err) // interrupted: no -out, a replay cut short
	}
	if *out != "" {
		if err := res.WriteFile(*out); err != nil {
			return fmt.Errorf("bridge replay: %w", atomicfile.Flagged(err, "-out"))
		}
		fmt.Fprintf(stdout, "wrote %s\n", *out)
	}
	if *page != "" {
		if err := res.Comparison().WriteFile(*page); err != nil {
			return fmt.Errorf("bridge replay: %w", atomicfile.Flagged(err, "-report"))
		}
		fmt.Fprintf(stdout, "wrote %s\n", *page)
	}
	return nil
}
