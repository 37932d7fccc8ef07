// Package replay plays a recording of `bridge record` (docs/tap.md §5) back
// into a link: the recorded commands drive the link's plant, tick for tick,
// through the link as it runs live (its limits, its dead-man, its halt),
// while the measurement the plant gives now is kept beside the one
// recorded, so that a lab sees whether an experiment reproduces.
package replay

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/record"
	"github.com/labbridge/bridge/internal/report"
	"github.com/labbridge/bridge/simulink"
)

// ErrShape is a recording that does not fit the link it is replayed into.
var ErrShape = errors.New("replay: the recording does not fit the link")

// Track is one link's recorded ticks, as a replay needs them: row i of the
// file is index i of every slice.
type Track struct {
	Link string // the link's name, from the file's
	File string
	Seq  []int64
	Tick []int64
	// At is each tick's deadline, ns after the first row's (the time_s
	// column, exact to the ns).
	At []int64
	// Meas, Cmd and Applied are each row's vectors: the measurement sent,
	// the command received, the command applied (when AppliedOn).
	Meas, Cmd, Applied [][]float64
	AppliedOn          []bool
	// Answered: the tick got a fresh reply (OK or OK_NO_DELAY); on the
	// others the command column holds the last one.
	Answered []bool
	// Overran: whole periods were skipped just before the tick (a pause
	// of the machine); a replay runs them.
	Overran []bool
	// Columns are the file's vector columns, meas_, cmd_ then applied_.
	Columns []string
	// Period is the recorded tick grid's: the median step of the deadline
	// per tick.
	Period time.Duration
}

// Rows is the number of recorded ticks.
func (t *Track) Rows() int { return len(t.Seq) }

// Open reads the track of link from a recording: path is one link's CSV
// (run.emio.csv) or the recording's base name (run.csv), of which link
// names the file; "" takes the only one.
func Open(path, link string) (*Track, error) {
	rec, err := report.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	var names []string
	for _, l := range rec.Links {
		names = append(names, l.Name)
		if l.Name == link || (link == "" && len(rec.Links) == 1) {
			return trackOf(l)
		}
	}
	if link == "" {
		return nil, fmt.Errorf("replay: %s holds the links %v: name one with -link", path, names)
	}
	return nil, fmt.Errorf("replay: %s holds no link %q (it holds %v)", path, link, names)
}

func trackOf(l *report.LinkFile) (*Track, error) {
	n := l.Rows()
	if n == 0 {
		return nil, fmt.Errorf("%w: %s holds no tick", ErrShape, l.File)
	}
	t := &Track{Link: l.Name, File: l.File, Seq: l.Seq, Tick: l.Tick, At: make([]int64, n), AppliedOn: make([]bool, n), Answered: make([]bool, n), Overran: make([]bool, n)}
	rows := func(sigs []*report.Signal) [][]float64 {
		flat := make([]float64, n*len(sigs))
		out := make([][]float64, n)
		for i := range out {
			out[i] = flat[i*len(sigs) : (i+1)*len(sigs) : (i+1)*len(sigs)]
			for j, s := range sigs {
				out[i][j] = s.Values[i]
			}
		}
		return out
	}
	t.Meas, t.Cmd, t.Applied = rows(l.Meas), rows(l.Cmd), rows(l.Applied)
	for _, sigs := range [][]*report.Signal{l.Meas, l.Cmd, l.Applied} {
		for _, s := range sigs {
			t.Columns = append(t.Columns, s.Column)
		}
	}
	for i, s := range l.Time {
		t.At[i] = int64(math.Round(s * 1e9))
	}
	for i, f := range l.Flags {
		t.AppliedOn[i] = f&report.FlagApplied != 0
		t.Answered[i] = simulink.Status(l.Status[i]).Success()
		t.Overran[i] = f&report.FlagOverrun != 0
	}
	var steps []float64
	for i := 1; i < n; i++ {
		if dt := l.Tick[i] - l.Tick[i-1]; dt > 0 {
			steps = append(steps, (l.Deadline[i]-l.Deadline[i-1])/float64(dt))
		}
	}
	if len(steps) > 0 {
		slices.Sort(steps)
		t.Period = time.Duration(math.Round(steps[len(steps)/2]*1e6)) * time.Microsecond
	}
	return t, nil
}

// Check refuses a track that does not fit l: its vector columns must be
// those a recording of l has (record.Columns of l's descriptor: the same
// fields, lengths and units), and its tick grid l's period within 1 %.
func (t *Track) Check(l *config.LinkTable) error {
	d := l.Descriptor()
	want := record.Columns(&d, 0, 0)[len(record.Columns(nil, 0, 0)):]
	if !slices.Equal(t.Columns, want) {
		return fmt.Errorf("%w: %s has the columns %v, and a recording of link %q (plant kind %q) would have %v: replay it into the configuration it was recorded with (-config)",
			ErrShape, t.File, t.Columns, l.Name, l.Plant.Kind(), want)
	}
	if p := l.Period(); t.Period > 0 && math.Abs(float64(t.Period-p)) > 0.01*float64(p) {
		return fmt.Errorf("%w: %s was recorded every %v, and link %q runs every %v (rate_hz %g): replay it at the rate it was recorded at",
			ErrShape, t.File, t.Period, l.Name, p, l.RateHz)
	}
	return nil
}
