package bridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/plant"
)

// Service is a long-running part the supervisor runs. The contract
// (docs/architecture.md "Supervision"):
//
//   - Serve runs until ctx is done, releases what it holds and returns nil.
//   - Returning before ctx is done is a failure, even with a nil error. The
//     supervisor calls Serve again after a backoff, so a Service must accept
//     being served again after it returned.
//   - A failure that retrying cannot mend returns an error wrapping
//     plant.ErrPermanent: the supervisor logs it once and does not restart
//     the part.
type Service interface {
	Serve(ctx context.Context) error
}

// Part is a named Service.
type Part struct {
	Name    string
	Service Service
}

// HealthReporter is a part whose health counts in Supervisor.Health (a
// camera that is not streaming, say). Health must be cheap and safe from any
// goroutine.
type HealthReporter interface {
	Health() error
}

// LinkObserver is told, off the loop thread, what the supervisor sees of a
// link: each state it enters and each restart of its devices (metrics.Link
// satisfies it). SetState fails only for a state it does not know, which is
// a bug the supervisor logs.
type LinkObserver interface {
	SetState(state string) error
	DeviceRestart(device string)
}

// Backoff spaces restarts: exponential from Initial to Max with ±Jitter. A
// part that stayed up for Healthy before it failed was healthy: it is
// retried at once and its backoff starts over, so that a dropped connection
// to a healthy robot is mended at once while a flapping one is not hammered.
type Backoff struct {
	Initial, Max time.Duration
	Factor       float64
	Jitter       float64 // fraction, 0..1
	Healthy      time.Duration
}

// DefaultBackoff retries a part that was up for 2 s at once, then after
// 100 ms, 200 ms … up to 10 s, ±20 %.
func DefaultBackoff() Backoff {
	return Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second, Factor: 2, Jitter: 0.2, Healthy: 2 * time.Second}
}

// backoffState is one part's position in its backoff.
type backoffState struct {
	b       Backoff
	rng     *rand.Rand
	attempt int
	upSince time.Time
	everUp  bool
}

func newBackoffState(b Backoff, seed uint64) *backoffState {
	return &backoffState{b: b, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// up records that the part works again.
func (s *backoffState) up(now time.Time) { s.upSince, s.everUp = now, true }

// next returns the delay before the next attempt after a failure at now.
func (s *backoffState) next(now time.Time) time.Duration {
	if s.everUp {
		s.everUp = false
		if s.b.Healthy > 0 && now.Sub(s.upSince) >= s.b.Healthy {
			// It was healthy: this failure is new, not the next of a
			// series.
			s.attempt = 0
			return 0
		}
	}
	d := float64(s.b.Initial)
	for i := 0; i < s.attempt && d < float64(s.b.Max); i++ {
		d *= s.b.Factor
	}
	d = min(d, float64(s.b.Max))
	if s.b.Jitter > 0 {
		d *= 1 + s.b.Jitter*(2*s.rng.Float64()-1)
	}
	s.attempt++
	return time.Duration(d)
}

// SupervisorConfig configures a Supervisor.
type SupervisorConfig struct {
	Logger  *slog.Logger
	Backoff Backoff
	// PollAbsent is how often a device that is absent (its Reopen failed
	// with plant.ErrAbsent: an unplugged adapter) is tried again, instead
	// of the backoff: a replug is then noticed within this time. 0 means
	// 250 ms.
	PollAbsent time.Duration
	// PollLatched is how often a device in a stop that only a person may
	// end (plant.ErrStopLatched) is read again, so that what it says
	// stays current; it is reopened at once after Resume. 0 means 1 s.
	PollLatched time.Duration
	// OnEvent is called for every link event, from the supervisor's
	// goroutines (never from a loop thread). It may be nil.
	OnEvent func(Event)
	// Seed makes the jitter reproducible; 0 picks one.
	Seed uint64
}

// Supervisor runs links, the services each link depends on, and services of
// the whole process (docs/architecture.md "Supervision"). It restarts a part
// that fails, with backoff; reopens a link's failed device while the link's
// loop keeps ticking; turns link events into logs and observer calls; and on
// stop halts every plant before it stops what the links depend on.
//
// Order: a link's dependencies (its camera, its simulated devices, a relay's
// I/O) start before the link and stop after it has returned and applied its
// halt policy; the process-wide services (the metrics server, built-in
// partners) stop after every link.
type Supervisor struct {
	cfg      SupervisorConfig
	logger   *slog.Logger
	links    []*linkEntry
	services []Part
	mu       sync.Mutex
	serving  bool
}

type linkEntry struct {
	link *Link
	obs  LinkObserver
	deps []Part
	// setStateFailed: SetState's error is logged once per link.
	setStateFailed atomic.Bool
	// partnerLost: the last handshake began with a partner lost, so the
	// next handshake done is logged as RECONNECTED.
	partnerLost atomic.Bool
	// resume wakes the reopen of a latched device: a person asked.
	resume chan struct{}
}

// NewSupervisor returns an empty supervisor.
func NewSupervisor(cfg SupervisorConfig) *Supervisor {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Backoff.Initial <= 0 {
		cfg.Backoff = DefaultBackoff()
	}
	if cfg.Backoff.Factor < 1 {
		cfg.Backoff.Factor = 1
	}
	if cfg.PollAbsent <= 0 {
		cfg.PollAbsent = 250 * time.Millisecond
	}
	if cfg.PollLatched <= 0 {
		cfg.PollLatched = time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	return &Supervisor{cfg: cfg, logger: cfg.Logger}
}

// ErrServing is returned when parts are added to a running supervisor.
var ErrServing = errors.New("bridge: supervisor already serving")

// AddLink adds a link with the services it depends on. obs may be nil.
// Links must be added before Serve.
func (s *Supervisor) AddLink(l *Link, obs LinkObserver, deps ...Part) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		return ErrServing
	}
	if l == nil {
		return fmt.Errorf("bridge: AddLink(nil): %w", ErrConfig)
	}
	for _, d := range deps {
		if d.Service == nil || d.Name == "" {
			return fmt.Errorf("bridge: link %q: a dependency needs a name and a service: %w", l.Name(), ErrConfig)
		}
	}
	s.links = append(s.links, &linkEntry{link: l, obs: obs, deps: append([]Part(nil), deps...), resume: make(chan struct{}, 1)})
	return nil
}

// Add adds a named service of the whole process (the metrics server, a
// built-in partner).
func (s *Supervisor) Add(name string, svc Service) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		return ErrServing
	}
	if svc == nil || name == "" {
		return fmt.Errorf("bridge: Add(%q): a service needs a name: %w", name, ErrConfig)
	}
	s.services = append(s.services, Part{name, svc})
	return nil
}

// Links returns the supervised links.
func (s *Supervisor) Links() []*Link {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Link, len(s.links))
	for i, e := range s.links {
		out[i] = e.link
	}
	return out
}

func (s *Supervisor) entries() ([]*linkEntry, []Part) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links, s.services
}

// Serve runs everything until ctx is done, then stops everything in order
// and waits. It returns nil on a clean stop.
func (s *Supervisor) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		return ErrServing
	}
	s.serving = true
	links, services := s.links, s.services
	s.mu.Unlock()

	// Process-wide services stop after the links, so that the last ticks
	// still exchange and the last scrapes still answer.
	svcCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServices()
	var linkWG, svcWG sync.WaitGroup
	seed := s.cfg.Seed
	for i, e := range links {
		seed := seed + uint64(16*i)
		linkWG.Go(func() { s.runLink(ctx, e, seed) })
	}
	for i, p := range services {
		seed := seed + uint64(16*len(links)+i)
		svcWG.Go(func() { s.run(svcCtx, p.Name, p.Service, seed, nil) })
	}
	<-ctx.Done()
	linkWG.Wait()
	stopServices()
	svcWG.Wait()
	// Events emitted while stopping (halt, stopped) are still delivered.
	var halts []error
	for _, e := range links {
		s.drainNow(e)
		if err := e.link.HaltErr(); err != nil {
			halts = append(halts, err)
		}
	}
	// A halt that did not reach its robot is the stop's outcome: the
	// process exits non-zero and says so.
	return errors.Join(halts...)
}

// runLink runs one link and its dependencies: the dependencies first, the
// link's device reopening and event draining beside it, and the
// dependencies are stopped only once the link has halted its plant.
func (s *Supervisor) runLink(ctx context.Context, e *linkEntry, seed uint64) {
	name := e.link.Name()
	depCtx, stopDeps := context.WithCancel(context.WithoutCancel(ctx))
	defer stopDeps()
	var deps, aux sync.WaitGroup
	started := make(chan struct{}, len(e.deps))
	for i, d := range e.deps {
		restarted := func() {
			if e.obs != nil {
				e.obs.DeviceRestart(d.Name)
			}
		}
		deps.Go(func() {
			started <- struct{}{}
			s.run(depCtx, "link "+name+": "+d.Name, d.Service, seed+2+uint64(i), restarted)
		})
	}
	// The loop starts once every dependency's goroutine is on its way into
	// Serve, not merely created: a camera is serving before the first tick,
	// however busy the machine.
	for range e.deps {
		<-started
	}
	aux.Go(func() { s.reopen(ctx, e, seed+1) })
	aux.Go(func() { s.drain(ctx, e) })
	s.run(ctx, "link "+name, e.link, seed, nil)
	stopDeps()
	deps.Wait()
	aux.Wait()
}

// run runs svc until ctx is done, restarting it with backoff when it fails
// (returns before ctx is done), unless the failure is permanent. restarted,
// if not nil, is called before each restart.
func (s *Supervisor) run(ctx context.Context, name string, svc Service, seed uint64, restarted func()) {
	bo := newBackoffState(s.cfg.Backoff, seed)
	var rep repeatLog
	for {
		start := time.Now()
		bo.up(start)
		err := svc.Serve(ctx)
		if ctx.Err() != nil {
			if err != nil {
				s.logger.Error("stopped with an error", "part", name, "err", err)
			}
			return
		}
		if err == nil {
			err = errors.New("returned before stop")
		}
		if errors.Is(err, plant.ErrPermanent) {
			s.logger.Error("failed and will not be restarted: retrying cannot mend this; fix the cause and restart the bridge",
				"part", name, "err", err)
			return
		}
		d := bo.next(time.Now())
		s.logger.Log(ctx, rep.level(err, time.Now()), "failed; restarting", "part", name, "err", err,
			"ran", time.Since(start).Round(time.Millisecond), "retry_in", d.Round(time.Millisecond))
		if !sleepCtx(ctx, d, nil) {
			return
		}
		if restarted != nil {
			restarted()
		}
	}
}

// repeatLog keeps a failure that repeats itself from flooding the log: the
// same message is logged at Warn once a minute, at Debug in between.
type repeatLog struct {
	msg  string
	last time.Time
}

func (r *repeatLog) level(err error, now time.Time) slog.Level {
	if m := err.Error(); m != r.msg || now.Sub(r.last) >= time.Minute {
		r.msg, r.last = m, now
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// reopen waits for a link's device to fail and reopens it while the loop
// keeps ticking (the link is degraded meanwhile). A robot that keeps moving
// by itself (plant.Stopper) is stopped first. Then, by the cause of each
// failed attempt: at once for a device that had been healthy, then with
// backoff; polling at PollAbsent while the device is absent; and, for a
// stop only a person may end, reading it every PollLatched and reopening
// at once after Resume.
func (s *Supervisor) reopen(ctx context.Context, e *linkEntry, seed uint64) {
	l := e.link
	r, ok := l.Plant().(plant.Reopener)
	st, stops := l.Plant().(plant.Stopper)
	bo := newBackoffState(s.cfg.Backoff, seed)
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.DeviceDown():
		}
		// A link that never commanded its robot has set nothing moving.
		if stops && l.Applied() > 0 {
			if err := l.stopMotion(ctx, st); err != nil {
				s.logger.Warn("link "+l.Name()+": degraded, and the robot's motion could not be stopped: "+err.Error(), "link", l.Name(), "err", err)
			} else {
				s.logger.Info("link "+l.Name()+": degraded: the robot's motion was stopped", "link", l.Name())
			}
		}
		if !ok {
			s.logger.Error("device failed and cannot be reopened; the link stays degraded", "link", l.Name())
			continue
		}
		var rep repeatLog
		var cause error
		for attempt := 1; ; attempt++ {
			var d time.Duration
			switch {
			case errors.Is(cause, plant.ErrStopLatched):
				d = s.cfg.PollLatched
			case errors.Is(cause, plant.ErrAbsent):
				d = s.cfg.PollAbsent
			default:
				d = bo.next(time.Now())
			}
			select {
			case <-e.resume:
			default:
				if !sleepCtx(ctx, d, e.resume) {
					return
				}
			}
			err := l.reopenDevice(ctx, r)
			if err == nil {
				bo.up(time.Now())
				setErr(&l.downErr, nil)
				s.logger.Info("device reopened", "link", l.Name(), "attempt", attempt)
				if e.obs != nil {
					e.obs.DeviceRestart("plant")
				}
				l.DeviceUp()
				break
			}
			if ctx.Err() != nil {
				return
			}
			setErr(&l.downErr, err)
			cause = err
			msg := "device reopen failed"
			switch {
			case errors.Is(err, plant.ErrStopLatched):
				msg = "the robot is stopped and waits for a person: " + err.Error()
			case errors.Is(err, plant.ErrAbsent):
				msg = "device absent; waiting for it to come back"
			}
			s.logger.Log(ctx, rep.level(err, time.Now()), msg, "link", l.Name(), "attempt", attempt, "err", err)
		}
	}
}

var (
	// ErrNoLink: no link of that name.
	ErrNoLink = errors.New("bridge: no such link")
	// ErrNotLatched: the link's device is not in a stop that waits for a
	// person, so there is nothing to resume.
	ErrNotLatched = errors.New("bridge: nothing to resume")
)

// Resume is a person's explicit action on a link whose device latched a
// stop (an emergency or protective stop, a hardware error): the plant is
// told (plant.Resumer) and reopened at once, which may start the robot
// again. A link that is not waiting for a person is left alone: a request
// kept for later would let the stop's own reset start the robot.
func (s *Supervisor) Resume(link string) error {
	links, _ := s.entries()
	for _, e := range links {
		if e.link.Name() != link {
			continue
		}
		res, ok := e.link.Plant().(plant.Resumer)
		if !ok || !e.link.Latched() {
			return fmt.Errorf("%w: link %s is %s and does not wait for a person", ErrNotLatched, link, e.link.State())
		}
		s.logger.Warn("link "+link+": resume asked by a person: the robot may start", "link", link, "event", "resume")
		res.Resume()
		select {
		case e.resume <- struct{}{}:
		default:
		}
		return nil
	}
	return fmt.Errorf("%w %q", ErrNoLink, link)
}

// drain turns a link's events into logs, observer calls and callbacks.
func (s *Supervisor) drain(ctx context.Context, e *linkEntry) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-e.link.Events():
			s.emit(e, ev)
		}
	}
}

func (s *Supervisor) drainNow(e *linkEntry) {
	for {
		select {
		case ev := <-e.link.Events():
			s.emit(e, ev)
		default:
			return
		}
	}
}

// linkStatus is the status a transition reports in the README's words
// (TIMEOUT, RECONNECTED: the emioapi names, docs/simulink-udp.md), "" when
// none applies, and a sentence for the person reading the log.
// reconnect says a handshake done follows a partner lost.
func linkStatus(ev Event, reconnect bool) (status, says string) {
	link := "link " + ev.Link + ": "
	switch {
	case ev.Cause == CausePartnerLost:
		return "TIMEOUT", link + "TIMEOUT: the Simulink host stopped answering (consecutive timeouts or out-of-sequence replies); " +
			"holding the last command and handshaking again (is the model still running?)"
	case ev.Cause == CauseHandshake && ev.From == Handshaking && ev.To == Running && reconnect:
		return "RECONNECTED", link + "RECONNECTED: the Simulink host answers again; running from seq 0"
	case ev.Cause == CauseHandshake:
		return "", link + "handshake done: the Simulink host answers; running"
	case ev.Cause == CauseStart && ev.To == Handshaking:
		return "HANDSHAKING", link + "HANDSHAKING: waiting for the Simulink host (start the model)"
	case ev.Cause == CauseIncomplete:
		return "", link + "degraded: no fresh measurement to send; holding the last command until it comes"
	case ev.Cause == CauseComplete:
		return "", link + "measurement complete; " + ev.To.String()
	case ev.To == Degraded:
		return "", link + "degraded: a device is down; applying nothing while the bridge reopens it"
	case ev.Cause == CauseDeviceReopened:
		return "", link + "device reopened; " + ev.To.String()
	case ev.To == Stopped:
		return "", link + "stopped"
	}
	return "", link + ev.From.String() + " -> " + ev.To.String() + " (" + ev.Cause + ")"
}

func (s *Supervisor) emit(e *linkEntry, ev Event) {
	ev.Time = time.Now()
	// The message is for the person reading the log; machines match on
	// event = "link state" and the keys from, to, cause and status.
	attrs := []any{"event", "link state", "link", ev.Link, "from", ev.From.String(), "to", ev.To.String(), "cause", ev.Cause}
	// A handshake done after a partner lost is RECONNECTED; one after the
	// start, or after a device came back, is the first.
	var reconnect bool
	switch ev.Cause {
	case CausePartnerLost:
		e.partnerLost.Store(true)
	case CauseHandshake:
		reconnect = e.partnerLost.Swap(false)
	case CauseStart:
		e.partnerLost.Store(false)
	}
	status, says := linkStatus(ev, reconnect)
	if status != "" {
		attrs = append(attrs, "status", status)
	}
	if ev.Err != nil {
		attrs = append(attrs, "err", ev.Err)
	}
	// Leaving running is what a person must hear of (a partner lost, a
	// device down), and what the page's last warnings show; the stop
	// itself is not.
	// A link that waits for its first whole measurement at the start (the
	// camera's first frame, the ticks' lock onto it) is said at Info: the
	// no_measurement fault warns if it lasts.
	level := slog.LevelInfo
	if ev.To == Degraded && (ev.Cause != CauseIncomplete || ev.From == Running) ||
		ev.From == Running && ev.To != Running && ev.Cause != CauseStop {
		level = slog.LevelWarn
	}
	s.logger.Log(context.Background(), level, says, attrs...)
	if e.obs != nil {
		if err := e.obs.SetState(ev.To.String()); err != nil && e.setStateFailed.CompareAndSwap(false, true) {
			s.logger.Error("link state not recorded by its observer", "link", ev.Link, "state", ev.To.String(), "err", err)
		}
	}
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(ev)
	}
}

// Health is nil when every link is handshaking or running and every part
// that reports its health is healthy; otherwise it lists what is wrong,
// one problem per line.
func (s *Supervisor) Health() error {
	links, services := s.entries()
	var errs []error
	for _, e := range links {
		var deps []error
		for _, d := range e.deps {
			if h, ok := d.Service.(HealthReporter); ok {
				if err := h.Health(); err != nil {
					deps = append(deps, err)
				}
			}
		}
		st := e.link.State()
		for i, err := range deps {
			// A degraded link's first reason goes on its state's line: one
			// line for one problem, not "is degraded" and then why.
			if i == 0 && (st == Degraded || st == Stopped) {
				errs = append(errs, fmt.Errorf("link %s is %s: %w", e.link.Name(), st, err))
				continue
			}
			errs = append(errs, fmt.Errorf("link %s: %w", e.link.Name(), err))
		}
		if len(deps) == 0 && (st == Degraded || st == Stopped) {
			if err := cmp.Or(e.link.DeviceErr(), e.link.Lack()); err != nil && st == Degraded {
				errs = append(errs, fmt.Errorf("link %s is %s: %w", e.link.Name(), st, err))
			} else {
				errs = append(errs, fmt.Errorf("link %s is %s", e.link.Name(), st))
			}
		}
		if err := e.link.StopErr(); err != nil {
			errs = append(errs, fmt.Errorf("link %s: %w", e.link.Name(), err))
		}
	}
	for _, p := range services {
		if h, ok := p.Service.(HealthReporter); ok {
			if err := h.Health(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
			}
		}
	}
	// One problem per line, every one of them: a person reading /healthz
	// wants the whole list, not the first.
	return errors.Join(errs...)
}

// Ticking reports whether every link's loop has run at least n ticks.
func (s *Supervisor) Ticking(n uint64) bool {
	links, _ := s.entries()
	for _, e := range links {
		if e.link.Ticks() < n {
			return false
		}
	}
	return true
}

// Progress returns a function that reports, at each call, whether every
// link's loop has ticked since the previous call (the first call compares
// with the moment Progress was called). The systemd watchdog pings only
// then, so one stalled link among live ones still gets the service
// restarted. The function is for one caller at a time.
func (s *Supervisor) Progress() func() bool {
	links, _ := s.entries()
	last := make([]uint64, len(links))
	for i, e := range links {
		last[i] = e.link.Ticks()
	}
	return func() bool {
		all := true
		for i, e := range links {
			n := e.link.Ticks()
			if n == last[i] {
				all = false
			}
			last[i] = n
		}
		return all
	}
}

// sleepCtx sleeps d, or less when wake fires (a person asks to resume; nil
// never fires); false when ctx is done.
func sleepCtx(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return ctx.Err() == nil
}

// String names a link for logs.
func (l *Link) String() string { return fmt.Sprintf("link %q", l.cfg.Name) }
