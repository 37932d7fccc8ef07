package dxlsim_test

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spaced formats bytes as "FF FF FD".
func spaced(b []byte) string {
	var sb strings.Builder
	for i, x := range b {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strings.ToUpper(hex.EncodeToString([]byte{x})))
	}
	return sb.String()
}

// newBus returns a bus of servos with the given IDs on a manual clock.
func newBus(t testing.TB, ids ...byte) (*dxlsim.Bus, *dxlsim.ManualClock) {
	t.Helper()
	clk := &dxlsim.ManualClock{}
	cfg := dxlsim.DefaultBusConfig()
	if ids != nil {
		cfg.IDs = ids
	}
	cfg.Clock = clk
	b, err := dxlsim.NewBus(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, clk
}

// exchange sends one instruction on p and returns every reply byte: with no
// timing model the replies are complete when Write returns.
func exchange(t testing.TB, p *dxlsim.Pipe, id, inst byte, params []byte) []byte {
	t.Helper()
	var buf [dynamixel.MaxPacket]byte
	n, err := dynamixel.MarshalInstruction(buf[:], id, inst, params)
	if err != nil {
		t.Fatal(err)
	}
	return exchangeRaw(t, p, buf[:n])
}

func exchangeRaw(t testing.TB, p *dxlsim.Pipe, pkt []byte) []byte {
	t.Helper()
	if _, err := p.Write(pkt); err != nil {
		t.Fatal(err)
	}
	return drain(t, p)
}

// drain reads everything the simulated servos have sent so far.
func drain(t testing.TB, p *dxlsim.Pipe) []byte {
	t.Helper()
	if err := p.SetReadTimeout(0); err != nil {
		t.Fatal(err)
	}
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := p.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

// statuses decodes a run of status packets.
func statuses(t testing.TB, b []byte) []dynamixel.Status {
	t.Helper()
	var out []dynamixel.Status
	for len(b) > 0 {
		s, n, err := dynamixel.ParseStatus(b)
		if err != nil {
			t.Fatalf("status % X: %v", b, err)
		}
		s.Data = append([]byte(nil), s.Data...)
		out = append(out, s)
		b = b[n:]
	}
	return out
}

// le returns the little-endian bytes of v in size bytes.
func le(v int64, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

// addrParams is a 2-byte address followed by data.
func addrParams(addr uint16, data []byte) []byte {
	return append([]byte{byte(addr), byte(addr >> 8)}, data...)
}

// write writes data at addr of id and returns the status error byte; it
// fails the test if there is not exactly one status.
func write(t testing.TB, p *dxlsim.Pipe, id byte, addr uint16, data []byte) byte {
	t.Helper()
	st := statuses(t, exchange(t, p, id, dynamixel.InstWrite, addrParams(addr, data)))
	if len(st) != 1 || st[0].ID != id {
		t.Fatalf("write %d bytes at %d to ID %d: statuses %+v", len(data), addr, id, st)
	}
	return st[0].Err
}

// mustWrite writes and fails the test on a status error.
func mustWrite(t testing.TB, p *dxlsim.Pipe, id byte, k dynamixel.ItemKey, v int64) {
	t.Helper()
	it := k.Item()
	if e := write(t, p, id, it.Addr, le(v, int(it.Size))); e != 0 {
		t.Fatalf("write %v = %d to ID %d: error byte 0x%02X", k, v, id, e)
	}
}

// read reads n bytes at addr of id and returns the status.
func read(t testing.TB, p *dxlsim.Pipe, id byte, addr uint16, n int) dynamixel.Status {
	t.Helper()
	st := statuses(t, exchange(t, p, id, dynamixel.InstRead, []byte{byte(addr), byte(addr >> 8), byte(n), byte(n >> 8)}))
	if len(st) != 1 || st[0].ID != id {
		t.Fatalf("read %d bytes at %d from ID %d: statuses %+v", n, addr, id, st)
	}
	return st[0]
}

// readItem reads an item of id over the bus, sign-extended.
func readItem(t testing.TB, p *dxlsim.Pipe, id byte, k dynamixel.ItemKey) int64 {
	t.Helper()
	it := k.Item()
	s := read(t, p, id, it.Addr, int(it.Size))
	v, err := it.Decode(s.Data)
	if err != nil {
		t.Fatalf("read %v of ID %d: %v (error byte 0x%02X)", k, id, err, s.Err)
	}
	return v
}
