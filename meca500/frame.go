package meca500

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Framer splits the robot's byte stream into frames (docs/meca500.md §2.2):
// each message ends with a NUL, TCP may split one across reads or merge
// several into one. Frames longer than the buffer are discarded whole and
// counted, so a runaway peer costs memory it cannot grow.
type Framer struct {
	buf       []byte
	n         int
	skipping  bool // inside a frame too long for buf: drop up to its end
	Discarded int  // frames dropped for being too long
}

// NewFramer keeps up to size bytes of an unfinished frame.
func NewFramer(size int) *Framer {
	return &Framer{buf: make([]byte, max(size, 64))}
}

// Feed adds data and calls fn with each complete frame, without its
// terminator, in order. The frame is valid only during the call. Empty frames
// are skipped. Feed does not allocate.
func (f *Framer) Feed(data []byte, fn func(frame []byte)) {
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\x00\n")
		if i < 0 {
			f.keep(data)
			return
		}
		part := data[:i]
		data = data[i+1:]
		if f.skipping {
			f.skipping = false
			f.n = 0
			continue
		}
		frame := part
		if f.n == 0 && len(part) > len(f.buf) {
			f.Discarded++ // too long, however the reads split it
			continue
		}
		if f.n > 0 {
			if f.n+len(part) > len(f.buf) {
				f.Discarded++
				f.n = 0
				continue
			}
			f.n += copy(f.buf[f.n:], part)
			frame = f.buf[:f.n]
			f.n = 0
		}
		if len(frame) > 0 {
			fn(frame)
		}
	}
}

// keep stores the start of an unfinished frame.
func (f *Framer) keep(part []byte) {
	if f.skipping {
		return
	}
	if f.n+len(part) > len(f.buf) {
		f.Discarded++
		f.skipping, f.n = true, 0
		return
	}
	f.n += copy(f.buf[f.n:], part)
}

// Reset forgets an unfinished frame (a new connection).
func (f *Framer) Reset() { f.n, f.skipping = 0, false }

// Message is one robot message, `[code][payload]`, viewing the frame it was
// parsed from.
type Message struct {
	Code    int
	Payload []byte
}

// ErrFrame is a frame that is not `[NNNN][payload]`.
var ErrFrame = errors.New("meca500: malformed message")

// Parse reads a frame as mecademicpy does (docs/meca500.md §2.2): the code is
// between the first `[` and the next `]`; the payload is what lies between
// the following `[` and the last `]`. A silent-request prefix (`-`) before
// the first `[` is ignored. It does not allocate.
func Parse(frame []byte) (Message, error) {
	i := bytes.IndexByte(frame, '[')
	if i < 0 {
		return Message{}, ErrFrame
	}
	rest := frame[i+1:]
	j := bytes.IndexByte(rest, ']')
	if j < 1 || j > 5 {
		return Message{}, ErrFrame
	}
	code := 0
	for _, c := range rest[:j] {
		if c < '0' || c > '9' {
			return Message{}, ErrFrame
		}
		code = code*10 + int(c-'0')
	}
	rest = rest[j+1:]
	k := bytes.IndexByte(rest, '[')
	if k < 0 {
		return Message{Code: code}, nil // a bare code
	}
	rest = rest[k+1:]
	e := bytes.LastIndexByte(rest, ']')
	if e < 0 {
		return Message{}, ErrFrame
	}
	return Message{Code: code, Payload: rest[:e]}, nil
}

// Numbers parses the comma-separated values of a payload into dst and
// returns how many it read. Spaces around values are allowed, `nan` is NaN,
// and `*` (an automatic configuration) is NaN too. It does not allocate.
func Numbers(payload []byte, dst []float64) (int, error) {
	n := 0
	for len(payload) > 0 || n == 0 {
		field := payload
		if i := bytes.IndexByte(payload, ','); i >= 0 {
			field, payload = payload[:i], payload[i+1:]
		} else {
			payload = nil
		}
		field = bytes.TrimSpace(field)
		if n == 0 && len(field) == 0 && len(payload) == 0 {
			return 0, nil // an empty payload
		}
		if n >= len(dst) {
			return n, fmt.Errorf("%w: more than %d values", ErrFrame, len(dst))
		}
		v, err := number(field)
		if err != nil {
			return n, err
		}
		dst[n] = v
		n++
	}
	return n, nil
}

func number(b []byte) (float64, error) {
	if len(b) == 1 && b[0] == '*' {
		return math.NaN(), nil
	}
	if len(b) == 0 || len(b) > 40 {
		return 0, fmt.Errorf("%w: a value of %d characters", ErrFrame, len(b))
	}
	// A short conversion of a non-escaping string lives on the stack.
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrFrame, b)
	}
	return v, nil
}

// AppendCommand appends `name(a,b,…)` and its NUL terminator to dst. Values
// are written in plain decimal, never with an exponent (docs/meca500.md
// §2.1). It refuses NaN and ±Inf: a robot must never be sent one.
func AppendCommand(dst []byte, name string, args ...float64) ([]byte, error) {
	for _, a := range args {
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return dst, fmt.Errorf("meca500: %s with a value of %v: %w", name, a, ErrNotFinite)
		}
	}
	dst = append(dst, name...)
	if len(args) > 0 {
		dst = append(dst, '(')
		for i, a := range args {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendNumber(dst, a)
		}
		dst = append(dst, ')')
	}
	return append(dst, 0), nil
}

// appendNumber writes v with at most 6 decimals and no trailing zeros: a
// micro-degree is finer than the robot's resolution, and `1e-05` is a
// syntax error to the robot's parser.
func appendNumber(dst []byte, v float64) []byte {
	v = math.Round(v*1e6) / 1e6
	if v == 0 {
		return append(dst, '0') // also -0
	}
	dst = strconv.AppendFloat(dst, v, 'f', 6, 64)
	for dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
	}
	if dst[len(dst)-1] == '.' {
		dst = dst[:len(dst)-1]
	}
	return dst
}

// ErrNotFinite is a command value that is NaN or infinite.
var ErrNotFinite = errors.New("meca500: not a finite number")
