package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// StatusNames are the statuses of a tick's exchange, by their number in the
// status column (docs/tap.md §5).
var StatusNames = []string{"HANDSHAKING", "OK", "OK_NO_DELAY", "DESYNC", "TIMEOUT", "RECONNECTED"}

// StateNames are the link states, by their number in the state column
// (docs/tap.md §5).
var StateNames = []string{"starting", "handshaking", "running", "degraded", "stopped"}

// Flag bits of Link.Flags, one per flag column.
const (
	FlagLate    = 1 << iota // late
	FlagApplied             // applied
	FlagStale               // stale
	FlagOverrun             // overrun
)

// The fixed columns of a link's CSV, in the recorder's order (docs/tap.md §5).
const (
	colTime = iota
	colDeadline
	colRTPSeq
	colTick
	colSeq
	colStatus
	colState
	colLateness
	colReply
	colLate
	colApplied
	colStale
	colOverrun
	numFixed
)

var fixedNames = [numFixed]string{"time_s", "deadline_unix_s", "rtp_seq", "tick", "seq", "status", "state",
	"lateness_us", "reply_latency_us", "late", "applied", "stale", "overrun"}

// A Recording is the links of one `bridge record` session.
type Recording struct {
	// Name is the recording's base name: "run" for run.csv.
	Name string
	// Links are in the order of their names.
	Links []*LinkFile
}

// A LinkFile is one link's CSV file, column by column: row i of the file is
// index i of every slice, in arrival order.
type LinkFile struct {
	Name string // the link's name, from the file name
	File string // the file it was read from

	Time     []float64 // time_s
	Deadline []float64 // deadline_unix_s
	RTPSeq   []int64   // rtp_seq, extended
	Tick     []int64
	Seq      []int64
	Status   []uint8
	State    []uint8
	Lateness []float64 // µs; NaN when nothing was sent
	Reply    []float64 // µs; NaN without a reply
	Flags    []uint8   // FlagLate | FlagApplied | FlagStale | FlagOverrun

	// Meas, Cmd and Applied are the vector columns, in file order.
	Meas, Cmd, Applied []*Signal

	// Warnings say what was read but not used (an unknown column, a last
	// row cut short by a crash).
	Warnings []string
}

// Rows is the number of rows read.
func (l *LinkFile) Rows() int { return len(l.Time) }

// A Signal is one value of a vector, over the rows: the column
// meas_markers_2_mm is Field "markers", Index 2, Unit "mm".
type Signal struct {
	Column string
	Field  string    // "" for a link without descriptor (meas_1, meas_2, …)
	Index  int       // 1-based; 0 for a field of one value
	Unit   string    // as written in the column: "deg_per_s", "" without unit
	Values []float64 // as written: full precision, so a replay compares exactly
}

// UnitLabel is the unit as people write it: "deg_per_s" is "deg/s", and
// the parts of a multi-unit field ("mm_deg") are separated by commas.
func UnitLabel(u string) string {
	u = strings.ReplaceAll(u, "_per_", "/")
	return strings.ReplaceAll(u, "_", ", ")
}

// splitColumn parses a vector column name after its prefix (docs/tap.md §5:
// <field>_<i>_<unit>, no index for a field of one value, no suffix without
// a unit). A field of one value has no index to anchor on: its unit is
// taken to be the last word, or the words from the one before "per".
func splitColumn(rest string) (field string, index int, unit string) {
	toks := strings.Split(rest, "_")
	for k := len(toks) - 1; k >= 0; k-- {
		if n, err := strconv.Atoi(toks[k]); err == nil && n > 0 && toks[k][0] != '+' && toks[k][0] != '-' {
			return strings.Join(toks[:k], "_"), n, strings.Join(toks[k+1:], "_")
		}
	}
	if len(toks) == 1 {
		return rest, 0, ""
	}
	if p := slices.Index(toks, "per"); p >= 2 {
		return strings.Join(toks[:p-1], "_"), 0, strings.Join(toks[p-1:], "_")
	}
	return strings.Join(toks[:len(toks)-1], "_"), 0, toks[len(toks)-1]
}

// Open reads a recording: path is the base name given to the recorder
// (run.csv reads every run.LINK.csv beside it) or one link's CSV file.
func Open(path string) (*Recording, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	stem, ok := strings.CutSuffix(base, ".csv")
	if !ok || stem == "" {
		return nil, fmt.Errorf("report: %s: want a recording's .csv base name (run.csv) or one link's CSV file (run.emio.csv)", path)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	rec := &Recording{Name: stem}
	var files []string
	var names []string
	for _, e := range entries {
		n := e.Name()
		mid, ok := strings.CutPrefix(n, stem+".")
		if !ok || e.IsDir() {
			continue
		}
		if link, ok := strings.CutSuffix(mid, ".csv"); ok && link != "" {
			files = append(files, filepath.Join(dir, n))
			names = append(names, link)
		}
	}
	if len(files) == 0 {
		if st, err := os.Stat(path); err != nil || st.IsDir() {
			return nil, fmt.Errorf("report: %s: no recording: neither %s nor %s exists", path, filepath.Join(dir, stem+".LINK.csv"), path)
		}
		files = []string{path}
		rec.Name, names = stem, []string{stem}
		if i := strings.LastIndexByte(stem, '.'); i > 0 && i < len(stem)-1 {
			rec.Name, names[0] = stem[:i], stem[i+1:]
		}
	}
	for i, f := range files {
		l, err := ReadFile(names[i], f)
		if err != nil {
			return nil, err
		}
		rec.Links = append(rec.Links, l)
	}
	return rec, nil
}

// ReadFile reads one link's CSV file.
func ReadFile(name, path string) (*LinkFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer f.Close()
	return Read(name, path, f)
}

// column is where a column of the file goes.
type column struct {
	name  string
	fixed int     // colTime… or -1
	sig   *Signal // a vector column, or nil (fixed == -1 && sig == nil: ignored)
}

// Read reads one link's CSV from r; file names it in errors. A malformed
// file is refused with an error naming the file, the line and the column.
// NaN (or an empty cell) is accepted where the recorder writes it: the
// lateness, the reply latency and the vectors.
func Read(name, file string, r io.Reader) (*LinkFile, error) {
	l := &LinkFile{Name: name, File: file}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	bad := func(line int, col, format string, a ...any) error {
		where := fmt.Sprintf("line %d", line)
		if col != "" {
			where += ", column " + col
		}
		return fmt.Errorf("report: %s: %s: %s", file, where, fmt.Sprintf(format, a...))
	}
	hdr, err := cr.Read()
	if err == io.EOF {
		return nil, bad(1, "", "empty file: want a header naming the columns (docs/tap.md §5)")
	}
	if err != nil {
		return nil, csvError(file, err)
	}
	cols := make([]column, len(hdr))
	seen := make(map[string]int, len(hdr))
	var have [numFixed]bool
	for i, h := range hdr {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, bad(1, strconv.Itoa(i+1), "a column without a name")
		}
		if j, dup := seen[h]; dup {
			return nil, bad(1, h, "named twice (columns %d and %d)", j+1, i+1)
		}
		seen[h] = i
		cols[i] = column{name: h, fixed: -1}
		if k := slices.Index(fixedNames[:], h); k >= 0 {
			cols[i].fixed = k
			have[k] = true
			continue
		}
		for _, p := range []struct {
			prefix string
			to     *[]*Signal
		}{{"meas_", &l.Meas}, {"cmd_", &l.Cmd}, {"applied_", &l.Applied}} {
			if rest, ok := strings.CutPrefix(h, p.prefix); ok && rest != "" {
				s := &Signal{Column: h}
				s.Field, s.Index, s.Unit = splitColumn(rest)
				cols[i].sig = s
				*p.to = append(*p.to, s)
				break
			}
		}
		if cols[i].sig == nil {
			l.Warnings = append(l.Warnings, fmt.Sprintf("column %s is not one of docs/tap.md §5: ignored", h))
		}
	}
	for k, ok := range have {
		if !ok {
			return nil, bad(1, fixedNames[k], "missing from the header (docs/tap.md §5 lists the columns)")
		}
	}

	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(file, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(cols) {
			n := len(rec)
			if n < len(cols) {
				// A last row cut short: the recorder was stopped while
				// writing it. Anything after it is not.
				if _, err := cr.Read(); err == io.EOF {
					l.Warnings = append(l.Warnings, fmt.Sprintf("line %d, the last, has %d of %d cells (cut short): ignored", line, n, len(cols)))
					break
				}
			}
			return nil, bad(line, "", "%d cells, want %d (the header's)", n, len(cols))
		}
		l.Flags = append(l.Flags, 0)
		for i, cell := range rec {
			c := &cols[i]
			switch {
			case c.sig != nil:
				v, ok := parseFloat(cell)
				if !ok {
					return nil, bad(line, c.name, "%q is not a number", cell)
				}
				c.sig.Values = append(c.sig.Values, v)
			case c.fixed < 0:
			case c.fixed == colTime || c.fixed == colDeadline:
				v, ok := parseFloat(cell)
				if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, bad(line, c.name, "%q: want a finite number of seconds", cell)
				}
				if c.fixed == colTime {
					l.Time = append(l.Time, v)
				} else {
					l.Deadline = append(l.Deadline, v)
				}
			case c.fixed == colLateness || c.fixed == colReply:
				v, ok := parseFloat(cell)
				if !ok || math.IsInf(v, 0) {
					return nil, bad(line, c.name, "%q: want a number of µs or NaN", cell)
				}
				if c.fixed == colLateness {
					l.Lateness = append(l.Lateness, v)
				} else {
					l.Reply = append(l.Reply, v)
				}
			case c.fixed == colRTPSeq || c.fixed == colTick || c.fixed == colSeq:
				v, ok := parseInt(cell)
				if !ok {
					return nil, bad(line, c.name, "%q: want an integer", cell)
				}
				if v < 0 && c.fixed != colSeq {
					return nil, bad(line, c.name, "%q: want an integer ≥ 0", cell)
				}
				switch c.fixed {
				case colRTPSeq:
					l.RTPSeq = append(l.RTPSeq, v)
				case colTick:
					l.Tick = append(l.Tick, v)
				default:
					l.Seq = append(l.Seq, v)
				}
			case c.fixed == colStatus || c.fixed == colState:
				v, ok := parseInt(cell)
				if !ok || v < 0 || v > 255 {
					return nil, bad(line, c.name, "%q: want an integer 0…255", cell)
				}
				if c.fixed == colStatus {
					l.Status = append(l.Status, uint8(v))
				} else {
					l.State = append(l.State, uint8(v))
				}
			default: // a flag
				v, ok := parseInt(cell)
				if !ok || v != 0 && v != 1 {
					return nil, bad(line, c.name, "%q: want 0 or 1", cell)
				}
				l.Flags[len(l.Flags)-1] |= uint8(v) << (c.fixed - colLate)
			}
		}
	}
	return l, nil
}

// csvError words an error of the CSV reader.
func csvError(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("report: %s: line %d (character %d of line %d): %v", file, pe.StartLine, pe.Column, pe.Line, pe.Err)
	}
	return fmt.Errorf("report: %s: %w", file, err)
}

// parseFloat reads a number; an empty cell is NaN.
func parseFloat(s string) (float64, bool) {
	if s == "" {
		return math.NaN(), true
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return v, true // ±Inf or 0, as the value says
		}
		return 0, false
	}
	return v, true
}

// parseInt reads an integer, written as one or as a float of integral value
// (a file saved again by MATLAB: "1e3").
func parseInt(s string) (int64, bool) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
