// Package record receives the telemetry taps of one or many links
// (docs/tap.md) and writes them as they arrive: one CSV per link
// (docs/tap.md §5), and optionally the raw packets as pcap for Wireshark.
// It tells the links apart by RTP SSRC, and finds losses and reordering
// from the RTP sequence numbers (RFC 3550 §A.1's extended sequence number).
package record

import "fmt"

// window is how far back a sequence number is remembered: a packet older
// than that is counted as too late, not as a reordering.
const window = 4096

// Counts are what a stream has seen.
type Counts struct {
	// Received counts packets, duplicates included.
	Received uint64
	// Lost is the sequence numbers never received (yet): a packet that
	// comes late takes its number back out.
	Lost uint64
	// Reordered counts packets that came after a later one.
	Reordered uint64
	// Duplicates counts packets whose sequence number came before.
	Duplicates uint64
	// TooLate counts packets older than the remembered window.
	TooLate uint64
}

func (c Counts) String() string {
	return fmt.Sprintf("%d received, %d lost, %d reordered, %d duplicated", c.Received, c.Lost, c.Reordered, c.Duplicates)
}

// sequence tracks one SSRC's RTP sequence numbers.
type sequence struct {
	started bool
	max     int64 // the highest extended sequence number seen
	base    int64
	seen    [window]int64 // ext+1 of what was received at ext % window; 0 = nothing
	Counts
}

// add records sequence number s and returns its extended number and
// whether the packet is new (not a duplicate, not too late).
func (q *sequence) add(s uint16) (ext int64, fresh bool) {
	q.Received++
	if !q.started {
		q.started, q.max, q.base = true, int64(s), int64(s)
		q.seen[int64(s)%window] = int64(s) + 1
		return int64(s), true
	}
	// The nearest extension of s to the highest seen: a step of up to half
	// the sequence space forward or back (RFC 3550 §A.1).
	ext = q.max + int64(int16(s-uint16(q.max)))
	switch {
	case ext > q.max:
		// Numbers skipped are lost until they come.
		for e := q.max + 1; e < ext; e++ {
			q.seen[e%window] = 0
		}
		q.Lost += uint64(ext - q.max - 1)
		q.max = ext
	case ext <= q.max-window:
		q.TooLate++
		return ext, false
	case q.seen[ext%window] == ext+1:
		q.Duplicates++
		return ext, false
	case ext < q.base:
		// Older than the first packet: the numbers between were never
		// counted, and are lost until they come.
		q.Reordered++
		for e := ext + 1; e < q.base; e++ {
			q.seen[e%window] = 0
		}
		q.Lost += uint64(q.base - ext - 1)
		q.base = ext
	default:
		q.Reordered++
		q.Lost--
	}
	q.seen[ext%window] = ext + 1
	return ext, true
}
