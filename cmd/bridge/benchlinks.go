package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/realtime"
)

// benchLinks is `bridge bench links`: N links in one process, each with the
// in-memory plant and real UDP to its own built-in partner on loopback, in
// one thread model; with a list of counts, one run per count in order, so
// that the ratios to the smallest come from one invocation.
func benchLinks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench links", "bench links [-links N[,N…]] [-rate HZ] [-duration D] [-model thread|scheduler] [-priority P] [-budget auto|D] [-spin-guard] [-gomaxprocs auto|N] [-cpu N] [-stagger] [-dma-latency] [-threshold D] [-cyclictest] [-records FILE] [-trace FILE] [-http ADDR] [-nice N] [-json]", stderr)
	loopFlags := config.LoopFlags(fs, "bench links", false)
	countsFlag := fs.String("links", "1,4,16", "how many links, or a list of counts run one after the other (ratios are to the smallest)")
	rate := fs.Float64("rate", 1000, "tick rate of every link (Hz)")
	duration := fs.Duration("duration", 10*time.Second, "how long each run lasts")
	modelFlag := fs.String("model", string(loopbench.ModelThread), "thread: a loop on its own OS thread per link, as bridge run serves them; scheduler: one OS thread runs every link's deadlines, earliest first")
	stagger := fs.Bool("stagger", true, "scheduler model: spread the links' deadlines evenly over the period (false: every link on one grid); the thread model's loops start their grids as their threads start")
	procsFlag := fs.String("gomaxprocs", "auto", "GOMAXPROCS during each run: auto = the CPUs plus one per locked thread, each loop and each real-time partner (a thread blocked in a system call keeps its P); 0 = the runtime's choice, as bridge run without [service] gomaxprocs; or a number")
	asJSON := fs.Bool("json", false, "print one JSON object")
	threshold := fs.Duration("threshold", time.Millisecond, "keep every tick later than this and attribute it (0 = off)")
	withCT := fs.Bool("cyclictest", true, "run cyclictest concurrently (same priority, period and CPUs) to tell the machine's stalls from ours")
	records := fs.String("records", "", "write every late tick to this CSV file")
	tracePath := fs.String("trace", "", "write a runtime/trace of each run to this file (with several counts, one file each: FILE-linksN)")
	nice := fs.Int("nice", config.DefaultNice, "the nice value of every thread during the runs, as bridge run sets [service] nice (0: leave it)")
	httpAddr := fs.String("http", "", "serve /metrics, /healthz and / here during each run, as bridge run's metrics server does, so that HTTP load can be put on the links (scripts/http_load.py)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	counts, err := loopbench.ParseCounts(*countsFlag)
	if err != nil {
		return fmt.Errorf("bridge bench links: -links %q: %w", *countsFlag, err)
	}
	model, err := loopbench.ParseModel(*modelFlag)
	if err != nil {
		return fmt.Errorf("bridge bench links: -model: %w", err)
	}
	loop, err := loopFlags()
	if err != nil {
		return err
	}
	procs := loopbench.AutoGOMAXPROCS
	if *procsFlag != "auto" {
		if procs, err = strconv.Atoi(*procsFlag); err != nil || procs < 0 {
			return fmt.Errorf("bridge bench links: -gomaxprocs %q: want auto, 0 (the runtime's choice) or a number of Ps", *procsFlag)
		}
	}
	if err := config.CheckRate("bench links", "rate", *rate); err != nil {
		return err
	}
	if err := config.CheckDuration("bench links", "duration", *duration, false); err != nil {
		return err
	}
	var confine []int
	if cpu := *loop.CPU; cpu >= 0 {
		if confine, err = realtime.AllowedCPUsBut(cpu); err != nil {
			return fmt.Errorf("bridge bench links: -cpu %d: %w", cpu, err)
		}
	}
	logger := logging.New(stderr, logging.Options{Format: "text", Level: slog.LevelWarn})
	var alongside map[string]bridge.Service
	if *httpAddr != "" {
		srv, err := metrics.Listen(*httpAddr, metrics.NewRegistry(), nil, logger)
		if err != nil {
			return fmt.Errorf("bridge bench links: -http: %w", err)
		}
		defer srv.Close()
		fmt.Fprintf(stderr, "bench links: serving http://%v/ during each run\n", srv.Addr())
		alongside = map[string]bridge.Service{"http": srv}
	}
	var runs []loopbench.LinksRun
	for _, n := range counts {
		run, err := config.RunBenchLinks(ctx, n, *rate, loop, loopbench.LinksConfig{
			Model: model, Duration: *duration, Stagger: *stagger, GOMAXPROCS: procs, Logger: logger, Confine: confine, Alongside: alongside, GC: realtime.DefaultGC(), Nice: *nice,
			Stalls:    loopbench.StallConfig{Threshold: *threshold, Cyclictest: *withCT},
			TracePath: loopbench.RunFile(*tracePath, n, len(counts)),
		})
		if err != nil {
			if run.Links > 0 { // interrupted: show what was measured
				_ = loopbench.NewLinksReport(append(runs, run)).WriteText(stdout)
			}
			return fmt.Errorf("bridge bench links: %w", err)
		}
		runs = append(runs, run)
	}
	rep := loopbench.NewLinksReport(runs)
	if *records != "" {
		if err := rep.WriteStallsFile(*records); err != nil {
			return fmt.Errorf("bridge bench links: -records: %w", err)
		}
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	return rep.WriteText(stdout)
}
