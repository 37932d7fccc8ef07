package dxlsim_test

import (
	"testing"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// The bus's stream parser never panics, whatever the bytes, and every reply
// it sends is a well-formed packet.
func FuzzStream(f *testing.F) {
	seed := func(id, inst byte, params []byte) {
		var buf [dynamixel.MaxPacket]byte
		n, _ := dynamixel.MarshalInstruction(buf[:], id, inst, params)
		f.Add(append([]byte(nil), buf[:n]...))
	}
	seed(1, dynamixel.InstPing, nil)
	seed(dynamixel.BroadcastID, dynamixel.InstPing, nil)
	seed(1, dynamixel.InstRead, []byte{132, 0, 4, 0})
	seed(1, dynamixel.InstWrite, []byte{116, 0, 0xFF, 0xFF, 0xFD, 0xFF})
	seed(1, dynamixel.InstWrite, []byte{64, 0, 1})
	seed(1, dynamixel.InstRegWrite, []byte{168, 0, 116, 0})
	seed(1, dynamixel.InstAction, nil)
	seed(1, dynamixel.InstReboot, nil)
	seed(1, dynamixel.InstClear, []byte{1, 0x44, 0x58, 0x4C, 0x22})
	seed(1, dynamixel.InstFactoryReset, []byte{2})
	seed(dynamixel.BroadcastID, dynamixel.InstSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3})
	seed(dynamixel.BroadcastID, dynamixel.InstFastSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3})
	seed(dynamixel.BroadcastID, dynamixel.InstSyncWrite, []byte{116, 0, 4, 0, 1, 0, 8, 0, 0})
	seed(dynamixel.BroadcastID, dynamixel.InstBulkRead, []byte{1, 132, 0, 4, 0, 2, 0, 0, 0xFF, 0xFF})
	seed(dynamixel.BroadcastID, dynamixel.InstFastBulkRead, []byte{1, 132, 0, 4, 0, 2, 224, 0, 10, 0})
	seed(dynamixel.BroadcastID, dynamixel.InstBulkWrite, []byte{1, 65, 0, 1, 0, 1})
	f.Add([]byte{0xFF, 0xFF, 0xFD, 0xFD, 0xFF, 0xFF, 0xFD, 0x00, 0x01, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, data []byte) {
		clk := &dxlsim.ManualClock{}
		cfg := dxlsim.DefaultBusConfig()
		cfg.Clock = clk
		b, err := dxlsim.NewBus(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := dxlsim.NewPipe(b)
		// Twice, so that the first pass's writes (IDs, modes, indirect
		// addresses) shape the second.
		for range 2 {
			if _, err := p.Write(data); err != nil {
				t.Fatal(err)
			}
			clk.Advance(1e9)
		}
		out := drain(t, p)
		// Every reply parses: a status, stuffed, or a fast read's packet.
		for len(out) > 0 {
			pk, n, err := dynamixel.ParsePacket(out, out[4] != dynamixel.BroadcastID)
			if err != nil || pk.Inst != dynamixel.InstStatus {
				t.Fatalf("reply % X: %v", out, err)
			}
			out = out[n:]
		}
	})
}
