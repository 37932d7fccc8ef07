package dynamixel

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCRCCheckValue(t *testing.T) {
	if got := CRC16(0, []byte("123456789")); got != 0xFEE8 {
		t.Fatalf("CRC16(123456789) = %04X, want FEE8", got)
	}
}

// The eManual's packets (docs/dynamixel.md §2), byte for byte.
func TestInstructionTranscripts(t *testing.T) {
	cases := []struct {
		name       string
		id, inst   byte
		params, hx string
	}{
		{"ping 1", 1, InstPing, "", "FF FF FD 00 01 03 00 01 19 4E"},
		{"broadcast ping", BroadcastID, InstPing, "", "FF FF FD 00 FE 03 00 01 31 42"},
		{"read 132/4", 1, InstRead, "84 00 04 00", "FF FF FD 00 01 07 00 02 84 00 04 00 1D 15"},
		{"write 512 to 116", 1, InstWrite, "74 00 00 02 00 00", "FF FF FD 00 01 09 00 03 74 00 00 02 00 00 CA 89"},
		{"sync read", BroadcastID, InstSyncRead, "84 00 04 00 01 02", "FF FF FD 00 FE 09 00 82 84 00 04 00 01 02 CE FA"},
		{"sync write", BroadcastID, InstSyncWrite, "74 00 04 00 01 96 00 00 00 02 AA 00 00 00",
			"FF FF FD 00 FE 11 00 83 74 00 04 00 01 96 00 00 00 02 AA 00 00 00 82 87"},
		{"clear", 1, InstClear, "01 44 58 4C 22", "FF FF FD 00 01 08 00 10 01 44 58 4C 22 B1 DC"},
		{"bulk write", BroadcastID, InstBulkWrite, "01 20 00 02 00 A0 00 02 1F 00 01 00 50",
			"FF FF FD 00 FE 10 00 93 01 20 00 02 00 A0 00 02 1F 00 01 00 50 B7 68"},
		{"fast sync read", BroadcastID, InstFastSyncRead, "84 00 04 00 03 07 04",
			"FF FF FD 00 FE 0A 00 8A 84 00 04 00 03 07 04 20 F2"},
	}
	buf := make([]byte, 64)
	for _, c := range cases {
		n, err := MarshalInstruction(buf, c.id, c.inst, unhex(t, c.params))
		if want := unhex(t, c.hx); err != nil || !bytes.Equal(buf[:n], want) {
			t.Errorf("%s: % X (%v), want % X", c.name, buf[:n], err, want)
		}
		p, m, err := ParsePacket(buf[:n], true)
		if err != nil || m != n || p.ID != c.id || p.Inst != c.inst || !bytes.Equal(p.Params, unhex(t, c.params)) {
			t.Errorf("%s: parsed %+v %d %v", c.name, p, m, err)
		}
	}
}

func TestStatusTranscripts(t *testing.T) {
	cases := []struct {
		name, hx string
		id, err  byte
		data     string
	}{
		{"ping status", "FF FF FD 00 01 07 00 55 00 06 04 26 65 5D", 1, 0, "06 04 26"},
		{"read status", "FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0", 1, 0, "A6 00 00 00"},
		{"empty status", "FF FF FD 00 01 04 00 55 00 A1 0C", 1, 0, ""},
	}
	for _, c := range cases {
		s, n, err := ParseStatus(unhex(t, c.hx))
		if err != nil || n != len(unhex(t, c.hx)) || s.ID != c.id || s.Err != c.err || !bytes.Equal(s.Data, unhex(t, c.data)) {
			t.Errorf("%s: %+v %d %v", c.name, s, n, err)
		}
	}
}

// A written value containing FF FF FD is stuffed on the wire and comes back
// whole (docs/dynamixel.md §3: the SDK loses bytes here).
func TestStuffingTranscript(t *testing.T) {
	buf := make([]byte, 64)
	n, err := MarshalInstruction(buf, 1, InstWrite, unhex(t, "74 00 FF FF FD FD"))
	if err != nil {
		t.Fatal(err)
	}
	// FF FF FD gets an FD; LEN counts the stuffed bytes: INST + 7 + CRC = 10.
	wantPrefix := unhex(t, "FF FF FD 00 01 0A 00 03 74 00 FF FF FD FD FD")
	if !bytes.HasPrefix(buf[:n], wantPrefix) || n != 17 {
		t.Fatalf("% X, want prefix % X and 17 bytes", buf[:n], wantPrefix)
	}
	p, _, err := ParsePacket(buf[:n], true)
	if err != nil || !bytes.Equal(p.Params, unhex(t, "74 00 FF FF FD FD")) {
		t.Fatalf("round trip % X %v", p.Params, err)
	}
	// The SDK's failing example: FF FF FD FF FD FD.
	n, _ = MarshalInstruction(buf, 1, InstWrite, unhex(t, "FF FF FD FF FD FD"))
	if p, _, _ := ParsePacket(buf[:n], true); !bytes.Equal(p.Params, unhex(t, "FF FF FD FF FD FD")) {
		t.Fatalf("SDK example round trip % X", p.Params)
	}
}

// Property: un-stuff(stuff(x)) == x, on random payloads rich in FF and FD.
func TestStuffingIsInverted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0xFF, 0xFD, 0x00, 0x01}
	buf := make([]byte, 2*MaxPacket)
	for i := 0; i < 200000; i++ {
		p := make([]byte, r.IntN(12))
		for j := range p {
			p[j] = alphabet[r.IntN(len(alphabet))]
		}
		if i%3 == 0 && len(p) >= 3 { // make sure FF FF FD occurs
			k := r.IntN(len(p) - 2)
			copy(p[k:], []byte{0xFF, 0xFF, 0xFD})
		}
		n, err := MarshalInstruction(buf, 1, InstWrite, p)
		if err != nil {
			t.Fatal(err)
		}
		// No unstuffed FF FF FD run may remain in the stuffed body except
		// as FF FF FD FD.
		body := buf[7 : n-2]
		for k := 0; k+2 < len(body); k++ {
			if body[k] == 0xFF && body[k+1] == 0xFF && body[k+2] == 0xFD && (k+3 >= len(body) || body[k+3] != 0xFD) {
				t.Fatalf("% X stuffed to % X: a bare FF FF FD", p, body)
			}
		}
		q, m, err := ParsePacket(buf[:n], true)
		if err != nil || m != n || !bytes.Equal(q.Params, p) {
			t.Fatalf("% X -> % X -> % X (%v)", p, buf[:n], q.Params, err)
		}
	}
}

func TestFindHeader(t *testing.T) {
	cases := []struct {
		hx   string
		want int
	}{
		{"FF FF FD 00", 0},
		{"00 12 FF FF FD 00", 2},
		{"FF FF FD FD 00 FF FF FD 00", 5}, // FF FF FD FD is stuffed data
		{"00 01 02", -1},
		{"00 FF", 1},
		{"00 FF FF", 1},
		{"FF FF FD", 0},
	}
	for _, c := range cases {
		if got := FindHeader(unhex(t, c.hx)); got != c.want {
			t.Errorf("FindHeader(% s) = %d, want %d", c.hx, got, c.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := unhex(t, "FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0")
	bad := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"crc", bad(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorrupt},
		{"data bit", bad(func(b []byte) []byte { b[9] ^= 0x10; return b }), ErrCorrupt},
		{"reserved", bad(func(b []byte) []byte { b[3] = 0xFD; return b }), ErrCorrupt},
		{"length too small", bad(func(b []byte) []byte { b[5] = 2; return b }), ErrCorrupt},
		{"length huge", bad(func(b []byte) []byte { b[5], b[6] = 0xFF, 0xFF; return b }), ErrCorrupt},
		{"short", good[:10], ErrIncomplete},
		{"not status", unhex(t, "FF FF FD 00 01 03 00 01 19 4E"), ErrNotStatus},
	}
	for _, c := range cases {
		if _, _, err := ParseStatus(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestStatusError(t *testing.T) {
	if StatusErrorOf(1, 0) != nil {
		t.Fatal("clear error byte gave an error")
	}
	err := StatusErrorOf(2, 0x84)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 4 || !se.Alert || !errors.Is(err, ErrStatus) || !errors.Is(err, ErrAlert) {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "ID 2: data range error, with hardware alert") {
		t.Errorf("%q", err)
	}
	alertOnly := StatusErrorOf(3, 0x80)
	if errors.Is(alertOnly, ErrStatus) || !errors.Is(alertOnly, ErrAlert) {
		t.Errorf("alert only: %v", alertOnly)
	}
}

func TestCodecAllocs(t *testing.T) {
	buf := make([]byte, 64)
	params := unhex(t, "84 00 04 00 00 01 02 03")
	if a := testing.AllocsPerRun(1000, func() {
		n, _ := MarshalInstruction(buf, BroadcastID, InstSyncRead, params)
		if _, _, err := ParsePacket(buf[:n], true); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations", a)
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add(unhex(f, "FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0"))
	f.Add(unhex(f, "FF FF FD 00 01 04 00 55 00 A1 0C"))
	f.Add(unhex(f, "FF FF FD 00 FE 19 00 55 00 03 A6 00 00 00 84 08"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, n, err := ParseStatus(b)
		if err != nil {
			return
		}
		if n > len(b) || len(s.Data) > n {
			t.Fatalf("used %d of %d bytes, data %d", n, len(b), len(s.Data))
		}
	})
}

func FuzzFindHeader(f *testing.F) {
	f.Add(unhex(f, "00 FF FF FD 00 01"))
	f.Add(unhex(f, "FF FF FD FD FF FF FD 00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		i := FindHeader(b)
		if i < -1 || i >= len(b) && len(b) > 0 {
			t.Fatalf("index %d for %d bytes", i, len(b))
		}
		if i >= 0 && i+3 < len(b) && b[i] == 0xFF && b[i+1] == 0xFF && b[i+2] == 0xFD && b[i+3] == 0xFD {
			t.Fatalf("stopped on stuffed data at %d in % X", i, b)
		}
	})
}
