package loopbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/latency"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// Model is how the links of one process get their ticks.
type Model string

// Thread models.
const (
	// ModelThread: each link's own bridge.Loop on a locked OS thread of its
	// own, as the supervisor serves links.
	ModelThread Model = "thread"
	// ModelScheduler: one locked OS thread runs every link's deadlines,
	// earliest first (Scheduler).
	ModelScheduler Model = "scheduler"
)

// ParseModel parses "thread" or "scheduler".
func ParseModel(s string) (Model, error) {
	switch m := Model(s); m {
	case ModelThread, ModelScheduler:
		return m, nil
	}
	return "", fmt.Errorf("loopbench: model %q: %w (want thread or scheduler)", s, ErrConfig)
}

// LinkTiming is the loop observer of one link in a links run
// (bridge.LoopObserver and bridge.LeadObserver): wake-up and send lateness,
// ticks, overruns and the phase of the link's deadlines. Its methods run on
// the link's loop thread (or the scheduler's) and allocate nothing; read it
// after the run.
type LinkTiming struct {
	clock  *realtime.Clock
	period int64

	wake, send      latency.Histogram
	ticks, overruns uint64

	// sendIsWake: the ticks run on a Scheduler, whose Gate returns at once,
	// so a tick's send lateness is its wake-up lateness.
	sendIsWake bool
	// The gate of the tick being observed (ObserveLead comes just before
	// ObserveTick), and the lead the loop planned this tick's wake-up with:
	// the one it reported at the previous gate.
	gated     bool
	lead, age int64
	planLead  int64
	havePlan  bool
	phase     int64 // deadline mod period, once a tick showed it
	havePhase bool

	// Stall records (KeepLate): every tick late by more than threshold, in
	// an array allocated beforehand; beyond its capacity only counted.
	stalls tickStalls
}

// NewLinkTiming returns an empty observer for a link of the given period on
// clock (read once, at the first tick, for the phase); a nil clock is a new
// one.
func NewLinkTiming(clock *realtime.Clock, period time.Duration) *LinkTiming {
	if clock == nil {
		clock = realtime.NewClock()
	}
	return &LinkTiming{clock: clock, period: int64(period)}
}

// ObserveLead implements bridge.LeadObserver.
func (t *LinkTiming) ObserveLead(leadNs, ageNs int64, _ bool) {
	t.gated, t.lead, t.age = true, leadNs, ageNs
}

// ObserveTick implements bridge.LoopObserver. A loop reports the send
// lateness of a tick that gated, else the wake-up lateness; the wake-up
// lateness of a gated tick is lateness + lead − age (the send less the time
// from the wake-up to the send, against the planned wake-up).
func (t *LinkTiming) ObserveTick(latenessNs, workNs int64) {
	t.ticks++
	wakeLate, sendLate, age, sent := latenessNs, int64(0), int64(0), false
	switch {
	case t.sendIsWake:
		sendLate, sent = latenessNs, true
	case t.gated:
		lead := t.lead
		if t.havePlan {
			lead = t.planLead
		}
		wakeLate, sendLate, age, sent = latenessNs+lead-t.age, latenessNs, t.age, true
		t.planLead, t.havePlan = t.lead, true
	}
	// A tick with nothing to send yet (the handshake before the first
	// measurement) did not gate: its wake-up only.
	t.wake.Record(wakeLate)
	if sent {
		t.send.Record(sendLate)
	}
	t.gated = false
	worst := wakeLate
	if sent {
		worst = max(worst, sendLate)
	}
	first := t.ticks == 1
	late := t.stalls.threshold > 0 && worst > t.stalls.threshold
	if !(first || late || (sent && !t.havePhase)) {
		t.stalls.bin(t.ticks-1+t.overruns, t.period, worst)
		t.stalls.observed(LateTick{}, false)
		return
	}
	// The clock only on the first tick, the first that sent, and late
	// ones: the wake-up is workNs before now; the send age after it.
	rec := LateTick{Wake: t.clock.Now() - workNs, CPU: -1}
	rec.Planned = rec.Wake - wakeLate
	rec.Deadline = rec.Planned
	if sent {
		rec.Send = rec.Wake + age
		rec.Deadline = rec.Send - sendLate
		if !t.havePhase && t.period > 0 {
			t.phase, t.havePhase = rec.Deadline%t.period, true
		}
	}
	if first {
		t.stalls.start(rec.Planned)
	}
	t.stalls.bin(t.ticks-1+t.overruns, t.period, worst)
	t.stalls.observed(rec, late)
}

// ObserveOverrun implements bridge.LoopObserver.
func (t *LinkTiming) ObserveOverrun(periods int) { t.overruns += uint64(periods) }

// BenchLink is one built link of a links run, with what observes it.
type BenchLink struct {
	Link    *bridge.Link
	Master  *simulink.Master  // for the statuses; may be nil
	Partner *simulink.Partner // its built-in partner, served as a process-wide service; may be nil
	Deps    []bridge.Part     // the link's dependencies, served before it
	Timing  *LinkTiming       // the link's loop observer
	Replies *Replies          // the master's observer; may be nil
}

// LinksConfig is one run of several links in one process.
type LinksConfig struct {
	Model    Model
	Duration time.Duration
	// Stagger spreads the scheduler's links evenly over the period (link i
	// at i/N of it); false puts every link on one grid. The thread model's
	// loops each start their grid when their thread starts.
	Stagger bool
	// GOMAXPROCS is set for the run and restored after: > 0 as given,
	// AutoGOMAXPROCS for the CPUs plus one per locked thread (each loop,
	// each real-time partner's receive thread), 0 left as it is. A locked
	// thread blocked in a system call (a sleep, a wait for a datagram)
	// keeps its P until the runtime's monitor takes it back, 20 µs to 10 ms
	// later; with fewer Ps than those threads the other goroutines and the
	// runtime's timers wait for one.
	GOMAXPROCS int
	Logger     *slog.Logger
	// Stalls attributes the run's late ticks (stalls.go); a zero
	// Threshold keeps none.
	Stalls StallConfig
	// TracePath, if set, receives a runtime/trace of the run.
	TracePath string
	// Confine, if set, holds every thread of the process but the links'
	// real-time ones (which pin themselves to their loop's CPU) on these
	// CPUs for the run (realtime.Confine); the threads get the process's
	// CPUs back after it.
	Confine []int
	// Alongside are served with the partners for each run, by name: the
	// work a bridge does besides its loops (its HTTP server), so that its
	// cost to the loops can be measured and attributed.
	Alongside map[string]bridge.Service
	// GC is applied for the run and restored after (the zero value changes
	// nothing): the policy of bridge run, realtime.DefaultGC, to measure
	// what it runs with.
	GC realtime.GC
	// Nice, if not 0, is the nice value of every thread for the run
	// (realtime.Renice), as bridge run sets [service] nice; the value
	// before is put back after. Not permitted: a warning in the run.
	Nice int
}

// StallConfig is the stall attribution of a links run: every tick later
// than Threshold is kept, and a cyclictest runs concurrently at the loops'
// priority and period, one thread on each CPU they may run on, to say
// whether the machine was late at the same moment.
type StallConfig struct {
	Threshold  time.Duration
	Cyclictest bool
	Path       string        // the cyclictest binary; "" = in PATH
	Records    int           // late ticks kept per link; 0 = 20 000
	Bin        time.Duration // the timeline's bin; 0 = 1 s
}

// AutoGOMAXPROCS is LinksConfig.GOMAXPROCS for a P per locked thread on
// top of the CPUs.
const AutoGOMAXPROCS = -1

// RunLinks serves links for cfg.Duration under a bridge.Supervisor, their
// loops in cfg.Model, and reports each link's timing. The supervisor runs
// each link's dependencies and the partners in both models; in the
// scheduler model it runs no link: one Scheduler ticks them all, and they
// stay in the state they were built in until a tick moves them (a link's
// Serve, which would set "handshaking", is not called), and their plants
// are halted by RunLinks after the last tick, as Link.Serve would. If ctx
// ends first, RunLinks returns what was measured and an error.
func RunLinks(ctx context.Context, cfg LinksConfig, links []BenchLink) (LinksRun, error) {
	if len(links) == 0 {
		return LinksRun{}, fmt.Errorf("loopbench: links run: no link: %w", ErrConfig)
	}
	if cfg.Duration <= 0 {
		return LinksRun{}, fmt.Errorf("loopbench: links run: duration %v: %w (want > 0)", cfg.Duration, ErrConfig)
	}
	if _, err := ParseModel(string(cfg.Model)); err != nil {
		return LinksRun{}, err
	}
	lc := links[0].Link.Config().Loop
	for _, b := range links {
		if b.Timing == nil {
			return LinksRun{}, fmt.Errorf("loopbench: links run: link %q has no timing observer: %w", b.Link.Name(), ErrConfig)
		}
		if p := b.Link.Config().Loop.Period; p != lc.Period {
			return LinksRun{}, fmt.Errorf("loopbench: links run: link %q ticks every %v, %q every %v: %w (want one rate)",
				b.Link.Name(), p, links[0].Link.Name(), lc.Period, ErrConfig)
		}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.GOMAXPROCS < AutoGOMAXPROCS {
		return LinksRun{}, fmt.Errorf("loopbench: links run: GOMAXPROCS %d: %w (want > 0, 0 to leave it, or AutoGOMAXPROCS)", cfg.GOMAXPROCS, ErrConfig)
	}
	if procs := cfg.procs(links); procs > 0 {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
	}
	defer cfg.GC.Apply()()
	if cfg.Nice != 0 {
		if prev, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err != nil {
			logger.Warn("loopbench: links run: the nice value is not set", "err", err)
		} else if err := realtime.Renice(cfg.Nice); err != nil {
			logger.Warn("loopbench: links run: the nice value is not set", "nice", cfg.Nice, "err", err)
		} else {
			defer func() {
				if err := realtime.Renice(20 - prev); err != nil { // the system call's value, not libc's
					logger.Warn("loopbench: links run: the nice value not given back", "err", err)
				}
			}()
		}
	}
	if len(cfg.Confine) > 0 {
		allowed, err := realtime.AllowedCPUs()
		if err != nil {
			return LinksRun{}, fmt.Errorf("loopbench: links run: %w", err)
		}
		if err := realtime.Confine(cfg.Confine); err != nil {
			return LinksRun{}, fmt.Errorf("loopbench: links run: %w", err)
		}
		defer func() {
			if err := realtime.Confine(allowed); err != nil {
				logger.Warn("loopbench: links run: the process's CPUs not given back", "err", err)
			}
		}()
	}
	sw := startStallWatch(ctx, cfg, links)
	view, err := startRuntimeView(cfg.TracePath, links)
	if err != nil {
		sw.stop()
		return LinksRun{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var warns []error
	if cfg.Model == ModelThread {
		err = runThreads(runCtx, cfg, logger, links)
	} else {
		warns, err = runScheduler(runCtx, ctx, cfg, logger, links)
	}
	rv := view.stop(links, cfg.TracePath)
	stalls := sw.stop()
	run := report(cfg, links, warns)
	run.Runtime, run.Stalls = &rv, stalls
	if err != nil {
		return run, err
	}
	if ctx.Err() != nil {
		return run, fmt.Errorf("loopbench: links run interrupted: %w", context.Cause(ctx))
	}
	return run, nil
}

// procs is the GOMAXPROCS of a run of links; 0: leave it.
func (c LinksConfig) procs(links []BenchLink) int {
	if c.GOMAXPROCS != AutoGOMAXPROCS {
		return c.GOMAXPROCS
	}
	locked := 1
	if c.Model == ModelThread {
		locked = len(links)
	}
	for _, b := range links {
		if b.Partner != nil && b.Partner.Priority() > 0 {
			locked++
		}
	}
	return runtime.NumCPU() + locked
}

// runThreads serves every link as bridge run does: its own loop and thread.
func runThreads(ctx context.Context, cfg LinksConfig, logger *slog.Logger, links []BenchLink) error {
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Logger: logger})
	if err := cfg.addAlongside(sup); err != nil {
		return err
	}
	for _, b := range links {
		b.Timing.sendIsWake = false
		if err := sup.AddLink(b.Link, nil, b.Deps...); err != nil {
			return fmt.Errorf("loopbench: %w", err)
		}
		if b.Partner != nil {
			if err := sup.Add("partner "+b.Link.Name(), b.Partner); err != nil {
				return fmt.Errorf("loopbench: %w", err)
			}
		}
	}
	if err := sup.Serve(ctx); err != nil {
		return fmt.Errorf("loopbench: %w", err)
	}
	return nil
}

// addAlongside adds the services of Alongside to sup, in the order of
// their names.
func (c LinksConfig) addAlongside(sup *bridge.Supervisor) error {
	for _, name := range slices.Sorted(maps.Keys(c.Alongside)) {
		if err := sup.Add(name, c.Alongside[name]); err != nil {
			return fmt.Errorf("loopbench: %w", err)
		}
	}
	return nil
}

// runScheduler ticks every link from one Scheduler until runCtx is done,
// while a supervisor serves the links' dependencies and the partners; those
// stop only after the last tick and the halts, as the supervisor orders
// them for links it serves itself.
func runScheduler(runCtx, ctx context.Context, cfg LinksConfig, logger *slog.Logger, links []BenchLink) ([]error, error) {
	lc := links[0].Link.Config().Loop
	sched, err := NewScheduler(SchedulerConfig{
		Priority: lc.Priority, CPU: lc.CPU, LockMemory: lc.LockMemory, DMALatency: lc.DMALatency, Logger: logger,
	}, realtime.NewClock())
	if err != nil {
		return nil, err
	}
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Logger: logger})
	if err := cfg.addAlongside(sup); err != nil {
		return nil, err
	}
	for i, b := range links {
		b.Timing.sendIsWake = true
		var phase time.Duration
		if cfg.Stagger {
			phase = lc.Period * time.Duration(i) / time.Duration(len(links))
		}
		if err := sched.AddLink(b.Link, phase, b.Timing); err != nil {
			return nil, err
		}
		for _, d := range b.Deps {
			if err := sup.Add("link "+b.Link.Name()+": "+d.Name, d.Service); err != nil {
				return nil, fmt.Errorf("loopbench: %w", err)
			}
		}
		if b.Partner != nil {
			if err := sup.Add("partner "+b.Link.Name(), b.Partner); err != nil {
				return nil, fmt.Errorf("loopbench: %w", err)
			}
		}
	}
	// The supervisor outlives the scheduler: this function owns it, stops
	// it after the halts and waits for it.
	supCtx, stopSup := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var supErr error
	wg.Go(func() { supErr = sup.Serve(supCtx) })
	serr := sched.Serve(runCtx)
	var herrs []error
	for _, b := range links {
		l := b.Link
		if err := l.Plant().Halt(l.Config().Halt); err != nil {
			herrs = append(herrs, fmt.Errorf("loopbench: link %q: halt: %w", l.Name(), err))
		}
	}
	stopSup()
	wg.Wait()
	if supErr != nil {
		supErr = fmt.Errorf("loopbench: %w", supErr)
	}
	return sched.SetupWarnings(), errors.Join(serr, supErr, errors.Join(herrs...))
}

// LinkResult is one link of a links run: JSON field names of -json.
type LinkResult struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Ticks    uint64 `json:"ticks"`
	Overruns uint64 `json:"overruns"`
	// SpinBreaks is how many times the spin guard demoted the link's loop
	// thread (bridge.LoopConfig.Guard).
	SpinBreaks uint64  `json:"spin_breaks"`
	PhaseUs    float64 `json:"phase_us"` // the deadlines' offset in the period (CLOCK_MONOTONIC mod period)
	// WakeUs is the wake-up lateness (against the planned wake-up: the
	// deadline less the lead); SendUs the send lateness (the gate against
	// the deadline).
	WakeUs  LatencyUS         `json:"wake_lateness_us"`
	SendUs  LatencyUS         `json:"send_lateness_us"`
	Replies uint64            `json:"replies"`
	Late    uint64            `json:"late_replies"`
	ReplyUs LatencyUS         `json:"reply_latency_us"`
	Status  map[string]uint64 `json:"status"`
	Partner PartnerTiming     `json:"partner"`
}

// PartnerTiming is the link's sends as its partner received them
// (simulink.SendTimingStats): the deviation of each interval from the
// period, and the achieved rate.
type PartnerTiming struct {
	Clock       string    `json:"clock"` // "kernel" or "user"
	Intervals   uint64    `json:"intervals"`
	Gaps        uint64    `json:"gaps"`
	DeviationUs LatencyUS `json:"deviation_us"` // p50, p99, p99.9, max
	RateHz      float64   `json:"rate_hz"`
}

// LinksSummary is the run's line: medians over the links of each link's
// p99, and their ratio to the run with the fewest links of the report.
type LinksSummary struct {
	SendP99Us    float64  `json:"median_send_p99_us"`
	WakeP99Us    float64  `json:"median_wake_p99_us"`
	PartnerP99Us float64  `json:"median_partner_p99_us"`
	RatioTo      int      `json:"ratio_to_links,omitempty"` // the run the ratios divide by
	SendRatio    *float64 `json:"send_p99_ratio,omitempty"`
	PartnerRatio *float64 `json:"partner_p99_ratio,omitempty"`
}

// LinksRun is one run of N links.
type LinksRun struct {
	Model     string  `json:"model"`
	Links     int     `json:"links"`
	RateHz    float64 `json:"rate_hz"`
	DurationS float64 `json:"duration_s"`
	Priority  int     `json:"priority"`
	// BudgetUs is each loop's SCHED_DEADLINE budget per period, 0 under
	// SCHED_FIFO (a refusal is in Warnings).
	BudgetUs float64 `json:"budget_us,omitempty"`
	// GOMAXPROCS during the run.
	GOMAXPROCS int `json:"gomaxprocs"`
	// Phases: "spread" or "aligned" (the scheduler), "as started" (the
	// thread model). PhaseSpreadUs is the shortest arc of the period that
	// holds every link's deadlines.
	Phases        string       `json:"phases"`
	PhaseSpreadUs float64      `json:"phase_spread_us"`
	PerLink       []LinkResult `json:"per_link"`
	Summary       LinksSummary `json:"summary"`
	Warnings      []string     `json:"warnings"`
	// Stalls attributes the late ticks (with LinksConfig.Stalls); Runtime
	// is the Go runtime's and the kernel's view of the run.
	Stalls  *StallReport   `json:"stalls,omitempty"`
	Runtime *RuntimeReport `json:"runtime,omitempty"`
	// SpinGuard is what the spin guard did and cost; nil without one.
	SpinGuard *GuardReport `json:"spin_guard,omitempty"`
}

// GuardReport is a run's spin guard (realtime.SpinGuard).
type GuardReport struct {
	Priority int     `json:"priority"` // SCHED_FIFO; 0 an ordinary thread
	Passes   uint64  `json:"passes"`
	Breaks   uint64  `json:"breaks"`    // over every link
	CPUMs    float64 `json:"cpu_ms"`    // the guard thread's CPU time
	CPUShare float64 `json:"cpu_share"` // of one CPU over the run
}

// LinksReport is `bridge bench links`: one run per count of links, in order.
type LinksReport struct {
	Runs []LinksRun `json:"runs"`
}

func usLatency(h *latency.Histogram) LatencyUS {
	s := h.Summary()
	us := func(ns int64) float64 { return math.Round(float64(ns)/1e3*10) / 10 }
	return LatencyUS{Min: us(s.Min), P50: us(s.P50), P99: us(s.P99), P999: us(s.P999), Max: us(s.Max), Mean: math.Round(s.Mean/1e2) / 10}
}

func report(cfg LinksConfig, links []BenchLink, warns []error) LinksRun {
	lc := links[0].Link.Config().Loop
	period := int64(lc.Period)
	run := LinksRun{
		Model: string(cfg.Model), Links: len(links), RateHz: math.Round(1e9/float64(period)*1e3) / 1e3,
		DurationS: cfg.Duration.Seconds(), Priority: lc.Priority, GOMAXPROCS: runtime.GOMAXPROCS(0), Phases: "as started", Warnings: []string{},
	}
	if cfg.Model == ModelThread {
		run.BudgetUs = float64(lc.Budget) / 1e3
	}
	if cfg.Model == ModelScheduler {
		run.Phases = "aligned"
		if cfg.Stagger {
			run.Phases = "spread"
		}
	}
	for _, w := range warns {
		run.Warnings = append(run.Warnings, w.Error())
	}
	var phases []int64
	for _, b := range links {
		t := b.Timing
		r := LinkResult{
			Name: b.Link.Name(), State: b.Link.State().String(), Ticks: t.ticks, Overruns: t.overruns, SpinBreaks: b.Link.SpinBreaks(),
			WakeUs: usLatency(&t.wake), SendUs: usLatency(&t.send), Status: map[string]uint64{},
		}
		if t.havePhase {
			r.PhaseUs = math.Round(float64(t.phase)/1e2) / 10
			phases = append(phases, t.phase)
		}
		if b.Replies != nil {
			r.ReplyUs, r.Replies, r.Late = usLatency(b.Replies.h), b.Replies.h.Count(), b.Replies.late
		}
		if b.Master != nil {
			for i, n := range b.Master.Stats().Status {
				r.Status[simulink.Status(i).String()] = n
			}
		}
		if b.Partner != nil {
			s := b.Partner.SendTiming()
			us := func(ns int64) float64 { return math.Round(float64(ns)/1e2) / 10 }
			r.Partner = PartnerTiming{
				Clock: s.Clock, Intervals: s.Intervals, Gaps: s.Gaps,
				DeviationUs: LatencyUS{P50: us(s.P50Ns), P99: us(s.P99Ns), P999: us(s.P999Ns), Max: us(s.MaxNs)},
				RateHz:      math.Round(s.RateHz*1e3) / 1e3,
			}
		}
		run.PerLink = append(run.PerLink, r)
	}
	run.PhaseSpreadUs = math.Round(float64(phaseSpread(phases, period))/1e2) / 10
	run.Summary = LinksSummary{
		SendP99Us:    median(run.PerLink, func(r LinkResult) float64 { return r.SendUs.P99 }),
		WakeP99Us:    median(run.PerLink, func(r LinkResult) float64 { return r.WakeUs.P99 }),
		PartnerP99Us: median(run.PerLink, func(r LinkResult) float64 { return r.Partner.DeviationUs.P99 }),
	}
	return run
}

// phaseSpread is the shortest arc of the period that holds every phase: the
// period less the widest gap between neighbours around the circle.
func phaseSpread(phases []int64, period int64) int64 {
	if len(phases) < 2 {
		return 0
	}
	p := slices.Clone(phases)
	slices.Sort(p)
	gap := p[0] + period - p[len(p)-1] // across the period's end
	for i := 1; i < len(p); i++ {
		gap = max(gap, p[i]-p[i-1])
	}
	return period - gap
}

// median of f over rs: the middle value, or the mean of the two middle ones.
func median(rs []LinkResult, f func(LinkResult) float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return math.Round((v[m-1]+v[m])/2*10) / 10
}

// NewLinksReport puts runs in one report, with the ratios of each run's
// medians to those of the run with the fewest links (N = 1 with -links
// 1,4,16), measured in the same invocation.
func NewLinksReport(runs []LinksRun) LinksReport {
	if len(runs) > 1 {
		base := runs[0]
		for _, r := range runs[1:] {
			if r.Links < base.Links {
				base = r
			}
		}
		for i := range runs {
			s := &runs[i].Summary
			s.RatioTo = base.Links
			s.SendRatio = ratioOf(s.SendP99Us, base.Summary.SendP99Us)
			s.PartnerRatio = ratioOf(s.PartnerP99Us, base.Summary.PartnerP99Us)
		}
	}
	return LinksReport{Runs: runs}
}

func ratioOf(a, b float64) *float64 {
	if !(b > 0) {
		return nil
	}
	r := math.Round(a/b*100) / 100
	return &r
}

// WriteText prints each run: a header, one line per link, the summary.
func (r LinksReport) WriteText(w io.Writer) error {
	var b strings.Builder
	for i, run := range r.Runs {
		if i > 0 {
			b.WriteByte('\n')
		}
		policy := fmt.Sprintf("priority %d", run.Priority)
		if run.BudgetUs > 0 {
			policy = fmt.Sprintf("SCHED_DEADLINE %g µs a period (else priority %d)", run.BudgetUs, run.Priority)
		}
		fmt.Fprintf(&b, "links %d  model %s  rate %g Hz  %gs  %s  GOMAXPROCS %d  phases %s (within %.1f µs)\n",
			run.Links, run.Model, run.RateHz, run.DurationS, policy, run.GOMAXPROCS, run.Phases, run.PhaseSpreadUs)
		for _, warn := range run.Warnings {
			fmt.Fprintf(&b, "warning: %s\n", warn)
		}
		fmt.Fprintf(&b, "%-12s %7s %5s %5s  %-20s  %-20s  %-13s  %-20s  %9s  %8s  %s\n",
			"link", "ticks", "overr", "brk", "wake µs p50/p99/max", "send µs p50/p99/max", "reply p50/p99", "partner dev µs", "rate Hz", "phase µs", "state")
		for _, l := range run.PerLink {
			fmt.Fprintf(&b, "%-12s %7d %5d %5d  %-20s  %-20s  %-13s  %-20s  %9.2f  %8.1f  %s\n",
				l.Name, l.Ticks, l.Overruns, l.SpinBreaks,
				fmt.Sprintf("%.1f/%.1f/%.1f", l.WakeUs.P50, l.WakeUs.P99, l.WakeUs.Max),
				fmt.Sprintf("%.1f/%.1f/%.1f", l.SendUs.P50, l.SendUs.P99, l.SendUs.Max),
				fmt.Sprintf("%.1f/%.1f", l.ReplyUs.P50, l.ReplyUs.P99),
				fmt.Sprintf("%.1f/%.1f/%.1f", l.Partner.DeviationUs.P50, l.Partner.DeviationUs.P99, l.Partner.DeviationUs.Max),
				l.Partner.RateHz, l.PhaseUs, l.State)
		}
		s := run.Summary
		fmt.Fprintf(&b, "summary  links %d  median p99 µs: send %.1f%s  wake %.1f  partner deviation %.1f%s\n",
			run.Links, s.SendP99Us, fmtLinksRatio(s.SendRatio, s.RatioTo), s.WakeP99Us, s.PartnerP99Us, fmtLinksRatio(s.PartnerRatio, s.RatioTo))
		if g := run.SpinGuard; g != nil {
			fmt.Fprintf(&b, "spin guard  SCHED_FIFO %d  passes %d  breaks %d  cpu %.1f ms (%.2f %% of a CPU)\n",
				g.Priority, g.Passes, g.Breaks, g.CPUMs, g.CPUShare*100)
		}
		if run.Stalls != nil {
			if err := run.Stalls.WriteText(&b); err != nil {
				return err
			}
		}
		if run.Runtime != nil {
			if err := run.Runtime.WriteText(&b); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtLinksRatio(r *float64, to int) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf(" (%.2fx links %d)", *r, to)
}

// MaxLinks bounds a run's count of links: each link is a thread (in the
// thread model), four sockets and a partner goroutine.
const MaxLinks = 256

// ParseCounts parses the counts of links of `bridge bench links -links`:
// "4" or "1,4,16".
func ParseCounts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > MaxLinks {
			return nil, fmt.Errorf("want counts of links from 1 to %d, separated by commas, like 1,4,16", MaxLinks)
		}
		out = append(out, n)
	}
	return out, nil
}
