// Package dynamixel drives ROBOTIS Dynamixel servos over Protocol 2.0
// (ROBOTIS eManual "Protocol 2.0"; docs/dynamixel.md): the packet codec with
// CRC-16 and byte stuffing, half-duplex transactions on a serial port, the
// instructions (ping, read, write, reg write/action, reboot, clear, sync,
// fast sync and bulk read and write), the XM430-W210 control table and
// Emio's angle convention. Hot paths encode and decode into caller-owned
// buffers without allocating.
package dynamixel

import (
	"errors"
	"fmt"
)

// Instruction codes (docs/dynamixel.md §5).
const (
	InstPing         byte = 0x01
	InstRead         byte = 0x02
	InstWrite        byte = 0x03
	InstRegWrite     byte = 0x04
	InstAction       byte = 0x05
	InstFactoryReset byte = 0x06
	InstReboot       byte = 0x08
	InstClear        byte = 0x10
	InstStatus       byte = 0x55
	InstSyncRead     byte = 0x82
	InstSyncWrite    byte = 0x83
	InstFastSyncRead byte = 0x8A
	InstBulkRead     byte = 0x92
	InstBulkWrite    byte = 0x93
	InstFastBulkRead byte = 0x9A
)

// InstructionName returns the eManual's name of an instruction code ("Fast
// Sync Read", docs/dynamixel.md §5), or "" for a code Protocol 2.0 does not
// define.
func InstructionName(inst byte) string {
	switch inst {
	case InstPing:
		return "Ping"
	case InstRead:
		return "Read"
	case InstWrite:
		return "Write"
	case InstRegWrite:
		return "Reg Write"
	case InstAction:
		return "Action"
	case InstFactoryReset:
		return "Factory Reset"
	case InstReboot:
		return "Reboot"
	case InstClear:
		return "Clear"
	case InstStatus:
		return "Status"
	case InstSyncRead:
		return "Sync Read"
	case InstSyncWrite:
		return "Sync Write"
	case InstFastSyncRead:
		return "Fast Sync Read"
	case InstBulkRead:
		return "Bulk Read"
	case InstBulkWrite:
		return "Bulk Write"
	case InstFastBulkRead:
		return "Fast Bulk Read"
	}
	return ""
}

// instText names an instruction in an error: "Fast Sync Read (0x8A)", or
// "instruction 0x42" for an unknown code.
func instText(inst byte) string {
	if n := InstructionName(inst); n != "" {
		return fmt.Sprintf("%s (0x%02X)", n, inst)
	}
	return fmt.Sprintf("instruction 0x%02X", inst)
}

const (
	// BroadcastID addresses every servo on the bus.
	BroadcastID byte = 0xFE
	// MaxID is the highest unicast ID.
	MaxID byte = 0xFC
	// MaxPacket bounds a packet on the wire, as the servos' buffers do.
	MaxPacket = 1024
	// headerLen is FF FF FD 00 ID LEN_L LEN_H.
	headerLen = 7
	// minStatus is the smallest status packet: header, INST, ERR, CRC.
	minStatus = 11
)

var (
	// ErrIncomplete means more bytes are needed to finish the packet.
	ErrIncomplete = errors.New("dynamixel: incomplete packet")
	// ErrCorrupt is a packet whose CRC, reserved byte or length is wrong.
	ErrCorrupt = errors.New("dynamixel: corrupt packet")
	// ErrTooLong is a packet that would exceed MaxPacket.
	ErrTooLong = errors.New("dynamixel: packet too long")
	// ErrNotStatus is a packet that is not a status (INST != 0x55).
	ErrNotStatus = errors.New("dynamixel: not a status packet")
)

// CorruptError says what was wrong with a received packet.
type CorruptError struct {
	What      string
	Got, Want int
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("dynamixel: corrupt packet: %s 0x%X, want 0x%X", e.What, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// crcTable is CRC-16/UMTS (poly 0x8005, init 0, no reflection).
var crcTable = [256]uint16{
	0x0000, 0x8005, 0x800F, 0x000A, 0x801B, 0x001E, 0x0014, 0x8011,
	0x8033, 0x0036, 0x003C, 0x8039, 0x0028, 0x802D, 0x8027, 0x0022,
	0x8063, 0x0066, 0x006C, 0x8069, 0x0078, 0x807D, 0x8077, 0x0072,
	0x0050, 0x8055, 0x805F, 0x005A, 0x804B, 0x004E, 0x0044, 0x8041,
	0x80C3, 0x00C6, 0x00CC, 0x80C9, 0x00D8, 0x80DD, 0x80D7, 0x00D2,
	0x00F0, 0x80F5, 0x80FF, 0x00FA, 0x80EB, 0x00EE, 0x00E4, 0x80E1,
	0x00A0, 0x80A5, 0x80AF, 0x00AA, 0x80BB, 0x00BE, 0x00B4, 0x80B1,
	0x8093, 0x0096, 0x009C, 0x8099, 0x0088, 0x808D, 0x8087, 0x0082,
	0x8183, 0x0186, 0x018C, 0x8189, 0x0198, 0x819D, 0x8197, 0x0192,
	0x01B0, 0x81B5, 0x81BF, 0x01BA, 0x81AB, 0x01AE, 0x01A4, 0x81A1,
	0x01E0, 0x81E5, 0x81EF, 0x01EA, 0x81FB, 0x01FE, 0x01F4, 0x81F1,
	0x81D3, 0x01D6, 0x01DC, 0x81D9, 0x01C8, 0x81CD, 0x81C7, 0x01C2,
	0x0140, 0x8145, 0x814F, 0x014A, 0x815B, 0x015E, 0x0154, 0x8151,
	0x8173, 0x0176, 0x017C, 0x8179, 0x0168, 0x816D, 0x8167, 0x0162,
	0x8123, 0x0126, 0x012C, 0x8129, 0x0138, 0x813D, 0x8137, 0x0132,
	0x0110, 0x8115, 0x811F, 0x011A, 0x810B, 0x010E, 0x0104, 0x8101,
	0x8303, 0x0306, 0x030C, 0x8309, 0x0318, 0x831D, 0x8317, 0x0312,
	0x0330, 0x8335, 0x833F, 0x033A, 0x832B, 0x032E, 0x0324, 0x8321,
	0x0360, 0x8365, 0x836F, 0x036A, 0x837B, 0x037E, 0x0374, 0x8371,
	0x8353, 0x0356, 0x035C, 0x8359, 0x0348, 0x834D, 0x8347, 0x0342,
	0x03C0, 0x83C5, 0x83CF, 0x03CA, 0x83DB, 0x03DE, 0x03D4, 0x83D1,
	0x83F3, 0x03F6, 0x03FC, 0x83F9, 0x03E8, 0x83ED, 0x83E7, 0x03E2,
	0x83A3, 0x03A6, 0x03AC, 0x83A9, 0x03B8, 0x83BD, 0x83B7, 0x03B2,
	0x0390, 0x8395, 0x839F, 0x039A, 0x838B, 0x038E, 0x0384, 0x8381,
	0x0280, 0x8285, 0x828F, 0x028A, 0x829B, 0x029E, 0x0294, 0x8291,
	0x82B3, 0x02B6, 0x02BC, 0x82B9, 0x02A8, 0x82AD, 0x82A7, 0x02A2,
	0x82E3, 0x02E6, 0x02EC, 0x82E9, 0x02F8, 0x82FD, 0x82F7, 0x02F2,
	0x02D0, 0x82D5, 0x82DF, 0x02DA, 0x82CB, 0x02CE, 0x02C4, 0x82C1,
	0x8243, 0x0246, 0x024C, 0x8249, 0x0258, 0x825D, 0x8257, 0x0252,
	0x0270, 0x8275, 0x827F, 0x027A, 0x826B, 0x026E, 0x0264, 0x8261,
	0x0220, 0x8225, 0x822F, 0x022A, 0x823B, 0x023E, 0x0234, 0x8231,
	0x8213, 0x0216, 0x021C, 0x8219, 0x0208, 0x820D, 0x8207, 0x0202,
}

// CRC16 continues a CRC-16/UMTS over b; start with crc = 0. The check value
// of "123456789" is 0xFEE8.
func CRC16(crc uint16, b []byte) uint16 {
	for _, x := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^x]
	}
	return crc
}

// stuffedLen returns the length of params after stuffing; runs are counted
// from INST on (docs/dynamixel.md §3).
func stuffedLen(inst byte, params []byte) int {
	n := len(params)
	b2, b1 := byte(0), inst
	for _, x := range params {
		if b2 == 0xFF && b1 == 0xFF && x == 0xFD {
			n++
		}
		b2, b1 = b1, x
	}
	return n
}

// MarshalInstruction writes an instruction packet for id into dst: header,
// LEN, INST, params byte-stuffed after every FF FF FD, CRC. It returns the
// packet's length. dst must hold it (at most 10 + 4/3·len(params) bytes).
func MarshalInstruction(dst []byte, id, inst byte, params []byte) (int, error) {
	body := 1 + stuffedLen(inst, params)
	total := headerLen + body + 2
	if total > MaxPacket {
		return 0, fmt.Errorf("%w: %d bytes for instruction 0x%02X to ID %d", ErrTooLong, total, inst, id)
	}
	if len(dst) < total {
		return 0, fmt.Errorf("dynamixel: buffer of %d bytes for a %d-byte packet", len(dst), total)
	}
	dst[0], dst[1], dst[2], dst[3], dst[4] = 0xFF, 0xFF, 0xFD, 0x00, id
	l := body + 2
	dst[5], dst[6] = byte(l), byte(l>>8)
	dst[7] = inst
	n := 8
	// Stuff: after every FF FF FD of INST+params, one extra FD.
	b2, b1 := byte(0), inst
	for _, x := range params {
		dst[n] = x
		n++
		if b2 == 0xFF && b1 == 0xFF && x == 0xFD {
			dst[n] = 0xFD
			n++
		}
		b2, b1 = b1, x
	}
	crc := CRC16(0, dst[:n])
	dst[n], dst[n+1] = byte(crc), byte(crc>>8)
	return n + 2, nil
}

// FindHeader returns the index of the first packet header FF FF FD in b
// whose next byte is not FD (FF FF FD FD is stuffed data), or -1. A header
// cut at the end of b is reported too, so that the caller keeps those bytes.
func FindHeader(b []byte) int {
	for i := 0; i+2 < len(b); i++ {
		if b[i] == 0xFF && b[i+1] == 0xFF && b[i+2] == 0xFD {
			if i+3 < len(b) && b[i+3] == 0xFD {
				continue
			}
			return i
		}
	}
	// Keep a trailing FF or FF FF: it may start a header.
	switch {
	case len(b) >= 2 && b[len(b)-2] == 0xFF && b[len(b)-1] == 0xFF:
		return len(b) - 2
	case len(b) >= 1 && b[len(b)-1] == 0xFF:
		return len(b) - 1
	}
	return -1
}

// Packet is a decoded packet. Params aliases the buffer it was parsed from.
type Packet struct {
	ID     byte
	Inst   byte
	Params []byte
}

// ParsePacket decodes the packet at the start of b (which must begin with a
// header; see FindHeader). It checks the reserved byte, LEN and the CRC over
// the raw bytes, and then, when stuffed is true, removes the stuffing in
// place. It returns the packet and the number of raw bytes it used, or
// ErrIncomplete when b ends first. Fast Sync Read replies are not stuffed
// (docs/dynamixel.md §6): parse them with stuffed false.
func ParsePacket(b []byte, stuffed bool) (Packet, int, error) {
	if len(b) < headerLen {
		return Packet{}, 0, ErrIncomplete
	}
	if b[0] != 0xFF || b[1] != 0xFF || b[2] != 0xFD {
		return Packet{}, 0, &CorruptError{What: "header", Got: int(b[0])<<16 | int(b[1])<<8 | int(b[2]), Want: 0xFFFFFD}
	}
	if b[3] != 0x00 {
		return Packet{}, 0, &CorruptError{What: "reserved byte", Got: int(b[3]), Want: 0}
	}
	l := int(b[5]) | int(b[6])<<8
	if l < 3 || headerLen+l > MaxPacket {
		return Packet{}, 0, &CorruptError{What: "length", Got: l, Want: 3}
	}
	total := headerLen + l
	if len(b) < total {
		return Packet{}, 0, ErrIncomplete
	}
	got := uint16(b[total-2]) | uint16(b[total-1])<<8
	if want := CRC16(0, b[:total-2]); got != want {
		return Packet{}, 0, &CorruptError{What: "CRC", Got: int(got), Want: int(want)}
	}
	params := b[8 : total-2]
	if stuffed {
		params = unstuff(params, b[7])
	}
	return Packet{ID: b[4], Inst: b[7], Params: params}, total, nil
}

// unstuff removes, in place, the FD that follows every FF FF FD of the
// original INST+params: the exact inverse of the stuffing (the SDK's
// un-stuffer is not, docs/dynamixel.md §3).
func unstuff(p []byte, inst byte) []byte {
	n := 0
	b2, b1 := byte(0), inst
	skip := false
	for _, x := range p {
		if skip {
			skip = false
			if x == 0xFD {
				continue
			}
		}
		p[n] = x
		n++
		skip = b2 == 0xFF && b1 == 0xFF && x == 0xFD
		b2, b1 = b1, x
	}
	return p[:n]
}
