package report

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const header = "time_s,deadline_unix_s,rtp_seq,tick,seq,status,state,lateness_us,reply_latency_us,late,applied,stale,overrun,meas_markers_1_mm,meas_age_s,cmd_angles_1_rad,applied_angles_1_rad\n"

// row is one row of a small synthetic CSV: tick k of a 1 kHz link.
type row struct {
	seq     int64 // rtp_seq
	tick    int64
	status  int
	state   int
	lat     float64 // µs, NaN: nothing sent
	reply   float64 // µs, NaN: no reply
	flags   string  // "late,applied,stale,overrun", "" = 0,1,0,0
	measure string  // the vector cells, "" = 1.5,0.001,0.25,0.25
}

func csvOf(rows []row) string {
	var b strings.Builder
	b.WriteString(header)
	const start = 1767272400.0
	for _, r := range rows {
		flags, vec := r.flags, r.measure
		if flags == "" {
			flags = "0,1,0,0"
		}
		if vec == "" {
			vec = "1.5,0.001,0.25,0.25"
		}
		f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		b.WriteString(strings.Join([]string{f(float64(r.tick) / 1000), strconv.FormatFloat(start+float64(r.tick)/1000, 'f', 6, 64),
			strconv.FormatInt(r.seq, 10), strconv.FormatInt(r.tick, 10), strconv.FormatInt(r.tick, 10),
			strconv.Itoa(r.status), strconv.Itoa(r.state), f(r.lat), f(r.reply), flags, vec}, ","))
		b.WriteByte('\n')
	}
	return b.String()
}

// seqRows are rows for rtp_seq values, tick = rtp_seq, status OK, running.
func seqRows(seqs ...int64) []row {
	rs := make([]row, len(seqs))
	for i, s := range seqs {
		rs[i] = row{seq: s, tick: s, status: 1, state: 2, lat: 10, reply: 200}
	}
	return rs
}

func analyze(t *testing.T, rows []row) *Stats {
	t.Helper()
	l, err := Read("test", "test.csv", strings.NewReader(csvOf(rows)))
	if err != nil {
		t.Fatal(err)
	}
	return Analyze(l)
}

// Losses, reorderings and duplicates are counted exactly from rtp_seq.
func TestSequence(t *testing.T) {
	for _, c := range []struct {
		name                  string
		seqs                  []int64
		lost                  int64
		gaps                  []Gap // First, Last, Lost only
		reordered, duplicates int
	}{
		{"clean", []int64{5, 6, 7, 8, 9}, 0, nil, 0, 0},
		{"two gaps", []int64{10, 11, 12, 15, 16, 20}, 5, []Gap{{First: 13, Last: 14, Lost: 2}, {First: 17, Last: 19, Lost: 3}}, 0, 0},
		{"one swapped", []int64{1, 2, 4, 3, 5}, 0, nil, 1, 0},
		{"late and lost", []int64{1, 3, 2, 6}, 2, []Gap{{First: 4, Last: 5, Lost: 2}}, 1, 0},
		{"duplicate", []int64{1, 2, 2, 3}, 0, nil, 0, 1},
		{"far back", []int64{1, 2, 3, 7, 8, 4, 5, 6, 9}, 0, nil, 1, 0},
		{"single lost", []int64{100, 102}, 1, []Gap{{First: 101, Last: 101, Lost: 1}}, 0, 0},
		{"one row", []int64{42}, 0, nil, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := analyze(t, seqRows(c.seqs...))
			if s.Lost != c.lost || s.Reordered != c.reordered || s.Duplicates != c.duplicates {
				t.Errorf("lost %d, reordered %d, duplicates %d; want %d, %d, %d", s.Lost, s.Reordered, s.Duplicates, c.lost, c.reordered, c.duplicates)
			}
			var got []Gap
			for _, g := range s.Gaps {
				got = append(got, Gap{First: g.First, Last: g.Last, Lost: g.Lost})
			}
			if !slices.Equal(got, c.gaps) {
				t.Errorf("gaps %v, want %v", got, c.gaps)
			}
		})
	}
}

// A gap says when it was and how long no data came.
func TestGapPlace(t *testing.T) {
	s := analyze(t, seqRows(0, 1, 2, 10, 11, 12, 13, 14, 15, 16, 20))
	if len(s.Gaps) != 2 {
		t.Fatalf("gaps %v", s.Gaps)
	}
	if g := s.Gaps[0]; g.Time != 0.002 || math.Abs(g.Span-0.008) > 1e-12 {
		t.Errorf("first gap at %v s for %v s, want 0.002 s for 0.008 s", g.Time, g.Span)
	}
	if top := s.LargestGaps(1); len(top) != 1 || top[0].First != 3 || top[0].Lost != 7 {
		t.Errorf("largest gap %v, want rtp_seq 3…9", top)
	}
	if s.PeriodUs != 1000 || s.RateHz != 1000 {
		t.Errorf("period %v µs, rate %v Hz; want 1000, 1000 (a gap of ticks does not change the period)", s.PeriodUs, s.RateHz)
	}
	if s.Ticks != 21 || s.Rows != 11 || s.Duration != 0.02 {
		t.Errorf("ticks %d, rows %d, duration %v; want 21, 11, 0.02", s.Ticks, s.Rows, s.Duration)
	}
}

// Nearest-rank percentiles on known data.
func TestPercentiles(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, c := range []struct {
		vs            []float64
		p50, p99, max float64
	}{
		{hundred, 50, 99, 100},
		{[]float64{7}, 7, 7, 7},
		{[]float64{1, 2}, 1, 2, 2},
		{[]float64{3, 1, 2}, 2, 3, 3},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, 10, 10},
		{[]float64{math.NaN(), 4, math.NaN(), 2, math.Inf(1)}, 2, 4, 4},
	} {
		d := newDist(c.vs)
		if d.P50 != c.p50 || d.P99 != c.p99 || d.Max != c.max {
			t.Errorf("%v: p50 %v p99 %v max %v, want %v %v %v", c.vs, d.P50, d.P99, d.Max, c.p50, c.p99, c.max)
		}
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("the percentile of nothing is not NaN")
	}
}

// Lateness and reply latency from the file, NaN ignored; statuses, flags
// and state changes counted.
func TestLatencyAndStatus(t *testing.T) {
	var rows []row
	for i := range 100 {
		r := row{seq: int64(i), tick: int64(i), status: 1, state: 2, lat: float64((i*37)%100 + 1), reply: float64(100 - i)}
		switch {
		case i < 3:
			r.status, r.state, r.lat, r.reply, r.flags = 0, 1, math.NaN(), math.NaN(), "0,0,0,0"
		case i >= 40 && i < 45:
			r.status, r.reply, r.flags = 4, math.NaN(), "1,1,0,0"
		case i == 45:
			r.status = 5
		case i >= 60 && i < 70:
			r.state, r.flags = 3, "0,0,1,0"
		case i == 80:
			r.status, r.flags = 3, "0,1,0,1"
		case i%10 == 1:
			r.status = 2
		}
		rows = append(rows, r)
	}
	s := analyze(t, rows)
	// lateness: (37i mod 100)+1 over i in 3…99 is 97 distinct values of
	// 1…100, all but 1, 38, 75.
	if s.Lateness.N != 97 || s.Lateness.Max != 100 || s.Lateness.Min != 2 {
		t.Errorf("lateness n %d min %v max %v, want 97, 2, 100", s.Lateness.N, s.Lateness.Min, s.Lateness.Max)
	}
	// Sorted: 2…37, 39…74, 76…100; the 49th is 51, the ⌈96.03⌉th the last.
	if s.Lateness.P50 != 51 || s.Lateness.P99 != 100 {
		t.Errorf("lateness p50 %v p99 %v, want 51 and 100", s.Lateness.P50, s.Lateness.P99)
	}
	// replies: 100−i for i in 3…99 but 40…44: 92 values.
	if s.Reply.N != 92 || s.Reply.Max != 97 || s.Reply.Min != 1 {
		t.Errorf("reply n %d min %v max %v, want 92, 1, 97", s.Reply.N, s.Reply.Min, s.Reply.Max)
	}
	// OK_NO_DELAY: i%10 == 1 but where another case came first (1, 41,
	// 61): 11, 21, 31, 51, 71, 81, 91.
	want := []int{3, 83, 7, 1, 5, 1}
	if !slices.Equal(s.Status, want) {
		t.Errorf("statuses %v, want %v", s.Status, want)
	}
	if s.Late != 5 || s.Stale != 10 || s.Overrun != 1 || s.Applied != 100-3-10 {
		t.Errorf("late %d stale %d overrun %d applied %d; want 5, 10, 1, 87", s.Late, s.Stale, s.Overrun, s.Applied)
	}
	changes := []StateChange{{Time: 0.003, Row: 3, From: 1, To: 2}, {Time: 0.06, Row: 60, From: 2, To: 3}, {Time: 0.07, Row: 70, From: 3, To: 2}}
	if !slices.Equal(s.StateChanges, changes) {
		t.Errorf("state changes %v, want %v", s.StateChanges, changes)
	}
}

// The send-interval deviation: intervals of successive send times less their
// median, over consecutive rtp_seq only.
func TestSendDeviation(t *testing.T) {
	rows := seqRows(0, 1, 2, 3, 4, 5, 9, 10)
	for i, lat := range []float64{10, 12, 10, 30, 10, 10, 500, 10} {
		rows[i].lat = lat
	}
	s := analyze(t, rows)
	// Intervals 1002, 998, 1020, 980, 1000 (and 5→9, 9→10 skipped:
	// not consecutive, then 1000−490 = 510 for 9→10).
	if len(s.DevUs) != 6 {
		t.Fatalf("%d intervals, want 6: %v", len(s.DevUs), s.DevUs)
	}
	// Sorted intervals 510 980 998 1000 1002 1020: the median (3rd) is 998.
	if s.IntervalUs != 998 {
		t.Errorf("nominal %v µs, want 998", s.IntervalUs)
	}
	got := slices.Clone(s.DevUs)
	want := []float64{4, 0, 22, -18, 2, -488}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("deviations %v, want %v", got, want)
			break
		}
	}
	// |dev| sorted 0 2 4 18 22 488: p50 the 3rd, p99 and max the 6th.
	if s.Deviation.P50 != 4 || s.Deviation.P99 != 488 || s.Deviation.Max != 488 {
		t.Errorf("deviation p50 %v p99 %v max %v, want 4, 488, 488", s.Deviation.P50, s.Deviation.P99, s.Deviation.Max)
	}
	// A tick that sent nothing breaks the chain.
	rows = seqRows(0, 1, 2, 3)
	rows[2].lat = math.NaN()
	if s := analyze(t, rows); len(s.DevUs) != 1 || s.DevUs[0] != 0 || s.IntervalUs != 1000 {
		t.Errorf("with a row that sent nothing: %v around %v, want one interval of 1000", s.DevUs, s.IntervalUs)
	}
	// Consecutive packets of ticks apart (an Emio's ticks before its
	// camera's first frame exchange nothing, so send nothing): no interval.
	rows = seqRows(0, 1, 2, 3)
	rows[2].tick, rows[3].tick = 40, 41
	if s := analyze(t, rows); len(s.DevUs) != 2 || s.IntervalUs != 1000 {
		t.Errorf("across a tick gap: %v around %v, want two intervals of 1000", s.DevUs, s.IntervalUs)
	}
}

func TestSplitColumn(t *testing.T) {
	for _, c := range []struct {
		in, field string
		index     int
		unit      string
	}{
		{"markers_1_mm", "markers", 1, "mm"},
		{"angles_4_rad", "angles", 4, "rad"},
		{"joint_velocity_6_deg_per_s", "joint_velocity", 6, "deg_per_s"},
		{"pose_2_mm_deg", "pose", 2, "mm_deg"},
		{"age_s", "age", 0, "s"},
		{"sim_time_s", "sim_time", 0, "s"},
		{"error_code", "error", 0, "code"},
		{"speed_m_per_s", "speed", 0, "m_per_s"},
		{"gripper", "gripper", 0, ""},
		{"1", "", 1, ""},
		{"12", "", 12, ""},
		{"joints_3", "joints", 3, ""},
	} {
		f, i, u := splitColumn(c.in)
		if f != c.field || i != c.index || u != c.unit {
			t.Errorf("%s: %q %d %q, want %q %d %q", c.in, f, i, u, c.field, c.index, c.unit)
		}
	}
	if got := UnitLabel("mm_per_s_deg_per_s"); got != "mm/s, deg/s" {
		t.Errorf("UnitLabel: %q", got)
	}
}

// A malformed file is refused with its name, the line and the column.
func TestReadErrors(t *testing.T) {
	good := csvOf(seqRows(1, 2, 3))
	lines := strings.SplitAfter(good, "\n")
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"line 1", "empty"}},
		{"missing column", strings.Replace(good, "rtp_seq,", "", 1), []string{"line 1", "column rtp_seq", "missing"}},
		{"twice", strings.Replace(good, "meas_age_s", "meas_markers_1_mm", 1), []string{"line 1", "column meas_markers_1_mm", "twice"}},
		{"not a number", lines[0] + lines[1] + strings.Replace(lines[2], ",10,200,", ",abc,200,", 1) + lines[3], []string{"line 3", "column lateness_us", `"abc"`}},
		{"vector", lines[0] + lines[1] + lines[2] + strings.Replace(lines[3], ",0.001,", ",x1,", 1), []string{"line 4", "column meas_age_s"}},
		{"cells", lines[0] + strings.Replace(lines[1], ",1.5,", ",1.5,2,", 1) + lines[2], []string{"line 2", "18 cells, want 17"}},
		{"short in the middle", lines[0] + lines[1][:20] + "\n" + lines[2], []string{"line 2", "cells, want 17"}},
		{"flag", lines[0] + strings.Replace(lines[1], ",0,1,0,0,", ",0,2,0,0,", 1), []string{"line 2", "column applied", "0 or 1"}},
		{"rtp_seq", lines[0] + strings.Replace(lines[1], ",1,1,1,1,2,", ",1.5,1,1,1,2,", 1), []string{"line 2", "column rtp_seq", "integer"}},
		{"NaN time", lines[0] + "NaN" + lines[1][strings.IndexByte(lines[1], ','):], []string{"line 2", "column time_s"}},
		{"negative tick", lines[0] + strings.Replace(lines[1], ",1,1,1,1,2,", ",1,-1,1,1,2,", 1), []string{"line 2", "column tick"}},
		{"quote", lines[0] + `"1,` + lines[1], []string{"line 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read("emio", "run.emio.csv", strings.NewReader(c.in))
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			for _, w := range append([]string{"report: ", "run.emio.csv"}, c.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if !strings.HasPrefix(msg, "report: ") {
				t.Errorf("%q does not start with report: ", msg)
			}
		})
	}
}

// NaN and empty cells are read where the recorder writes them; a last row
// cut short is dropped with a warning; CRLF and a BOM are read.
func TestReadTolerates(t *testing.T) {
	rows := seqRows(1, 2, 3)
	rows[1].lat, rows[1].reply, rows[1].measure = math.NaN(), math.NaN(), "NaN,,NaN,nan"
	in := csvOf(rows)
	l, err := Read("emio", "x.csv", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if l.Rows() != 3 || !math.IsNaN(l.Lateness[1]) || !math.IsNaN(l.Meas[1].Values[1]) || l.Meas[0].Values[0] != 1.5 {
		t.Errorf("rows %d, lateness %v, meas %v", l.Rows(), l.Lateness, l.Meas[1].Values)
	}
	cut := in + "0.004,1767272400.004000,4,4,4,1,2,10"
	l, err = Read("emio", "x.csv", strings.NewReader(cut))
	if err != nil || l.Rows() != 3 || len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "line 5") {
		t.Errorf("a last row cut short: %v, %d rows, warnings %q", err, l.Rows(), l.Warnings)
	}
	crlf := "\ufeff" + strings.ReplaceAll(in, "\n", "\r\n")
	if l, err := Read("emio", "x.csv", strings.NewReader(crlf)); err != nil || l.Rows() != 3 {
		t.Errorf("CRLF with a BOM: %v", err)
	}
	extra := strings.Replace(in, "overrun,", "overrun,comment,", 1)
	extra = strings.ReplaceAll(extra, ",0,1,0,0,", ",0,1,0,0,7,")
	if l, err := Read("emio", "x.csv", strings.NewReader(extra)); err != nil || len(l.Warnings) != 1 {
		t.Errorf("an unknown column: %v, warnings %v", err, l.Warnings)
	}
	if l.Meas[0].Field != "markers" || l.Meas[0].Unit != "mm" || l.Meas[1].Field != "age" || l.Cmd[0].Index != 1 || len(l.Applied) != 1 {
		t.Errorf("columns: %+v %+v %+v", l.Meas[0], l.Meas[1], l.Cmd[0])
	}
}

// Open finds the links of a base name, or reads one link's file.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"run.emio.csv", "run.meca500.csv", "other.emio.csv"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(csvOf(seqRows(1, 2))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := Open(filepath.Join(dir, "run.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Name != "run" || len(rec.Links) != 2 || rec.Links[0].Name != "emio" || rec.Links[1].Name != "meca500" {
		t.Errorf("recording %q with %d links", rec.Name, len(rec.Links))
	}
	rec, err = Open(filepath.Join(dir, "run.meca500.csv"))
	if err != nil || rec.Name != "run" || len(rec.Links) != 1 || rec.Links[0].Name != "meca500" {
		t.Errorf("one link's file: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "none.csv")); err == nil || !strings.HasPrefix(err.Error(), "report: ") || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("no recording: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "run.txt")); err == nil {
		t.Error("a .txt accepted")
	}
}

// downsample keeps at most two points per column and every extreme.
func TestDownsample(t *testing.T) {
	n := 600_000
	ts, vs := make([]float64, n), make([]float64, n)
	for i := range n {
		ts[i] = float64(i) / 1000
		vs[i] = math.Sin(ts[i])
	}
	vs[123_456] = 50 // a one-sample spike
	vs[400_000] = math.NaN()
	xs, ys := downsample(ts, vs, 0, ts[n-1], 500, 0.0035)
	if len(xs) > 1000+10 {
		t.Errorf("%d points for 500 columns", len(xs))
	}
	if slices.Max(ys) != 50 {
		t.Errorf("the spike is lost: max %v", slices.Max(ys))
	}
	// Few samples: kept as they are, broken at a gap.
	xs, ys = downsample([]float64{0, 1, 2, 10, 11}, []float64{1, 2, 3, 4, 5}, 0, 11, 500, 3)
	if len(xs) != 6 || !math.IsNaN(ys[3]) {
		t.Errorf("few samples: %v %v", xs, ys)
	}
}

// A ten-minute recording at 1 kHz makes a page of a few MB at most.
func TestPageSize(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	l := bigLink(600_000)
	var w countWriter
	r := Build(&Recording{Name: "big", Links: []*LinkFile{l}})
	if err := r.WriteHTML(&w); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows: a page of %.2f MB", l.Rows(), float64(w)/1e6)
	if w > 3e6 {
		t.Errorf("a page of %d bytes for a ten-minute recording", w)
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// bigLink is n rows of a 1 kHz Emio-like link, built in memory.
func bigLink(n int) *LinkFile {
	l := &LinkFile{Name: "emio", File: "big.emio.csv"}
	mk := func(field, unit string, k int) []*Signal {
		var out []*Signal
		for i := range k {
			out = append(out, &Signal{Column: field, Field: field, Index: i + 1, Unit: unit, Values: make([]float64, n)})
		}
		return out
	}
	l.Meas = append(mk("markers", "mm", 3), mk("angles", "rad", 4)...)
	l.Cmd, l.Applied = mk("angles", "rad", 4), mk("angles", "rad", 4)
	for i := range n {
		t := float64(i) / 1000
		l.Time = append(l.Time, t)
		l.Deadline = append(l.Deadline, 1767272400+t)
		l.RTPSeq = append(l.RTPSeq, int64(i+i/100000))
		l.Tick = append(l.Tick, int64(i))
		l.Seq = append(l.Seq, int64(i))
		l.Status = append(l.Status, uint8(1+3*btoi(i%5000 == 0)))
		l.State = append(l.State, 2)
		l.Lateness = append(l.Lateness, 5+float64(i*7919%97)/10)
		l.Reply = append(l.Reply, 150+float64(i*104729%311)/3)
		l.Flags = append(l.Flags, FlagApplied)
		for k, s := range slices.Concat(l.Meas, l.Cmd, l.Applied) {
			s.Values[i] = math.Sin(t*0.3+float64(k)) + 0.01*float64(i*31%17)
		}
	}
	return l
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The page holds what it promises, and nothing from the network.
func TestPageContent(t *testing.T) {
	dir := t.TempDir()
	rec, err := Open(writeRecording(t, dir, "run", threeLinks))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Build(rec).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, w := range []string{"<title>run — bridge report</title>", "Thursday 1 January 2026, 13:00:00 UTC",
		`id="link-1"`, `id="link-2"`, `id="link-3"`, "TIMEOUT", "RECONNECTED", "DESYNC", "OK_NO_DELAY",
		"48 ticks lost", "markers (mm)", "joint_velocity (deg/s)", "sim_time (s)", "lateness (µs)", "time (s)"} {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
	// The SVG namespaces are names, not addresses fetched.
	bare := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns:xlink="http://www.w3.org/1999/xlink"`, "").Replace(page)
	for _, bad := range []string{"http://", "https://", "<script", "<link ", "<img", "url(http", "ZgotmplZ"} {
		if i := strings.Index(bare, bad); i >= 0 {
			t.Errorf("the page holds %q: %s", bad, bare[max(i-60, 0):min(i+60, len(bare))])
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(csvOf(seqRows(1, 2, 4, 3))))
	rows := seqRows(1, 2)
	rows[0].lat = math.NaN()
	f.Add([]byte(csvOf(rows)))
	f.Add([]byte(header))
	f.Add([]byte(header + "1,2,3\n"))
	f.Add([]byte("time_s\n\"1"))
	f.Add([]byte(strings.ReplaceAll(csvOf(seqRows(5, 9)), "0.25", "1e308")))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Read("fuzz", "fuzz.csv", bytes.NewReader(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "report: fuzz.csv: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		n := l.Rows()
		for _, k := range []int{len(l.Deadline), len(l.RTPSeq), len(l.Tick), len(l.Seq), len(l.Status), len(l.State), len(l.Lateness), len(l.Reply), len(l.Flags)} {
			if k != n {
				t.Fatalf("columns of %d and %d rows", k, n)
			}
		}
		for _, s := range slices.Concat(l.Meas, l.Cmd, l.Applied) {
			if len(s.Values) != n {
				t.Fatalf("%s: %d values for %d rows", s.Column, len(s.Values), n)
			}
		}
		s := Analyze(l)
		if s.Lost < 0 || s.Rows != n {
			t.Fatalf("lost %d, rows %d", s.Lost, s.Rows)
		}
		if n <= 64 {
			if err := Build(&Recording{Name: "fuzz", Links: []*LinkFile{l}}).WriteHTML(io.Discard); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	l := threeLinks[1] // 30 s at 1 kHz
	path := filepath.Join(dir, "run.meca500.csv")
	if err := l.write(path); err != nil {
		b.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read("meca500", path, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnalyze(b *testing.B) {
	l := bigLink(60_000)
	for b.Loop() {
		Analyze(l)
	}
}

func BenchmarkWriteHTML(b *testing.B) {
	r := Build(&Recording{Name: "big", Links: []*LinkFile{bigLink(60_000)}})
	for b.Loop() {
		if err := r.WriteHTML(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
