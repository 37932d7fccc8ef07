package matfile

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// A strict Level-5 reader of what Write writes (miMATRIX elements of
// doubles and 1×1 structs of them, uncompressed, little-endian), for the
// round-trip tests. It refuses anything it does not expect: a size that
// overruns its parent, non-zero padding, bytes left over in an element.

type matVar struct {
	name   string
	class  byte
	dims   []int32
	fields []string  // a struct's field names, in order
	values []*matVar // a struct's fields, in order
	data   []float64 // a double's values
}

func (v *matVar) field(name string) *matVar {
	for i, f := range v.fields {
		if f == name {
			return v.values[i]
		}
	}
	return nil
}

// readMAT parses a whole file: its header text (trailing spaces trimmed)
// and its variables.
func readMAT(b []byte) (string, []*matVar, error) {
	if len(b) < 128 {
		return "", nil, fmt.Errorf("header: %d bytes", len(b))
	}
	text := string(b[:116])
	if b[0] == 0 || b[1] == 0 || b[2] == 0 || b[3] == 0 {
		return "", nil, fmt.Errorf("header text starts with a zero byte: a Level-4 file")
	}
	for i, c := range b[116:124] {
		if c != 0 && c != ' ' {
			return "", nil, fmt.Errorf("subsystem data offset byte %d is %#x", i, c)
		}
	}
	if v := binary.LittleEndian.Uint16(b[124:]); v != 0x0100 {
		return "", nil, fmt.Errorf("version %#04x", v)
	}
	if string(b[126:128]) != "IM" {
		return "", nil, fmt.Errorf("endian indicator %q", b[126:128])
	}
	r := &elemReader{b: b[128:]}
	var vars []*matVar
	for len(r.b) > 0 {
		typ, data, err := r.element()
		if err != nil {
			return "", nil, fmt.Errorf("variable %d: %w", len(vars)+1, err)
		}
		if typ != miMATRIX {
			return "", nil, fmt.Errorf("variable %d: type %d, want miMATRIX", len(vars)+1, typ)
		}
		v, err := parseMatrix(data)
		if err != nil {
			return "", nil, fmt.Errorf("variable %d: %w", len(vars)+1, err)
		}
		vars = append(vars, v)
	}
	return strings.TrimRight(text, " "), vars, nil
}

type elemReader struct{ b []byte }

// element reads one data element, small or not, and checks its padding.
func (r *elemReader) element() (typ uint32, data []byte, err error) {
	if len(r.b) < 8 {
		return 0, nil, fmt.Errorf("tag: %d bytes left", len(r.b))
	}
	w := binary.LittleEndian.Uint32(r.b)
	if n := w >> 16; n != 0 {
		if n > 4 {
			return 0, nil, fmt.Errorf("small element of %d bytes", n)
		}
		data, pad := r.b[4:4+n], r.b[4+n:8]
		if err := zeros(pad); err != nil {
			return 0, nil, err
		}
		r.b = r.b[8:]
		return w & 0xffff, data, nil
	}
	typ, n := w, int64(binary.LittleEndian.Uint32(r.b[4:]))
	end := 8 + n
	if typ != miMATRIX {
		end = 8 + pad8(n) // miMATRIX holds whole elements: no padding
	}
	if end > int64(len(r.b)) {
		return 0, nil, fmt.Errorf("element of type %d and %d bytes overruns its parent (%d bytes left)", typ, n, len(r.b)-8)
	}
	if err := zeros(r.b[8+n : end]); err != nil {
		return 0, nil, err
	}
	data = r.b[8 : 8+n]
	r.b = r.b[end:]
	return typ, data, nil
}

func zeros(pad []byte) error {
	for _, c := range pad {
		if c != 0 {
			return fmt.Errorf("padding % x is not zero", pad)
		}
	}
	return nil
}

func (r *elemReader) want(typ uint32) ([]byte, error) {
	t, data, err := r.element()
	if err != nil {
		return nil, err
	}
	if t != typ {
		return nil, fmt.Errorf("element type %d, want %d", t, typ)
	}
	return data, nil
}

func parseMatrix(b []byte) (*matVar, error) {
	r := &elemReader{b: b}
	flags, err := r.want(miUINT32)
	if err != nil || len(flags) != 8 {
		return nil, fmt.Errorf("array flags % x: %v", flags, err)
	}
	v := &matVar{class: flags[0]}
	if f := binary.LittleEndian.Uint32(flags) >> 8; f != 0 {
		return nil, fmt.Errorf("array flags %#x: complex, global or logical", f)
	}
	if nz := binary.LittleEndian.Uint32(flags[4:]); nz != 0 {
		return nil, fmt.Errorf("nzmax %d", nz)
	}
	dims, err := r.want(miINT32)
	if err != nil || len(dims) < 8 || len(dims)%4 != 0 {
		return nil, fmt.Errorf("dimensions % x: %v", dims, err)
	}
	n := int64(1)
	for i := 0; i < len(dims); i += 4 {
		d := int32(binary.LittleEndian.Uint32(dims[i:]))
		v.dims = append(v.dims, d)
		n *= int64(d)
	}
	name, err := r.want(miINT8)
	if err != nil {
		return nil, fmt.Errorf("name: %w", err)
	}
	v.name = string(name)
	switch v.class {
	case mxDOUBLE:
		re, err := r.want(miDOUBLE)
		if err != nil {
			return nil, fmt.Errorf("%s: real part: %w", v.name, err)
		}
		if int64(len(re)) != 8*n {
			return nil, fmt.Errorf("%s: %d bytes of data for %v", v.name, len(re), v.dims)
		}
		v.data = make([]float64, n)
		for i := range v.data {
			v.data[i] = math.Float64frombits(binary.LittleEndian.Uint64(re[8*i:]))
		}
	case mxSTRUCT:
		if n != 1 {
			return nil, fmt.Errorf("%s: struct array %v: only 1×1 is read", v.name, v.dims)
		}
		l, err := r.want(miINT32)
		if err != nil || len(l) != 4 {
			return nil, fmt.Errorf("%s: field name length % x: %v", v.name, l, err)
		}
		fnLen := int(binary.LittleEndian.Uint32(l))
		names, err := r.want(miINT8)
		if err != nil || fnLen == 0 || len(names)%fnLen != 0 {
			return nil, fmt.Errorf("%s: field names (%d bytes, length %d): %v", v.name, len(names), fnLen, err)
		}
		for i := 0; i < len(names); i += fnLen {
			slot := names[i : i+fnLen]
			name, rest, ok := strings.Cut(string(slot), "\x00")
			if !ok || strings.Trim(rest, "\x00") != "" {
				return nil, fmt.Errorf("%s: field name slot %q", v.name, slot)
			}
			v.fields = append(v.fields, name)
		}
		for _, f := range v.fields {
			data, err := r.want(miMATRIX)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", v.name, f, err)
			}
			fv, err := parseMatrix(data)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", v.name, f, err)
			}
			if fv.name != "" {
				return nil, fmt.Errorf("%s.%s: field named %q, want no name", v.name, f, fv.name)
			}
			v.values = append(v.values, fv)
		}
	default:
		return nil, fmt.Errorf("%s: class %d", v.name, v.class)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%s: %d bytes left over", v.name, len(r.b))
	}
	return v, nil
}
