package record

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/labbridge/bridge/internal/atomicfile"
	"github.com/labbridge/bridge/internal/matfile"
)

// A MAT-file needs each column whole, and its size before its data: while
// recording, each link's rows go to a spill file beside the MAT-file (the
// row's values, float64 little-endian, one write per row); at Close the
// MAT-file is assembled from the spills column by column and the spills
// removed. The CSVs are written as packets come either way, so a crash
// loses the MAT-file, never the recording.

// spill is one link's rows, row-major.
type spill struct {
	mat  string // the MAT-file it is for, for messages
	f    *os.File
	buf  []byte
	cols []string
	rows int
}

func newSpill(mat, link string, cols []string) (*spill, error) {
	f, err := os.CreateTemp(filepath.Dir(mat), "."+link+"-*.spill")
	if err != nil {
		return nil, &WriteError{Path: mat, Err: err}
	}
	return &spill{mat: mat, f: f, buf: make([]byte, 8*len(cols)), cols: cols}, nil
}

func (s *spill) row(v []float64) error {
	for i, x := range v {
		binary.LittleEndian.PutUint64(s.buf[8*i:], math.Float64bits(x))
	}
	if _, err := s.f.Write(s.buf); err != nil {
		return &WriteError{Path: s.mat, Opened: true, Rows: uint64(s.rows), Err: err}
	}
	s.rows++
	return nil
}

// column reads column k of a row-major spill of ncols values per row.
type column struct {
	r     *bufio.Reader
	k, n  int
	row   []byte
	left  int
	value [8]byte
	off   int
}

func (c *column) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if c.off == 8 {
			if c.left == 0 {
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
			if _, err := io.ReadFull(c.r, c.row); err != nil {
				return n, fmt.Errorf("record: spill: %w", err)
			}
			copy(c.value[:], c.row[8*c.k:])
			c.left--
			c.off = 0
		}
		k := copy(p[n:], c.value[c.off:])
		c.off += k
		n += k
	}
	return n, nil
}

// writeMAT assembles path from the spills, one struct per link named
// after it, and removes them. It writes a temporary file beside path and
// renames it into place only when whole: a failure leaves an older path
// as it was and no half file.
func writeMAT(path string, names []string, spills []*spill) (err error) {
	defer removeSpills(spills)
	var structs []matfile.Struct
	for i, s := range spills {
		st := matfile.Struct{Name: names[i]}
		for k, name := range matNames(s.cols) {
			f, err := os.Open(s.f.Name())
			if err != nil {
				return &WriteError{Path: path, Err: err}
			}
			defer f.Close()
			st.Columns = append(st.Columns, matfile.Column{Name: name, Rows: s.rows,
				Data: &column{r: bufio.NewReaderSize(f, 1<<16), k: k, n: len(s.cols), row: make([]byte, 8*len(s.cols)), left: s.rows, off: 8}})
		}
		structs = append(structs, st)
	}
	// Synced before the rename, so that a crash never leaves a named but
	// empty file; 0644 as the CSVs beside it.
	err = atomicfile.Write(path, 0o644, func(w io.Writer) error {
		return matfile.Write(w, "bridge record: one struct per link, one row per tick (docs/tap.md)", structs)
	})
	if ae := (*atomicfile.Error)(nil); errors.As(err, &ae) {
		return &WriteError{Path: path, Err: ae.Err}
	}
	return err
}

// removeSpills closes and removes spill files.
func removeSpills(spills []*spill) {
	for _, s := range spills {
		s.f.Close()
		os.Remove(s.f.Name())
	}
}

// matIdent makes a name a MATLAB identifier: a letter first, at most 63
// characters.
func matIdent(s string) string {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = "x_" + s
	}
	return s[:min(len(s), matfile.MaxNameLen)]
}

// matNames are the CSV's column names as MAT-file field names: cut to 63
// characters, and told apart again if that made two the same.
func matNames(cols []string) []string {
	out := make([]string, len(cols))
	seen := make(map[string]bool, len(cols))
	for i, c := range cols {
		n := matIdent(c)
		for k := 2; seen[n]; k++ {
			suffix := fmt.Sprintf("_%d", k)
			n = matIdent(c)[:min(len(matIdent(c)), matfile.MaxNameLen-len(suffix))] + suffix
		}
		seen[n] = true
		out[i] = n
	}
	return out
}
