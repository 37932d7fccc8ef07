package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Service is a long-running part the supervisor runs and restarts.
type Service interface {
	Serve(ctx context.Context) error
}

// Backoff spaces restarts: exponential from Initial to Max with ±Jitter, and
// decaying back to Initial once the part has stayed healthy for Healthy.
type Backoff struct {
	Initial, Max time.Duration
	Factor       float64
	Jitter       float64 // fraction, 0..1
	Healthy      time.Duration
}

// DefaultBackoff restarts after 100 ms, then 200 ms … up to 10 s, ±20 %.
func DefaultBackoff() Backoff {
	return Backoff{Initial: 100 * time.Millisecond, Max: 10 * time.Second, Factor: 2, Jitter: 0.2, Healthy: 30 * time.Second}
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
	// Decay: each Healthy period of good running forgets one doubling, so a
	// flapping device is not hammered and a long-stable one restarts fast.
	if s.everUp && s.b.Healthy > 0 {
		healthy := int(now.Sub(s.upSince) / s.b.Healthy)
		s.attempt = max(0, s.attempt-healthy)
		s.everUp = false
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
	// OnEvent is called for every link event, from the supervisor's
	// goroutines (never from a loop thread). It may be nil.
	OnEvent func(Event)
	// Seed makes the jitter reproducible; 0 picks one.
	Seed uint64
}

// Supervisor runs named links and services. It restarts a service that fails,
// reopens a link's failed device while the link's loop keeps ticking, turns
// link events into logs and callbacks, and on stop waits for everything and
// halts every plant.
type Supervisor struct {
	cfg      SupervisorConfig
	logger   *slog.Logger
	links    []*Link
	services []namedService
	mu       sync.Mutex
	serving  bool
}

type namedService struct {
	name string
	svc  Service
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
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	return &Supervisor{cfg: cfg, logger: cfg.Logger}
}

// ErrServing is returned when parts are added to a running supervisor.
var ErrServing = errors.New("bridge: supervisor already serving")

// AddLink adds a link. Links must be added before Serve.
func (s *Supervisor) AddLink(l *Link) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		return ErrServing
	}
	s.links = append(s.links, l)
	return nil
}

// Add adds a named service (a relay, the metrics server).
func (s *Supervisor) Add(name string, svc Service) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serving {
		return ErrServing
	}
	s.services = append(s.services, namedService{name, svc})
	return nil
}

// Links returns the supervised links.
func (s *Supervisor) Links() []*Link {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Link(nil), s.links...)
}

// Serve runs everything until ctx is done, then stops everything and waits.
// It returns nil on a clean stop.
func (s *Supervisor) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		return ErrServing
	}
	s.serving = true
	links, services := s.links, s.services
	s.mu.Unlock()

	// Links stop first and halt their plants; services (the metrics server,
	// built-in partners) stop after them, so the last ticks still exchange
	// and the last scrapes still answer.
	svcCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServices()
	var linkWG, svcWG sync.WaitGroup
	seed := s.cfg.Seed
	for i, l := range links {
		seed := seed + 2*uint64(i)
		linkWG.Go(func() { s.restart(ctx, "link "+l.Name(), l, seed) })
		linkWG.Go(func() { s.reopen(ctx, l, seed+1) })
		linkWG.Go(func() { s.drain(ctx, l) })
	}
	for i, ns := range services {
		seed := seed + 2*uint64(len(links)+i)
		svcWG.Go(func() { s.restart(svcCtx, ns.name, ns.svc, seed) })
	}
	<-ctx.Done()
	linkWG.Wait()
	stopServices()
	svcWG.Wait()
	// Events emitted while stopping (halt, stopped) are still delivered.
	for _, l := range links {
		s.drainNow(l)
	}
	return nil
}

// restart runs svc until ctx is done, restarting it with backoff when it
// returns an error or returns early.
func (s *Supervisor) restart(ctx context.Context, name string, svc Service, seed uint64) {
	bo := newBackoffState(s.cfg.Backoff, seed)
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
		d := bo.next(time.Now())
		s.logger.Error("failed; restarting", "part", name, "err", err, "ran", time.Since(start).Round(time.Millisecond), "retry_in", d.Round(time.Millisecond))
		if !sleepCtx(ctx, d) {
			return
		}
	}
}

// reopen waits for a link's device to fail and reopens it with backoff while
// the loop keeps ticking (the link is degraded meanwhile).
func (s *Supervisor) reopen(ctx context.Context, l *Link, seed uint64) {
	r, ok := l.Plant().(Reopener)
	bo := newBackoffState(s.cfg.Backoff, seed)
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.DeviceDown():
		}
		if !ok {
			s.logger.Error("device failed and cannot be reopened; the link stays degraded", "link", l.Name())
			continue
		}
		for attempt := 1; ; attempt++ {
			d := bo.next(time.Now())
			if !sleepCtx(ctx, d) {
				return
			}
			err := r.Reopen(ctx)
			if err == nil {
				bo.up(time.Now())
				s.logger.Info("device reopened", "link", l.Name(), "attempt", attempt)
				l.DeviceUp()
				break
			}
			s.logger.Warn("device reopen failed", "link", l.Name(), "attempt", attempt, "err", err)
		}
	}
}

// drain turns a link's events into logs and callbacks.
func (s *Supervisor) drain(ctx context.Context, l *Link) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-l.Events():
			s.emit(ev)
		}
	}
}

func (s *Supervisor) drainNow(l *Link) {
	for {
		select {
		case ev := <-l.Events():
			s.emit(ev)
		default:
			return
		}
	}
}

func (s *Supervisor) emit(ev Event) {
	ev.Time = time.Now()
	attrs := []any{"link", ev.Link, "from", ev.From.String(), "to", ev.To.String(), "cause", ev.Cause}
	if ev.Err != nil {
		attrs = append(attrs, "err", ev.Err)
	}
	level := slog.LevelInfo
	if ev.To == Degraded {
		level = slog.LevelWarn
	}
	s.logger.Log(context.Background(), level, "link state", attrs...)
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(ev)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// String names a link for logs.
func (l *Link) String() string { return fmt.Sprintf("link %q", l.cfg.Name) }
