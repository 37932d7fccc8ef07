package record

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"time"
)

// pcapWriter writes packets as a classic pcap file (LINKTYPE_RAW: each
// packet starts with its IP header), with the IP and UDP headers rebuilt
// around the datagram as it arrived, so that Wireshark and tshark decode it
// with `-d udp.port==PORT,rtp`.
type pcapWriter struct {
	w       io.Writer
	buf     []byte
	size    int64  // bytes of whole records written
	packets uint64 // records written
}

const linkTypeRaw = 101

func newPcap(w io.Writer) (*pcapWriter, error) {
	var h [24]byte
	le := binary.LittleEndian
	le.PutUint32(h[0:], 0xa1b2c3d4) // µs timestamps
	le.PutUint16(h[4:], 2)
	le.PutUint16(h[6:], 4)
	le.PutUint32(h[16:], 65535)
	le.PutUint32(h[20:], linkTypeRaw)
	if _, err := w.Write(h[:]); err != nil {
		rollback(w, 0)
		return nil, err
	}
	return &pcapWriter{w: w, buf: make([]byte, 0, 16+40+8+2048), size: int64(len(h))}, nil
}

// packet writes one datagram from src to dst received at t.
func (p *pcapWriter) packet(t time.Time, src, dst netip.AddrPort, payload []byte) error {
	ipLen := 20
	if !src.Addr().Is4() || !dst.Addr().Is4() {
		ipLen = 40
	}
	n := ipLen + 8 + len(payload)
	if n > 65535 {
		return fmt.Errorf("record: pcap: a %d-byte datagram", len(payload))
	}
	if cap(p.buf) < 16+n {
		p.buf = make([]byte, 0, 16+n)
	}
	b := p.buf[:16+n]
	le, be := binary.LittleEndian, binary.BigEndian
	le.PutUint32(b[0:], uint32(t.Unix()))
	le.PutUint32(b[4:], uint32(t.Nanosecond()/1000))
	le.PutUint32(b[8:], uint32(n))
	le.PutUint32(b[12:], uint32(n))
	ip := b[16 : 16+ipLen]
	clear(ip)
	if ipLen == 20 {
		ip[0] = 0x45
		be.PutUint16(ip[2:], uint16(n))
		ip[8], ip[9] = 64, 17 // TTL, UDP
		s, d := src.Addr().As4(), dst.Addr().As4()
		copy(ip[12:], s[:])
		copy(ip[16:], d[:])
		be.PutUint16(ip[10:], ipChecksum(ip))
	} else {
		ip[0] = 0x60
		be.PutUint16(ip[4:], uint16(8+len(payload)))
		ip[6], ip[7] = 17, 64
		s, d := src.Addr().As16(), dst.Addr().As16()
		copy(ip[8:], s[:])
		copy(ip[24:], d[:])
	}
	udp := b[16+ipLen : 16+ipLen+8]
	be.PutUint16(udp[0:], src.Port())
	be.PutUint16(udp[2:], dst.Port())
	be.PutUint16(udp[4:], uint16(8+len(payload)))
	be.PutUint16(udp[6:], 0) // no checksum: allowed over IPv4, and Wireshark does not insist
	copy(b[16+ipLen+8:], payload)
	if _, err := p.w.Write(b); err != nil {
		rollback(p.w, p.size)
		return err
	}
	p.size += int64(len(b))
	p.packets++
	return nil
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
