// Package framelock locks a loop's ticks to a camera's frames
// (docs/framelock.md). It follows the camera's frame clock by a robust fit of
// frame number against arrival time on the host: the lower envelope of the
// arrivals over a window of the last 40 s, because USB delivery makes frames
// late, never early. The fit gives the camera's true period (its crystal is
// not the host's) and phase; the ticks are placed on that grid, after each
// predicted frame instant by the p99 of the time until the frame's markers
// are published (delivery and tracking), plus a margin, so that each tick
// reads the frame predicted for it.
//
// Observe runs on the camera goroutine for every frame and does the fit;
// Next runs on the loop thread and only reads the published result. Neither
// allocates.
package framelock

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ErrConfig is an invalid Config.
var ErrConfig = errors.New("invalid configuration")

// Defaults for the zero values of Config.
const (
	// DefaultMargin is the margin after the p99 of the tracker's time. It is
	// capped at a quarter of the nominal period.
	DefaultMargin = time.Millisecond
	// DefaultWindowTime is how much of the stream the fit spans by default
	// (at least 256 frames, at most 4096): with 0.5 ms of arrival jitter at
	// 30 fps, 8 s give the period to 1 ppm only in the median (5.6 ppm at
	// p99), 34 s to 0.4 ppm at p99 (docs/framelock.md "Window").
	DefaultWindowTime = 40 * time.Second
	// DefaultLockAfter is how much of the stream is observed before locking.
	DefaultLockAfter = time.Second
	// DefaultLostPeriods is after how many periods without a frame the lock
	// is Lost.
	DefaultLostPeriods = 5
	// DefaultMaxPPM is how far from nominal the frame rate may be.
	DefaultMaxPPM = 1000
)

// Limits of Config.
const (
	minNominal       = 100 * time.Microsecond
	maxNominal       = 10 * time.Second
	minWindow        = 16
	maxWindow        = 1 << 16
	minDefaultWindow = 256
	maxDefaultWindow = 4096
	minLockFrames    = 8
	maxLostAfter     = time.Hour
	maxPPMLimit      = 10000
	// relockTime: late outliers that persist this long are a new phase, not
	// a USB hiccup.
	relockTime = 250 * time.Millisecond
	// delayTime is the span of readiness the ticks' offset rests on;
	// streamWarmup a stream's first frames, left out of it.
	delayTime    = 10 * time.Second
	streamWarmup = 500 * time.Millisecond
	// refitTime: once locked, the window is refitted this often rather than
	// on every frame; a fit of 40 s of frames moves by nanoseconds in 250 ms.
	refitTime     = 250 * time.Millisecond
	minRelockLate = 3
	quantile      = 0.99
)

// Config configures a Lock. Zero values take the documented defaults.
type Config struct {
	// Nominal is the camera's nominal frame period, 1/fps: 100 µs..10 s.
	Nominal time.Duration
	// Margin is added after the p99 of (ready − predicted frame instant) to
	// place the ticks: 0 means DefaultMargin (at most Nominal/4); at most
	// Nominal/2. A margin is needed: 1 % of frames are past the p99.
	Margin time.Duration
	// Window is how many frames the fit spans: 0 means DefaultWindowTime of
	// frames, 256..4096; else 16..65536. A longer window gives a more
	// precise period but follows a drift of the rate later (by half its
	// length). It also spans at most twice its nominal duration, so that
	// lost frames do not stretch it.
	Window int
	// LockAfter is how much of the stream (in frames at the nominal rate,
	// at least 8) is observed before the lock is trusted: 0 means
	// DefaultLockAfter; at most the window.
	LockAfter time.Duration
	// LostAfter is how long without a frame makes the lock Lost: 0 means
	// DefaultLostPeriods nominal periods; 2 periods..1 h.
	LostAfter time.Duration
	// MaxPPM is how far (ppm) the frame rate may be from nominal for a lock:
	// 0 means DefaultMaxPPM; at most 10000.
	MaxPPM float64
}

// State is where a Lock stands.
type State int

// States.
const (
	// Locking: too few frames or no consistent fit yet; ticks run at the
	// nominal period (or the last estimated one after a lock was lost).
	Locking State = iota
	// Locked: ticks follow the camera's frames.
	Locked
	// Lost: no frame for LostAfter; ticks go on on the last grid (flywheel)
	// until frames come back.
	Lost
)

func (s State) String() string {
	switch s {
	case Locking:
		return "locking"
	case Locked:
		return "locked"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Status is a Lock's estimate and counters.
type Status struct {
	State State
	// Period is the estimated frame period (ns; the fallback period while
	// no fit has two frames), RateHz its frame rate, PPM the rate's
	// difference from nominal: positive when frames come faster.
	Period, RateHz, PPM float64
	// Phase is the newest frame's arrival minus its prediction (0 for the
	// first frame of a fit): the jitter of that frame, normally in
	// [0, Jitter].
	Phase time.Duration
	// Jitter is the p99 of (arrival − lower envelope) over the window.
	Jitter time.Duration
	// Offset is where ticks are placed after each predicted frame instant.
	Offset time.Duration
	// Frames counts the frames observed; Window those in the fit.
	Frames uint64
	Window int
	// Relocks counts fits started over (a frame number that went back or
	// jumped, an arrival far off the prediction, a fit that became
	// inconsistent); Outliers the late frames left out of the fit.
	Relocks, Outliers uint64
}

// sample is one observed frame.
type sample struct {
	frame   uint64
	arrival int64
	delay   int64 // ready − arrival: the tracker's time, clamped
}

// grid is what Observe publishes for Next, Expected and Status: small, and
// copied under the mutex.
type grid struct {
	locked bool
	fitted bool    // a line through the current window's frames, locked or not
	frame0 uint64  // anchor frame of the line
	time0  int64   // ns; the line is at time0 + frac + (n−frame0)·period
	frac   float64 // ns
	period float64 // ns per frame
	offset int64   // ticks are at line(n) + the offset, which slews to this
	// The offset in use slews from offFrom (at offAt) toward offset at
	// slew ns per ns, so that a new p99 of the readiness moves the ticks
	// by at most offsetSlew per period, never in one step (docs/framelock.md
	// "Ticks").
	offFrom, offAt int64
	slew           float64
	step           int64 // the free-running tick period while not locked
	newest         int64 // the newest frame's arrival
	jitter         int64
	phase          int64
	window         int
	frames         uint64
	relocks        uint64
	outlier        uint64
}

// Lock follows a camera's frame clock. Observe may run concurrently with
// Next, Expected and Status.
type Lock struct {
	nominal     float64 // ns
	margin      int64
	maxSpan     int64 // ns a window may span
	maxDelay    int64
	lockFrames  int
	lostAfter   int64
	maxPPM      float64
	relockAfter int
	// The ticks' offset is the p99 of the readiness of the newest
	// delayFrames frames, leaving out a stream's first warmFrames: the
	// first frames of a stream are slow to track (cold caches, a new
	// tracker), and a 40 s window would keep them in its p99 for seconds.
	delayFrames, warmFrames int
	// slewAfter: frames after the lock during which the offset still
	// jumps to each new value, as the readiness of the first second
	// (a p99 of few frames) gives way to a steadier one.
	slewAfter  int
	refitEvery int
	tol        float64 // ns beyond the band that makes an outlier

	// converged: the lock has locked and its offset has stopped jumping
	// (offsetSettle after the lock), the estimate the first send waits
	// for; gaveUp: no fit had locked after settleLocks lock times.
	converged, gaveUp atomic.Bool

	// The loop's side, written by Next only (on the loop's goroutine):
	// the tick it returned last and the fit that placed it (its count of
	// re-locks), so that a call continuing that sequence on the same fit
	// corrects it by at most maxCorr (onFit: that tick continues a
	// sequence on a fit); onGrid: a tick has been on a locked grid
	// (uncorrected); ticking: Next was called.
	lastTick               atomic.Int64
	lastFit                atomic.Uint64
	onFit, onGrid, ticking atomic.Bool
	maxCorr                int64

	// Observe's state (obs held).
	obs     sync.Mutex
	ring    []sample
	head, n int
	xs, ys  []float64 // the window, centred on its oldest frame
	hull    []int32
	scratch []int64
	// The fit: arrival = t0 + a + x·(nominal + b), x = frame − f0.
	f0     uint64
	t0     int64
	a, b   float64
	fitted bool // the fit is of the current window
	// consistent: the fit's jitter band and rate are plausible (a lock
	// needs it; a provisional grid too).
	consistent bool
	sinceFit   int // frames pushed since the last refit
	band       float64
	locked     bool // the current fit has locked
	hasLocked  bool // a fit has locked, this one or one before
	// bad: the refits since badAt were inconsistent while locked.
	bad      bool
	badAt    int64
	late     int // consecutive late outliers
	pushed   int // frames pushed since the fit started over
	lockedAt int // pushed when the fit locked
	step     int64
	frames   uint64
	relocks  uint64
	outliers uint64

	mu  sync.Mutex // held only to copy pub
	pub grid
}

// New validates cfg and returns a Lock, Locking. Errors wrap ErrConfig.
func New(cfg Config) (*Lock, error) {
	if cfg.Nominal < minNominal || cfg.Nominal > maxNominal {
		return nil, fmt.Errorf("framelock: nominal period %v, want %v..%v: %w", cfg.Nominal, minNominal, maxNominal, ErrConfig)
	}
	nom := cfg.Nominal
	if cfg.Margin < 0 || cfg.Margin > nom/2 {
		return nil, fmt.Errorf("framelock: margin %v, want 0..%v (half the period): %w", cfg.Margin, nom/2, ErrConfig)
	}
	margin := cfg.Margin
	if margin == 0 {
		margin = min(DefaultMargin, nom/4)
	}
	window := cfg.Window
	switch {
	case window == 0:
		window = min(max(int(DefaultWindowTime/nom), minDefaultWindow), maxDefaultWindow)
	case window < minWindow || window > maxWindow:
		return nil, fmt.Errorf("framelock: window %d frames, want %d..%d: %w", window, minWindow, maxWindow, ErrConfig)
	}
	lockAfter := cfg.LockAfter
	if lockAfter == 0 {
		lockAfter = DefaultLockAfter
	}
	lockFrames := max(int(lockAfter/nom), minLockFrames)
	if lockAfter < 0 || lockFrames > window {
		return nil, fmt.Errorf("framelock: lock after %v (%d frames), want 0..%v (the window of %d frames): %w",
			lockAfter, lockFrames, time.Duration(window)*nom, window, ErrConfig)
	}
	lostAfter := cfg.LostAfter
	if lostAfter == 0 {
		lostAfter = DefaultLostPeriods * nom
	}
	if lostAfter < 2*nom || lostAfter > maxLostAfter {
		return nil, fmt.Errorf("framelock: lost after %v, want %v..%v: %w", cfg.LostAfter, 2*nom, maxLostAfter, ErrConfig)
	}
	maxPPM := cfg.MaxPPM
	if maxPPM == 0 {
		maxPPM = DefaultMaxPPM
	}
	if !(maxPPM > 0 && maxPPM <= maxPPMLimit) {
		return nil, fmt.Errorf("framelock: max ppm %v, want (0, %d]: %w", cfg.MaxPPM, maxPPMLimit, ErrConfig)
	}
	l := &Lock{
		nominal:     float64(nom),
		margin:      int64(margin),
		maxSpan:     2 * int64(window) * int64(nom),
		maxDelay:    10 * int64(nom),
		lockFrames:  lockFrames,
		lostAfter:   int64(lostAfter),
		maxPPM:      maxPPM,
		relockAfter: max(minRelockLate, int(relockTime/nom)),
		refitEvery:  max(1, int(refitTime/nom)),
		delayFrames: max(minLockFrames, int(delayTime/nom)),
		warmFrames:  max(1, int(streamWarmup/nom)),
		slewAfter:   max(1, int(offsetSettle/nom)),
		tol:         float64(nom) / 3,
		ring:        make([]sample, window),
		xs:          make([]float64, window),
		ys:          make([]float64, window),
		hull:        make([]int32, 0, window),
		scratch:     make([]int64, window),
		step:        int64(nom),
		maxCorr:     min(int64(maxCorrection), int64(nom)/16),
	}
	l.pub = grid{step: l.step, period: l.nominal}
	return l, nil
}

// Observe records one frame: the source's frame number, when it arrived on
// the host (CLOCK_MONOTONIC ns, before tracking) and when its marker vector
// was published (after tracking). It refits the window, which costs O(window)
// on the calling goroutine (the camera's), never on the loop's: on every frame
// while locking, four times a second once locked. It does not allocate.
func (l *Lock) Observe(frame uint64, arrival, ready int64) {
	l.obs.Lock()
	defer l.obs.Unlock()
	l.frames++
	if l.frames >= uint64(settleLocks*l.lockFrames) && !l.hasLocked {
		l.gaveUp.Store(true)
	}
	delay := int64(0)
	if ready > arrival {
		delay = ready - arrival
		if delay < 0 || delay > l.maxDelay { // overflowed, or absurd
			delay = l.maxDelay
		}
	}
	phase := 0.0
	if l.n > 0 {
		var ok bool
		phase, ok = l.predictError(frame, arrival)
		switch {
		case !ok || phase < -l.tol:
			// A frame number that went back or jumped, time that went
			// back, or a frame earlier than any jitter allows: a new
			// stream or a new phase.
			l.restart()
		case phase > l.band+l.tol:
			// Late beyond the jitter band: a hiccup, left out of the fit,
			// unless it persists.
			l.outliers++
			if l.late++; l.late < l.relockAfter {
				l.publish(phase)
				return
			}
			l.restart()
		default:
			l.late = 0
		}
	}
	l.push(sample{frame: frame, arrival: arrival, delay: delay})
	// A fit costs O(window): on every frame while the window is short (to
	// lock soon), then a few times a second.
	if l.sinceFit++; l.n < 2*l.lockFrames || l.sinceFit >= l.refitEvery {
		l.refit(phase)
		return
	}
	l.publish(phase)
}

// predictError returns arrival minus the current fit's prediction for frame,
// or false when the frame cannot belong to the current fit.
func (l *Lock) predictError(frame uint64, arrival int64) (float64, bool) {
	last := l.at(l.n - 1)
	if frame <= last.frame || frame-last.frame > uint64(len(l.ring)) || arrival < last.arrival {
		return 0, false
	}
	if dt := arrival - last.arrival; dt < 0 || dt > l.maxSpan { // overflowed, or too long ago
		return 0, false
	}
	if !l.fitted {
		return float64(arrival-last.arrival) - float64(frame-last.frame)*l.nominal, true
	}
	x := float64(frame - l.f0)
	return float64(arrival-l.t0) - x*l.nominal - (l.a + l.b*x), true
}

// at returns the i-th oldest sample of the window.
func (l *Lock) at(i int) *sample {
	i += l.head
	if i >= len(l.ring) {
		i -= len(l.ring)
	}
	return &l.ring[i]
}

// push appends s, dropping the oldest frames beyond the window's length or
// time span.
func (l *Lock) push(s sample) {
	if l.n == len(l.ring) {
		l.drop()
	}
	l.n++
	l.pushed++
	*l.at(l.n - 1) = s
	for l.n > 1 && s.arrival-l.at(0).arrival > l.maxSpan {
		l.drop()
	}
}

func (l *Lock) drop() {
	l.head++
	if l.head == len(l.ring) {
		l.head = 0
	}
	l.n--
}

// restart throws the window away: the next frame starts a new fit.
func (l *Lock) restart() {
	l.head, l.n = 0, 0
	l.fitted, l.locked, l.consistent = false, false, false
	l.band, l.late = 0, 0
	l.bad = false
	l.relocks++
	l.pushed = 0
}

// refit fits the lower envelope of the window, decides the lock and
// publishes the result. The fit is anchored on the window's oldest frame
// (f0, t0), so the values it works on are small; the anchor stays with the
// fit while the window slides until the next refit.
func (l *Lock) refit(phase float64) {
	l.sinceFit = 0
	if l.n < 2 {
		l.fitted = false
		l.publish(phase)
		return
	}
	first := l.at(0)
	var sx float64
	for i := range l.n {
		s := l.at(i)
		// Centred on the oldest frame and detrended by the nominal period,
		// so that the values are small and exact in float64.
		x := float64(s.frame - first.frame)
		l.xs[i], l.ys[i] = x, float64(s.arrival-first.arrival)-x*l.nominal
		sx += x
	}
	kept := keptFit{l.f0, l.t0, l.a, l.b, l.band}
	l.a, l.b = lowerLine(l.xs[:l.n], l.ys[:l.n], sx/float64(l.n), l.hull)
	l.f0, l.t0, l.fitted = first.frame, first.arrival, true

	// The jitter band: p99 of the residuals above the envelope.
	res := l.scratch[:l.n]
	for i := range res {
		res[i] = int64(math.Round(l.ys[i] - (l.a + l.b*l.xs[i])))
	}
	l.band = float64(quantileOf(res, quantile))
	// The ticks' offset: p99 of ready − predicted frame instant, over the
	// newest frames past the stream's first.
	from := max(0, l.n-l.delayFrames, l.warmFrames-(l.pushed-l.n))
	if l.n-from < minLockFrames {
		from = max(0, l.n-minLockFrames)
	}
	res = res[:l.n-from]
	for i := range res {
		j := from + i
		res[i] = l.at(j).delay + int64(math.Round(l.ys[j]-(l.a+l.b*l.xs[j])))
	}
	offset := quantileOf(res, quantile) + l.margin

	period := l.nominal + l.b
	consistent := l.band <= l.nominal/4 && math.Abs(ppmOf(l.nominal, period)) <= l.maxPPM
	l.consistent = consistent
	newest := *l.at(l.n - 1)
	switch {
	case l.locked && !consistent && (!l.bad || newest.arrival-l.badAt < int64(relockTime)):
		// One inconsistent fit is more likely the estimator than the
		// stream: the envelope of a short window can pivot on two close
		// points, and with 2 ms of jitter a fit of the first seconds
		// swings by a thousand ppm. The last consistent fit stays, and
		// its grid, unless inconsistency persists (a re-lock would move
		// the ticks).
		if !l.bad {
			l.bad, l.badAt = true, newest.arrival
		}
		l.f0, l.t0, l.a, l.b, l.band = kept.f0, kept.t0, kept.a, kept.b, kept.band
		l.consistent = true
		l.publish(phase)
		return
	case l.locked && !consistent:
		// The fit no longer describes the stream: start over from the
		// newest frame.
		l.restart()
		l.push(newest)
		l.publish(phase)
		return
	case !l.locked && consistent && l.n >= l.lockFrames:
		l.locked, l.hasLocked = true, true
		l.lockedAt = l.pushed
	}
	if l.locked && l.pushed-l.lockedAt >= l.slewAfter {
		// The offset no longer jumps: what moves the grid now is slewed
		// within a few ticks.
		l.converged.Store(true)
	}
	l.bad = false
	if l.locked {
		l.step = int64(math.Round(period))
	}
	l.publishFit(phase, offset)
}

// keptFit is a fit's line and band, restored when a refit is not trusted.
type keptFit struct {
	f0   uint64
	t0   int64
	a, b float64
	band float64
}

// publish publishes the counters and the newest arrival, keeping the grid.
func (l *Lock) publish(phase float64) {
	l.mu.Lock()
	l.setCommon(phase)
	if !l.locked {
		l.pub.locked = false
	}
	l.mu.Unlock()
}

// publishFit publishes the fit of the window. Callers hold obs.
func (l *Lock) publishFit(phase float64, offset int64) {
	l.mu.Lock()
	p := &l.pub
	// Once locked, the offset slews from the one in use; a fit that starts
	// (or a provisional one) takes its offset at once.
	from, now := offset, l.at(l.n-1).arrival
	if p.locked && l.locked && l.pushed-l.lockedAt >= l.slewAfter {
		from = p.offsetAt(now)
	}
	p.offAt = now
	l.setCommon(phase)
	p.locked = l.locked
	p.frame0, p.time0 = l.f0, l.t0
	p.frac, p.period = l.a, l.nominal+l.b
	p.offset, p.offFrom = offset, from
	p.slew = float64(offsetSlew) / l.nominal
	l.mu.Unlock()
}

// offsetSettle is how long after the lock the offset still jumps, and the
// first send waits: in the first second after the lock the grid moves by up
// to a millisecond (measured: docs/realtime.md §16), which the ticks would
// have to slew over while sending.
const offsetSettle = time.Second

// offsetSlew is how far the ticks' offset may move in one period: a new
// p99 of the readiness becomes an interval at most this far from the
// period, not a step of a millisecond in Simulink's time.
const offsetSlew = 20 * time.Microsecond

// offsetAt returns the offset in use at t.
func (g *grid) offsetAt(t int64) int64 {
	if g.offFrom == g.offset || t <= g.offAt {
		return g.offFrom
	}
	move := float64(t-g.offAt) * g.slew
	if g.offset > g.offFrom {
		return min(g.offset, g.offFrom+int64(move))
	}
	return max(g.offset, g.offFrom-int64(move))
}

// setCommon fills what every publication carries. Callers hold obs and mu.
func (l *Lock) setCommon(phase float64) {
	p := &l.pub
	p.step, p.window = l.step, l.n
	p.fitted = l.fitted && l.consistent && l.n >= minProvisional
	if l.n > 0 {
		p.newest = l.at(l.n - 1).arrival
	}
	if !l.fitted {
		p.period = float64(l.step)
	}
	p.jitter = int64(l.band)
	p.phase = int64(math.Max(math.Min(phase, maxReach), -maxReach))
	p.frames, p.relocks, p.outlier = l.frames, l.relocks, l.outliers
}

func (l *Lock) snapshot() grid {
	l.mu.Lock()
	g := l.pub
	l.mu.Unlock()
	return g
}

// Next returns the deadline (CLOCK_MONOTONIC ns) of the tick after one at
// prev. For the first tick, prev is the loop's start time, or 0 to place it
// after now (the current time; the grid does not need it otherwise: a loop
// that overran calls Next again to skip ticks, and counts them). While
// Locking it follows the provisional fit once it has a few consistent
// frames, else it is prev plus the nominal period (or the last estimated
// one after a lock was lost). Locked or Lost (the flywheel), it is the first
// instant of the locked grid, each predicted frame instant plus the offset,
// at least half a period after prev: ticks are never closer than half a
// period, and a new phase moves them by at most one period.
//
// When prev is the tick Next returned last and the fit that placed it is
// still the one in use, the tick is at most maxCorrection (50 µs) from prev
// plus the period: a refit that moves the grid is slewed over as many ticks
// as it needs, never a step of the send grid (docs/framelock.md "Ticks").
// Any other prev (the first tick, a tick after a re-lock or after the free
// run) goes onto the grid at once. Next is called by one goroutine, the
// loop's. It does not allocate.
func (l *Lock) Next(prev, now int64) int64 {
	cont := prev != 0 && prev == l.lastTick.Load() && l.onFit.Load()
	if prev == 0 {
		prev = now
	}
	g := l.snapshot()
	// cont: prev is the last tick Next placed, following this fit.
	cont = cont && g.relocks == l.lastFit.Load()
	// While locking, the provisional fit already places the ticks after
	// the frames: its period may be off by a percent for the second it
	// lasts, its phase is right, so no tick reads a frame twice then.
	if g.locked || g.fitted {
		if t, ok := g.tickAtOrAfter(prev + int64(math.Ceil(g.period/2))); ok && t > prev {
			target := t
			if cont {
				base := prev + int64(math.Round(g.period))
				t = min(max(t, base-l.maxCorr), base+l.maxCorr)
			}
			if g.locked && t == target && l.converged.Load() {
				l.onGrid.Store(true)
			}
			l.lastTick.Store(t)
			l.lastFit.Store(g.relocks)
			l.onFit.Store(true)
			l.ticking.Store(true)
			return t
		}
	}
	// The free run. A fit that was followed and is only inconsistent for
	// a refit or two is slewed back to; any other fit is gone onto at once.
	t := prev + g.step
	l.lastTick.Store(t)
	l.onFit.Store(cont)
	l.ticking.Store(true)
	return t
}

// maxCorrection is how far Next moves a tick off the previous one plus the
// period to follow the grid: with the period's own error (a few ppm once
// locked), every send interval stays within 100 µs of the camera's.
const maxCorrection = 50 * time.Microsecond

// Settled reports whether the ticks are on the camera's grid for good:
// the lock has locked once and a tick placed by Next has reached its grid
// (when a loop ticks on it; a re-lock later moves the grid by at most a
// period), or, on a camera it cannot lock on, three times the lock's time
// has passed, so that a link waiting for it waits no longer. Until then a
// link sends no measurement (docs/framelock.md "Ticks"). Any goroutine.
func (l *Lock) Settled() bool {
	if l.gaveUp.Load() {
		return true
	}
	return l.converged.Load() && (l.onGrid.Load() || !l.ticking.Load())
}

// settleLocks is how many lock times a camera that does not lock is given.
const settleLocks = 3

// minProvisional is how many frames a fit needs before Next follows it
// while still locking.
const minProvisional = 4

// Expected returns the frame a tick at deadline should read: the newest frame
// predicted ready by then (its predicted instant plus the p99 of its
// readiness). A tick placed by Next reads the frame it was placed for, a
// margin after its predicted readiness, so that the fit moving by less than
// the margin between Next and Expected does not change the answer. ok is
// false while Locking. While Lost it is the frame the camera would have
// delivered.
func (l *Lock) Expected(deadline int64) (frame uint64, ok bool) {
	g := l.snapshot()
	if !g.locked {
		return 0, false
	}
	deadline += l.margin // ticks are a margin after readiness
	k, ok := g.index(deadline)
	if !ok {
		return 0, false
	}
	for g.tick(k+1) <= deadline {
		k++
	}
	for g.tick(k) > deadline {
		k--
	}
	if k < 0 && uint64(-k) > g.frame0 {
		return 0, false
	}
	return g.frame0 + uint64(k), true
}

// Status returns the Lock's estimate and counters; now (CLOCK_MONOTONIC ns)
// decides whether frames stopped (Lost).
func (l *Lock) Status(now int64) Status {
	g := l.snapshot()
	st := Status{
		State: Locking, Period: g.period, Phase: time.Duration(g.phase), Jitter: time.Duration(g.jitter),
		Offset: time.Duration(g.offsetAt(now)), Frames: g.frames, Window: g.window, Relocks: g.relocks, Outliers: g.outlier,
	}
	if g.locked {
		st.State = Locked
		if now-g.newest > l.lostAfter {
			st.State = Lost
		}
	}
	if g.period > 0 {
		st.RateHz = 1e9 / g.period
		st.PPM = ppmOf(l.nominal, g.period)
	}
	return st
}

// ppmOf is the rate of frames of the given period against nominal, in ppm:
// positive when faster.
func ppmOf(nominal, period float64) float64 { return (nominal/period - 1) * 1e6 }

// tick returns the tick instant of frame frame0+k.
func (g *grid) tick(k int64) int64 {
	base := g.time0 + int64(math.Round(g.frac+float64(k)*g.period))
	return base + g.offsetAt(base)
}

// maxReach bounds how far from the anchor the grid is extrapolated (ns), so
// that float64 and int64 arithmetic stays exact: about 104 days.
const maxReach = 1 << 53

// index returns the grid index whose tick is near t (within a few ns).
func (g *grid) index(t int64) (int64, bool) {
	t -= g.offsetAt(t)
	d := t - g.time0
	if (t >= g.time0) != (d >= 0) || d > maxReach || d < -maxReach {
		return 0, false
	}
	return int64(math.Floor((float64(d) - g.frac) / g.period)), true
}

// tickAtOrAfter returns the first tick instant at or after t.
func (g *grid) tickAtOrAfter(t int64) (int64, bool) {
	k, ok := g.index(t)
	if !ok {
		return 0, false
	}
	for g.tick(k) < t {
		k++
	}
	for g.tick(k-1) >= t {
		k--
	}
	return g.tick(k), true
}

// lowerLine fits the lower envelope of the points (xs strictly increasing):
// the line below every point that minimises the sum of the vertical
// distances to them, the maximum-likelihood line for one-sided noise. That
// line is the edge of the lower convex hull above the mean of xs (the sum is
// n·(ȳ − a − b·x̄), so the line must be highest at x̄). hull is scratch for
// the hull's indices.
func lowerLine(xs, ys []float64, xm float64, hull []int32) (a, b float64) {
	h := hull[:0]
	for i := range xs {
		for len(h) >= 2 {
			o, p := h[len(h)-2], h[len(h)-1]
			// Pop p unless o → p → i turns left (p is strictly below o–i).
			if (xs[p]-xs[o])*(ys[i]-ys[o])-(ys[p]-ys[o])*(xs[i]-xs[o]) > 0 {
				break
			}
			h = h[:len(h)-1]
		}
		h = append(h, int32(i))
	}
	if len(h) == 1 {
		return ys[h[0]], 0
	}
	j := 0
	for j < len(h)-2 && xs[h[j+1]] <= xm {
		j++
	}
	p, q := h[j], h[j+1]
	b = (ys[q] - ys[p]) / (xs[q] - xs[p])
	return ys[p] - b*xs[p], b
}

// quantileOf returns the nearest-rank q-quantile of a, reordering a.
func quantileOf(a []int64, q float64) int64 {
	k := int(math.Ceil(q*float64(len(a)))) - 1
	return selectKth(a, max(k, 0))
}

// selectKth returns the k-th smallest of a (from 0), reordering a:
// quickselect with a median-of-three pivot.
func selectKth(a []int64, k int) int64 {
	lo, hi := 0, len(a)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		p := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < p {
				i++
			}
			for a[j] > p {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}
