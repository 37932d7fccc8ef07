package dxlsim_test

import (
	"bytes"
	"testing"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// The eManual's packets (docs/dynamixel.md §2), byte for byte, as the
// simulated servos answer them.
func TestTranscripts(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(b *dxlsim.Bus)
		id     byte
		inst   byte
		params string
		want   string
	}{
		{"ping, model 1030 fw 38", func(b *dxlsim.Bus) {
			b.Servo(1).Poke(dynamixel.AddrFirmwareVersion, []byte{38})
		}, 1, dynamixel.InstPing, "", "FF FF FD 00 01 07 00 55 00 06 04 26 65 5D"},
		{"read present position 166", func(b *dxlsim.Bus) {
			b.Servo(1).SetValue(dynamixel.ItemPresentPosition, 166)
		}, 1, dynamixel.InstRead, "84 00 04 00", "FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0"},
		{"write 512 to goal position", nil, 1, dynamixel.InstWrite, "74 00 00 02 00 00", "FF FF FD 00 01 04 00 55 00 A1 0C"},
		{"fast sync read 3, 7, 4", func(b *dxlsim.Bus) {
			b.Servo(3).SetValue(dynamixel.ItemPresentPosition, 166)
			b.Servo(7).SetValue(dynamixel.ItemPresentPosition, 2079)
			b.Servo(4).SetValue(dynamixel.ItemPresentPosition, 1023)
		}, dynamixel.BroadcastID, dynamixel.InstFastSyncRead, "84 00 04 00 03 07 04",
			"FF FF FD 00 FE 19 00 55 00 03 A6 00 00 00 84 08 00 07 1F 08 00 00 16 CA 00 04 FF 03 00 00 D1 9E"},
		{"sync read 1, 2", func(b *dxlsim.Bus) {
			b.Servo(1).SetValue(dynamixel.ItemPresentPosition, 166)
			b.Servo(2).SetValue(dynamixel.ItemPresentPosition, 166)
		}, dynamixel.BroadcastID, dynamixel.InstSyncRead, "84 00 04 00 01 02",
			"FF FF FD 00 01 08 00 55 00 A6 00 00 00 8C C0 FF FF FD 00 02 08 00 55 00 A6 00 00 00 2C CA"},
		{"broadcast ping answers in ID order", func(b *dxlsim.Bus) {
			b.Servo(1).Poke(dynamixel.AddrFirmwareVersion, []byte{38})
			b.Servo(2).Poke(dynamixel.AddrFirmwareVersion, []byte{38})
		}, dynamixel.BroadcastID, dynamixel.InstPing, "",
			"FF FF FD 00 01 07 00 55 00 06 04 26 65 5D FF FF FD 00 02 07 00 55 00 06 04 26 6F 6D " +
				"FF FF FD 00 03 07 00 55 00 06 04 2E 5A FD FF FF FD 00 04 07 00 55 00 06 04 2E 48 8D " +
				"FF FF FD 00 07 07 00 55 00 06 04 2E 42 BD"},
		{"sync write is not answered", nil, dynamixel.BroadcastID, dynamixel.InstSyncWrite,
			"74 00 04 00 01 96 00 00 00 02 AA 00 00 00", ""},
		{"bulk write is not answered", nil, dynamixel.BroadcastID, dynamixel.InstBulkWrite,
			"01 20 00 02 00 A0 00 02 1F 00 01 00 50", ""},
		{"broadcast read is not answered", nil, dynamixel.BroadcastID, dynamixel.InstRead, "84 00 04 00", ""},
		{"broadcast write is not answered", nil, dynamixel.BroadcastID, dynamixel.InstWrite, "41 00 01", ""},
		{"clear", nil, 1, dynamixel.InstClear, "01 44 58 4C 22", "FF FF FD 00 01 04 00 55 00 A1 0C"},
		{"absent ID is silent", nil, 9, dynamixel.InstPing, "", ""},
		{"undefined instruction", nil, 1, 0x7F, "", "FF FF FD 00 01 04 00 55 02 AE 8C"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// IDs 3, 7, 4 first: the order a broadcast ping must not follow.
			b, _ := newBus(t, 3, 7, 4, 2, 1)
			if c.setup != nil {
				c.setup(b)
			}
			got := exchange(t, dxlsim.NewPipe(b), c.id, c.inst, unhex(t, c.params))
			if want := unhex(t, c.want); !bytes.Equal(got, want) {
				t.Errorf("got  % X\nwant % X", got, want)
			}
		})
	}
}
