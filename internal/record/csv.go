package record

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/labbridge/bridge/tap/payload"
)

// fixedColumns are the columns before the vectors (docs/tap.md §5).
var fixedColumns = []string{"time_s", "deadline_unix_s", "rtp_seq", "tick", "seq", "status", "state",
	"lateness_us", "reply_latency_us", "late", "applied", "stale", "overrun"}

// Columns names the columns of a link's CSV, from its descriptor, or by
// position for m measured and c commanded values when d is nil.
func Columns(d *payload.Descriptor, m, c int) []string {
	cols := append([]string(nil), fixedColumns...)
	vec := func(prefix string, fs []payload.Field, n int) {
		if fs == nil {
			for i := range n {
				cols = append(cols, fmt.Sprintf("%s_%d", prefix, i+1))
			}
			return
		}
		for _, f := range fs {
			for i := range f.Len {
				name := prefix + "_" + ident(f.Name)
				if f.Len > 1 {
					name += "_" + strconv.Itoa(i+1)
				}
				if u := unitSuffix(f.Unit); u != "" {
					name += "_" + u
				}
				cols = append(cols, name)
			}
		}
	}
	var meas, cmd []payload.Field
	if d != nil {
		meas, cmd = d.Measure, d.Command
		if meas == nil {
			meas = []payload.Field{}
		}
		if cmd == nil {
			cmd = []payload.Field{}
		}
	}
	vec("meas", meas, m)
	vec("cmd", cmd, c)
	vec("applied", cmd, c)
	return dedupe(cols)
}

// ident keeps letters, digits and underscores.
func ident(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '°':
			b.WriteString("deg")
		default:
			b.WriteByte('_')
		}
	}
	return strings.Trim(b.String(), "_")
}

// unitSuffix writes a unit into a column name: "/" as "_per_".
func unitSuffix(u string) string {
	return ident(strings.ReplaceAll(u, "/", "_per_"))
}

// dedupe makes column names unique (two fields of one name and unit).
func dedupe(cols []string) []string {
	seen := make(map[string]int, len(cols))
	for i, c := range cols {
		if n := seen[c]; n > 0 {
			cols[i] = c + "_" + strconv.Itoa(n+1)
		}
		seen[c]++
	}
	return cols
}

// csvFile writes one link's rows, each flushed as it is written, and
// hands each row's values to spill when there is one (a MAT-file's).
type csvFile struct {
	w     io.Writer
	path  string
	size  int64 // bytes of whole rows written
	spill *spill
	line  []byte
	vals  []float64
	first int64 // the first row's deadline, Unix ns
	rows  uint64
}

func newCSV(w io.Writer, path string, cols []string) (*csvFile, error) {
	f := &csvFile{w: w, path: path, line: make([]byte, 0, 4096), vals: make([]float64, 0, len(cols))}
	n, err := io.WriteString(w, strings.Join(cols, ",")+"\n")
	if err != nil {
		rollback(w, 0)
		return nil, &WriteError{Path: path, Opened: true, Err: err}
	}
	f.size = int64(n)
	return f, nil
}

// values are a row's numbers, in the columns' order (docs/tap.md §5).
func (f *csvFile) values(ext int64, r *payload.Record) []float64 {
	if f.rows == 0 {
		f.first = r.Deadline
	}
	bit := func(b uint8) float64 {
		if r.Flags&b != 0 {
			return 1
		}
		return 0
	}
	lateness, latency := math.NaN(), math.NaN()
	if r.Sent != 0 {
		lateness = float64(r.Lateness) / 1e3
	}
	if r.ReplyLatency >= 0 {
		latency = float64(r.ReplyLatency) / 1e3
	}
	v := append(f.vals[:0],
		float64(r.Deadline-f.first)/1e9, float64(r.Deadline)/1e9, float64(ext), float64(r.Tick), float64(r.Seq),
		float64(r.Status), float64(r.State), lateness, latency,
		bit(payload.FlagLate), bit(payload.FlagApplied), bit(payload.FlagStale), bit(payload.FlagOverrun))
	v = append(v, r.Measurement...)
	v = append(v, r.Command...)
	v = append(v, r.Applied...)
	f.vals = v
	return v
}

// row writes one packet's row.
func (f *csvFile) row(ext int64, r *payload.Record) error {
	v := f.values(ext, r)
	b := f.line[:0]
	for i, x := range v {
		if i == 1 {
			// Unix seconds: µs shown, never an exponent.
			b = strconv.AppendFloat(b, x, 'f', 6, 64)
		} else {
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		}
		b = append(b, ',')
	}
	b[len(b)-1] = '\n'
	f.line = b
	if _, err := f.w.Write(b); err != nil {
		// A disk that filled part way through the row: the file keeps
		// only whole rows.
		rollback(f.w, f.size)
		return &WriteError{Path: f.path, Opened: true, Rows: f.rows, Err: err}
	}
	f.size += int64(len(b))
	f.rows++
	if f.spill != nil {
		return f.spill.row(v)
	}
	return nil
}
