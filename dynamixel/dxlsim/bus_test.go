package dxlsim_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// A missing servo in a sync read silences every servo listed after it
// (docs/dynamixel.md §6); one listed before it still answers.
func TestMissingServoSilencesLaterOnes(t *testing.T) {
	cases := []struct {
		missing byte
		list    []byte
		want    []byte // IDs that answer
	}{
		{2, []byte{0, 1, 2, 3}, []byte{0, 1}},
		{0, []byte{0, 1, 2, 3}, nil},
		{3, []byte{0, 1, 2, 3}, []byte{0, 1, 2}},
		{1, []byte{3, 2, 1, 0}, []byte{3, 2}},
		{1, []byte{0, 9, 2}, []byte{0}}, // an ID nobody has
	}
	for _, c := range cases {
		b, _ := newBus(t)
		if err := b.SetMissing(c.missing, true); err != nil {
			t.Fatal(err)
		}
		p := dxlsim.NewPipe(b)
		for _, inst := range []byte{dynamixel.InstSyncRead, dynamixel.InstBulkRead} {
			params := append([]byte{132, 0, 4, 0}, c.list...)
			if inst == dynamixel.InstBulkRead {
				params = nil
				for _, id := range c.list {
					params = append(params, id, 132, 0, 4, 0)
				}
			}
			st := statuses(t, exchange(t, p, dynamixel.BroadcastID, inst, params))
			var got []byte
			for _, s := range st {
				got = append(got, s.ID)
			}
			if !bytes.Equal(got, c.want) {
				t.Errorf("instruction 0x%02X, ID %d missing, list %v: answered %v, want %v", inst, c.missing, c.list, got, c.want)
			}
		}
		// A missing servo hears nothing: a write does not reach it.
		exchange(t, p, c.missing, dynamixel.InstWrite, addrParams(65, []byte{1}))
		if err := b.SetMissing(c.missing, false); err != nil {
			t.Fatal(err)
		}
		if v := readItem(t, p, c.missing, dynamixel.ItemLED); v != 0 {
			t.Errorf("a missing servo took a write")
		}
	}
	b, _ := newBus(t)
	if err := b.SetMissing(9, true); !errors.Is(err, dxlsim.ErrNoServo) {
		t.Errorf("SetMissing(9): %v", err)
	}
}

// A fast sync read with a missing servo is cut short where it would have
// answered; a servo with firmware older than 45 rejects it with an ordinary
// Instruction Error status.
func TestFastSyncReadFaults(t *testing.T) {
	b, _ := newBus(t)
	p := dxlsim.NewPipe(b)
	full := exchange(t, p, dynamixel.BroadcastID, dynamixel.InstFastSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3})
	if len(full) != 8+4*8 {
		t.Fatalf("fast sync read of 4: %d bytes", len(full))
	}
	if _, _, err := dynamixel.ParsePacket(full, false); err != nil {
		t.Fatalf("fast sync read reply: %v", err)
	}
	b.SetMissing(2, true)
	cut := exchange(t, p, dynamixel.BroadcastID, dynamixel.InstFastSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3})
	if !bytes.Equal(cut, full[:8+2*8]) {
		t.Errorf("with ID 2 missing: % X, want the first two blocks of % X", cut, full)
	}
	b.SetMissing(2, false)

	b.Servo(0).Poke(dynamixel.AddrFirmwareVersion, []byte{38})
	st := statuses(t, exchange(t, p, dynamixel.BroadcastID, dynamixel.InstFastSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3}))
	if len(st) != 1 || st[0].ID != 0 || st[0].Err != errInstruction {
		t.Errorf("firmware 38: %+v, want one Instruction Error from ID 0", st)
	}
	// Fast bulk read: blocks of their own lengths.
	fb := exchange(t, p, dynamixel.BroadcastID, dynamixel.InstFastBulkRead, []byte{1, 132, 0, 4, 0, 2, 64, 0, 1, 0})
	if len(fb) != 8+8+5 {
		t.Fatalf("fast bulk read: % X", fb)
	}
	if _, _, err := dynamixel.ParsePacket(fb, false); err != nil || fb[9] != 1 || fb[17] != 2 {
		t.Errorf("fast bulk read % X: %v", fb, err)
	}
}

// A status whose data holds FF FF FD is stuffed on the wire and decodes
// back whole (docs/dynamixel.md §3).
func TestStatusStuffing(t *testing.T) {
	b, _ := newBus(t, 1)
	s := b.Servo(1)
	// Present Current -1 (FF FF), then Present Velocity -3 (FD FF FF FF).
	if err := s.Poke(126, []byte{0xFF, 0xFF, 0xFD, 0xFF, 0xFF, 0xFF}); err != nil {
		t.Fatal(err)
	}
	p := dxlsim.NewPipe(b)
	raw := exchange(t, p, 1, dynamixel.InstRead, []byte{126, 0, 6, 0})
	want := "FF FF FD 00 01 0B 00 55 00 FF FF FD FD FF FF FF"
	if got := spaced(raw); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("raw % X, want it to start %s", raw, want)
	}
	st := statuses(t, raw)
	if len(st) != 1 || !bytes.Equal(st[0].Data, []byte{0xFF, 0xFF, 0xFD, 0xFF, 0xFF, 0xFF}) {
		t.Fatalf("decoded %+v", st)
	}
	cur, _ := dynamixel.ItemPresentCurrent.Item().Decode(st[0].Data[:2])
	vel, _ := dynamixel.ItemPresentVelocity.Item().Decode(st[0].Data[2:])
	if cur != -1 || vel != -3 {
		t.Errorf("current %d, velocity %d; want -1, -3", cur, vel)
	}
}

// Like a servo, the bus skips garbage, ignores packets with a bad CRC and
// resynchronises on the next header, including one inside the bad packet.
func TestStreamResync(t *testing.T) {
	b, _ := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	var ping [10]byte
	dynamixel.MarshalInstruction(ping[:], 1, dynamixel.InstPing, nil)
	bad := append([]byte(nil), ping[:]...)
	bad[9] ^= 0xFF
	cases := []struct {
		name    string
		stream  []byte
		replies int
	}{
		{"garbage before", append([]byte{0x00, 0xFF, 0x13, 0xFF, 0xFF}, ping[:]...), 1},
		{"bad CRC", bad, 0},
		{"bad CRC then good", append(bad, ping[:]...), 1},
		{"stuffed FF FF FD FD is not a header", append([]byte{0xFF, 0xFF, 0xFD, 0xFD}, ping[:]...), 1},
		{"reserved byte FD", append([]byte{0xFF, 0xFF, 0xFD, 0xFD, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00}, ping[:]...), 1},
		{"two packets in one write", append(append([]byte(nil), ping[:]...), ping[:]...), 2},
		{"truncated then good", append(append([]byte(nil), ping[:6]...), ping[:]...), 1},
	}
	for _, c := range cases {
		got := exchangeRaw(t, p, c.stream)
		// Drop any partial packet left behind before the next case.
		exchangeRaw(t, p, bytes.Repeat([]byte{0}, 2*dynamixel.MaxPacket))
		if n := len(statuses(t, got)); n != c.replies {
			t.Errorf("%s: %d replies, want %d", c.name, n, c.replies)
		}
	}
	if s := b.Stats(); s.Corrupt == 0 || s.Garbage == 0 {
		t.Errorf("stats %+v", s)
	}
	// A packet split across writes is put together.
	exchangeRaw(t, p, ping[:4])
	if n := len(statuses(t, exchangeRaw(t, p, ping[4:]))); n != 1 {
		t.Errorf("split ping: %d replies", n)
	}
}

func TestCorruptAndEcho(t *testing.T) {
	b, _ := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	b.CorruptNext(2)
	for i := range 3 {
		raw := exchange(t, p, 1, dynamixel.InstPing, nil)
		_, _, err := dynamixel.ParsePacket(raw, true)
		if corrupt := errors.Is(err, dynamixel.ErrCorrupt); corrupt != (i < 2) {
			t.Errorf("reply %d: %v", i, err)
		}
	}
	b.SetEcho(true)
	var ping [10]byte
	dynamixel.MarshalInstruction(ping[:], 1, dynamixel.InstPing, nil)
	raw := exchangeRaw(t, p, ping[:])
	if !bytes.HasPrefix(raw, ping[:]) || len(statuses(t, raw[10:])) != 1 {
		t.Errorf("echo: % X", raw)
	}
	// An absent servo: only the echo comes back (docs/dynamixel.md §13).
	dynamixel.MarshalInstruction(ping[:], 9, dynamixel.InstPing, nil)
	if raw := exchangeRaw(t, p, ping[:]); !bytes.Equal(raw, ping[:]) {
		t.Errorf("echo of a ping to nobody: % X", raw)
	}
}

// The bulk instructions address each servo with its own item.
func TestBulk(t *testing.T) {
	b, _ := newBus(t, 1, 2)
	p := dxlsim.NewPipe(b)
	// The eManual's bulk write: ID 1 addr 32 ← 160 (2 bytes), ID 2 addr 31 ← 80.
	if got := exchange(t, p, dynamixel.BroadcastID, dynamixel.InstBulkWrite, unhex(t, "01 20 00 02 00 A0 00 02 1F 00 01 00 50")); len(got) != 0 {
		t.Errorf("bulk write answered % X", got)
	}
	if v := readItem(t, p, 1, dynamixel.ItemMaxVoltageLimit); v != 160 {
		t.Errorf("ID 1 max voltage %d", v)
	}
	if v := readItem(t, p, 2, dynamixel.ItemTemperatureLimit); v != 80 {
		t.Errorf("ID 2 temperature limit %d", v)
	}
	exchange(t, p, dynamixel.BroadcastID, dynamixel.InstBulkWrite, unhex(t, "01 41 00 01 00 01 02 1F 00 01 00 46"))
	st := statuses(t, exchange(t, p, dynamixel.BroadcastID, dynamixel.InstBulkRead, unhex(t, "02 1F 00 01 00 01 41 00 01 00")))
	if len(st) != 2 || st[0].ID != 2 || !bytes.Equal(st[0].Data, []byte{70}) || st[1].ID != 1 || !bytes.Equal(st[1].Data, []byte{1}) {
		t.Errorf("bulk read %+v", st)
	}
	// A malformed bulk write is dropped whole.
	exchange(t, p, dynamixel.BroadcastID, dynamixel.InstBulkWrite, unhex(t, "01 41 00 01 00 00 02 1F 00 05 00 46"))
	if v := readItem(t, p, 1, dynamixel.ItemLED); v != 1 {
		t.Errorf("malformed bulk write applied: LED %d", v)
	}
	// Sync write to both, then a goal out of limits for one: the other
	// still takes its goal.
	exchange(t, p, dynamixel.BroadcastID, dynamixel.InstSyncWrite, unhex(t, "74 00 04 00 01 96 00 00 00 02 00 20 00 00"))
	if v := readItem(t, p, 1, dynamixel.ItemGoalPosition); v != 150 {
		t.Errorf("ID 1 goal %d", v)
	}
	if v := readItem(t, p, 2, dynamixel.ItemGoalPosition); v == 0x2000 {
		t.Errorf("ID 2 took goal 8192 beyond its limit")
	}
}

func TestPipe(t *testing.T) {
	b, _ := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	buf := make([]byte, 64)
	// Read times out with (0, nil), as go.bug.st/serial does.
	p.SetReadTimeout(time.Millisecond)
	if n, err := p.Read(buf); n != 0 || err != nil {
		t.Errorf("Read with nothing queued: %d, %v", n, err)
	}
	// ResetInputBuffer discards received replies.
	var ping [10]byte
	dynamixel.MarshalInstruction(ping[:], 1, dynamixel.InstPing, nil)
	p.Write(ping[:])
	p.ResetInputBuffer()
	if n, err := p.Read(buf); n != 0 || err != nil {
		t.Errorf("Read after ResetInputBuffer: %d, %v", n, err)
	}
	// Replies can be read a few bytes at a time.
	p.Write(ping[:])
	var got []byte
	for len(got) < 14 {
		n, err := p.Read(buf[:3])
		if err != nil || n == 0 {
			t.Fatalf("Read: %d, %v", n, err)
		}
		got = append(got, buf[:n]...)
	}
	if len(statuses(t, got)) != 1 {
		t.Errorf("% X", got)
	}

	// Unplugged: every call fails, and a blocked Read wakes up.
	p.SetReadTimeout(-1)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Read(buf)
		errc <- err
	}()
	b.Unplug()
	if err := <-errc; !errors.Is(err, dxlsim.ErrUnplugged) {
		t.Errorf("blocked Read on unplug: %v", err)
	}
	if _, err := p.Write(ping[:]); !errors.Is(err, dxlsim.ErrUnplugged) {
		t.Errorf("Write while unplugged: %v", err)
	}
	b.Plug()
	if len(statuses(t, exchangeRaw(t, p, ping[:]))) != 1 {
		t.Error("no reply after plugging back")
	}

	// Close wakes a blocked Read.
	p.SetReadTimeout(-1)
	go func() {
		_, err := p.Read(buf)
		errc <- err
	}()
	p.Close()
	if err := <-errc; !errors.Is(err, dxlsim.ErrClosed) {
		t.Errorf("blocked Read on Close: %v", err)
	}
	if _, err := p.Write(ping[:]); !errors.Is(err, dxlsim.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
}

// Under a timing model the replies still arrive whole, in order, to a
// reader that waits for them.
func TestTimingDelivers(t *testing.T) {
	for _, tm := range []dxlsim.Timing{
		{ReturnDelay: true},
		{Baud: 1000000},
		{Baud: 57600, ReturnDelay: true},
		{Baud: 1000000, Latency: time.Millisecond},
		{Baud: 1000000, Latency: 2 * time.Millisecond, USBPacket: 510},
	} {
		b, _ := newBus(t)
		for _, s := range b.Servos() {
			s.SetValue(dynamixel.ItemReturnDelayTime, 50)
		}
		if err := b.SetTiming(tm); err != nil {
			t.Fatal(err)
		}
		p := dxlsim.NewPipe(b)
		var pkt [32]byte
		n, _ := dynamixel.MarshalInstruction(pkt[:], dynamixel.BroadcastID, dynamixel.InstSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3})
		p.Write(pkt[:n])
		p.SetReadTimeout(10 * time.Second) // only matters on failure
		var got []byte
		buf := make([]byte, 256)
		for len(got) < 4*15 {
			k, err := p.Read(buf)
			if err != nil || k == 0 {
				t.Fatalf("%+v: Read %d, %v after % X", tm, k, err, got)
			}
			got = append(got, buf[:k]...)
		}
		st := statuses(t, got)
		if len(st) != 4 || st[0].ID != 0 || st[3].ID != 3 {
			t.Errorf("%+v: %+v", tm, st)
		}
	}
}

// The driver of package dynamixel works against the simulator.
func TestDriverInterop(t *testing.T) {
	b, _ := newBus(t)
	// The driver starts its deadline before it looks at the port, so a
	// goroutine descheduled past it reads a timeout even with the replies
	// waiting: the margin is generous. The missing servo below waits it out.
	drv, err := dynamixel.NewBus(dxlsim.NewPipe(b), dynamixel.BusConfig{Baud: 1000000, Margin: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	model, fw, err := drv.Ping(2)
	if err != nil || model != 1030 || fw != dxlsim.DefaultFirmware {
		t.Fatalf("Ping: %d %d %v", model, fw, err)
	}
	if err := drv.Write(2, 116, le(1000, 4)); err != nil {
		t.Fatal(err)
	}
	dst, errs := make([]byte, 16), make([]byte, 4)
	if n, err := drv.SyncRead(132, 4, []byte{0, 1, 2, 3}, dst, errs); n != 4 || err != nil {
		t.Fatalf("SyncRead: %d %v", n, err)
	}
	b.SetMissing(1, true)
	if n, err := drv.SyncRead(132, 4, []byte{0, 1, 2, 3}, dst, errs); n != 1 || !errors.Is(err, dynamixel.ErrTimeout) {
		t.Errorf("SyncRead with ID 1 missing: %d %v", n, err)
	}
	b.SetMissing(1, false)

	// With the factory return delay, byte time and a 1 ms latency timer.
	for _, s := range b.Servos() {
		s.SetValue(dynamixel.ItemReturnDelayTime, 250)
	}
	if err := b.SetTiming(dxlsim.Timing{ReturnDelay: true, Baud: 1000000, Latency: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// The margin only matters on failure.
	drv, err = dynamixel.NewBus(dxlsim.NewPipe(b), dynamixel.BusConfig{Baud: 1000000, LatencyTimer: time.Millisecond,
		ReturnDelay: 500 * time.Microsecond, Margin: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if n, err := drv.SyncRead(132, 4, []byte{0, 1, 2, 3}, dst, errs); n != 4 || err != nil {
			t.Fatalf("timed SyncRead: %d %v", n, err)
		}
		if n, err := drv.FastSyncRead(132, 4, []byte{0, 1, 2, 3}, dst, errs); n != 4 || err != nil {
			t.Fatalf("timed FastSyncRead: %d %v", n, err)
		}
	}
}

// The start of a packet whose rest never comes is dropped after a pause, as
// a servo's receiver times out, instead of swallowing the next packets.
func TestPartialPacketTimeout(t *testing.T) {
	b, clk := newBus(t, 1)
	p := dxlsim.NewPipe(b)
	var ping [10]byte
	dynamixel.MarshalInstruction(ping[:], 1, dynamixel.InstPing, nil)
	partial := []byte{0xFF, 0xFF, 0xFD, 0x00, 0x01, 200, 0x00, 0x03} // LEN 200
	exchangeRaw(t, p, partial)
	if got := exchangeRaw(t, p, ping[:]); len(got) != 0 {
		t.Fatalf("a ping inside a pending packet was answered: % X", got)
	}
	exchangeRaw(t, p, bytes.Repeat([]byte{0}, 300)) // ends it with a bad CRC
	exchangeRaw(t, p, partial)
	clk.Advance(time.Second)
	if n := len(statuses(t, exchangeRaw(t, p, ping[:]))); n != 1 {
		t.Errorf("ping after a stale partial packet: %d replies", n)
	}
}
