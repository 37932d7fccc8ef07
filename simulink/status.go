package simulink

// Status is the outcome of one tick's exchange, as emioapi's CommStatus, plus
// Handshaking for ticks spent waiting for the partner to answer seq −1 packets.
type Status uint8

// Exchange statuses. OK, OKNoDelay, Desync, Timeout and Reconnected keep
// emioapi's meaning (docs/simulink-udp.md §3, §6).
const (
	// Handshaking: the master is sending seq −1 packets and no exchange ran.
	Handshaking Status = iota
	// OK: the reply's seq is seq−1 (a partner one tick behind by design).
	OK
	// OKNoDelay: the reply's seq is seq (what the shipped Simulink models do).
	OKNoDelay
	// Desync: the first reply had any other seq; the queue was flushed and the
	// last good command is held.
	Desync
	// Timeout: no valid reply arrived in the receive window; the last good
	// command is held.
	Timeout
	// Reconnected: a re-handshake after too many timeouts or desyncs completed
	// in this tick; seq restarts at 0 on the next tick.
	Reconnected
	numStatus
)

// NumStatus is the number of Status values, for tables indexed by Status.
const NumStatus = int(numStatus)

var statusNames = [numStatus]string{"HANDSHAKING", "OK", "OK_NO_DELAY", "DESYNC", "TIMEOUT", "RECONNECTED"}

// String returns the emioapi spelling of the status.
func (s Status) String() string {
	if s < numStatus {
		return statusNames[s]
	}
	return "UNKNOWN"
}

// Success reports whether the status carries a fresh command (OK or OK_NO_DELAY).
func (s Status) Success() bool { return s == OK || s == OKNoDelay }

// DropReason says why a received datagram was discarded without being used.
type DropReason uint8

// Reasons for dropping a datagram. None of them is fatal.
const (
	// DropSize: the datagram's length is not the configured one (either way).
	DropSize DropReason = iota
	// DropSource: the datagram came from a host other than the configured remote.
	DropSource
	// DropNonFinite: the datagram holds a NaN or ±Inf.
	DropNonFinite
	// DropSeq: the sequence number is not representable (beyond ±2^53).
	DropSeq
	// DropStale: a reply to a seq already answered, or superseded by a newer reply.
	DropStale
	// DropFlushed: discarded by the flush that follows a DESYNC or a handshake.
	DropFlushed
	// DropForeign: the datagram came from the remote host but not from the
	// source port that completed the handshake (MasterConfig.PinPartner):
	// another program on the Simulink host.
	DropForeign
	// DropKernel: the kernel dropped the datagram before the master could
	// read it, mostly because the receive buffer (MasterConfig.RecvBuffer)
	// was full. The count comes with the next datagram that is queued
	// (SO_RXQ_OVFL), so drops at the end of a burst show up with the next
	// reply.
	DropKernel
	numDropReason
)

// NumDropReason is the number of DropReason values.
const NumDropReason = int(numDropReason)

// dropNames are metric labels: append, never reorder.
var dropNames = [numDropReason]string{"size", "source", "nonfinite", "seq", "stale", "flushed", "foreign", "kernel"}

// String returns the metric label of the reason.
func (r DropReason) String() string {
	if r < numDropReason {
		return dropNames[r]
	}
	return "unknown"
}

// Observer receives what the master sees, from the loop thread. Implementations
// must not block or allocate (Prometheus counters and histograms qualify).
type Observer interface {
	// Exchanged is called once per tick with the tick's status.
	Exchanged(s Status)
	// Reply is called for every accepted reply with the time since the send of
	// the seq it answers, in nanoseconds; late marks a reply that arrived after
	// the receive window of that seq had closed.
	Reply(latencyNs int64, late bool)
	// Dropped is called for every datagram discarded unused; for many at
	// once see DropCounter.
	Dropped(r DropReason)
}

// DropCounter is an Observer that takes many drops at once: the kernel can
// drop thousands of datagrams between two reads (DropKernel). NewMaster
// checks for it once; an Observer without it gets Dropped at most
// MaxDroppedCalls times per batch, while MasterStats counts them all.
type DropCounter interface {
	DroppedN(r DropReason, n uint64)
}

// MaxDroppedCalls caps the Dropped calls that stand for one batch of drops
// when the Observer is no DropCounter, so a burst never loops in the tick.
const MaxDroppedCalls = 1024

// NotifyDropped tells o about n drops for reason r: through DroppedN when o
// is a DropCounter, else through at most MaxDroppedCalls calls of Dropped.
// An Observer that forwards to others can implement DroppedN with it.
func NotifyDropped(o Observer, r DropReason, n uint64) {
	if dc, ok := o.(DropCounter); ok {
		dc.DroppedN(r, n)
		return
	}
	for range min(n, MaxDroppedCalls) {
		o.Dropped(r)
	}
}

// NopObserver ignores everything.
type NopObserver struct{}

// Exchanged implements Observer.
func (NopObserver) Exchanged(Status) {}

// Reply implements Observer.
func (NopObserver) Reply(int64, bool) {}

// Dropped implements Observer.
func (NopObserver) Dropped(DropReason) {}

// DroppedN implements DropCounter.
func (NopObserver) DroppedN(DropReason, uint64) {}
