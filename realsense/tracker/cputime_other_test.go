//go:build !linux

package tracker

// threadClock has no thread CPU clock to offer off Linux.
func threadClock() (now func() int64, ok bool) { return nil, false }
