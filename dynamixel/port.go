package dynamixel

import "time"

// Port is the half-duplex serial line a Bus talks on. go.bug.st/serial's
// Port satisfies it, and so do the simulator's in-memory and pseudo-terminal
// ports. Like go.bug.st/serial, Read returns (0, nil) when the read timeout
// expires with no byte (docs/dynamixel.md §14).
type Port interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
	SetReadTimeout(t time.Duration) error
	ResetInputBuffer() error
	Close() error
}
