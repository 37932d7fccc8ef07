package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/vrep/vrepbench"
)

// benchLoop is `bridge bench loop`: it measures the clock-master loop's
// wake-up lateness and, with --cyclictest, cyclictest's under the same
// settings (docs/realtime.md §4).
func benchLoop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("bench loop", "bench loop [--rate HZ] [--duration D] [--priority N] [--cpu N] [--spin D] [--mlock] [--dma-latency] [--json] [--cyclictest]", stderr)
	var (
		cfg        = loopbench.Config{CPU: -1}
		asJSON     bool
		cyclictest bool
	)
	flags.Float64Var(&cfg.Rate, "rate", 1000, "loop rate in `Hz`")
	flags.DurationVar(&cfg.Duration, "duration", 15*time.Second, "run length")
	flags.IntVar(&cfg.Priority, "priority", 0, "SCHED_FIFO priority of the loop thread, 1..99; 0 = SCHED_OTHER")
	flags.IntVar(&cfg.CPU, "cpu", -1, "pin the loop thread to this CPU; -1 = no pinning")
	flags.DurationVar(&cfg.Spin, "spin", 0, "wake this long before each deadline and spin to it; 0 = off")
	flags.BoolVar(&cfg.LockMemory, "mlock", false, "lock memory with mlockall")
	flags.BoolVar(&cfg.DMALatency, "dma-latency", false, "hold /dev/cpu_dma_latency at 0 during the run, as cyclictest does")
	flags.BoolVar(&asJSON, "json", false, "print one JSON object")
	flags.BoolVar(&cyclictest, "cyclictest", false, "then run cyclictest with the same rate, ticks, priority (80 if 0) and CPU (1 if -1), and compare")
	// Help exits 0 and a bad flag 2, as in every other subcommand.
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	if err := config.CheckRate("bench loop", "rate", cfg.Rate); err != nil {
		return err
	}
	if err := config.CheckDuration("bench loop", "duration", cfg.Duration, false); err != nil {
		return err
	}

	res, err := loopbench.Run(ctx, cfg)
	if err != nil {
		if res.Ticks > 0 { // interrupted: show what was measured
			_ = res.Report().WriteText(stdout)
		}
		return fmt.Errorf("bridge bench loop: %w", err)
	}
	if !cyclictest {
		if asJSON {
			return printJSON(stdout, res.Report())
		}
		return res.Report().WriteText(stdout)
	}

	ctRes, err := loopbench.RunCyclictest(ctx, loopbench.CyclictestLike(cfg, res.Ticks))
	if err != nil {
		return fmt.Errorf("bridge bench loop: %w", err)
	}
	cmp := loopbench.Compare(res, ctRes)
	if asJSON {
		return printJSON(stdout, cmp)
	}
	return cmp.WriteText(stdout)
}

// printJSON prints one indented JSON object: the -json output of benchmarks.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// benchVREP is `bridge bench vrep`: one tick's exchange with a scene, at a
// rate or back to back, against a simulated scene in this process or the
// scene at -address; with -seed, the seed's own Python client against the
// same scene in the same run.
func benchVREP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench vrep", "bench vrep [-protocol az|zmq] [-address HOST:PORT] [-rate HZ] [-duration D] [-json]", stderr)
	readFlags := vrepbench.Flags(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := readFlags()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return errUsage
	}
	res, err := vrepbench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bridge bench vrep: %w", err)
	}
	if *asJSON {
		return res.Report.JSON(stdout)
	}
	return res.WriteText(stdout)
}
