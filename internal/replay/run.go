package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/atomicfile"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/report"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// ErrSpeed is a replay faster than recorded that cannot be.
var ErrSpeed = errors.New("replay: cannot replay at that speed")

// maxSpeed bounds Options.Speed.
const maxSpeed = 100

// ErrReal is a replay into a plant whose devices are not all simulated,
// which was not asked for explicitly.
var ErrReal = errors.New("replay: the plant is a real robot")

// Options say how a track is replayed.
type Options struct {
	Source Source
	// Real allows a plant with real devices: the recorded commands then
	// move the robot, through the link's limits, dead-man and halt.
	Real bool
	// Speed runs the link this many times faster than it was recorded
	// (0 or 1: as recorded): only into a plant that moves on the tick
	// grid (plant.Stepped), which is told the recorded times.
	Speed float64
	// Step, if set, plays the recording a tick at a time as a person asks
	// on it, a line each (an empty line one tick, a number that many, "c"
	// the rest), saying each tick played on StepOut: only into a plant
	// that moves on the tick grid, which is held at its recorded time in
	// between while the link runs on.
	Step    *os.File
	StepOut io.Writer
	Logger  *slog.Logger
}

// Result is a replay's outcome: per recorded row, the vector the replay
// gave now (Replayed[i], when Got[i]) beside the one recorded then
// (Recorded[i]): what the plant measured (Run), or what the host answered
// (RunHost).
type Result struct {
	Track    *Track
	What     string // what was replayed, and where
	Recorded [][]float64
	Replayed [][]float64
	Got      []bool
	// Columns name the values compared: the recording's meas_… or cmd_….
	Columns []string
	Played  int
	// Disturbed counts the replay's own ticks that did not run as recorded
	// ticks do: a reply timed out, out of sequence or late, a period
	// overrun, a re-handshake. After one, a plant's state may leave the
	// recording's: the replay is exact only without.
	Disturbed uint64
	// Fields compares each value, replayed against recorded, over the rows
	// replayed.
	Fields []FieldDiff
	// ranSkips: the plant kept its own time, so a period the recording
	// skipped was a tick like any other in the replay.
	ranSkips bool
}

// FieldDiff is one value's difference, replayed − recorded.
type FieldDiff struct {
	Column string  // the recording's column
	MaxAbs float64 // the largest |difference|
	AtRow  int     // the row of MaxAbs
	RMS    float64
}

// Run replays t into link of cfg (t.Check must pass): the link is built
// and supervised as `bridge sim` runs it, on free loopback ports, with a
// built-in partner that plays t (Player), until the last recorded tick is
// answered or ctx ends. The link's plant is built as cfg says: a real
// robot only with o.Real.
func Run(ctx context.Context, cfg *config.Config, link string, t *Track, o Options) (*Result, error) {
	one, err := pick(cfg, link, t)
	if err != nil {
		return nil, err
	}
	if !one.Plant.Simulated() && !o.Real {
		return nil, fmt.Errorf("%w: link %q drives real devices (%s); the recorded commands would move it: pass -real to do so, or replay into a configuration whose plant is simulated",
			ErrReal, one.Name, one.Plant.Summary())
	}
	p := NewPlayer(t, o.Source)
	if len(p.row) == 0 {
		return nil, noTick(t)
	}
	env := config.Env{Partner: true, Ephemeral: true, Replay: p, PlantTime: p.Time}
	var step func(context.Context) error
	if o.Step != nil {
		p.Hold()
		step = func(ctx context.Context) error { return stepper(ctx, o.Step, cmp.Or(o.StepOut, io.Discard), p, t) }
	}
	rn, err := o.serve(ctx, cfg, one, env, p.Done(), step)
	what := o.Source.String() + " commands into the plant"
	if rn.stepped {
		what += fmt.Sprintf(", on the recorded times at %g× the rate", cmp.Or(o.Speed, 1))
	}
	r := &Result{Track: t, What: what, Recorded: t.Meas, Replayed: p.replayed, Got: p.got,
		Columns: t.Columns[:len(t.Meas[0])], Played: p.Played(), Disturbed: rn.disturbed, ranSkips: !rn.stepped}
	return r.finish(err, len(p.row))
}

// RunHost plays t's measurements to the Simulink host of link in cfg, at
// its udp.remote as `bridge run` sends them, one recorded running tick
// after the other once the handshake is done, and keeps the command the
// host answered on each beside the one recorded then (Feed), until the last
// is sent or ctx ends. No plant is built: nothing moves.
func RunHost(ctx context.Context, cfg *config.Config, link string, t *Track, o Options) (*Result, error) {
	one, err := pick(cfg, link, t)
	if err != nil {
		return nil, err
	}
	f := NewFeed(t)
	if len(f.rows) == 0 {
		return nil, noTick(t)
	}
	env := config.Env{Plant: f, Recorder: f}
	if o.Step != nil {
		return nil, fmt.Errorf("%w: a host's answers are played as they come, not a tick at a time", ErrStep)
	}
	rn, err := o.serve(ctx, cfg, one, env, f.Done(), nil)
	// Compared where both runs had a fresh reply: on a tick whose reply was
	// lost the command column holds the one before.
	played := 0
	for i := range f.got {
		f.got[i] = f.got[i] && t.Answered[i]
		if f.got[i] {
			played++
		}
	}
	m := len(t.Meas[0])
	r := &Result{Track: t, What: "measurements to the host at " + one.UDP.Remote + "; compared where both had a reply", Recorded: t.Cmd, Replayed: f.answer, Got: f.got,
		Columns: t.Columns[m : m+len(t.Cmd[0])], Played: played, Disturbed: rn.disturbed}
	return r.finish(err, len(f.rows))
}

// pick is cfg's link of that name, if t fits it.
func pick(cfg *config.Config, link string, t *Track) (*config.LinkTable, error) {
	for i := range cfg.Links {
		if cfg.Links[i].Name == link {
			return &cfg.Links[i], t.Check(&cfg.Links[i])
		}
	}
	var names []string
	for _, l := range cfg.Links {
		names = append(names, l.Name)
	}
	return nil, fmt.Errorf("replay: the configuration has no link %q (it has %s): replay into the configuration it was recorded with (-config)", link, strings.Join(names, ", "))
}

func noTick(t *Track) error {
	return fmt.Errorf("%w: %s holds no tick of a running link (every seq is the handshake's): nothing to replay", ErrShape, t.File)
}

// ran is what serve saw of the link: its disturbed ticks
// (Result.Disturbed), and whether its plant was told the recorded times.
type ran struct {
	disturbed uint64
	stepped   bool
}

// serve builds one, alone, with env and supervises it until done is
// closed or ctx ends; step, if set, runs beside it (a person stepping the
// replay), and its error ends the replay.
func (o Options) serve(ctx context.Context, cfg *config.Config, one *config.LinkTable, env config.Env, done <-chan struct{}, step func(context.Context) error) (ran, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	env.Clock, env.Logger = realtime.NewClock(), o.Logger
	sub := *cfg
	sub.Links = []config.LinkTable{*one}
	speed := cmp.Or(o.Speed, 1)
	if speed != 1 {
		if speed < 1 || speed > maxSpeed || env.PlantTime == nil {
			return ran{}, fmt.Errorf("%w: speed %g: want 1 to %d times the recorded rate, and commands into a plant", ErrSpeed, speed, maxSpeed)
		}
		sub.Links[0].RateHz *= speed
		if err := sub.Validate(); err != nil {
			return ran{}, fmt.Errorf("%w: at %g times the rate: %w", ErrSpeed, speed, err)
		}
	}
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Logger: o.Logger})
	built, err := sub.Supervise(env, sup)
	if err != nil {
		return ran{}, err
	}
	defer func() {
		for _, b := range built {
			b.Close()
		}
	}()
	_, stepped := built[0].Plant.(plant.Stepped)
	stepped = stepped && env.PlantTime != nil
	if speed != 1 && !stepped {
		return ran{}, fmt.Errorf("%w: link %q's plant (%s) keeps its own time, so it replays only at the recorded rate", ErrSpeed, one.Name, one.Plant.Summary())
	}
	if step != nil && !stepped {
		return ran{}, fmt.Errorf("%w: link %q's plant (%s) keeps its own time, so it replays only as recorded, not a tick at a time", ErrStep, one.Name, one.Plant.Summary())
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-done:
			cancel(errFinished)
		case <-ctx.Done():
		}
	})
	if step != nil {
		wg.Go(func() {
			if err := step(ctx); err != nil && ctx.Err() == nil {
				cancel(err)
			}
		})
	}
	err = sup.Serve(ctx)
	cancel(nil)
	wg.Wait()
	st := built[0].Master.Stats()
	r := ran{stepped: stepped,
		disturbed: st.Status[simulink.Timeout] + st.Status[simulink.Desync] + st.Status[simulink.Reconnected] + st.Late}
	if !stepped {
		// Told the recorded times, a plant does not see an overrun.
		r.disturbed += built[0].Link.Overruns()
	}
	select {
	case <-done:
		return r, nil
	default:
	}
	if err == nil || errors.Is(err, context.Canceled) {
		err = context.Cause(ctx)
	}
	return r, err
}

// errFinished ends a replay's supervisor once the recording is played.
var errFinished = errors.New("replay: finished")

// finish compares what was replayed and says how far it got.
func (r *Result) finish(err error, of int) (*Result, error) {
	r.compare()
	if err != nil {
		return r, fmt.Errorf("replay: stopped after %d of %d recorded ticks: %w", r.Played, of, err)
	}
	return r, nil
}

// compare fills r.Fields.
func (r *Result) compare() {
	r.Fields = make([]FieldDiff, len(r.Columns))
	for j := range r.Fields {
		f := &r.Fields[j]
		f.Column, f.AtRow = r.Columns[j], -1
		var sum float64
		n := 0
		for i, ok := range r.Got {
			if !ok {
				continue
			}
			d := r.Replayed[i][j] - r.Recorded[i][j]
			if math.IsNaN(d) {
				continue
			}
			sum += d * d
			n++
			if a := math.Abs(d); f.AtRow < 0 || a > f.MaxAbs {
				f.MaxAbs, f.AtRow = a, i
			}
		}
		if n > 0 {
			f.RMS = math.Sqrt(sum / float64(n))
		}
	}
}

// overruns counts the recorded ticks replayed after skipped periods.
func (r *Result) overruns() int {
	n := 0
	for i, ok := range r.Got {
		if ok && r.Track.Overran[i] {
			n++
		}
	}
	return n
}

// WriteText says how the replay went and, per value compared, how far the
// replay is from the recording.
func (r *Result) WriteText(w io.Writer) error {
	for _, l := range r.summary() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "%-28s %14s %14s %8s\n", "replayed − recorded", "max |diff|", "rms", "at tick")
	for _, f := range r.Fields {
		if _, err := fmt.Fprintf(w, "%-28s %14.6g %14.6g %8s\n", f.Column, f.MaxAbs, f.RMS, r.tickOf(f)); err != nil {
			return err
		}
	}
	return nil
}

// summary is what the replay did and what may have made it leave the
// recording, a line each.
func (r *Result) summary() []string {
	lines := []string{fmt.Sprintf("replayed %d of %d recorded ticks of %s (%s, every %v)",
		r.Played, r.Track.Rows(), r.Track.File, r.What, r.Track.Period.Round(time.Microsecond))}
	if n := r.overruns(); n > 0 && r.ranSkips {
		lines = append(lines, fmt.Sprintf("the recording skipped periods before %d tick(s) (the machine paused), which the replay ran: from each, the replay may leave the recording", n))
	}
	if r.Disturbed > 0 {
		lines = append(lines, fmt.Sprintf("the replay's own ticks were disturbed %d time(s) (a reply timed out or late, an overrun): from the first, the replay may leave the recording", r.Disturbed))
	}
	return lines
}

// tickOf is the recorded tick of f's largest difference, "-" without one.
func (r *Result) tickOf(f FieldDiff) string {
	if f.AtRow < 0 {
		return "-"
	}
	return strconv.FormatInt(r.Track.Tick[f.AtRow], 10)
}

// WriteCSV writes the replay tick by tick: the tick and seq, then for each
// value compared the recorded, the replayed and their difference (empty
// where a tick was not replayed).
func (r *Result) WriteCSV(w io.Writer) error {
	b := []byte("tick,seq")
	for _, f := range r.Fields {
		b = append(b, ",recorded_"+f.Column+",replayed_"+f.Column+",diff_"+f.Column...)
	}
	b = append(b, '\n')
	for i := range r.Track.Rows() {
		b = strconv.AppendInt(b, r.Track.Tick[i], 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, r.Track.Seq[i], 10)
		for j := range r.Fields {
			rec := r.Recorded[i][j]
			b = append(b, ',')
			b = strconv.AppendFloat(b, rec, 'g', -1, 64)
			b = append(b, ',')
			if r.Got[i] {
				b = strconv.AppendFloat(b, r.Replayed[i][j], 'g', -1, 64)
				b = append(b, ',')
				b = strconv.AppendFloat(b, r.Replayed[i][j]-rec, 'g', -1, 64)
			} else {
				b = append(b, ',')
			}
		}
		b = append(b, '\n')
		if len(b) > 32<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

// WriteFile writes the CSV of WriteCSV to path, whole or not at all.
func (r *Result) WriteFile(path string) error {
	if err := atomicfile.Write(path, 0o644, r.WriteCSV); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// Comparison is the replay as a page (report.Comparison): per field, the
// recorded and the replayed values overlaid, and their difference.
func (r *Result) Comparison() *report.Comparison {
	// The recorded times: a tick after skipped periods is placed after them.
	at := make([]float64, r.Track.Rows())
	for i := range at {
		at[i] = float64(r.Track.At[i]) / 1e9
	}
	c := report.NewComparison(r.Track.File, r.What, r.summary(), r.Columns, at, r.Recorded, r.Replayed, r.Got)
	for _, f := range r.Fields {
		c.Diffs = append(c.Diffs, report.Diff{Column: f.Column, Max: f.MaxAbs, RMS: f.RMS, At: r.tickOf(f)})
	}
	return c
}
