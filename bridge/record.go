package bridge

import "github.com/labbridge/bridge/simulink"

// TickRecord is one exchanged tick, as a TickRecorder sees it (a telemetry
// tap, docs/tap.md). The vectors are the link's own buffers, valid only
// during the call.
type TickRecord struct {
	N uint64 // the loop's tick index
	// Deadline is the tick's send instant and Sent when the datagram left,
	// CLOCK_MONOTONIC ns; Sent is 0 when no datagram left this tick.
	Deadline, Sent int64
	Skipped        int // periods skipped before this tick
	Status         simulink.Status
	State          State
	// Seq is the Simulink seq sent (−1 during the handshake).
	Seq int64
	// ReplyLatency is the accepted reply's, ns; −1 without one. Late: it
	// came after its tick's window.
	ReplyLatency int64
	Late         bool
	// CommandApplied: a command reached the plant this tick. Stale: the
	// measurement was sent again because the device is down.
	CommandApplied, Stale bool
	Measurement           []float64
	// Command is the last good command received (held when none came);
	// Applied is it clamped to the limits, what the plant is given on this
	// tick (ApplyImmediate) or, in emioapi's order, the next (ApplyPrevious).
	Command, Applied []float64
	// Given is what the plant was given this tick, when CommandApplied
	// (else the last it was given): in emioapi's order the command accepted
	// the tick before. A model run beside the plant gives it the same.
	Given []float64
}

// TickRecorder receives every exchanged tick, on the loop thread, after
// the exchange: it must not block or allocate.
type TickRecorder interface {
	RecordTick(*TickRecord)
}

// exchangeReporter is an Exchanger that says what its last exchange sent
// and received (simulink.Master).
type exchangeReporter interface {
	LastExchange() simulink.Exchange
}
