// Package service runs a configuration's links as `bridge run` and `bridge
// sim` do: every link built and supervised (config.Supervise), the metrics
// server with the status page (docs/architecture.md "Supervision"), and
// systemd's readiness, status and watchdog notifications (docs/realtime.md
// §11). The command wires it and draws the terminal view.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/sdnotify"
	"github.com/labbridge/bridge/internal/statuspage"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/realtime"
)

// ReadyTicks is how many ticks every link runs before READY=1.
const ReadyTicks = 10

// Service is a wired bridge: the built links under one supervisor, with the
// metrics server.
type Service struct {
	logger *slog.Logger
	links  []*config.Built
	sup    *bridge.Supervisor
	server *metrics.Server
	guard  *realtime.SpinGuard // nil: none
}

// New builds every link of cfg and the supervisor that runs them, after
// setting up the process (config.SetUpProcess). Nothing runs until Serve,
// except simulated devices. from, where cfg came from, and version are for
// the status page, served with the metrics at metricsAddr ("" = none).
func New(cfg *config.Config, from, version string, env config.Env, metricsAddr string) (*Service, error) {
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	ring := logging.RingOf(env.Logger)
	if ring == nil && metricsAddr != "" {
		ring = &logging.Ring{}
		env.Logger = slog.New(logging.WithRing(env.Logger.Handler(), ring))
	}
	cfg.SetUpProcess(env.Partner, env.Logger)
	s := &Service{logger: env.Logger, sup: bridge.NewSupervisor(bridge.SupervisorConfig{Logger: env.Logger})}
	s.guard = cfg.StartSpinGuard(env.Logger)
	env.Guard = s.guard
	reg := metrics.NewRegistry()
	set, err := metrics.New(reg, metrics.ThisBuild(version))
	if err != nil {
		s.Close()
		return nil, err
	}
	env.Metrics, env.Clock = set, realtime.NewClock()
	if env.Home == "" {
		env.Home, _ = os.UserHomeDir()
	}
	if s.links, err = cfg.Supervise(env, s.sup); err != nil {
		s.Close()
		return nil, err
	}
	if metricsAddr != "" {
		page := statuspage.New(statuspage.Config{
			Snapshot:  config.PageSnapshot(s.links, ring, version, from, time.Now()),
			Thumbnail: config.Thumbnails(s.links),
			Resume:    s.sup.Resume,
		})
		if s.server, err = metrics.ListenWith(metricsAddr, reg, s.sup.Health, page, env.Logger); err != nil {
			s.Close()
			return nil, err
		}
		if err := s.sup.Add("metrics", s.server); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Links are the built links, in the configuration's order.
func (s *Service) Links() []*config.Built { return s.links }

// MetricsAddr is where the metrics server listens; nil without one.
func (s *Service) MetricsAddr() net.Addr {
	if s.server == nil {
		return nil
	}
	return s.server.Addr()
}

// Logger is the service's logger (with the status page's ring).
func (s *Service) Logger() *slog.Logger { return s.logger }

// Describe says where each link sends and waits, and where the metrics are.
func (s *Service) Describe(w io.Writer) {
	for _, b := range s.links {
		fmt.Fprintln(w, b.Describe())
	}
	if addr := s.MetricsAddr(); addr != nil {
		fmt.Fprintf(w, "metrics: http://%v/metrics\n", addr)
	}
}

// Close releases every link and the metrics server; after Serve, or
// instead of it.
func (s *Service) Close() {
	for _, b := range s.links {
		if err := b.Close(); err != nil {
			s.logger.Warn("closing a link", "link", b.Config.Name, "err", err)
		}
	}
	if s.server != nil {
		s.server.Close()
	}
	if s.guard != nil {
		s.guard.Close() // after the links: no loop left to watch
	}
}

// Serve runs the links until ctx is done, telling systemd through n (nil,
// or not under systemd: nothing) when every link has ticked ReadyTicks
// times, what runs, and that the loops are alive (WATCHDOG_USEC). It logs
// why it stops, then halts every link; it does not Close.
func (s *Service) Serve(ctx context.Context, n *sdnotify.Notifier) error {
	var wg sync.WaitGroup
	lifeCtx, stopLife := context.WithCancel(ctx)
	if n != nil && n.Enabled() {
		life := &sdnotify.Lifecycle{
			N:        n,
			Watchdog: sdnotify.WatchdogInterval(os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID"), os.Getpid()),
			Ready: func() (bool, string) {
				return s.sup.Ticking(ReadyTicks), config.ServiceStatus(s.links)
			},
			Alive:  s.sup.Progress(),
			Status: func() string { return config.ServiceStatus(s.links) },
		}
		wg.Go(func() {
			if err := life.Serve(lifeCtx); err != nil {
				s.logger.Warn("systemd notification failed", "err", err)
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
		s.logger.Info("stopping ("+why+"): halting every link", "event", "stop", "cause", why)
	})
	defer said()
	err := s.sup.Serve(ctx)
	stopLife()
	wg.Wait()
	return err
}
