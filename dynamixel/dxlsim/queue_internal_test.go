package dxlsim

import (
	"slices"
	"testing"
	"time"
)

// The release schedule of the reply bytes, computed against a wire that is
// busy far into the future, so that no real time enters the result.
func TestQueueSchedule(t *testing.T) {
	const t0 = int64(1) << 50
	us := int64(time.Microsecond)
	ms := int64(time.Millisecond)
	type push struct {
		n   int
		gap time.Duration
	}
	cases := []struct {
		name   string
		timing Timing
		pushes []push
		want   []segment // at relative to t0
	}{
		{"instant", Timing{}, []push{{15, 0}, {15, 0}}, []segment{{30, 0}}},
		{"return delay only", Timing{}, []push{{15, 100 * time.Microsecond}, {15, 100 * time.Microsecond}},
			[]segment{{15, 100 * us}, {15, 200 * us}}},
		{"byte time at 1 Mbps, 16-byte chunks", Timing{Baud: 1000000}, []push{{40, 0}},
			[]segment{{16, 160 * us}, {16, 320 * us}, {8, 400 * us}}},
		{"byte time then return delay", Timing{Baud: 1000000}, []push{{15, 0}, {15, 500 * time.Microsecond}},
			[]segment{{15, 150 * us}, {15, 150*us + 500*us + 150*us}}},
		{"FTDI: 4 replies of 15 bytes wait for the latency timer", Timing{Baud: 1000000, Latency: 16 * time.Millisecond},
			[]push{{15, 0}, {15, 0}, {15, 0}, {15, 0}}, []segment{{60, 10*us + 16*ms}}},
		{"FTDI: a full USB packet leaves at once", Timing{Baud: 1000000, Latency: 16 * time.Millisecond},
			[]push{{130, 0}}, []segment{{62, 620 * us}, {62, 1240 * us}, {6, 1250*us + 16*ms}}},
		{"FTDI Hi-Speed packet", Timing{Baud: 1000000, Latency: 2 * time.Millisecond, USBPacket: 510},
			[]push{{130, 0}}, []segment{{130, 10*us + 2*ms}}},
		{"FTDI: the timer expires inside a reply", Timing{Baud: 1000000, Latency: time.Millisecond, USBPacket: 510},
			[]push{{130, 0}}, []segment{{100, 10*us + ms}, {30, 1010*us + ms}}},
		{"FTDI: a byte after the timer starts a new packet", Timing{Baud: 1000000, Latency: time.Millisecond},
			[]push{{10, 0}, {10, 2 * time.Millisecond}}, []segment{{10, 10*us + ms}, {10, 100*us + 2*ms + 10*us + ms}}},
	}
	for _, c := range cases {
		if err := c.timing.validate(); err != nil {
			t.Fatal(err)
		}
		var q outQueue
		q.init()
		q.wire = t0
		for _, p := range c.pushes {
			q.push(make([]byte, p.n), p.gap, &c.timing)
		}
		got := slices.Clone(q.segs[q.sr:q.sw])
		for i := range got {
			got[i].at -= t0
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		// Nothing is released before its time, and a flush keeps it.
		if n, next := q.take(make([]byte, 256)); n != 0 || next != t0+c.want[0].at {
			t.Errorf("%s: take %d bytes, next %d", c.name, n, next-t0)
		}
		q.discard()
		if q.w-q.r != q.segs[q.sr].n+sum(q.segs[q.sr+1:q.sw]) {
			t.Errorf("%s: discard dropped bytes not yet arrived", c.name)
		}
	}
}

func sum(s []segment) int {
	n := 0
	for _, x := range s {
		n += x.n
	}
	return n
}
