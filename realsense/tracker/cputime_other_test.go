//go:build !linux

package tracker

// threadClock has no thread CPU clock to offer off Linux.
func threadClock() (now func() int64, ok bool) { return nil, false }

// threadSwitches has no per-thread switch count to offer off Linux.
func threadSwitches() (count func() int64, ok bool) { return nil, false }
