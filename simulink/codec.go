// Package simulink speaks the Simulink UDP protocol of the Emio Python bridge
// (emioapi UDPBridge, SofaComplianceRobotics/Emio.API@cd6a256), as described in
// docs/simulink-udp.md: bare little-endian float64 datagrams [seq, values…] of a
// fixed size, a handshake of seq −1 packets, and the OK / OK_NO_DELAY / DESYNC /
// TIMEOUT / RECONNECTED classification. It knows no vector shape: the lengths
// of measurements and commands, and the parts of a measurement a controller
// reads, come from the caller.
//
// Master is the clock-master side (what emioapi runs), Partner the host side (what
// the shipped Simulink models do). Both exchange datagrams without allocating.
package simulink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ValueSize is the size of one element on the wire: an IEEE-754 float64.
const ValueSize = 8

// HandshakeSeq is the sequence number of handshake packets and of the
// Simulink models' replies while not synchronised.
const HandshakeSeq = -1

// maxExactSeq bounds the sequence numbers a float64 carries exactly (2^53).
const maxExactSeq = 1 << 53

var (
	// ErrSize reports a datagram or buffer whose length is not the expected one.
	ErrSize = errors.New("simulink: wrong datagram size")
	// ErrNonFinite reports a NaN or ±Inf value in a datagram.
	ErrNonFinite = errors.New("simulink: non-finite value")
	// ErrSeq reports a sequence number that is not an exact integer in range.
	ErrSeq = errors.New("simulink: sequence number out of range")
)

// SizeError is a datagram of the wrong length.
type SizeError struct {
	Got, Want int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("simulink: datagram of %d bytes, want %d (%d float64 values)", e.Got, e.Want, e.Want/ValueSize)
}

// Is makes errors.Is(err, ErrSize) hold for a *SizeError.
func (e *SizeError) Is(target error) bool { return target == ErrSize }

// DatagramSize returns the wire size of a datagram carrying n payload values.
func DatagramSize(n int) int { return (1 + n) * ValueSize }

// MarshalTo writes [seq, values…] into dst as little-endian float64 and returns
// the number of bytes written. dst must hold DatagramSize(len(values)) bytes.
func MarshalTo(dst []byte, seq int64, values []float64) (int, error) {
	n := DatagramSize(len(values))
	if len(dst) < n {
		return 0, &SizeError{Got: len(dst), Want: n}
	}
	binary.LittleEndian.PutUint64(dst, math.Float64bits(float64(seq)))
	for i, v := range values {
		binary.LittleEndian.PutUint64(dst[(1+i)*ValueSize:], math.Float64bits(v))
	}
	return n, nil
}

// Unmarshal decodes a datagram of exactly DatagramSize(len(values)) bytes into
// values and returns its sequence number. The sequence number is truncated
// toward zero, as emioapi's int() does. A datagram of another size, or holding a
// NaN or ±Inf anywhere, is rejected and values is left untouched, so a caller
// never sees half of a bad datagram.
func Unmarshal(src []byte, values []float64) (int64, error) {
	if want := DatagramSize(len(values)); len(src) != want {
		return 0, &SizeError{Got: len(src), Want: want}
	}
	for i := 0; i < len(src); i += ValueSize {
		v := math.Float64frombits(binary.LittleEndian.Uint64(src[i:]))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, ErrNonFinite
		}
	}
	s := math.Trunc(math.Float64frombits(binary.LittleEndian.Uint64(src)))
	if s >= maxExactSeq || s <= -maxExactSeq {
		return 0, ErrSeq
	}
	for i := range values {
		values[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[(1+i)*ValueSize:]))
	}
	return int64(s), nil
}
