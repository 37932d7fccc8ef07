// Package payload is the wire format of the telemetry tap (docs/tap.md
// §3, §4): one tick's record and the link's descriptor, in pion's style:
// MarshalSize, MarshalTo into the caller's buffer, and Unmarshal into the
// caller's record, reusing its vectors, so that neither side allocates per
// packet. It imports nothing of the module, so that a receiver (bridge
// record, a test) reads taps without the loop.
package payload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Version is the payload version this package writes and reads
// (docs/tap.md §3).
const Version = 1

// HeaderSize is the fixed part of a payload, before the vectors.
const HeaderSize = 48

// MaxValues bounds M and C: a reader refuses more, so that a corrupt length
// cannot make it allocate.
const MaxValues = 4096

// Flag bits of a payload (docs/tap.md §3).
const (
	FlagLate       = 1 << 0 // the reply was late
	FlagApplied    = 1 << 1 // a command reached the plant this tick
	FlagStale      = 1 << 2 // the measurement was sent again (device down)
	FlagOverrun    = 1 << 3 // periods were skipped before this tick
	FlagDescriptor = 1 << 4 // a descriptor follows the vectors
)

var (
	// ErrShort is a payload shorter than its header or lengths say.
	ErrShort = errors.New("payload: payload too short")
	// ErrVersion is a payload of another version.
	ErrVersion = errors.New("payload: unknown payload version")
	// ErrLength is a vector length above MaxValues, or a buffer too small
	// to marshal into.
	ErrLength = errors.New("payload: bad length")
	// ErrDescriptor is a descriptor that does not parse or does not match
	// the vectors' lengths.
	ErrDescriptor = errors.New("payload: bad descriptor")
)

// Record is one tick (docs/tap.md §3). The vectors are the caller's:
// MarshalTo reads them, Unmarshal refills them in place.
type Record struct {
	Status uint8 // 0 HANDSHAKING … 5 RECONNECTED (simulink.Status)
	Flags  uint8
	State  uint8 // 0 starting … 4 stopped (bridge.State)
	Seq    int64
	Tick   uint64
	// Deadline and Sent are Unix time in ns; Sent is 0 when nothing left.
	Deadline, Sent int64
	// Lateness is Sent less Deadline, ns; ReplyLatency −1 without a reply.
	Lateness, ReplyLatency int32
	Measurement            []float64
	Command, Applied       []float64
	// Descriptor, when Flags has FlagDescriptor, names the link and its
	// values; nil otherwise. Unmarshal fills the one it finds there.
	Descriptor *Descriptor
}

// Field is a named part of a vector: Len values of the same unit.
type Field struct {
	Name, Unit string
	Len        int
}

// Descriptor names a link and every value of its vectors (docs/tap.md §4).
type Descriptor struct {
	Link    string
	RateHz  float64
	Measure []Field
	Command []Field
}

// Saturate32 is d in an int32, saturated: lateness and latency beyond
// ±2.1 s only say "very".
func Saturate32(d int64) int32 {
	return int32(max(min(d, math.MaxInt32), math.MinInt32))
}

// MarshalSize is the payload's size in bytes.
func (r *Record) MarshalSize() int {
	n := HeaderSize + 8*(len(r.Measurement)+len(r.Command)+len(r.Applied))
	if r.Flags&FlagDescriptor != 0 && r.Descriptor != nil {
		n += r.Descriptor.MarshalSize()
	}
	return n
}

// MarshalTo writes the payload into buf and returns its size. Command and
// Applied must have the same length.
func (r *Record) MarshalTo(buf []byte) (int, error) {
	m, c := len(r.Measurement), len(r.Command)
	if m > MaxValues || c > MaxValues || len(r.Applied) != c {
		return 0, fmt.Errorf("%w: %d measured, %d commanded and %d applied values", ErrLength, m, c, len(r.Applied))
	}
	desc := r.Flags&FlagDescriptor != 0
	if desc && r.Descriptor == nil {
		return 0, fmt.Errorf("%w: the flag is set and there is none", ErrDescriptor)
	}
	n := r.MarshalSize()
	if len(buf) < n {
		return 0, fmt.Errorf("%w: %d bytes to write into %d", ErrLength, n, len(buf))
	}
	buf[0], buf[1], buf[2], buf[3] = Version, r.Status, r.Flags, r.State
	be := binary.BigEndian
	be.PutUint16(buf[4:], uint16(m))
	be.PutUint16(buf[6:], uint16(c))
	be.PutUint64(buf[8:], uint64(r.Seq))
	be.PutUint64(buf[16:], r.Tick)
	be.PutUint64(buf[24:], uint64(r.Deadline))
	be.PutUint64(buf[32:], uint64(r.Sent))
	be.PutUint32(buf[40:], uint32(r.Lateness))
	be.PutUint32(buf[44:], uint32(r.ReplyLatency))
	off := HeaderSize
	for _, v := range [3][]float64{r.Measurement, r.Command, r.Applied} {
		for _, x := range v {
			be.PutUint64(buf[off:], math.Float64bits(x))
			off += 8
		}
	}
	if desc {
		if err := r.Descriptor.check(m, c); err != nil {
			return 0, err
		}
		k, err := r.Descriptor.MarshalTo(buf[off:])
		if err != nil {
			return 0, err
		}
		off += k
	}
	return off, nil
}

// Unmarshal reads a payload into r, reusing its vectors' storage (they grow
// only when the lengths do) and its Descriptor when it has one.
func (r *Record) Unmarshal(buf []byte) error {
	if len(buf) < HeaderSize {
		return fmt.Errorf("%w: %d bytes, the header alone is %d", ErrShort, len(buf), HeaderSize)
	}
	if buf[0] != Version {
		return fmt.Errorf("%w: %d (this reader knows %d)", ErrVersion, buf[0], Version)
	}
	be := binary.BigEndian
	m, c := int(be.Uint16(buf[4:])), int(be.Uint16(buf[6:]))
	if m > MaxValues || c > MaxValues {
		return fmt.Errorf("%w: %d measured and %d commanded values (at most %d)", ErrLength, m, c, MaxValues)
	}
	end := HeaderSize + 8*(m+2*c)
	if len(buf) < end {
		return fmt.Errorf("%w: %d bytes, %d measured and %d commanded values need %d", ErrShort, len(buf), m, c, end)
	}
	r.Status, r.Flags, r.State = buf[1], buf[2], buf[3]
	r.Seq = int64(be.Uint64(buf[8:]))
	r.Tick = be.Uint64(buf[16:])
	r.Deadline = int64(be.Uint64(buf[24:]))
	r.Sent = int64(be.Uint64(buf[32:]))
	r.Lateness = int32(be.Uint32(buf[40:]))
	r.ReplyLatency = int32(be.Uint32(buf[44:]))
	off := HeaderSize
	read := func(dst []float64, n int) []float64 {
		dst = resize(dst, n)
		for i := range dst {
			dst[i] = math.Float64frombits(be.Uint64(buf[off:]))
			off += 8
		}
		return dst
	}
	r.Measurement = read(r.Measurement, m)
	r.Command = read(r.Command, c)
	r.Applied = read(r.Applied, c)
	if r.Flags&FlagDescriptor == 0 {
		return nil
	}
	if r.Descriptor == nil {
		r.Descriptor = new(Descriptor)
	}
	if _, err := r.Descriptor.Unmarshal(buf[off:]); err != nil {
		return err
	}
	return r.Descriptor.check(m, c)
}

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// MarshalSize is the descriptor's size in bytes, its length prefix
// included.
func (d *Descriptor) MarshalSize() int {
	n := 2 + 8 + 1 + len(d.Link) + 1 + 1
	for _, fs := range [2][]Field{d.Measure, d.Command} {
		for _, f := range fs {
			n += 1 + len(f.Name) + 1 + len(f.Unit) + 2
		}
	}
	return n
}

// MarshalTo writes the descriptor into buf and returns its size.
func (d *Descriptor) MarshalTo(buf []byte) (int, error) {
	n := d.MarshalSize()
	if n-2 > math.MaxUint16 || len(d.Measure) > 255 || len(d.Command) > 255 {
		return 0, fmt.Errorf("%w: %d bytes, %d and %d fields", ErrDescriptor, n, len(d.Measure), len(d.Command))
	}
	if len(buf) < n {
		return 0, fmt.Errorf("%w: %d bytes to write into %d", ErrLength, n, len(buf))
	}
	be := binary.BigEndian
	be.PutUint16(buf, uint16(n-2))
	be.PutUint64(buf[2:], math.Float64bits(d.RateHz))
	off := 10
	str := func(s string) error {
		if len(s) > 255 {
			return fmt.Errorf("%w: %q is longer than 255 bytes", ErrDescriptor, s[:32]+"…")
		}
		buf[off] = byte(len(s))
		off += 1 + copy(buf[off+1:], s)
		return nil
	}
	if err := str(d.Link); err != nil {
		return 0, err
	}
	for _, fs := range [2][]Field{d.Measure, d.Command} {
		buf[off] = byte(len(fs))
		off++
		for _, f := range fs {
			if f.Len < 0 || f.Len > MaxValues {
				return 0, fmt.Errorf("%w: field %q has %d values", ErrDescriptor, f.Name, f.Len)
			}
			if err := str(f.Name); err != nil {
				return 0, err
			}
			if err := str(f.Unit); err != nil {
				return 0, err
			}
			be.PutUint16(buf[off:], uint16(f.Len))
			off += 2
		}
	}
	return off, nil
}

// Unmarshal reads a descriptor from the start of buf and returns its size.
// It reuses d's field slices.
func (d *Descriptor) Unmarshal(buf []byte) (int, error) {
	if len(buf) < 2 {
		return 0, fmt.Errorf("%w: no length", ErrDescriptor)
	}
	be := binary.BigEndian
	n := 2 + int(be.Uint16(buf))
	if len(buf) < n || n < 2+8+1+1+1 {
		return 0, fmt.Errorf("%w: says %d bytes, %d there", ErrDescriptor, n, len(buf))
	}
	b := buf[:n]
	d.RateHz = math.Float64frombits(be.Uint64(b[2:]))
	off := 10
	str := func() (string, bool) {
		if off >= len(b) {
			return "", false
		}
		l := int(b[off])
		if off+1+l > len(b) {
			return "", false
		}
		s := string(b[off+1 : off+1+l])
		off += 1 + l
		return s, true
	}
	var ok bool
	if d.Link, ok = str(); !ok {
		return 0, fmt.Errorf("%w: the link name runs past its end", ErrDescriptor)
	}
	for i, fs := range [2]*[]Field{&d.Measure, &d.Command} {
		if off >= len(b) {
			return 0, fmt.Errorf("%w: no field count", ErrDescriptor)
		}
		k := int(b[off])
		off++
		*fs = (*fs)[:0]
		for range k {
			var f Field
			if f.Name, ok = str(); !ok {
				return 0, fmt.Errorf("%w: field name %d runs past its end", ErrDescriptor, i)
			}
			if f.Unit, ok = str(); !ok || off+2 > len(b) {
				return 0, fmt.Errorf("%w: field %q runs past its end", ErrDescriptor, f.Name)
			}
			f.Len = int(be.Uint16(b[off:]))
			off += 2
			*fs = append(*fs, f)
		}
	}
	// Bytes past the last field would be lost on the way back out: a
	// descriptor says its exact size, as MarshalTo writes it.
	if off != n {
		return 0, fmt.Errorf("%w: says %d bytes, its fields end at %d", ErrDescriptor, n, off)
	}
	return n, nil
}

// check: the fields add up to the vectors' lengths.
func (d *Descriptor) check(m, c int) error {
	sum := func(fs []Field) int {
		n := 0
		for _, f := range fs {
			n += f.Len
		}
		return n
	}
	if sm, sc := sum(d.Measure), sum(d.Command); sm != m || sc != c {
		return fmt.Errorf("%w: fields of %d and %d values for vectors of %d and %d", ErrDescriptor, sm, sc, m, c)
	}
	return nil
}

// TwinSuffix ends the link name of a shadow twin's stream: the twin of
// link "emio" sends as "emio.shadow", its divergence per measured value
// and no command. A recording names the stream's file after the name's
// identifier, "emio_shadow" ('.' written '_'); TwinOf reads both.
const TwinSuffix = ".shadow"

// TwinOf returns the link whose shadow twin's stream is named name, as
// sent (LINK.shadow) or as recorded (LINK_shadow), and false for any other
// stream.
func TwinOf(name string) (string, bool) {
	for _, suffix := range [...]string{TwinSuffix, "_" + TwinSuffix[1:]} {
		if link, ok := strings.CutSuffix(name, suffix); ok && link != "" {
			return link, true
		}
	}
	return "", false
}
