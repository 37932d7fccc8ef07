// Package fault watches the fault conditions of a link and reports them the
// way the person next to the robot needs them (docs/faults.md): each fault is
// logged once when it starts, with a count at most once a minute while it
// lasts, and once when it ends; and the faults active now are a list for
// /healthz and systemd's STATUS= line.
//
// A fault is read, never pushed: a Probe is a function the watcher polls off
// the real-time thread (a state, a counter the loop keeps anyway), so
// watching costs the loop nothing.
package fault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Errors returned by this package.
var (
	// ErrFault: something is wrong now; see *Error for what.
	ErrFault = errors.New("fault: active")
	// ErrConfig: a watcher's configuration is not acceptable.
	ErrConfig = errors.New("fault: bad configuration")
)

// Probe is one fault condition of a link.
type Probe struct {
	// Name is the fault's label in metrics and logs: lower case, digits
	// and underscores ("wrong_size").
	Name string
	// Title says what is wrong in the words of a lab engineer ("replies
	// of the wrong size from the Simulink host").
	Title string
	// Advice says what to do about it.
	Advice string
	// After is how long a level condition must hold before it is a fault:
	// a handshake that takes a moment, a camera that starts, is none.
	After time.Duration
	// Level reads a condition that holds or not, with a detail naming
	// what ("servo 2: 74 °C, limit 72 °C"). Exactly one of Level and
	// Events is set.
	Level func() (active bool, detail string)
	// Events reads a cumulative count of bad events (wrong-size replies);
	// the fault is active while it rises and ends once it has not risen
	// for the watcher's Quiet time.
	Events func() uint64
	// Detail, optional with Events, names what the last events were.
	Detail func() string
	// Window, optional with Events, makes the fault a rate: it starts only
	// when more than Allow events fell within the last Window, and ends
	// once no more than Allow did and none came for the Quiet time. A few
	// overruns a minute are a loaded machine, not a failure.
	Window time.Duration
	Allow  uint64
}

// Sink receives the faults' states, for metrics.
type Sink interface {
	// Set says whether the named fault is active now.
	Set(name string, active bool)
	// Started counts one start of the named fault.
	Started(name string)
}

// Config configures a Watcher.
type Config struct {
	// Link names the link in log lines.
	Link   string
	Logger *slog.Logger
	Probes []Probe
	// Sink, if set, receives every change.
	Sink Sink
	// Every is the polling period; 0 means 250 ms.
	Every time.Duration
	// Quiet is how long an event fault stays without a new event before it
	// ends; 0 means 5 s.
	Quiet time.Duration
	// Repeat is how often a lasting fault is logged again, with its count;
	// 0 means one minute.
	Repeat time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Active is a fault active now.
type Active struct {
	Name, Title, Advice string
	// Detail names what, as of the last poll ("servo 2: 74 °C").
	Detail string
	// Since is when the fault started.
	Since time.Time
	// Events counts the events since it started (event faults).
	Events uint64
}

// String is the fault in one line: "replies of the wrong size (48 bytes): 12 events".
func (a Active) String() string {
	var b strings.Builder
	b.WriteString(a.Title)
	if a.Detail != "" {
		fmt.Fprintf(&b, " (%s)", a.Detail)
	}
	if a.Events > 0 {
		fmt.Fprintf(&b, ", %d since it started", a.Events)
	}
	return b.String()
}

// Error lists the faults active now; errors.Is(err, ErrFault) holds.
type Error struct {
	Faults []Active
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrFault) hold.
func (e *Error) Is(target error) bool { return target == ErrFault }

// probeState is what the watcher knows of one probe.
type probeState struct {
	Probe
	seen     time.Time // when the level condition was first seen, zero when not
	on       bool
	since    time.Time
	events   uint64 // the count at the last poll
	base     uint64 // the count when the fault started
	lastRise time.Time
	logged   time.Time // when it was last logged
	loggedN  uint64    // events at that log
	detail   string
	primed   bool // events has been read once
	// With a Window: the counts at recent polls, oldest first from at.
	ring []sample
	at   int
	n    int
}

// sample is an event count at a poll.
type sample struct {
	t time.Time
	n uint64
}

// push records count n at t, dropping the oldest sample when full.
func (p *probeState) push(t time.Time, n uint64) {
	i := (p.at + p.n) % len(p.ring)
	if p.n == len(p.ring) {
		p.at = (p.at + 1) % len(p.ring)
	} else {
		p.n++
	}
	p.ring[i] = sample{t, n}
}

// inWindow is how many events fell within the window ending at now, given
// the count n now: n less the count at the oldest poll still inside it.
func (p *probeState) inWindow(now time.Time, n uint64) uint64 {
	for p.n > 1 && now.Sub(p.ring[(p.at+1)%len(p.ring)].t) >= p.Window {
		p.at = (p.at + 1) % len(p.ring)
		p.n--
	}
	if p.n == 0 {
		return 0
	}
	return n - p.ring[p.at].n
}

// Watcher polls probes and reports their faults. Serve it beside the link;
// Active and Health are safe from any goroutine.
type Watcher struct {
	cfg    Config
	log    *slog.Logger
	mu     sync.Mutex
	probes []*probeState
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// New checks cfg and returns its watcher.
func New(cfg Config) (*Watcher, error) {
	if cfg.Every <= 0 {
		cfg.Every = 250 * time.Millisecond
	}
	if cfg.Quiet <= 0 {
		cfg.Quiet = 5 * time.Second
	}
	if cfg.Repeat <= 0 {
		cfg.Repeat = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Link != "" {
		log = log.With("link", cfg.Link)
	}
	w := &Watcher{cfg: cfg, log: log}
	seen := map[string]bool{}
	for _, p := range cfg.Probes {
		switch {
		case !nameRE.MatchString(p.Name):
			return nil, fmt.Errorf("%w: probe name %q (want lower case letters, digits and _)", ErrConfig, p.Name)
		case seen[p.Name]:
			return nil, fmt.Errorf("%w: two probes named %q", ErrConfig, p.Name)
		case (p.Level == nil) == (p.Events == nil):
			return nil, fmt.Errorf("%w: probe %q needs exactly one of Level and Events", ErrConfig, p.Name)
		case p.Title == "":
			return nil, fmt.Errorf("%w: probe %q has no title", ErrConfig, p.Name)
		case p.Window < 0 || p.Window > 0 && p.Events == nil:
			return nil, fmt.Errorf("%w: probe %q has a window of %v (want one > 0, on an Events probe)", ErrConfig, p.Name, p.Window)
		}
		seen[p.Name] = true
		ps := &probeState{Probe: p}
		if p.Window > 0 {
			// A sample per poll over the window, with room for polls that
			// come early.
			ps.ring = make([]sample, 2*int(p.Window/cfg.Every)+2)
		}
		w.probes = append(w.probes, ps)
	}
	return w, nil
}

// Names returns the probes' names, in order.
func (w *Watcher) Names() []string {
	out := make([]string, len(w.probes))
	for i, p := range w.probes {
		out[i] = p.Name
	}
	return out
}

// Serve polls until ctx is done. It may be served again; the faults'
// states carry over.
func (w *Watcher) Serve(ctx context.Context) error {
	t := time.NewTicker(w.cfg.Every)
	defer t.Stop()
	for {
		w.Poll()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Poll reads every probe once and reports what changed. Serve calls it;
// tests call it with their own clock.
func (w *Watcher) Poll() {
	now := w.cfg.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.probes {
		if p.Level != nil {
			w.level(p, now)
		} else {
			w.count(p, now)
		}
	}
}

func (w *Watcher) level(p *probeState, now time.Time) {
	active, detail := p.Level()
	if !active {
		p.seen = time.Time{}
		if p.on {
			w.end(p, now)
		}
		return
	}
	p.detail = detail
	if p.seen.IsZero() {
		p.seen = now
	}
	switch {
	case !p.on && now.Sub(p.seen) >= p.After:
		w.start(p, p.seen, 0)
	case p.on && now.Sub(p.logged) >= w.cfg.Repeat:
		w.log.Warn(p.Title+" (still)", "fault", p.Name, "detail", p.detail, "for", roundDur(now.Sub(p.since)).String())
		p.logged = now
	}
}

func (w *Watcher) count(p *probeState, now time.Time) {
	n := p.Events()
	if !p.primed {
		// Events before the watcher's first poll are history, not a
		// fault now.
		p.primed, p.events = true, n
		if p.ring != nil {
			p.push(now, n)
		}
		return
	}
	if n < p.events { // a counter reset (a rebuilt part): start over
		p.events = n
		p.at, p.n = 0, 0
		if p.ring != nil {
			p.push(now, n)
		}
		return
	}
	if p.ring != nil {
		w.rate(p, now, n)
		return
	}
	prev := p.events
	rose := n > prev
	p.events = n
	if rose {
		p.lastRise = now
		if p.Detail != nil {
			p.detail = p.Detail()
		}
		if !p.on {
			w.start(p, now, prev)
			return
		}
	}
	if !p.on {
		return
	}
	switch {
	case now.Sub(p.lastRise) >= w.cfg.Quiet:
		w.end(p, now)
	case rose && now.Sub(p.logged) >= w.cfg.Repeat:
		w.log.Warn(p.Title+" (still)", "fault", p.Name, "detail", p.detail,
			"events", n-p.loggedN, "in", roundDur(now.Sub(p.logged)).String(), "for", roundDur(now.Sub(p.since)).String())
		p.logged, p.loggedN = now, n
	}
}

// rate is count for a probe with a Window.
func (w *Watcher) rate(p *probeState, now time.Time, n uint64) {
	prev := p.events
	p.events = n
	p.push(now, n)
	recent := p.inWindow(now, n)
	if n > prev {
		p.lastRise = now
	}
	if recent > p.Allow || p.on {
		p.detail = fmt.Sprintf("%d in the last %v, more than %d", recent, roundDur(p.Window), p.Allow)
		if p.Detail != nil {
			p.detail = p.Detail() + "; " + p.detail
		}
	}
	switch {
	case !p.on && recent > p.Allow:
		w.start(p, now, n-recent)
	case p.on && recent <= p.Allow && now.Sub(p.lastRise) >= w.cfg.Quiet:
		w.end(p, now)
	case p.on && n > prev && now.Sub(p.logged) >= w.cfg.Repeat:
		w.log.Warn(p.Title+" (still)", "fault", p.Name, "detail", p.detail,
			"events", n-p.loggedN, "in", roundDur(now.Sub(p.logged)).String(), "for", roundDur(now.Sub(p.since)).String())
		p.logged, p.loggedN = now, n
	}
}

// start starts p's fault; base is the event count before the events that
// started it.
func (w *Watcher) start(p *probeState, since time.Time, base uint64) {
	p.on, p.since, p.logged = true, since, w.cfg.Now()
	p.base, p.loggedN = base, p.events
	attrs := []any{"fault", p.Name}
	if p.Events != nil {
		attrs = append(attrs, "events", p.events-base)
	}
	if p.detail != "" {
		attrs = append(attrs, "detail", p.detail)
	}
	if p.Advice != "" {
		attrs = append(attrs, "advice", p.Advice)
	}
	w.log.Warn(p.Title, attrs...)
	if w.cfg.Sink != nil {
		w.cfg.Sink.Started(p.Name)
		w.cfg.Sink.Set(p.Name, true)
	}
}

func (w *Watcher) end(p *probeState, now time.Time) {
	attrs := []any{"fault", p.Name, "lasted", roundDur(now.Sub(p.since)).String()}
	if p.Events != nil {
		attrs = append(attrs, "events", p.events-p.base)
	}
	w.log.Info(p.Title+": over", attrs...)
	p.on, p.detail = false, ""
	if w.cfg.Sink != nil {
		w.cfg.Sink.Set(p.Name, false)
	}
}

// Active returns the faults active now, in probe order.
func (w *Watcher) Active() []Active {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Active
	for _, p := range w.probes {
		if !p.on {
			continue
		}
		a := Active{Name: p.Name, Title: p.Title, Advice: p.Advice, Detail: p.detail, Since: p.since}
		if p.Events != nil {
			a.Events = p.events - p.base
		}
		out = append(out, a)
	}
	return out
}

// Health is nil when no fault is active, else an *Error listing them.
func (w *Watcher) Health() error {
	if a := w.Active(); len(a) > 0 {
		return &Error{Faults: a}
	}
	return nil
}

// roundDur keeps durations in logs readable: 12.3s, not 12.345678901s;
// they are logged as text, which JSON would otherwise give in nanoseconds.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
