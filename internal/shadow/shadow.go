// Package shadow runs a link's simulator beside its real plant, off the
// loop thread: the shadow twin (docs/architecture.md "The shadow twin").
// Each tick the loop hands it what the real plant measured and what it was
// given (the link's tick record); the twin gives its model the same
// command, on the same tick times, and keeps, per measured value, the
// divergence real − model. A divergence beyond its field's threshold for
// the hold time is a fault that names the value and its size; when it ends,
// the model is put back on the real state.
package shadow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/simulink"
)

// Model is a simulator that can stand beside a real plant: it moves on the
// tick times it is told (plant.Stepped), and can be put on the state a real
// measurement shows (Sync).
type Model interface {
	plant.Plant
	plant.Stepped
	Sync(measured []float64) error
}

// Follower is a model that keeps a clock of the real plant's own (a
// scene's simulation time, which counts the exchanges the scene made): it
// is shown each real measurement before it predicts, and moves itself to
// that clock. An exchange the real plant missed or answered a tick late (a
// busy machine's) is not a fault of the robot, and an integrating model
// would carry it for ever; a model put back on the real state at each
// such tick would hide what it is there to find.
type Follower interface {
	Follow(measured []float64)
}

// ErrConfig is a twin that cannot be made.
var ErrConfig = errors.New("shadow: bad configuration")

// Config is a twin's. A value's fault starts when it has been past its
// field's threshold for Hold, and ends when it has been back under it for
// Clear: a stuck servo whose goal swings past where it stuck does not end
// and start a fault at every crossing.
type Config struct {
	Model  Model
	Layout plant.Layout // the real plant's, and the model's
	// Threshold is, per measured field, the divergence past which a value
	// is watched for Hold; a field without one is compared, not watched.
	Threshold map[string]float64
	Hold      time.Duration
	// Clear is how long a value must be back with the model to end its
	// fault (0: Hold).
	Clear time.Duration
	// Integrating names measured fields that integrate the commands (a
	// wheel's angle): what a fault lost stays lost, so such a fault also
	// ends once its divergence has stopped growing (moved by less than a
	// tenth of the threshold) for Clear; a value that goes on leaving the
	// model (a wheel that still slips) keeps it.
	Integrating []string
	// Settling, if set, says the real plant is moving by itself toward its
	// command (an Emio's servos rejoining it at a bounded speed after a
	// set-up, a power cycle or a resume): its ticks are not compared, and
	// the model starts again from the real state after.
	Settling func() bool
	// Skip names measured fields the model does not predict (an Emio's
	// markers without a marker model): never compared, their divergence NaN.
	Skip []string
	// Buffer is how many ticks may wait between the loop and the twin
	// (0: 256); a tick that finds it full is dropped and counted.
	Buffer int
	// Words, if set, says what a fault means in a lab's words
	// (Fault.Message); else Fault.String.
	Words func(Fault) string
	// Out, if set, is handed each compared tick from Serve's goroutine, its
	// measurement the divergence (NaN where not modelled): a telemetry tap
	// of its own, so that a recording and its report carry the twin.
	Out bridge.TickRecorder
}

// DefaultHold is how long a divergence must last to be a fault when the
// configuration says nothing: past a servo's step response and a frame's
// age, short enough that a person still watches the move that caused it.
const DefaultHold = 500 * time.Millisecond

// DefaultClear is how long a value must be back with the model for its
// fault to end when the configuration says nothing: longer than a slow
// swing of a leg through the place where a servo jammed.
const DefaultClear = 2 * time.Second

// Fault is a measured value that left the model for the hold time.
type Fault struct {
	Field string
	Index int // 1-based within the field
	Unit  string
	// Size is the largest |real − model| while it lasted, Last the last.
	Size, Last float64
	// Since is the tick time it went past the threshold; For how long it
	// has been past it.
	Since int64
	For   time.Duration
	Ended bool
	// Message is what the fault means (Config.Words), in a Snapshot.
	Message string
}

func (f Fault) String() string {
	state := "diverges"
	if f.Ended {
		state = "diverged"
	}
	return fmt.Sprintf("%s %d %s from the model by %.3g %s (for %v)", f.Field, f.Index, state, f.Size, f.Unit, f.For.Round(time.Millisecond))
}

// tick is one tick as the loop handed it over.
type tick struct {
	at       int64
	fresh    bool // the measurement was read this tick (not a device down's)
	applied  bool
	measured []float64
	command  []float64
}

// Twin is a shadow twin. RecordTick runs on the loop thread, never blocks
// and allocates nothing; Serve runs the model in its own goroutine;
// Snapshot and Resync may be called from any.
type Twin struct {
	cfg   Config
	names []string // per measured value: its field
	index []int
	units []string
	thr   []float64 // NaN: not watched
	skip  []bool    // not predicted by the model: never compared
	integ []bool    // integrates the commands (Config.Integrating)

	ring       []tick
	head, tail atomic.Uint64 // written by RecordTick, by Serve
	wake       chan struct{}
	dropped    atomic.Uint64

	// Serve's own.
	pred    []float64
	last    []float64 // the last command applied, restored after a Sync
	synced  bool
	overAt  []int64 // per value: when it went past its threshold, 0 if not
	underAt []int64 // per firing value: when it came back under, 0 if not
	// Per firing integrating value: the divergence it has kept within a
	// tenth of its threshold since steadyAt.
	steady   []float64
	steadyAt []int64
	size     []float64
	firing   []bool
	resync   atomic.Bool

	out bridge.TickRecord // what Out is handed; Serve's

	mu     sync.Mutex // guards what Snapshot reads
	div    []float64
	maxDiv []float64
	faults []Fault
	ticks  uint64
}

// New makes a twin of cfg.
func New(cfg Config) (*Twin, error) {
	m, c := cfg.Layout.MeasureLen(), cfg.Layout.CommandLen()
	switch {
	case cfg.Model == nil:
		return nil, fmt.Errorf("%w: no model", ErrConfig)
	case cfg.Model.MeasureLen() != m || cfg.Model.CommandLen() != c:
		return nil, fmt.Errorf("%w: the model measures %d and takes %d values, the plant %d and %d", ErrConfig,
			cfg.Model.MeasureLen(), cfg.Model.CommandLen(), m, c)
	case cfg.Hold < 0:
		return nil, fmt.Errorf("%w: hold %v: want 0 or more", ErrConfig, cfg.Hold)
	case cfg.Clear < 0:
		return nil, fmt.Errorf("%w: clear %v: want 0 or more", ErrConfig, cfg.Clear)
	}
	if cfg.Clear == 0 {
		cfg.Clear = cfg.Hold
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 256
	}
	t := &Twin{cfg: cfg, wake: make(chan struct{}, 1), ring: make([]tick, cfg.Buffer),
		pred: make([]float64, m), last: make([]float64, c), overAt: make([]int64, m), underAt: make([]int64, m), size: make([]float64, m),
		steady: make([]float64, m), steadyAt: make([]int64, m),
		firing: make([]bool, m), div: make([]float64, m), maxDiv: make([]float64, m)}
	for i := range t.ring {
		t.ring[i] = tick{measured: make([]float64, m), command: make([]float64, c)}
	}
	known := map[string]bool{}
	for _, f := range cfg.Layout.Measure {
		known[f.Name] = true
		thr, watched := cfg.Threshold[f.Name]
		if watched && (thr <= 0 || math.IsNaN(thr) || math.IsInf(thr, 0)) {
			return nil, fmt.Errorf("%w: threshold of %s %v: want a positive number of %s", ErrConfig, f.Name, thr, f.Unit)
		}
		skip := slices.Contains(cfg.Skip, f.Name)
		if !watched || skip {
			thr = math.NaN()
		}
		for i := range f.Len {
			t.names, t.index, t.units, t.thr = append(t.names, f.Name), append(t.index, i+1), append(t.units, f.Unit), append(t.thr, thr)
			t.skip = append(t.skip, skip)
			t.integ = append(t.integ, slices.Contains(cfg.Integrating, f.Name))
		}
	}
	for name := range cfg.Threshold {
		if !known[name] {
			return nil, fmt.Errorf("%w: a threshold for %q, which the plant does not measure", ErrConfig, name)
		}
	}
	for _, name := range cfg.Skip {
		if !known[name] {
			return nil, fmt.Errorf("%w: %q skipped, which the plant does not measure", ErrConfig, name)
		}
	}
	return t, nil
}

// RecordTick implements bridge.TickRecorder: the tick is copied for the
// twin, or dropped when it is behind by Buffer ticks.
func (t *Twin) RecordTick(r *bridge.TickRecord) {
	h := t.head.Load()
	if h-t.tail.Load() >= uint64(len(t.ring)) {
		t.dropped.Add(1)
		return
	}
	s := &t.ring[h%uint64(len(t.ring))]
	// Compared only while the link runs: a handshake's payload is zeros,
	// a device down's measurement an old one.
	s.at, s.fresh, s.applied = r.Deadline, r.State == bridge.Running && !r.Stale && len(r.Measurement) == len(s.measured), r.CommandApplied
	copy(s.measured, r.Measurement)
	copy(s.command, r.Given)
	t.head.Store(h + 1)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Serve runs the model on the ticks handed over until ctx ends.
func (t *Twin) Serve(ctx context.Context) error {
	for {
		t.drain()
		select {
		case <-ctx.Done():
			return nil
		case <-t.wake:
		}
	}
}

// Resync puts the model back on the real state at the next tick.
func (t *Twin) Resync() { t.resync.Store(true) }

// drain runs the model on every tick waiting.
func (t *Twin) drain() {
	for tl := t.tail.Load(); tl != t.head.Load(); tl++ {
		t.step(&t.ring[tl%uint64(len(t.ring))])
		t.tail.Store(tl + 1)
	}
}

// step is one tick of the model, in the loop's order: the model is moved
// to the tick's time and measured, the measurements compared, then the
// tick's command given.
func (t *Twin) step(s *tick) {
	m := t.cfg.Model
	m.StepTo(s.at)
	if !s.fresh || t.cfg.Settling != nil && t.cfg.Settling() {
		// A device down: nothing real to compare with; start again from
		// the real state when it is back.
		t.synced = false
		return
	}
	if !t.synced || t.resync.Swap(false) {
		t.sync(s)
	} else if f, ok := m.(Follower); ok {
		f.Follow(s.measured)
	}
	err := m.Measure(t.pred)
	t.mu.Lock()
	t.ticks++
	for j, real := range s.measured {
		d := real - t.pred[j]
		if err != nil || t.skip[j] {
			d = math.NaN()
		}
		t.div[j] = d
		if a := math.Abs(d); a > t.maxDiv[j] || math.IsNaN(t.maxDiv[j]) && !t.skip[j] {
			t.maxDiv[j] = a
		}
		t.watch(j, d, s.at)
	}
	n := t.ticks
	t.mu.Unlock()
	if o := t.cfg.Out; o != nil {
		// div is written only here, on this goroutine: read without mu.
		t.out = bridge.TickRecord{N: n - 1, Deadline: s.at, Status: simulink.OK, State: bridge.Running, Seq: int64(n - 1),
			ReplyLatency: -1, Measurement: t.div}
		o.RecordTick(&t.out)
	}
	if s.applied {
		if m.Command(s.command) == nil {
			copy(t.last, s.command)
		}
	}
}

// sync puts the model on the real state of s, holding the last command.
func (t *Twin) sync(s *tick) {
	if t.cfg.Model.Sync(s.measured) != nil {
		return
	}
	t.synced = true
	t.cfg.Model.Command(t.last)
	// A value's open fault goes on: it ends only once the value has been
	// back with the model for Clear (a servo still jammed diverges again
	// as its goal moves on). The others start again from here.
	for j, on := range t.firing {
		if !on {
			t.overAt[j] = 0
		}
	}
}

// watch follows value j's divergence d at time at; t.mu is held.
func (t *Twin) watch(j int, d float64, at int64) {
	thr := t.thr[j]
	if math.IsNaN(thr) {
		return
	}
	over := math.Abs(d) > thr || math.IsNaN(d)
	switch {
	case over && t.overAt[j] == 0:
		t.overAt[j], t.size[j] = at, math.Abs(d)
	case over:
		t.size[j] = max(t.size[j], math.Abs(d))
	}
	if over && !t.firing[j] && time.Duration(at-t.overAt[j]) >= t.cfg.Hold {
		t.firing[j] = true
		if len(t.faults) >= maxFaults {
			// Bounded: the oldest ended fault goes.
			if i := slices.IndexFunc(t.faults, func(f Fault) bool { return f.Ended }); i >= 0 {
				t.faults = slices.Delete(t.faults, i, i+1)
			}
		}
		t.faults = append(t.faults, Fault{Field: t.names[j], Index: t.index[j], Unit: t.units[j], Size: t.size[j], Last: d, Since: t.overAt[j]})
	}
	if t.firing[j] {
		f := t.fault(j)
		f.Size, f.Last = t.size[j], d
		stopped := false
		if t.integ[j] {
			if t.steadyAt[j] == 0 || !(math.Abs(d-t.steady[j]) <= thr/10) {
				t.steady[j], t.steadyAt[j] = d, at
			}
			stopped = time.Duration(at-t.steadyAt[j]) >= t.cfg.Clear
		}
		switch {
		case over && !stopped:
			t.underAt[j] = 0
			f.For = time.Duration(at - t.overAt[j])
		case !over && t.underAt[j] == 0:
			t.underAt[j] = at
		case stopped || time.Duration(at-t.underAt[j]) >= t.cfg.Clear:
			// Back with the model for the clear time, or an offset
			// that no longer grows: the fault ends, and the model goes
			// back on the real state.
			f.Ended, t.firing[j] = true, false
			t.overAt[j], t.underAt[j], t.steadyAt[j] = 0, 0, 0
			t.resync.Store(true)
		}
		return
	}
	if !over {
		t.overAt[j] = 0
	}
}

// fault is value j's open fault; t.mu is held.
func (t *Twin) fault(j int) *Fault {
	for i := len(t.faults) - 1; i >= 0; i-- {
		if f := &t.faults[i]; f.Field == t.names[j] && f.Index == t.index[j] && !f.Ended {
			return f
		}
	}
	return &Fault{}
}

// maxFaults bounds the faults a twin keeps: the open ones and the last
// ended ones.
const maxFaults = 64

// Snapshot is what the twin shows.
type Snapshot struct {
	Ticks   uint64
	Dropped uint64
	// Divergence is the last real − model per measured value; MaxAbs its
	// largest magnitude since the start.
	Divergence, MaxAbs []float64
	// Faults are every fault so far, the open ones not Ended.
	Faults []Fault
}

// Snapshot copies what the twin shows into s, reusing its slices.
func (t *Twin) Snapshot(s *Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.divergences(s)
	s.Faults = append(s.Faults[:0], t.faults...)
	for i := range s.Faults {
		s.Faults[i].Message = t.words(s.Faults[i])
	}
}

// Divergences copies the twin's numbers into s (the tick counts, and the
// last divergence and its largest magnitude per measured value) and leaves
// s.Faults as it is: what a scrape reads, with no fault copied or worded.
func (t *Twin) Divergences(s *Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.divergences(s)
}

func (t *Twin) divergences(s *Snapshot) {
	s.Ticks, s.Dropped = t.ticks, t.dropped.Load()
	s.Divergence = append(s.Divergence[:0], t.div...)
	s.MaxAbs = append(s.MaxAbs[:0], t.maxDiv...)
}

// Open appends to dst the words of every fault that has not ended, oldest
// first: what the link's fault probe reports.
func (t *Twin) Open(dst []string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range t.faults {
		if !f.Ended {
			dst = append(dst, t.words(f))
		}
	}
	return dst
}

// words says f in the link's words (Config.Words), else as Fault.String.
func (t *Twin) words(f Fault) string {
	if t.cfg.Words != nil {
		return t.cfg.Words(f)
	}
	return f.String()
}

// Fields are the measured values as the twin names them, in measurement
// order: their field, 1-based index and unit, and whether the model
// predicts them.
func (t *Twin) Fields() (names []string, index []int, units []string, modelled []bool) {
	modelled = make([]bool, len(t.skip))
	for i, s := range t.skip {
		modelled[i] = !s
	}
	return t.names, t.index, t.units, modelled
}
