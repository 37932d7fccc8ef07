package matfile

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/testutil"
)

// le encodes values as a Column's Data yields them.
func le(vs ...float64) []byte {
	b := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func col(name string, vs ...float64) Column {
	return Column{Name: name, Rows: len(vs), Data: bytes.NewReader(le(vs...))}
}

// h decodes hex written with spaces between words.
func h(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// headerBytes is the 128-byte header with text padded by spaces.
func headerBytes(text string) []byte {
	b := []byte(text + strings.Repeat(" ", 116-len(text)))
	return append(b, h("00000000 00000000 0001 494d")...)
}

type seg struct {
	what string
	b    []byte
}

// The bytes of tiny files, element by element, as the format lays them out.
func TestTranscript(t *testing.T) {
	slot := func(name string) []byte { return append([]byte(name), make([]byte, 32-len(name))...) }
	tests := []struct {
		name  string
		write func(w io.Writer) error
		want  []seg
	}{{
		name: "struct of two 2-row fields",
		write: func(w io.Writer) error {
			return Write(w, "tiny", []Struct{{Name: "s", Columns: []Column{col("a", 1, 2), col("bc", 3, 4)}}})
		},
		want: []seg{
			{"header: text, no subsystem data, version 0x0100, IM", headerBytes("MATLAB 5.0 MAT-file, tiny")},
			{"s: miMATRIX tag, 264 bytes", h("0e000000 08010000")},
			{"s: array flags: miUINT32, 8 bytes, mxSTRUCT_CLASS, nzmax 0", h("06000000 08000000 02000000 00000000")},
			{"s: dimensions: miINT32, 8 bytes, 1×1", h("05000000 08000000 01000000 01000000")},
			{"s: name: small miINT8 of 1 byte, 's', padding", h("01000100 73000000")},
			{"s: field name length: small miINT32, 32", h("05000400 20000000")},
			{"s: field names: miINT8, 64 bytes", h("01000000 40000000")},
			{"s: field name slot 'a'", slot("a")},
			{"s: field name slot 'bc'", slot("bc")},
			{"s.a: miMATRIX tag, 64 bytes", h("0e000000 40000000")},
			{"s.a: array flags: mxDOUBLE_CLASS", h("06000000 08000000 06000000 00000000")},
			{"s.a: dimensions 2×1", h("05000000 08000000 02000000 01000000")},
			{"s.a: empty name", h("01000000 00000000")},
			{"s.a: real part: miDOUBLE, 16 bytes", h("09000000 10000000")},
			{"s.a: 1, 2", h("00000000 0000f03f 00000000 00000040")},
			{"s.bc: miMATRIX tag, 64 bytes", h("0e000000 40000000")},
			{"s.bc: array flags: mxDOUBLE_CLASS", h("06000000 08000000 06000000 00000000")},
			{"s.bc: dimensions 2×1", h("05000000 08000000 02000000 01000000")},
			{"s.bc: empty name", h("01000000 00000000")},
			{"s.bc: real part: miDOUBLE, 16 bytes", h("09000000 10000000")},
			{"s.bc: 3, 4", h("00000000 00000840 00000000 00001040")},
		},
	}, {
		name: "variables: a long name, an empty column",
		write: func(w io.Writer) error {
			return WriteVars(w, "MATLAB 5.0 MAT-file, own text", []Column{col("time_s", 0.5), {Name: "e"}})
		},
		want: []seg{
			{"header: text kept as given", headerBytes("MATLAB 5.0 MAT-file, own text")},
			{"time_s: miMATRIX tag, 64 bytes", h("0e000000 40000000")},
			{"time_s: array flags: mxDOUBLE_CLASS", h("06000000 08000000 06000000 00000000")},
			{"time_s: dimensions 1×1", h("05000000 08000000 01000000 01000000")},
			{"time_s: name: miINT8, 6 bytes, padded to 8", append(h("01000000 06000000"), "time_s\x00\x00"...)},
			{"time_s: real part: miDOUBLE, 8 bytes, 0.5", h("09000000 08000000 00000000 0000e03f")},
			{"e: miMATRIX tag, 48 bytes", h("0e000000 30000000")},
			{"e: array flags: mxDOUBLE_CLASS", h("06000000 08000000 06000000 00000000")},
			{"e: dimensions 0×1", h("05000000 08000000 00000000 01000000")},
			{"e: name: small miINT8 of 1 byte", h("01000100 65000000")},
			{"e: real part: miDOUBLE, 0 bytes", h("09000000 00000000")},
		},
	}, {
		name:  "no variables: the header alone",
		write: func(w io.Writer) error { return Write(w, "", nil) },
		want:  []seg{{"header: the bare magic text", headerBytes("MATLAB 5.0 MAT-file")}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(&buf); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			off := 0
			for _, s := range tt.want {
				end := min(off+len(s.b), len(got))
				if !bytes.Equal(got[off:end], s.b) {
					t.Errorf("at %d, %s:\n got % x\nwant % x", off, s.what, got[off:end], s.b)
				}
				off += len(s.b)
			}
			if off != len(got) {
				t.Errorf("file is %d bytes, the transcript %d", len(got), off)
			}
			if off%8 != 0 {
				t.Errorf("transcript of %d bytes: not 8-aligned", off)
			}
			if _, _, err := readMAT(got); err != nil {
				t.Errorf("the reader refuses it: %v", err)
			}
		})
	}
}

// special values whose bits must survive.
var special = []float64{0, math.Copysign(0, -1), 1, -1.5, math.Pi, math.MaxFloat64, math.SmallestNonzeroFloat64,
	math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7ff8dead0000beef)}

func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

func TestRoundTrip(t *testing.T) {
	long := "a" + strings.Repeat("b_9", 20) + "cd" // 63 bytes: field name slots of 64
	structs := []Struct{
		{Name: "emio", Columns: []Column{col("time_s", 0, 0.01, 0.02), col("x", 1, 2, 3), col("special", special[:3]...)}},
		{Name: "meca500_with_a_longer_name", Columns: []Column{col(long, special...), col("Z9", 7), {Name: "none"}}},
		{Name: "nofields"},
	}
	var buf bytes.Buffer
	if err := Write(&buf, "round trip", structs); err != nil {
		t.Fatal(err)
	}
	text, vars, err := readMAT(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if text != "MATLAB 5.0 MAT-file, round trip" {
		t.Errorf("header text %q", text)
	}
	want := map[string][][]float64{
		"emio":                       {{0, 0.01, 0.02}, {1, 2, 3}, special[:3]},
		"meca500_with_a_longer_name": {special, {7}, {}},
		"nofields":                   {},
	}
	if len(vars) != len(structs) {
		t.Fatalf("%d variables read, want %d", len(vars), len(structs))
	}
	for i, s := range structs {
		v := vars[i]
		if v.name != s.Name || v.class != mxSTRUCT || !slices.Equal(v.dims, []int32{1, 1}) {
			t.Errorf("variable %d: %q class %d dims %v, want %q, a 1×1 struct", i, v.name, v.class, v.dims, s.Name)
			continue
		}
		if len(v.fields) != len(s.Columns) {
			t.Errorf("%s: fields %q", s.Name, v.fields)
			continue
		}
		for j, c := range s.Columns {
			f := v.values[j]
			if v.fields[j] != c.Name || f.class != mxDOUBLE || !slices.Equal(f.dims, []int32{int32(c.Rows), 1}) || !sameBits(f.data, want[s.Name][j]) {
				t.Errorf("%s field %d: %q class %d dims %v %v, want %q %v", s.Name, j, v.fields[j], f.class, f.dims, f.data, c.Name, want[s.Name][j])
			}
		}
	}
}

func TestRoundTripVars(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteVars(&buf, "", []Column{col("time_s", 0, 0.5), col("special", special...), {Name: "empty", Data: bytes.NewReader(nil)}}); err != nil {
		t.Fatal(err)
	}
	_, vars, err := readMAT(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name string
		data []float64
	}{{"time_s", []float64{0, 0.5}}, {"special", special}, {"empty", []float64{}}}
	if len(vars) != len(want) {
		t.Fatalf("%d variables, want %d", len(vars), len(want))
	}
	for i, w := range want {
		v := vars[i]
		if v.name != w.name || v.class != mxDOUBLE || !slices.Equal(v.dims, []int32{int32(len(w.data)), 1}) || !sameBits(v.data, w.data) {
			t.Errorf("variable %d: %q class %d dims %v %v, want %q %v", i, v.name, v.class, v.dims, v.data, w.name, w.data)
		}
	}
}

// value is the test data of row i of field j: distinct, exact, of every
// magnitude.
func value(i, j int) float64 {
	return float64(i)*0.001 + float64(j)*1e6 - float64(i%7)/3
}

// genColumn yields value(i, j) for rows i without holding them: a stand-in
// for a recorder's spill file.
type genColumn struct{ i, rows, j int }

func (g *genColumn) Read(p []byte) (int, error) {
	n := 0
	for g.i < g.rows && len(p)-n >= 8 {
		binary.LittleEndian.PutUint64(p[n:], math.Float64bits(value(g.i, g.j)))
		g.i++
		n += 8
	}
	if n == 0 && g.i == g.rows {
		return 0, io.EOF
	}
	if n == 0 {
		return 0, io.ErrShortBuffer // io.ReadFull never asks for less than a value here
	}
	return n, nil
}

func TestManyRows(t *testing.T) {
	const rows, fields = 100_000, 20
	s := Struct{Name: "emio"}
	for j := range fields {
		s.Columns = append(s.Columns, Column{Name: fmt.Sprintf("field_%d", j), Rows: rows, Data: &genColumn{rows: rows, j: j}})
	}
	var buf bytes.Buffer
	if err := Write(&buf, "many rows", []Struct{s, {Name: "after", Columns: []Column{col("x", 42)}}}); err != nil {
		t.Fatal(err)
	}
	_, vars, err := readMAT(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != 2 || len(vars[0].values) != fields || vars[1].field("x") == nil || vars[1].field("x").data[0] != 42 {
		t.Fatalf("read %d variables", len(vars))
	}
	for j, f := range vars[0].values {
		if vars[0].fields[j] != fmt.Sprintf("field_%d", j) || len(f.data) != rows {
			t.Fatalf("field %d: %q, %d rows", j, vars[0].fields[j], len(f.data))
		}
		for i, v := range f.data {
			if v != value(i, j) {
				t.Fatalf("field %d row %d: %v, want %v", j, i, v, value(i, j))
			}
		}
	}
}

// Write holds a chunk of a column, never the column: what it allocates
// does not grow with the rows.
func TestStreamsColumns(t *testing.T) {
	const rows = 4 << 20 // 32 MiB of values
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := Write(io.Discard, "", []Struct{{Name: "s", Columns: []Column{{Name: "big", Rows: rows, Data: &genColumn{rows: rows}}}}})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("writing a column of %d MiB allocated %d KiB", rows*8>>20, n>>10)
	}
}

// Bad names and sizes are refused before a byte is written, with an error
// naming them.
func TestInvalid(t *testing.T) {
	one := func() Column { return col("x", 1) }
	tests := []struct {
		name    string
		write   func(w io.Writer) error
		want    error
		mention string
	}{
		{"empty struct name", func(w io.Writer) error { return Write(w, "", []Struct{{Name: ""}}) }, ErrName, `struct name ""`},
		{"leading digit", func(w io.Writer) error { return Write(w, "", []Struct{{Name: "1emio"}}) }, ErrName, `"1emio"`},
		{"leading underscore", func(w io.Writer) error { return Write(w, "", []Struct{{Name: "_emio"}}) }, ErrName, `"_emio"`},
		{"dash", func(w io.Writer) error { return Write(w, "", []Struct{{Name: "meca-500"}}) }, ErrName, `"meca-500"`},
		{"non-ASCII letter", func(w io.Writer) error { return Write(w, "", []Struct{{Name: "émio"}}) }, ErrName, `"émio"`},
		{"64 characters", func(w io.Writer) error { return Write(w, "", []Struct{{Name: strings.Repeat("a", 64)}}) }, ErrName, strings.Repeat("a", 64)},
		{"field name with a dot", func(w io.Writer) error {
			return Write(w, "", []Struct{{Name: "emio", Columns: []Column{one(), col("time.s", 1)}}})
		}, ErrName, `struct emio: field name "time.s"`},
		{"field name of 64", func(w io.Writer) error {
			return Write(w, "", []Struct{{Name: "emio", Columns: []Column{col("f"+strings.Repeat("0", 63), 1)}}})
		}, ErrName, "f" + strings.Repeat("0", 63)},
		{"variable name with a space", func(w io.Writer) error { return WriteVars(w, "", []Column{col("time s", 1)}) }, ErrName, `variable name "time s"`},
		{"duplicate struct", func(w io.Writer) error { return Write(w, "", []Struct{{Name: "emio"}, {Name: "emio"}}) }, ErrDuplicate, `struct name "emio"`},
		{"duplicate field", func(w io.Writer) error {
			return Write(w, "", []Struct{{Name: "emio", Columns: []Column{one(), col("y", 1), col("x", 2)}}})
		}, ErrDuplicate, `struct emio: field name "x"`},
		{"duplicate variable", func(w io.Writer) error { return WriteVars(w, "", []Column{one(), one()}) }, ErrDuplicate, `variable name "x"`},
		{"negative rows", func(w io.Writer) error {
			return Write(w, "", []Struct{{Name: "emio", Columns: []Column{{Name: "t", Rows: -1, Data: bytes.NewReader(nil)}}}})
		}, ErrRows, "emio.t"},
		{"no data", func(w io.Writer) error { return WriteVars(w, "", []Column{{Name: "t", Rows: 3}}) }, ErrShortColumn, "t: "},
		{"column over 2 GiB", func(w io.Writer) error {
			return WriteVars(w, "", []Column{{Name: "huge", Rows: 1 << 28, Data: bytes.NewReader(nil)}})
		}, ErrTooLarge, "huge"},
		{"struct over 2 GiB", func(w io.Writer) error {
			s := Struct{Name: "emio"}
			for j := range 40 {
				s.Columns = append(s.Columns, Column{Name: fmt.Sprint("f", j), Rows: 8 << 20, Data: &genColumn{rows: 8 << 20}})
			}
			return Write(w, "", []Struct{s})
		}, ErrTooLarge, "struct emio"},
		{"header too long", func(w io.Writer) error { return Write(w, strings.Repeat("h", 100), nil) }, ErrHeader, strings.Repeat("h", 100)},
		{"header with a newline", func(w io.Writer) error { return Write(w, "two\nlines", nil) }, ErrHeader, `"two\nlines"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := tt.write(&buf)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "matfile: ") || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q: want it to start with \"matfile: \" and mention %s", err, tt.mention)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written before the error", buf.Len())
			}
		})
	}
	// At the limits: accepted.
	var buf bytes.Buffer
	name := "Z" + strings.Repeat("_", 62)
	if err := Write(&buf, strings.Repeat("h", 116-len(magic)-2), []Struct{{Name: name, Columns: []Column{col(name, 1)}}}); err != nil {
		t.Errorf("names of 63 characters, header text of 116: %v", err)
	}
}

var errDisk = errors.New("disk on fire")

// failAfter yields n bytes of a column, then fails with err.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	k := min(len(p), f.n)
	clear(p[:k])
	f.n -= k
	return k, nil
}

// A column that yields less or more than its Rows, or fails, is an error
// naming it, and what was written before is no loadable file.
func TestBadColumnData(t *testing.T) {
	const rows = 100_000
	tests := []struct {
		name    string
		data    io.Reader
		want    error
		mention string
	}{
		{"one value short", bytes.NewReader(make([]byte, 8*(rows-1))), ErrShortColumn, "799992 bytes, 99999 of 100000 values"},
		{"half a value short", bytes.NewReader(make([]byte, 8*rows-3)), ErrShortColumn, "799997 bytes, 99999 of 100000 values"},
		{"empty", bytes.NewReader(nil), ErrShortColumn, "0 bytes, 0 of 100000 values"},
		{"one value long", bytes.NewReader(make([]byte, 8*(rows+1))), ErrLongColumn, "more than 100000 values"},
		{"one byte long", bytes.NewReader(make([]byte, 8*rows+1)), ErrLongColumn, "more than 100000 values"},
		{"read error midway", &failAfter{n: 8 * 1000, err: errDisk}, errDisk, "reading value 1001 of 100000"},
		{"read error at the end", &failAfter{n: 8 * rows, err: errDisk}, errDisk, "reading past value 100000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			good := Column{Name: "good", Rows: rows, Data: &genColumn{rows: rows}}
			err := Write(&buf, "", []Struct{{Name: "emio", Columns: []Column{
				good, {Name: "time_s", Rows: rows, Data: tt.data}, {Name: "after", Rows: rows, Data: &genColumn{rows: rows}},
			}}})
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "matfile: emio.time_s: ") || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q: want it to name emio.time_s and say %q", err, tt.mention)
			}
			if _, _, err := readMAT(buf.Bytes()); err == nil {
				t.Errorf("the %d bytes written before the error read as a whole file", buf.Len())
			}
		})
	}
}

// failWriter accepts n bytes, then fails.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errDisk
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	for _, n := range []int{0, 100, 128, 70_000, 800_100} {
		err := WriteVars(&failWriter{n: n}, "", []Column{{Name: "x", Rows: 100_000, Data: &genColumn{rows: 100_000}}})
		if !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "matfile: writing: ") {
			t.Errorf("writer failing after %d bytes: error %v", n, err)
		}
	}
}

// octave finds GNU Octave's command-line interpreter.
func octave(t *testing.T) []string {
	for _, name := range []string{"octave-cli", "octave"} {
		if path, err := exec.LookPath(name); err == nil {
			return []string{path, "--no-gui", "--norc", "--quiet", "--eval"}
		}
	}
	testutil.RequirePeer(t, "GNU Octave (octave-cli or octave on PATH)", "apt-get install octave", nil)
	return nil
}

// GNU Octave loads what Write and WriteVars write: structs of columns,
// field names of every length, values exactly. (Octave 7 prints "error:
// ignoring const execution_exception& while preparing to exit" on every
// exit, its bug 62515: harmless, the exit status is what counts.)
func TestOctaveLoads(t *testing.T) {
	cmd := octave(t)
	const n, m = 50_000, 1234
	time := func(i int) float64 { return float64(i) * 0.002 }
	dyadic := func(i, j int) float64 { return float64(i%1000)/8 - float64(j)*64 } // exact in decimal
	emio := Struct{Name: "emio", Columns: []Column{columnOf("time_s", n, func(i int) float64 { return time(i) })}}
	for j, f := range []string{"meas_markers_1_mm", "meas_markers_2_mm", "meas_markers_3_mm", "meas_motors_1_rad", "cmd_motors_1_rad", "lateness_us"} {
		emio.Columns = append(emio.Columns, columnOf(f, n, func(i int) float64 { return dyadic(i, j) }))
	}
	long := "joint_velocity_command_of_the_sixth_joint_in_degrees_per_second" // 63: slots of 64
	meca := Struct{Name: "meca500", Columns: []Column{
		columnOf("time_s", m, func(i int) float64 { return time(i) }),
		columnOf("joint_1_deg", m, func(i int) float64 { return dyadic(i, 1) }),
		columnOf(long, m, func(i int) float64 { return -dyadic(i, 2) }),
		{Name: "none"},
	}}
	dir := t.TempDir()
	run, vars := filepath.Join(dir, "run.mat"), filepath.Join(dir, "vars.mat")
	for _, f := range []struct {
		path  string
		write func(w io.Writer) error
	}{
		{run, func(w io.Writer) error { return Write(w, "bridge record", []Struct{emio, meca}) }},
		{vars, func(w io.Writer) error {
			return WriteVars(w, "", []Column{columnOf("time_s", 3, time), columnOf("x", 2, func(i int) float64 { return dyadic(i+5, 0) })})
		}},
	} {
		out, err := os.Create(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.write(out); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(`s = load('%s');
assert(isequal(sort(fieldnames(s))', {'emio', 'meca500'}));
assert(isstruct(s.emio) && isscalar(s.emio));
assert(isequal(fieldnames(s.emio)', {'time_s', 'meas_markers_1_mm', 'meas_markers_2_mm', 'meas_markers_3_mm', 'meas_motors_1_rad', 'cmd_motors_1_rad', 'lateness_us'}));
assert(isa(s.emio.time_s, 'double') && isequal(size(s.emio.time_s), [%d 1]));
assert(numel(s.emio.time_s) == %d);
assert(abs(s.emio.time_s(end) - %.17g) < 1e-12);
assert(s.emio.meas_markers_3_mm(1235) == %.17g);
assert(isequal(size(s.emio.lateness_us), [%d 1]));
assert(isstruct(s.meca500));
assert(isequal(fieldnames(s.meca500)', {'time_s', 'joint_1_deg', '%s', 'none'}));
assert(numel(s.meca500.joint_1_deg) == %d && s.meca500.joint_1_deg(7) == %.17g);
assert(s.meca500.%s(end) == %.17g);
assert(isempty(s.meca500.none) && isa(s.meca500.none, 'double'));
v = load('%s');
assert(isequal(v.time_s, [0; 0.002; 0.004]) && isequal(v.x, [%.17g; %.17g]));
printf('octave %%s loaded emio (%%d rows x %%d fields), meca500 (%%d rows x %%d fields), time_s(end) = %%.17g\n', version(), numel(s.emio.time_s), numel(fieldnames(s.emio)), numel(s.meca500.time_s), numel(fieldnames(s.meca500)), s.emio.time_s(end));
`, run, n, n, time(n-1), dyadic(1234, 2), n, long, m, dyadic(6, 1), long, -dyadic(m-1, 2), vars, dyadic(5, 0), dyadic(6, 0))
	out, err := exec.Command(cmd[0], append(cmd[1:], script)...).CombinedOutput()
	t.Logf("%s:\n%s", filepath.Base(cmd[0]), out)
	if err != nil {
		t.Fatalf("octave refused the files: %v\n%s", err, script)
	}
	if !strings.Contains(string(out), "loaded emio (50000 rows x 7 fields), meca500 (1234 rows x 4 fields)") {
		t.Errorf("octave did not say what it loaded")
	}
}

func columnOf(name string, rows int, f func(i int) float64) Column {
	vs := make([]float64, rows)
	for i := range vs {
		vs[i] = f(i)
	}
	return col(name, vs...)
}

// The recorder's case: 600k ticks of 25 columns, from memory to nowhere,
// and from spill files to a file.
func BenchmarkWrite(b *testing.B) {
	const rows, cols = 600_000, 25
	data := le(make([]float64, rows)...)
	for i := range rows {
		binary.LittleEndian.PutUint64(data[8*i:], math.Float64bits(value(i, 0)))
	}
	names := make([]string, cols)
	for j := range names {
		names[j] = fmt.Sprintf("column_%d", j)
	}
	size := func() int64 {
		var c counter
		s := Struct{Name: "emio"}
		for _, n := range names {
			s.Columns = append(s.Columns, Column{Name: n, Rows: rows, Data: bytes.NewReader(data)})
		}
		if err := Write(&c, "", []Struct{s}); err != nil {
			b.Fatal(err)
		}
		return int64(c)
	}()
	b.Run("memory-to-discard", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			s := Struct{Name: "emio"}
			for _, n := range names {
				s.Columns = append(s.Columns, Column{Name: n, Rows: rows, Data: bytes.NewReader(data)})
			}
			if err := Write(io.Discard, "bench", []Struct{s}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("files-to-file", func(b *testing.B) {
		dir := b.TempDir()
		spill := make([]*os.File, cols)
		for j := range spill {
			f, err := os.Create(filepath.Join(dir, names[j]))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
			spill[j] = f
		}
		out, err := os.Create(filepath.Join(dir, "run.mat"))
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		b.SetBytes(size)
		for b.Loop() {
			s := Struct{Name: "emio"}
			for j, f := range spill {
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					b.Fatal(err)
				}
				s.Columns = append(s.Columns, Column{Name: names[j], Rows: rows, Data: f})
			}
			if _, err := out.Seek(0, io.SeekStart); err != nil {
				b.Fatal(err)
			}
			if err := Write(out, "bench", []Struct{s}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type counter int64

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}
