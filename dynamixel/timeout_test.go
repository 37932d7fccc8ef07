package dynamixel

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Replies of four XM430s (IDs 0–3) at pulse 2048 to a read of Present
// Position (132, 4 bytes), as the simulator sends them.
const (
	fastHead = "FF FF FD 00 FE 21 00 55"
	fastB0   = "00 00 00 08 00 00 9F E9"
	fastB1   = "00 01 00 08 00 00 9E 10"
	fastB2   = "00 02 00 08 00 00 A7 E5"
	fastB3   = "00 03 00 08 00 00 9C 67"
	syncS0   = "FF FF FD 00 00 08 00 55 00 00 08 00 00 7F BE"
	syncS1   = "FF FF FD 00 01 08 00 55 00 00 08 00 00 1C 38"
	syncS2   = "FF FF FD 00 02 08 00 55 00 00 08 00 00 BC 32"
)

// replyOnce answers the first instruction with the transcript and then
// nothing.
func replyOnce(t *testing.T, transcript ...string) *scriptPort {
	t.Helper()
	reply := unhex(t, strings.Join(transcript, " "))
	return &scriptPort{reply: func([]byte) []byte {
		r := reply
		reply = nil
		return r
	}}
}

func TestGroupTimeoutNamesTheServo(t *testing.T) {
	ids := []byte{0, 1, 2, 3}
	fast := func(b *Bus) error {
		_, err := b.FastSyncRead(132, 4, ids, make([]byte, 16), make([]byte, 4))
		return err
	}
	sync := func(b *Bus) error {
		_, err := b.SyncRead(132, 4, ids, make([]byte, 16), make([]byte, 4))
		return err
	}
	corruptLast := fastB3[:len(fastB3)-2] + "00" // the packet's CRC
	for _, c := range []struct {
		name       string
		read       func(*Bus) error
		transcript []string
		servo      int // -1: not known
		answered   int
		text       string
	}{
		{"fast: servo 2 silent", fast, []string{fastHead, fastB0, fastB1}, 2, 2,
			"dynamixel: servo 2 did not answer Fast Sync Read (0x8A) within 1.58ms (servos 0 and 1 did)"},
		{"fast: servo 3 cut short", fast, []string{fastHead, fastB0, fastB1, fastB2, "00 03 00"}, 3, 3,
			"dynamixel: servo 3 did not answer Fast Sync Read (0x8A) within 1.58ms (servos 0, 1 and 2 did)"},
		{"fast: servo 1 silent", fast, []string{fastHead, fastB0}, 1, 1,
			"dynamixel: servo 1 did not answer Fast Sync Read (0x8A) within 1.58ms (servo 0 did)"},
		{"fast: nothing", fast, nil, 0, 0,
			"dynamixel: servo 0 did not answer Fast Sync Read (0x8A) within 1.58ms (nor did servos 1, 2 and 3, which answer after it)"},
		{"fast: the header only", fast, []string{fastHead}, 0, 0, ""},
		{"fast: half a header", fast, []string{"FF FF FD 00 FE"}, 0, 0, ""},
		{"fast: a block of another servo", fast, []string{fastHead, fastB0, fastB2}, -1, -1,
			"dynamixel: no readable reply to Fast Sync Read (0x8A) from servos 0, 1, 2 and 3 within 1.58ms (the bytes received do not tell which servo failed)"},
		{"fast: the final CRC is wrong", fast, []string{fastHead, fastB0, fastB1, fastB2, corruptLast}, -1, -1, ""},
		{"fast: a unicast status, cut", fast, []string{"FF FF FD 00 01 04 00 55"}, -1, -1, ""},
		{"sync: servo 2 silent", sync, []string{syncS0, syncS1}, 2, 2,
			"dynamixel: servo 2 did not answer Sync Read (0x82) within 1.78ms (servos 0 and 1 did)"},
		{"sync: servo 1 cut short", sync, []string{syncS0, syncS1[:17]}, 1, 1,
			"dynamixel: servo 1 sent an incomplete reply to Sync Read (0x82) within 1.78ms (6 bytes; servo 0 did)"},
		{"sync: nothing", sync, nil, 0, 0,
			"dynamixel: servo 0 did not answer Sync Read (0x82) within 1.78ms (nor did servos 1, 2 and 3, which answer after it)"},
		{"sync: servo 3 silent", sync, []string{syncS0, syncS1, syncS2}, 3, 3, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.read(fastBus(t, replyOnce(t, c.transcript...)))
			var te *TimeoutError
			if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) {
				t.Fatalf("%v, want a *TimeoutError", err)
			}
			id, ok := te.Servo()
			if ok != (c.servo >= 0) || ok && int(id) != c.servo || te.Answered != c.answered || !bytes.Equal(te.Group, ids) {
				t.Errorf("servo %d (%v), answered %d of %v; want servo %d, answered %d", id, ok, te.Answered, te.Group, c.servo, c.answered)
			}
			if c.text != "" && err.Error() != c.text {
				t.Errorf("error\n%s\nwant\n%s", err, c.text)
			}
		})
	}
}

func TestUnicastTimeoutText(t *testing.T) {
	_, _, err := fastBus(t, replyOnce(t)).Ping(7)
	if want := "dynamixel: servo 7 did not answer Ping (0x01) within 1.24ms"; err == nil || err.Error() != want {
		t.Errorf("%v\nwant\n%s", err, want)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.Group != nil {
		t.Fatalf("%#v", err)
	}
	if id, ok := te.Servo(); !ok || id != 7 {
		t.Errorf("servo %d, %v", id, ok)
	}
	err = fastBus(t, replyOnce(t, syncS1[:17])).Read(1, 132, make([]byte, 4))
	if want := "dynamixel: servo 1 sent an incomplete reply to Read (0x02) within 1.29ms (6 bytes)"; err == nil || err.Error() != want {
		t.Errorf("%v\nwant\n%s", err, want)
	}
}

func TestBulkReadTimeoutNamesTheServo(t *testing.T) {
	items := []BulkItem{{ID: 0, Addr: 132, Data: make([]byte, 4)}, {ID: 1, Addr: 132, Data: make([]byte, 4)}}
	n, err := fastBus(t, replyOnce(t, syncS0)).BulkRead(items)
	var te *TimeoutError
	if n != 1 || !errors.As(err, &te) {
		t.Fatalf("%d %v", n, err)
	}
	if id, ok := te.Servo(); !ok || id != 1 || te.Answered != 1 {
		t.Errorf("servo %d (%v), answered %d", id, ok, te.Answered)
	}
	if want := "dynamixel: servo 1 did not answer Bulk Read (0x92) within 1.5ms (servo 0 did)"; err.Error() != want {
		t.Errorf("%v\nwant\n%s", err, want)
	}
}

func TestInstructionNames(t *testing.T) {
	for inst, want := range map[byte]string{
		InstPing: "Ping (0x01)", InstRead: "Read (0x02)", InstWrite: "Write (0x03)", InstSyncRead: "Sync Read (0x82)",
		InstFastSyncRead: "Fast Sync Read (0x8A)", InstSyncWrite: "Sync Write (0x83)", InstBulkRead: "Bulk Read (0x92)",
		0x42: "instruction 0x42",
	} {
		if got := instText(inst); got != want {
			t.Errorf("0x%02X: %q, want %q", inst, got, want)
		}
	}
	if InstructionName(0x42) != "" {
		t.Error("an unknown code has a name")
	}
}

func TestServoList(t *testing.T) {
	for _, c := range []struct {
		ids  []byte
		want string
	}{
		{nil, "no servo"}, {[]byte{3}, "servo 3"}, {[]byte{0, 1}, "servos 0 and 1"}, {[]byte{1, 2, 3}, "servos 1, 2 and 3"},
	} {
		if got := servoList(c.ids); got != c.want {
			t.Errorf("%v: %q, want %q", c.ids, got, c.want)
		}
	}
}

// Reading a servo in alert through the raw reads allocates nothing: the
// Alert bit comes back as a byte, not as an error.
func TestRawReadsOfAnAlertDoNotAllocate(t *testing.T) {
	buf := make([]byte, 256)
	out := make([]byte, 0, 256)
	p := &scriptPort{in: make([]byte, 0, 1024)}
	p.reply = func(req []byte) []byte {
		out = out[:0]
		ids := []byte{req[4]}
		if req[7] == InstSyncRead {
			ids = req[12 : len(req)-2]
		}
		for _, id := range ids {
			n, _ := MarshalInstruction(buf, id, InstStatus, []byte{0x80, 0x00, 0x08, 0, 0})
			out = append(out, buf[:n]...)
		}
		return out
	}
	b := fastBus(t, p)
	g, _ := b.NewGroup([]byte{0, 1, 2, 3}, false)
	q, one := make([]int32, 4), make([]byte, 4)
	if a := testing.AllocsPerRun(200, func() {
		if err := g.ReadInt32Raw(132, q); err != nil {
			t.Fatal(err)
		}
		if e, err := b.ReadRaw(1, 132, one); err != nil || e != 0x80 {
			t.Fatalf("0x%02X %v", e, err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per read", a)
	}
	if g.Errs()[2] != 0x80 || q[2] != 2048 {
		t.Errorf("errs % X, q %v", g.Errs(), q)
	}
	// The plain reads still say it.
	if err := g.ReadInt32(132, q); !errors.Is(err, ErrAlert) {
		t.Errorf("ReadInt32: %v", err)
	}
	if err := b.Read(1, 132, one); !errors.Is(err, ErrAlert) {
		t.Errorf("Read: %v", err)
	}
}
