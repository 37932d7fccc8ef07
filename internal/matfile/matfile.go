// Package matfile writes MATLAB Level-5 MAT-files, as described in
// MathWorks' "MAT-File Format" (the Version 5 MAT-file, little-endian,
// uncompressed): a 128-byte header, then one miMATRIX data element per
// variable. It writes what a session recording needs and nothing more:
// column vectors of doubles, top-level or as the fields of 1×1 structs.
//
// Columns are streamed from their readers, never held whole in memory: every
// element's size is computed from the row counts before the first byte is
// written, which is why a Column states its Rows and must yield exactly that
// many values.
package matfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Column is a column vector of doubles: a Rows×1 MATLAB double.
type Column struct {
	Name string
	Rows int
	// Data yields exactly Rows float64 values, little-endian (8 bytes
	// each), as a recorder's spill file holds them. It may be nil when
	// Rows is 0.
	Data io.Reader
}

// Struct is a 1×1 MATLAB struct whose fields are column vectors.
type Struct struct {
	Name    string
	Columns []Column
}

// MaxNameLen is the longest variable or field name MATLAB accepts
// (namelengthmax).
const MaxNameLen = 63

// Errors, wrapped with the value at fault.
var (
	ErrName        = errors.New("not a MATLAB identifier (a letter, then letters, digits or underscores, at most 63)")
	ErrDuplicate   = errors.New("name used twice")
	ErrHeader      = errors.New("header text not printable ASCII of at most 116 bytes")
	ErrRows        = errors.New("negative row count")
	ErrTooLarge    = errors.New("variable larger than a Level-5 element can hold (2 GiB)")
	ErrShortColumn = errors.New("column yields fewer values than its Rows")
	ErrLongColumn  = errors.New("column yields more values than its Rows")
)

// Data types and array classes of the format (its tables 1-1 and 1-3).
const (
	miINT8   = 1
	miINT32  = 5
	miUINT32 = 6
	miDOUBLE = 9
	miMATRIX = 14

	mxSTRUCT = 2
	mxDOUBLE = 6
)

const (
	headerTextLen = 116
	// magic starts the header text: MATLAB requires its first 4 bytes to
	// be non-zero (zeros mean a Level-4 file), and file(1) and people
	// recognise this phrase.
	magic = "MATLAB 5.0 MAT-file"
	// maxElement bounds an element's byte count: the tag holds 32 bits,
	// but MATLAB documents 2 GB per variable for this format and Octave
	// reads the count as a signed 32-bit integer.
	maxElement = math.MaxInt32
	// chunk is how much of a column is copied at a time.
	chunk = 64 << 10
)

// Write writes a MAT-file holding one 1×1 struct per element of structs,
// each field a Rows×1 double streamed from its Data. header is the
// descriptive text of the file's header ("MATLAB 5.0 MAT-file, " is put
// before it unless it already starts so). Every name and size is checked
// before anything is written; an error while streaming leaves w holding
// an incomplete file, to be discarded.
func Write(w io.Writer, header string, structs []Struct) error {
	text, err := headerText(header)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(structs))
	sizes := make([]int64, len(structs))
	fnLens := make([]int, len(structs))
	for i, s := range structs {
		if err := checkName("struct", s.Name, seen); err != nil {
			return err
		}
		if sizes[i], fnLens[i], err = structSize(s); err != nil {
			return err
		}
	}
	e := newEncoder(w, text)
	for i, s := range structs {
		if err := e.structure(s, sizes[i], fnLens[i]); err != nil {
			return err
		}
	}
	return e.flush()
}

// WriteVars writes a MAT-file holding each column as a top-level Rows×1
// double named after it; otherwise as Write.
func WriteVars(w io.Writer, header string, vars []Column) error {
	text, err := headerText(header)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(vars))
	sizes := make([]int64, len(vars))
	for i, c := range vars {
		if err := checkName("variable", c.Name, seen); err != nil {
			return err
		}
		if sizes[i], err = columnSize(c, c.Name, len(c.Name)); err != nil {
			return err
		}
	}
	e := newEncoder(w, text)
	for i, c := range vars {
		if err := e.column(c, c.Name, c.Name, sizes[i]); err != nil {
			return err
		}
	}
	return e.flush()
}

func headerText(h string) ([]byte, error) {
	text := h
	if !strings.HasPrefix(h, magic) {
		text = magic
		if h != "" {
			text += ", " + h
		}
	}
	if len(text) > headerTextLen {
		return nil, fmt.Errorf("matfile: header %q: %w", h, ErrHeader)
	}
	for i := 0; i < len(text); i++ {
		if text[i] < 0x20 || text[i] > 0x7e {
			return nil, fmt.Errorf("matfile: header %q: %w", h, ErrHeader)
		}
	}
	b := []byte(text)
	for len(b) < headerTextLen {
		b = append(b, ' ') // MATLAB pads the text with spaces
	}
	return b, nil
}

// checkName refuses a name MATLAB would not load as a variable or field
// (isvarname), or one already in seen, and records it.
func checkName(what, name string, seen map[string]bool) error {
	if !isIdent(name) {
		return fmt.Errorf("matfile: %s name %q: %w", what, name, ErrName)
	}
	if seen[name] {
		return fmt.Errorf("matfile: %s name %q: %w", what, name, ErrDuplicate)
	}
	seen[name] = true
	return nil
}

func isIdent(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c != '_' && (c < '0' || c > '9')) {
			return false
		}
	}
	return true
}

// pad8 rounds n up to the 8-byte boundary every data element ends on.
func pad8(n int64) int64 { return (n + 7) &^ 7 }

// nameSize is the size of an array name subelement: names of 1 to 4 bytes
// fit in a small data element (the tag's second word), as MATLAB writes
// them; an empty name is a bare tag.
func nameSize(n int) int64 {
	if n <= 4 {
		return 8
	}
	return 8 + pad8(int64(n))
}

// columnSize is the byte count in the miMATRIX tag of a Rows×1 double with
// a name of nameLen bytes: array flags, dimensions, name, real part.
func columnSize(c Column, where string, nameLen int) (int64, error) {
	switch {
	case c.Rows < 0:
		return 0, fmt.Errorf("matfile: %s: %w: %d", where, ErrRows, c.Rows)
	case c.Rows > maxElement/8:
		return 0, fmt.Errorf("matfile: %s: %w: %d rows", where, ErrTooLarge, c.Rows)
	case c.Data == nil && c.Rows > 0:
		return 0, fmt.Errorf("matfile: %s: %w: no Data for %d rows", where, ErrShortColumn, c.Rows)
	}
	n := 16 + 16 + nameSize(nameLen) + 8 + 8*int64(c.Rows)
	if n > maxElement {
		return 0, fmt.Errorf("matfile: %s: %w: %d rows", where, ErrTooLarge, c.Rows)
	}
	return n, nil
}

// structSize checks a struct's fields and returns the byte count in its
// miMATRIX tag and the field name length it is written with.
func structSize(s Struct) (size int64, fnLen int, err error) {
	seen := make(map[string]bool, len(s.Columns))
	longest := 0
	for _, c := range s.Columns {
		if err := checkName("struct "+s.Name+": field", c.Name, seen); err != nil {
			return 0, 0, err
		}
		longest = max(longest, len(c.Name))
	}
	// Each field name is a NUL-terminated slot of fnLen bytes. MATLAB
	// writes 32 while names fit in 31 bytes and 64 for longer ones, and
	// older readers expect 32.
	fnLen = 32
	if longest >= 32 {
		fnLen = 64
	}
	size = 16 + 16 + nameSize(len(s.Name)) + 8 + 8 + pad8(int64(len(s.Columns)*fnLen))
	for _, c := range s.Columns {
		n, err := columnSize(c, s.Name+"."+c.Name, 0)
		if err != nil {
			return 0, 0, err
		}
		size += 8 + n
	}
	if size > maxElement {
		return 0, 0, fmt.Errorf("matfile: struct %s: %w: %d bytes", s.Name, ErrTooLarge, size)
	}
	return size, fnLen, nil
}

// encoder writes elements through a buffer. bufio's errors are sticky, so
// the small writes of tags are checked once, when a column's data is
// copied and at the end.
type encoder struct {
	w   *bufio.Writer
	b   []byte // the tags and names before a column's data
	buf []byte // a chunk of a column
}

func newEncoder(w io.Writer, text []byte) *encoder {
	e := &encoder{w: bufio.NewWriterSize(w, chunk), buf: make([]byte, chunk)}
	b := append(e.b[:0], text...)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // subsystem data offset: none
	b = binary.LittleEndian.AppendUint16(b, 0x0100)
	b = append(b, 'I', 'M') // 'MI' written as a native uint16: little-endian
	e.b = b
	return e
}

func (e *encoder) flush() error {
	e.w.Write(e.b)
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("matfile: writing: %w", err)
	}
	return nil
}

func appendTag(b []byte, typ uint32, n int64) []byte {
	b = binary.LittleEndian.AppendUint32(b, typ)
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// appendInt8 appends an miINT8 element holding s, small when it fits.
func appendInt8(b []byte, s string) []byte {
	if n := len(s); n > 0 && n <= 4 {
		b = binary.LittleEndian.AppendUint32(b, uint32(n)<<16|miINT8)
		b = append(b, s...)
		return append(b, make([]byte, 4-n)...)
	}
	b = appendTag(b, miINT8, int64(len(s)))
	b = append(b, s...)
	return append(b, make([]byte, pad8(int64(len(s)))-int64(len(s)))...)
}

// appendMatrix appends the start of an miMATRIX element of size bytes: its
// tag, array flags, dimensions and name.
func appendMatrix(b []byte, size int64, class byte, rows int, name string) []byte {
	b = appendTag(b, miMATRIX, size)
	b = appendTag(b, miUINT32, 8)
	b = binary.LittleEndian.AppendUint32(b, uint32(class)) // not complex, global or logical
	b = binary.LittleEndian.AppendUint32(b, 0)             // nzmax: sparse arrays only
	b = appendTag(b, miINT32, 8)
	b = binary.LittleEndian.AppendUint32(b, uint32(rows))
	b = binary.LittleEndian.AppendUint32(b, 1)
	return appendInt8(b, name)
}

func (e *encoder) structure(s Struct, size int64, fnLen int) error {
	b := appendMatrix(e.b, size, mxSTRUCT, 1, s.Name)
	b = binary.LittleEndian.AppendUint32(b, 4<<16|miINT32) // field name length, a small element
	b = binary.LittleEndian.AppendUint32(b, uint32(fnLen))
	names := int64(len(s.Columns) * fnLen)
	b = appendTag(b, miINT8, names)
	for _, c := range s.Columns {
		b = append(b, c.Name...)
		b = append(b, make([]byte, fnLen-len(c.Name))...)
	}
	b = append(b, make([]byte, pad8(names)-names)...)
	e.b = b
	for _, c := range s.Columns {
		n, _ := columnSize(c, "", 0) // checked by structSize
		if err := e.column(c, s.Name+"."+c.Name, "", n); err != nil {
			return err
		}
	}
	return nil
}

// column writes a Rows×1 double, streaming its values from c.Data; where
// names it in errors and name is its array name (empty for a field).
func (e *encoder) column(c Column, where, name string, size int64) error {
	b := appendMatrix(e.b, size, mxDOUBLE, c.Rows, name)
	e.b = appendTag(b, miDOUBLE, 8*int64(c.Rows))
	if _, err := e.w.Write(e.b); err != nil {
		return fmt.Errorf("matfile: writing: %w", err)
	}
	e.b = e.b[:0]
	if c.Data == nil {
		return nil // Rows is 0: checked by columnSize
	}
	// The data needs no padding: 8 bytes a value.
	left := 8 * int64(c.Rows)
	for left > 0 {
		n, err := io.ReadFull(c.Data, e.buf[:min(left, int64(len(e.buf)))])
		if _, werr := e.w.Write(e.buf[:n]); werr != nil {
			return fmt.Errorf("matfile: writing: %w", werr)
		}
		left -= int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			got := 8*int64(c.Rows) - left
			return fmt.Errorf("matfile: %s: %w: %d bytes, %d of %d values", where, ErrShortColumn, got, got/8, c.Rows)
		}
		if err != nil {
			return fmt.Errorf("matfile: %s: reading value %d of %d: %w", where, (8*int64(c.Rows)-left)/8+1, c.Rows, err)
		}
	}
	// A reader with more to give means Rows is wrong, and so is the file
	// that trusted it.
	switch _, err := io.ReadFull(c.Data, e.buf[:1]); err {
	case io.EOF:
		return nil
	case nil:
		return fmt.Errorf("matfile: %s: %w: more than %d values", where, ErrLongColumn, c.Rows)
	default:
		return fmt.Errorf("matfile: %s: reading past value %d: %w", where, c.Rows, err)
	}
}
