package dynamixel

import (
	"errors"
	"fmt"
)

// AlertBit of a status's error byte (docs/dynamixel.md §4): the servo has
// a hardware error (read Hardware Error Status); the data of the reply is
// still valid. It stays set until the error is cleared by a reboot.
const AlertBit byte = 0x80

var (
	// ErrStatus is matched by every *StatusError that carries an error number.
	ErrStatus = errors.New("dynamixel: servo reported an error")
	// ErrAlert is matched by a *StatusError whose Alert bit is set.
	ErrAlert = errors.New("dynamixel: servo hardware alert")
)

// StatusError is the error byte of a status packet (docs/dynamixel.md §4):
// an error number in bits 0–6 and the Alert bit.
type StatusError struct {
	ID    byte
	Code  byte // 1..7, 0 when only Alert is set
	Alert bool
}

var statusErrNames = [...]string{1: "result fail", 2: "instruction error", 3: "CRC error",
	4: "data range error", 5: "data length error", 6: "data limit error", 7: "access error"}

// StatusErrorOf decodes the error byte of a status from id; nil when clear.
func StatusErrorOf(id, errByte byte) error {
	if errByte == 0 {
		return nil
	}
	return &StatusError{ID: id, Code: errByte &^ AlertBit, Alert: errByte&AlertBit != 0}
}

func (e *StatusError) Error() string {
	name := "no error"
	if int(e.Code) < len(statusErrNames) && statusErrNames[e.Code] != "" {
		name = statusErrNames[e.Code]
	} else if e.Code != 0 {
		name = fmt.Sprintf("error %d", e.Code)
	}
	if e.Alert {
		return fmt.Sprintf("dynamixel: ID %d: %s, with hardware alert (read Hardware Error Status, address 70)", e.ID, name)
	}
	return fmt.Sprintf("dynamixel: ID %d: %s", e.ID, name)
}

// Is makes errors.Is match ErrStatus for an error number and ErrAlert for the
// Alert bit.
func (e *StatusError) Is(target error) bool {
	return (target == ErrStatus && e.Code != 0) || (target == ErrAlert && e.Alert)
}

// Status is a decoded status packet.
type Status struct {
	ID   byte
	Err  byte
	Data []byte // aliases the receive buffer
}

// Error returns the status' error, nil when its error byte is clear.
func (s Status) Error() error { return StatusErrorOf(s.ID, s.Err) }

// ParseStatus decodes a status packet at the start of b (see ParsePacket).
func ParseStatus(b []byte) (Status, int, error) {
	p, n, err := ParsePacket(b, true)
	if err != nil {
		return Status{}, n, err
	}
	if p.Inst != InstStatus || len(p.Params) < 1 {
		return Status{}, n, fmt.Errorf("%w: instruction 0x%02X from ID %d", ErrNotStatus, p.Inst, p.ID)
	}
	return Status{ID: p.ID, Err: p.Params[0], Data: p.Params[1:]}, n, nil
}
