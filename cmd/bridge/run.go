package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/console"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/sdnotify"
	"github.com/labbridge/bridge/internal/service"
	"github.com/labbridge/bridge/internal/termview"
)

// cmdRun is `bridge run` and, with simulate, `bridge sim`.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer, simulate bool) error {
	name, synopsis := "run", "run [-config FILE] [-duration D] [-metrics ADDR] [-tap ADDR] [-shadow]"
	if simulate {
		name, synopsis = "sim", "sim [-config FILE] [-duration D] [-metrics ADDR] [-tap ADDR] [-shadow] [-ephemeral] [-control ADDR]"
	}
	fs := newFlagSet(name, synopsis, stderr)
	cfgPath := fs.String("config", "", "configuration file (default ./bridge.toml, else the embedded default)")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	var metricsAddr metricsFlag
	fs.Var(&metricsAddr, "metrics", `listen `+"`address`"+` of /metrics and /healthz, like 127.0.0.1:9310 (default: the configuration's [service] metrics; "" = off)`)
	tapAddr := fs.String("tap", "", "mirror every tick of every link as RTP to this `address`, like 239.0.0.1:5004 or 127.0.0.1:5004, for bridge record (default: each link's [link.tap])")
	twin := fs.Bool("shadow", false, "run the shadow twin of every link whose kind has a model (default: each link's [link.shadow])")
	ephemeral, control := false, ""
	if simulate {
		fs.BoolVar(&ephemeral, "ephemeral", false, "use free loopback ports instead of the configured ones (runs beside a real Simulink)")
		fs.StringVar(&control, "control", "", "serve fault injection into the simulated devices on this `address`, like 127.0.0.1:9320: POST /fault/LINK with a body such as \"camera unplug\", \"servos plug\", \"estop\" or \"stop\"; GET /status")
	}
	usage := fs.Usage // then the status fields' legend
	fs.Usage = func() { usage(); fmt.Fprint(stderr, termview.Legend) }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := config.CheckDuration(name, "duration", *duration, true); err != nil {
		return err
	}
	cfg, from, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if err := cfg.SetTap(*tapAddr); err != nil {
		return err
	}
	if *twin {
		cfg.SetShadow(stderr)
	}
	err = runConfig(ctx, cfg, from, simulate, ephemeral, control, &metricsAddr, *duration, stdout, stderr)
	if simulate && ephemeral {
		return err // free ports: nothing to advise
	}
	return cfg.AddrInUse(name, err)
}

// runConfig runs cfg; metrics is the -metrics flag (nil: the configuration's);
// control, when set, is where faults are injected into simulated devices.
func runConfig(ctx context.Context, cfg *config.Config, from string, simulate, ephemeral bool, control string, metrics *metricsFlag,
	duration time.Duration, stdout, stderr io.Writer) error {
	metricsAddr := metrics.resolve(cfg.Service.Metrics)
	// On a terminal, say at once that the slow build runs, and write the
	// log lines above the status block rather than into it.
	var term *termview.View
	logOut := stderr
	if termview.IsTerminal(stdout) {
		term = termview.New(stdout, stderr)
		if termview.SameTerminal(stdout, stderr) {
			logOut = term
		}
		term.Show([]string{"building the links…"})
	}
	// On a terminal a person reads short lines, above the status rows; the
	// status page shows the last warnings and errors, from here on.
	o := logging.Options{Format: cfg.Service.LogFormat, Level: cfg.Service.Level(), Terminal: termview.IsTerminal(stderr)}
	if f, ok := stderr.(*os.File); ok && logging.Attached(f, os.Getenv("JOURNAL_STREAM")) {
		o.Journal, logOut = true, stderr
	}
	logger := logging.New(logOut, o)
	for _, w := range cfg.Warnings() {
		logger.Warn(w)
	}
	a, err := wire(cfg, from, config.Env{Logger: logger, Partner: simulate, Ephemeral: simulate && ephemeral}, metricsAddr)
	if err != nil {
		return err
	}
	if term != nil {
		term.Detach()
		a.term = term
	}
	a.notify = sdnotify.New(os.Getenv("NOTIFY_SOCKET"))
	fmt.Fprintf(stdout, "bridge %s: %s, %d link(s), simulated devices: %v\n", version, from, len(a.Links()), cfg.Simulated())
	a.Describe(stdout)
	if !simulate {
		fmt.Fprintln(stdout, "waiting for a Simulink host: start the model now (Ctrl-C stops the bridge)")
	}
	if control != "" {
		// What is injected is logged, so it shows above the status rows,
		// in the journal and on the page beside what it caused.
		con, err := console.Start(ctx, console.Config{Name: "bridge sim", Out: logWriter{logger}, Addr: control,
			Apply:  func(w []string) (string, error) { return config.Control(a.Links(), w) },
			Status: func() string { s, _ := config.Control(a.Links(), []string{"status"}); return s }})
		if err != nil {
			a.Close()
			return err
		}
		defer con.Stop()
	}
	return a.serve(ctx, stdout, duration)
}

// logWriter logs each line written to it, at Info.
type logWriter struct{ l *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}

// app is a wired bridge (service.Service) and, on a terminal, its status
// view.
type app struct {
	*service.Service
	notify *sdnotify.Notifier
	term   *termview.View // the status view's terminal; nil when stdout is not one
}

// wire builds every link of cfg and the supervisor that runs them
// (service.New).
func wire(cfg *config.Config, from string, env config.Env, metricsAddr string) (*app, error) {
	s, err := service.New(cfg, from, version, env, metricsAddr)
	if err != nil {
		return nil, err
	}
	return &app{Service: s}, nil
}

// serve runs the app until ctx is done (or duration elapses when > 0), with a
// live status view on a terminal, then prints each link's last status.
func (a *app) serve(ctx context.Context, stdout io.Writer, duration time.Duration) error {
	ctx, cancel := withDuration(ctx, duration)
	defer cancel()
	var wg sync.WaitGroup
	viewCtx, stopView := context.WithCancel(ctx)
	if a.term != nil {
		wg.Go(func() {
			a.term.Watch(viewCtx, 250*time.Millisecond, func(cols int) []string {
				rows := make([]termview.Row, len(a.Links()))
				for i, b := range a.Links() {
					rows[i] = termview.RowOf(b.Page())
				}
				return termview.Block(rows, cols)
			})
		})
	}
	err := a.Serve(ctx, a.notify)
	stopView()
	wg.Wait()
	for _, b := range a.Links() {
		fmt.Fprintln(stdout, termview.RowOf(b.Page()).Line())
		for _, s := range b.Summary() {
			fmt.Fprintf(stdout, "  %s\n", s)
		}
	}
	a.Close()
	return err
}

// withDuration bounds ctx by d when d > 0 (the -duration flags).
func withDuration(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}
