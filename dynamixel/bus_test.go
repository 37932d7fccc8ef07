package dynamixel

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// scriptPort answers each written packet with the bytes its script gives.
// It allocates nothing once built.
type scriptPort struct {
	in      []byte // what the bus reads next
	reply   func(req []byte) []byte
	written [][]byte
	keep    bool
	timeout time.Duration
}

func (p *scriptPort) Write(b []byte) (int, error) {
	if p.keep {
		p.written = append(p.written, append([]byte(nil), b...))
	}
	if p.reply != nil {
		p.in = append(p.in, p.reply(b)...)
	}
	return len(b), nil
}

func (p *scriptPort) Read(b []byte) (int, error) {
	if len(p.in) == 0 {
		return 0, nil // a timeout, as go.bug.st/serial reports it
	}
	n := copy(b, p.in)
	p.in = p.in[:copy(p.in, p.in[n:])]
	return n, nil
}

func (p *scriptPort) SetReadTimeout(t time.Duration) error { p.timeout = t; return nil }
func (p *scriptPort) ResetInputBuffer() error              { p.in = p.in[:0]; return nil }
func (p *scriptPort) Close() error                         { return nil }

func fastBus(t testing.TB, p Port) *Bus {
	t.Helper()
	b, err := NewBus(p, BusConfig{Baud: 1000000, LatencyTimer: 0, ReturnDelay: 0, Margin: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBusTranscripts(t *testing.T) {
	replies := map[string]string{
		"FF FF FD 00 01 03 00 01 19 4E":                   "FF FF FD 00 01 07 00 55 00 06 04 26 65 5D",
		"FF FF FD 00 01 07 00 02 84 00 04 00 1D 15":       "FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0",
		"FF FF FD 00 01 09 00 03 74 00 00 02 00 00 CA 89": "FF FF FD 00 01 04 00 55 00 A1 0C",
	}
	p := &scriptPort{keep: true, reply: func(req []byte) []byte {
		for k, v := range replies {
			if bytes.Equal(req, unhex(t, k)) {
				return unhex(t, v)
			}
		}
		return nil
	}}
	b := fastBus(t, p)
	model, fw, err := b.Ping(1)
	if err != nil || model != 1030 || fw != 38 {
		t.Fatalf("ping: %d %d %v", model, fw, err)
	}
	pos := make([]byte, 4)
	if err := b.Read(1, 132, pos); err != nil || !bytes.Equal(pos, unhex(t, "A6 00 00 00")) {
		t.Fatalf("read: % X %v", pos, err)
	}
	if err := b.Write(1, 116, unhex(t, "00 02 00 00")); err != nil {
		t.Fatalf("write: %v", err)
	}
	if len(p.written) != 3 {
		t.Fatalf("%d packets written", len(p.written))
	}
}

// Stale bytes, an echo of the request and a reply from another ID are
// skipped; a corrupt frame is resynchronised past.
func TestBusSkipsNoise(t *testing.T) {
	good := unhex(t, "FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0")
	corrupt := append([]byte(nil), good...)
	corrupt[10] ^= 0xFF
	other := unhex(t, "FF FF FD 00 02 04 00 55 00 00 00")
	p := &scriptPort{reply: func(req []byte) []byte {
		out := append([]byte{0x00, 0xFF, 0x12}, req...) // garbage, then an echo
		out = append(out, corrupt...)
		out = append(out, other...)
		return append(out, good...)
	}}
	b := fastBus(t, p)
	pos := make([]byte, 4)
	if err := b.Read(1, 132, pos); err != nil || pos[0] != 0xA6 {
		t.Fatalf("read: % X %v", pos, err)
	}
	if st := b.Stats(); st.Corrupt == 0 || st.Stale == 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestBusTimeout(t *testing.T) {
	p := &scriptPort{}
	b, _ := NewBus(p, BusConfig{Baud: 1000000, LatencyTimer: time.Millisecond, ReturnDelay: 500 * time.Microsecond, Margin: time.Millisecond})
	_, _, err := b.Ping(7)
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || te.ID != 7 {
		t.Fatalf("%v", err)
	}
	// 10 bytes out + 14 back at 10 µs, one return delay, two latency
	// timers and the margin: computed, never a fixed guess.
	if want := 24*10*time.Microsecond + 500*time.Microsecond + 2*time.Millisecond + time.Millisecond; te.Timeout != want {
		t.Errorf("timeout %v, want %v", te.Timeout, want)
	}
}

// A reply that lands as the read's wait runs out (a descheduled thread, a
// loaded machine) is found by one last look: it is not reported as a
// missing servo.
func TestBusReplyLandingAtTheDeadline(t *testing.T) {
	p := &lateReplyPort{reply: unhex(t, "FF FF FD 00 01 07 00 55 00 06 04 26 65 5D")}
	b := fastBus(t, p)
	if model, _, err := b.Ping(1); err != nil || model != 1030 {
		t.Fatalf("ping: %d %v, want the reply that landed", model, err)
	}
	if st := b.Stats(); st.Timeouts != 0 {
		t.Errorf("stats %+v", st)
	}
}

// lateReplyPort's first read waits out its timeout and returns nothing; the
// reply lands just then.
type lateReplyPort struct {
	scriptPort
	reply  []byte
	landed bool
}

func (p *lateReplyPort) Read(b []byte) (int, error) {
	if !p.landed {
		time.Sleep(p.timeout)
		p.in, p.landed = append(p.in, p.reply...), true
		return 0, nil
	}
	return p.scriptPort.Read(b)
}

// The eManual's Fast Sync Read reply (docs/dynamixel.md §2, §6).
func TestFastSyncReadTranscript(t *testing.T) {
	reply := unhex(t, "FF FF FD 00 FE 19 00 55 00 03 A6 00 00 00 84 08 00 07 1F 08 00 00 16 CA 00 04 FF 03 00 00 D1 9E")
	p := &scriptPort{keep: true, reply: func([]byte) []byte { return reply }}
	b := fastBus(t, p)
	ids := []byte{3, 7, 4}
	dst, errs := make([]byte, 12), make([]byte, 3)
	n, err := b.FastSyncRead(132, 4, ids, dst, errs)
	if err != nil || n != 3 {
		t.Fatalf("%d %v", n, err)
	}
	if !bytes.Equal(p.written[0], unhex(t, "FF FF FD 00 FE 0A 00 8A 84 00 04 00 03 07 04 20 F2")) {
		t.Errorf("request % X", p.written[0])
	}
	got := make([]int32, 3)
	decodeInt32(dst, got)
	if got[0] != 166 || got[1] != 2079 || got[2] != 1023 {
		t.Errorf("positions %v", got)
	}
}

// A servo that refuses Fast Sync Read makes the group fall back to Sync Read.
func TestGroupFallsBackToSyncRead(t *testing.T) {
	buf := make([]byte, 64)
	p := &scriptPort{reply: func(req []byte) []byte {
		switch req[7] {
		case InstFastSyncRead:
			n, _ := MarshalInstruction(buf, 0, InstStatus, []byte{0x02}) // instruction error
			return append([]byte(nil), buf[:n]...)
		case InstSyncRead:
			var out []byte
			for _, id := range req[12 : len(req)-2] {
				n, _ := MarshalInstruction(buf, id, InstStatus, []byte{0, 0xFF, 0xFF, 0xFF, 0xFF})
				out = append(out, buf[:n]...)
			}
			return out
		}
		return nil
	}}
	g, err := fastBus(t, p).NewGroup([]byte{0, 1, 2, 3}, true)
	if err != nil {
		t.Fatal(err)
	}
	q := make([]int32, 4)
	if err := g.ReadInt32(132, q); err != nil || q[3] != -1 {
		t.Fatalf("%v %v", q, err)
	}
	if fast, why := g.Fast(); fast || !errors.Is(why, ErrStatus) {
		t.Errorf("fast %v, reason %v", fast, why)
	}
}

// A missing servo silences the rest of a sync read; the error names it.
func TestSyncReadMissingServo(t *testing.T) {
	buf := make([]byte, 64)
	p := &scriptPort{reply: func(req []byte) []byte {
		var out []byte
		for _, id := range req[12 : len(req)-2] {
			if id == 2 {
				break
			}
			n, _ := MarshalInstruction(buf, id, InstStatus, []byte{0, 1, 0, 0, 0})
			out = append(out, buf[:n]...)
		}
		return out
	}}
	b := fastBus(t, p)
	dst, errs := make([]byte, 16), make([]byte, 4)
	n, err := b.SyncRead(132, 4, []byte{0, 1, 2, 3}, dst, errs)
	var te *TimeoutError
	if n != 2 || !errors.As(err, &te) || te.ID != 2 {
		t.Fatalf("%d %v", n, err)
	}
}

func TestAlertKeepsData(t *testing.T) {
	buf := make([]byte, 64)
	p := &scriptPort{reply: func(req []byte) []byte {
		n, _ := MarshalInstruction(buf, 1, InstStatus, []byte{0x80, 0xA6, 0, 0, 0})
		return append([]byte(nil), buf[:n]...)
	}}
	pos := make([]byte, 4)
	err := fastBus(t, p).Read(1, 132, pos)
	if !errors.Is(err, ErrAlert) || errors.Is(err, ErrStatus) || pos[0] != 0xA6 {
		t.Fatalf("% X %v", pos, err)
	}
}

func TestSyncAndBulkWriteTranscripts(t *testing.T) {
	p := &scriptPort{keep: true}
	b := fastBus(t, p)
	if err := b.SyncWrite(116, 4, []byte{1, 2}, unhex(t, "96 00 00 00 AA 00 00 00")); err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "FF FF FD 00 FE 11 00 83 74 00 04 00 01 96 00 00 00 02 AA 00 00 00 82 87"); !bytes.Equal(p.written[0], want) {
		t.Errorf("% X", p.written[0])
	}
	if err := b.BulkWrite([]BulkItem{{ID: 1, Addr: 32, Data: []byte{0xA0, 0x00}}, {ID: 2, Addr: 31, Data: []byte{0x50}}}); err != nil {
		t.Fatal(err)
	}
	if want := unhex(t, "FF FF FD 00 FE 10 00 93 01 20 00 02 00 A0 00 02 1F 00 01 00 50 B7 68"); !bytes.Equal(p.written[1], want) {
		t.Errorf("% X", p.written[1])
	}
}

// The loop's two transactions allocate nothing.
func TestGroupAllocs(t *testing.T) {
	buf := make([]byte, 256)
	out := make([]byte, 0, 256)
	p := &scriptPort{in: make([]byte, 0, 1024)}
	p.reply = func(req []byte) []byte {
		if req[7] != InstSyncRead {
			return nil
		}
		out = out[:0]
		for _, id := range req[12 : len(req)-2] {
			n, _ := MarshalInstruction(buf, id, InstStatus, []byte{0, 0x00, 0x08, 0, 0})
			out = append(out, buf[:n]...)
		}
		return out
	}
	g, _ := fastBus(t, p).NewGroup([]byte{0, 1, 2, 3}, false)
	q, goal := make([]int32, 4), []int32{2048, 2000, 1900, 2100}
	if a := testing.AllocsPerRun(200, func() {
		if err := g.ReadInt32(132, q); err != nil {
			t.Fatal(err)
		}
		if err := g.WriteInt32(116, goal); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per read+write", a)
	}
	if q[0] != 2048 {
		t.Errorf("q %v", q)
	}
}
