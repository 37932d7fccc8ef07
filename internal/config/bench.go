package config

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/realtime"
)

// Supervise builds every link of c with env and adds it to sup: the link
// with its dependencies, and its built-in partner. On an error the links
// already built are closed.
func (c *Config) Supervise(env Env, sup *bridge.Supervisor) ([]*Built, error) {
	var links []*Built
	fail := func(err error) ([]*Built, error) {
		for _, b := range links {
			b.Close()
		}
		return nil, err
	}
	for i := range c.Links {
		b, err := c.Links[i].Build(env)
		if err != nil {
			return fail(err)
		}
		links = append(links, b)
		if err := sup.AddLink(b.Link, b.Observer(), b.Deps...); err != nil {
			return fail(err)
		}
		if b.Partner != nil {
			if err := sup.Add("partner "+b.Config.Name, b.Partner); err != nil {
				return fail(err)
			}
		}
	}
	return links, nil
}

// LinkBench is one run of `bridge bench link`: a link on the in-memory
// plant ("sim") or the Emio's servos simulated on a pseudo-terminal
// ("emio"), against a partner: "builtin" (in this process, as bridge sim
// runs it), "process" (Exe's `bridge partner` in a process of its own) or
// "external" (a host already running at Remote).
type LinkBench struct {
	Rate     float64
	Duration time.Duration
	Plant    string
	Loop     LoopTable
	Partner  string
	// External partner: where it listens, where its replies arrive, and
	// the measurements' source.
	Remote, Listen, Bind string
	// Exe is the bridge executable a "process" partner runs.
	Exe    string
	Stalls loopbench.StallConfig
	Logger *slog.Logger
	// Warn is told what the run meets that a reader of the report should
	// know (a plant that cannot carry the rate); nil = nothing said.
	Warn func(string)
}

// RunBenchLink runs r with the process set up as `bridge run` sets it and
// the link observed as bridge run's metrics observe it, and returns its
// report: reply latency, the partner's view of the sends, and every late
// tick attributed beside a concurrent cyclictest.
func RunBenchLink(ctx context.Context, r LinkBench) (loopbench.LinkReport, error) {
	warn := r.Warn
	if warn == nil {
		warn = func(string) {}
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Partner != "builtin" && r.Partner != "process" && r.Partner != "external" {
		return loopbench.LinkReport{}, fmt.Errorf("bridge bench link: -partner %q: want process, builtin or external", r.Partner)
	}
	cfg, err := BenchLink(r.Rate, r.Loop, r.Plant)
	if err != nil {
		return loopbench.LinkReport{}, fmt.Errorf("bridge bench link: %w", err)
	}
	l := &cfg.Links[0]
	clock := realtime.NewClock()
	rec, timing := loopbench.NewReplies(), loopbench.NewLinkTiming(clock, l.Period())
	// The metrics observe the link as in bridge run; nothing serves them.
	set, err := metrics.New(metrics.NewRegistry(), metrics.ThisBuild("bench"))
	if err != nil {
		return loopbench.LinkReport{}, err
	}
	env := Env{Logger: r.Logger, Clock: clock, Metrics: set, Observer: rec, Loop: timing, Partner: true, Ephemeral: true}
	switch r.Partner {
	case "external":
		l.UDP.Remote, l.UDP.Listen, l.UDP.Bind = r.Remote, r.Listen, r.Bind
		if err := cfg.Validate(); err != nil {
			return loopbench.LinkReport{}, err
		}
		env.Partner, env.Ephemeral = false, false
	case "process":
		env.Partner = false // the master on port 0; the process is told its ports
	}
	cfg.SetUpProcess(env.Partner, r.Logger)
	if env.Guard = cfg.StartSpinGuard(r.Logger); env.Guard != nil {
		defer env.Guard.Close()
	}
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Logger: r.Logger})
	links, err := cfg.Supervise(env, sup)
	if err != nil {
		return loopbench.LinkReport{}, err
	}
	b := links[0]
	defer b.Close()
	var peer *loopbench.Peer
	if r.Partner == "process" {
		var doc bytes.Buffer
		if err := cfg.Write(&doc, nil, "bridge bench link's link, for the partner's shape"); err != nil {
			return loopbench.LinkReport{}, err
		}
		if peer, err = loopbench.PartnerProcess(ctx, r.Exe, b.Master, l.Name, doc.Bytes()); err != nil {
			return loopbench.LinkReport{}, fmt.Errorf("bridge bench link: %w", err)
		}
		defer peer.Stop()
	}
	// Say at the start when the plant cannot carry the rate.
	if c, err := loopbench.ProbePlant(b.Link.Plant(), 30); err != nil {
		warn(err.Error())
	} else if msg := c.Exceeded(r.Plant, r.Rate); msg != "" {
		warn(msg)
	}
	watch := loopbench.WatchStalls(ctx, r.Stalls, r.Duration,
		[]loopbench.BenchLink{{Link: b.Link, Master: b.Master, Partner: b.Partner, Timing: timing, Replies: rec}})
	runCtx, cancel := context.WithTimeout(ctx, r.Duration)
	defer cancel()
	serveErr := sup.Serve(runCtx)
	rep := rec.Report(r.Rate, r.Duration.Seconds(), b.Link.Ticks(), b.Link.Overruns(), b.Master.Stats())
	rep.Plant = r.Plant
	rep.LeadUs = float64(b.Link.Lead()) / 1e3
	rep.LateSends = b.Link.LeadOverruns()
	// The partner's view of the sends: an external partner reports it
	// itself (WriteText says so).
	switch {
	case b.Partner != nil:
		rep.SetSendTiming(loopbench.NewSendTimingReport(b.Partner.SendTiming()))
	case peer != nil:
		if t, err := peer.PartnerTiming(); err != nil {
			warn("no send timing from the partner process: " + err.Error())
		} else {
			rep.SetSendTiming(t)
		}
	}
	b.Close()
	rep.Stalls = watch.Stop()
	return rep, serveErr
}

// RunBenchLinks builds n links as bridge sim would (the in-memory plant, a
// built-in partner each, free loopback ports) with loop, runs them as lc
// says (loopbench.RunLinks), and releases them.
func RunBenchLinks(ctx context.Context, n int, rate float64, loop LoopTable, lc loopbench.LinksConfig) (loopbench.LinksRun, error) {
	cfg, err := SimLinks(n, rate, loop)
	if err != nil {
		return loopbench.LinksRun{}, err
	}
	if lc.Logger == nil {
		lc.Logger = slog.New(slog.DiscardHandler)
	}
	// No metrics: the bench's own observers see every tick and reply; the
	// loop observer must reach the loop unwrapped for it to see the gate.
	cfg.SetUpBudgets(true, lc.Logger)
	env := Env{Clock: realtime.NewClock(), Logger: lc.Logger, Partner: true, Ephemeral: true}
	if env.Guard = cfg.StartSpinGuard(lc.Logger); env.Guard != nil {
		defer env.Guard.Close() // after the links, deferred below
	}
	var built []*Built
	defer func() {
		for _, b := range built {
			if cerr := b.Close(); cerr != nil {
				lc.Logger.Warn("bridge bench links: closing a link", "link", b.Config.Name, "err", cerr)
			}
		}
	}()
	links := make([]loopbench.BenchLink, 0, n)
	for i := range cfg.Links {
		l := &cfg.Links[i]
		timing, replies := loopbench.NewLinkTiming(env.Clock, l.Period()), loopbench.NewReplies()
		env.Loop, env.Observer = timing, replies
		b, err := l.Build(env)
		if err != nil {
			return loopbench.LinksRun{}, err
		}
		built = append(built, b)
		timing.CountBreaks(b.Link.SpinBreaks)
		links = append(links, loopbench.BenchLink{
			Link: b.Link, Master: b.Master, Partner: b.Partner, Deps: b.Deps, Timing: timing, Replies: replies,
		})
	}
	run, err := loopbench.RunLinks(ctx, lc, links)
	if g := env.Guard; g != nil {
		rep := &loopbench.GuardReport{Priority: g.Priority(), Passes: g.Passes()}
		for _, l := range run.PerLink {
			rep.Breaks += l.SpinBreaks
		}
		if cpu := g.CPUTime(); cpu >= 0 && run.DurationS > 0 {
			rep.CPUMs, rep.CPUShare = float64(cpu)/1e6, cpu.Seconds()/run.DurationS
		}
		run.SpinGuard = rep
	}
	return run, err
}
