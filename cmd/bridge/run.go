package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/console"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/sdnotify"
	"github.com/labbridge/bridge/internal/statuspage"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/realtime"
)

// cmdRun is `bridge run` and, with simulate, `bridge sim`.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer, simulate bool) error {
	name, synopsis := "run", "run [-config FILE] [-duration D] [-metrics ADDR] [-tap ADDR]"
	if simulate {
		name, synopsis = "sim", "sim [-config FILE] [-duration D] [-metrics ADDR] [-tap ADDR] [-ephemeral] [-control ADDR]"
	}
	fs := newFlagSet(name, synopsis, stderr)
	cfgPath := fs.String("config", "", "configuration file (default ./bridge.toml, else the embedded default)")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	var metricsAddr metricsFlag
	fs.Var(&metricsAddr, "metrics", `listen `+"`address`"+` of /metrics and /healthz, like 127.0.0.1:9310 (default: the configuration's [service] metrics; "" = off)`)
	tapAddr := fs.String("tap", "", "mirror every tick of every link as RTP to this `address`, like 239.0.0.1:5004 or 127.0.0.1:5004, for bridge record (default: each link's [link.tap])")
	ephemeral, control := false, ""
	if simulate {
		fs.BoolVar(&ephemeral, "ephemeral", false, "use free loopback ports instead of the configured ones (runs beside a real Simulink)")
		fs.StringVar(&control, "control", "", "serve fault injection into the simulated devices on this `address`, like 127.0.0.1:9320: POST /fault/LINK with a body such as \"camera unplug\", \"servos plug\", \"estop\" or \"stop\"; GET /status")
	}
	usage := fs.Usage // then the status fields' legend
	fs.Usage = func() { usage(); fmt.Fprint(stderr, statusLegend) }
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
	var term *termView
	logOut := stderr
	if isTerminal(stdout) {
		term = newTermView(stdout, stderr)
		if sameTerminal(stdout, stderr) {
			logOut = term
		}
		term.show([]string{"building the links…"})
	}
	// On a terminal a person reads short lines, above the status rows; the
	// status page shows the last warnings and errors, from here on.
	o := logging.Options{Format: cfg.Service.LogFormat, Level: cfg.Service.Level(), Terminal: isTerminal(stderr)}
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
		term.detach()
		a.term = term
	}
	a.notify = sdnotify.New(os.Getenv("NOTIFY_SOCKET"))
	fmt.Fprintf(stdout, "bridge %s: %s, %d link(s), simulated devices: %v\n", version, from, len(a.links), cfg.Simulated())
	a.describe(stdout)
	if !simulate {
		fmt.Fprintln(stdout, "waiting for a Simulink host: start the model now (Ctrl-C stops the bridge)")
	}
	if control != "" {
		// What is injected is logged, so it shows above the status rows,
		// in the journal and on the page beside what it caused.
		con, err := console.Start(ctx, console.Config{Name: "bridge sim", Out: logWriter{logger}, Addr: control,
			Apply:  func(w []string) (string, error) { return config.Control(a.links, w) },
			Status: func() string { s, _ := config.Control(a.links, []string{"status"}); return s }})
		if err != nil {
			a.close()
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

// termWidth is the width of w in columns when w is a terminal.
func termWidth(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	return int(ws.Col), err == nil
}

func isTerminal(w io.Writer) bool { _, ok := termWidth(w); return ok }

// app is a wired bridge: the built links under one supervisor, with the
// metrics server.
type app struct {
	logger *slog.Logger
	links  []*config.Built
	sup    *bridge.Supervisor
	server *metrics.Server
	notify *sdnotify.Notifier
	term   *termView // the status view's terminal; nil when stdout is not one
}

// wire builds every link of cfg and the supervisor that runs them. Nothing
// runs until serve, except simulated devices. from, where cfg came from, is
// for the status page of the metrics server.
func wire(cfg *config.Config, from string, env config.Env, metricsAddr string) (*app, error) {
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	ring := logging.RingOf(env.Logger)
	if ring == nil && metricsAddr != "" {
		ring = &logging.Ring{}
		env.Logger = slog.New(logging.WithRing(env.Logger.Handler(), ring))
	}
	cfg.SetUpProcess(env.Partner, env.Logger)
	a := &app{logger: env.Logger, sup: bridge.NewSupervisor(bridge.SupervisorConfig{Logger: env.Logger})}
	reg := metrics.NewRegistry()
	set, err := metrics.New(reg, metrics.ThisBuild(version))
	if err != nil {
		return nil, err
	}
	env.Metrics, env.Clock = set, realtime.NewClock()
	if env.Home == "" {
		env.Home, _ = os.UserHomeDir()
	}
	if a.links, err = cfg.Supervise(env, a.sup); err != nil {
		return nil, err
	}
	if metricsAddr != "" {
		page := statuspage.New(statuspage.Config{
			Snapshot:  config.PageSnapshot(a.links, ring, version, from, time.Now()),
			Thumbnail: config.Thumbnails(a.links),
			Resume:    a.sup.Resume,
		})
		if a.server, err = metrics.ListenWith(metricsAddr, reg, a.sup.Health, page, env.Logger); err != nil {
			a.close()
			return nil, err
		}
		if err := a.sup.Add("metrics", a.server); err != nil {
			a.close()
			return nil, err
		}
	}
	return a, nil
}

// close releases every link; after serve, or instead of it.
func (a *app) close() {
	for _, b := range a.links {
		if err := b.Close(); err != nil {
			a.logger.Warn("closing a link", "link", b.Config.Name, "err", err)
		}
	}
	if a.server != nil {
		a.server.Close()
	}
}

// describe says where each link sends and waits.
func (a *app) describe(w io.Writer) {
	for _, b := range a.links {
		fmt.Fprintln(w, b.Describe())
	}
	if a.server != nil {
		fmt.Fprintf(w, "metrics: http://%v/metrics\n", a.server.Addr())
	}
}

// readyTicks is how many ticks every link runs before READY=1.
const readyTicks = 10

// serve runs the app until ctx is done (or duration elapses when > 0), with a
// live status view on a terminal and systemd's notifications under systemd.
func (a *app) serve(ctx context.Context, stdout io.Writer, duration time.Duration) error {
	ctx, cancel := withDuration(ctx, duration)
	defer cancel()
	var wg sync.WaitGroup
	viewCtx, stopView := context.WithCancel(ctx)
	if a.term != nil {
		wg.Go(func() { a.view(viewCtx, a.term) })
	}
	if a.notify != nil && a.notify.Enabled() {
		life := &sdnotify.Lifecycle{
			N:        a.notify,
			Watchdog: sdnotify.WatchdogInterval(os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID"), os.Getpid()),
			Ready: func() (bool, string) {
				return a.sup.Ticking(readyTicks), config.ServiceStatus(a.links)
			},
			Alive:  a.sup.Progress(),
			Status: func() string { return config.ServiceStatus(a.links) },
		}
		wg.Go(func() {
			if err := life.Serve(viewCtx); err != nil {
				a.logger.Warn("systemd notification failed", "err", err)
			}
		})
	}
	// Collect what building the links left behind now, before any loop
	// ticks: the next collection then comes minutes later, not in the
	// first seconds, where its stop-the-world pauses would delay sends.
	runtime.GC()
	said := context.AfterFunc(ctx, func() {
		why := "the -duration elapsed"
		if c := context.Cause(ctx); !errors.Is(c, context.DeadlineExceeded) && c != nil {
			why = c.Error()
		}
		a.logger.Info("stopping ("+why+"): halting every link", "event", "stop", "cause", why)
	})
	defer said()
	err := a.sup.Serve(ctx)
	stopView()
	wg.Wait()
	for _, b := range a.links {
		fmt.Fprintln(stdout, statusLine(b))
		for _, s := range b.Summary() {
			fmt.Fprintf(stdout, "  %s\n", s)
		}
	}
	a.close()
	return err
}

// withDuration bounds ctx by d when d > 0 (the -duration flags).
func withDuration(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}
