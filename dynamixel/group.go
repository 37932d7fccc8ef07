package dynamixel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// SyncRead reads size bytes at addr from every ID in ids with one Sync Read
// (0x82) into dst (len(ids)·size bytes, in ids order) and the error byte of
// each reply into errs (len(ids)). Replies come in list order and a missing
// servo silences all later ones (docs/dynamixel.md §6): a *TimeoutError
// names the first ID that did not answer and those that did. It returns how
// many IDs answered.
func (b *Bus) SyncRead(addr uint16, size int, ids, dst, errs []byte) (int, error) {
	n, err := b.sendSyncRead(InstSyncRead, addr, size, ids, dst, errs)
	if err != nil {
		return 0, err
	}
	to := b.timeout(n, len(ids)*(minStatus+size), len(ids))
	deadline := time.Now().Add(to)
	for i, id := range ids {
		pk, err := b.receive(id, InstSyncRead, deadline, to, true, false)
		if err != nil {
			return i, groupTimeout(err, ids, i)
		}
		if len(pk.Params) != 1+size {
			b.done()
			return i, &CorruptError{What: "sync read reply length", Got: len(pk.Params) - 1, Want: size}
		}
		errs[i] = pk.Params[0]
		copy(dst[i*size:], pk.Params[1:])
		b.done()
	}
	return len(ids), nil
}

// FastSyncRead is SyncRead with Fast Sync Read (0x8A): one reply packet for
// all IDs (firmware 45+). A servo that does not know it answers with an
// Instruction Error, returned as a *StatusError matching ErrStatus. The
// servos build the reply in list order, so on a timeout the blocks received
// tell how many answered: the *TimeoutError names the first that did not.
func (b *Bus) FastSyncRead(addr uint16, size int, ids, dst, errs []byte) (int, error) {
	corrupt := b.stats.Corrupt
	n, err := b.sendSyncRead(InstFastSyncRead, addr, size, ids, dst, errs)
	if err != nil {
		return 0, err
	}
	stride := size + 4
	to := b.timeout(n, 8+len(ids)*stride, len(ids))
	deadline := time.Now().Add(to)
	// The reply is not stuffed; a rejecting servo's status is.
	for {
		pk, err := b.receive(BroadcastID, InstFastSyncRead, deadline, to, false, true)
		if err != nil {
			k := -1 // a corrupt frame ate bytes: they no longer tell
			if b.stats.Corrupt == corrupt {
				k = b.fastAnswered(ids, size)
			}
			// No data is taken from a reply whose final CRC never came.
			return 0, groupTimeout(err, ids, k)
		}
		if pk.ID != BroadcastID {
			// A unicast status here is a refusal: decode it as one.
			var e byte
			if len(pk.Params) > 0 {
				e = pk.Params[0]
			}
			b.done()
			if serr := StatusErrorOf(pk.ID, e); serr != nil {
				return 0, serr
			}
			continue
		}
		// Blocks [err, id, data(size), crc(2)]; the last block's CRC is the
		// packet's, outside Params.
		if len(pk.Params) != len(ids)*stride-2 {
			b.done()
			return 0, &CorruptError{What: "fast sync read reply length", Got: len(pk.Params), Want: len(ids)*stride - 2}
		}
		for i, id := range ids {
			blk := pk.Params[i*stride:]
			if blk[1] != id {
				b.done()
				return i, &CorruptError{What: "fast sync read block ID", Got: int(blk[1]), Want: int(id)}
			}
			errs[i] = blk[0]
			copy(dst[i*size:(i+1)*size], blk[2:2+size])
		}
		b.done()
		return len(ids), nil
	}
}

// fastAnswered counts the servos whose blocks of a Fast Sync Read reply
// arrived in full, from the bytes receive left in its buffer: they start at
// the reply's header, then one block [err, id, data(size), crc] per servo
// in list order (docs/dynamixel.md §6). It is -1 when the bytes do not tell:
// another packet, or a block of a servo not expected there.
func (b *Bus) fastAnswered(ids []byte, size int) int {
	const head = 8 // FF FF FD 00, ID 0xFE, LEN_L, LEN_H, 0x55
	got := b.rx[:b.rxN]
	if len(got) > 4 && got[4] != BroadcastID || len(got) > 7 && got[7] != InstStatus {
		return -1
	}
	if len(got) < head {
		return 0
	}
	stride := size + 4
	k := (len(got) - head) / stride
	if k >= len(ids) {
		return -1 // the whole reply came, yet did not parse
	}
	for i := range k {
		if got[head+i*stride+1] != ids[i] {
			return -1
		}
	}
	return k
}

// groupTimeout completes a group read's *TimeoutError: the servos asked,
// and answered of them before the first silent one (-1: unknown). Other
// errors pass unchanged.
func groupTimeout(err error, ids []byte, answered int) error {
	te, ok := err.(*TimeoutError)
	if !ok {
		return err
	}
	// A copy: the error may outlive the caller's list.
	te.Group = append([]byte(nil), ids...)
	if answered < 0 || answered >= len(ids) {
		te.ID, te.Answered = BroadcastID, -1
		return te
	}
	te.ID, te.Answered = ids[answered], answered
	return te
}

// sendSyncRead checks a group read and sends its instruction (Sync Read and
// Fast Sync Read share their parameters).
func (b *Bus) sendSyncRead(inst byte, addr uint16, size int, ids, dst, errs []byte) (int, error) {
	if err := checkGroup(size, ids, dst, errs); err != nil {
		return 0, err
	}
	p := b.par[:4+len(ids)]
	binary.LittleEndian.PutUint16(p, addr)
	binary.LittleEndian.PutUint16(p[2:], uint16(size))
	copy(p[4:], ids)
	return b.send(BroadcastID, inst, p)
}

// SyncWrite writes size bytes of data (len(ids)·size, in ids order) at addr
// of every ID with one Sync Write (0x83). It is not answered.
func (b *Bus) SyncWrite(addr uint16, size int, ids, data []byte) error {
	if size < 1 || len(ids) == 0 || len(data) != len(ids)*size || 4+len(ids)*(1+size) > len(b.par) {
		return fmt.Errorf("%w: sync write of %d bytes for %d IDs of size %d", ErrArgument, len(data), len(ids), size)
	}
	p := b.par[:4+len(ids)*(1+size)]
	binary.LittleEndian.PutUint16(p, addr)
	binary.LittleEndian.PutUint16(p[2:], uint16(size))
	for i, id := range ids {
		o := 4 + i*(1+size)
		p[o] = id
		copy(p[o+1:o+1+size], data[i*size:])
	}
	_, err := b.send(BroadcastID, InstSyncWrite, p)
	return err
}

// BulkItem is one servo's part of a bulk read or write.
type BulkItem struct {
	ID   byte
	Addr uint16
	// Data is read into (its length is the size) or written from.
	Data []byte
	// Err is the error byte of the servo's reply to a bulk read.
	Err byte
}

// BulkRead reads each item's Data from its servo with one Bulk Read (0x92);
// each ID at most once. Replies come in item order.
func (b *Bus) BulkRead(items []BulkItem) (int, error) {
	if len(items) == 0 || 5*len(items) > len(b.par) {
		return 0, fmt.Errorf("%w: bulk read of %d items", ErrArgument, len(items))
	}
	p := b.par[:5*len(items)]
	rx := 0
	for i, it := range items {
		if it.ID > MaxID || len(it.Data) == 0 {
			return 0, fmt.Errorf("%w: bulk read item %d: ID %d, %d bytes", ErrArgument, i, it.ID, len(it.Data))
		}
		for _, prev := range items[:i] {
			if prev.ID == it.ID {
				return 0, fmt.Errorf("%w: bulk read lists ID %d twice", ErrArgument, it.ID)
			}
		}
		p[5*i] = it.ID
		binary.LittleEndian.PutUint16(p[5*i+1:], it.Addr)
		binary.LittleEndian.PutUint16(p[5*i+3:], uint16(len(it.Data)))
		rx += minStatus + len(it.Data)
	}
	n, err := b.send(BroadcastID, InstBulkRead, p)
	if err != nil {
		return 0, err
	}
	to := b.timeout(n, rx, len(items))
	deadline := time.Now().Add(to)
	for i := range items {
		pk, err := b.receive(items[i].ID, InstBulkRead, deadline, to, true, false)
		if err != nil {
			if _, ok := err.(*TimeoutError); ok {
				ids := make([]byte, len(items))
				for j, it := range items {
					ids[j] = it.ID
				}
				err = groupTimeout(err, ids, i)
			}
			return i, err
		}
		if len(pk.Params) != 1+len(items[i].Data) {
			b.done()
			return i, &CorruptError{What: "bulk read reply length", Got: len(pk.Params) - 1, Want: len(items[i].Data)}
		}
		items[i].Err = pk.Params[0]
		copy(items[i].Data, pk.Params[1:])
		b.done()
	}
	return len(items), nil
}

// BulkWrite writes each item's Data with one Bulk Write (0x93); not answered.
func (b *Bus) BulkWrite(items []BulkItem) error {
	size := 0
	for i, it := range items {
		if it.ID > MaxID || len(it.Data) == 0 {
			return fmt.Errorf("%w: bulk write item %d: ID %d, %d bytes", ErrArgument, i, it.ID, len(it.Data))
		}
		size += 5 + len(it.Data)
	}
	if len(items) == 0 || size > len(b.par) {
		return fmt.Errorf("%w: bulk write of %d items, %d bytes", ErrArgument, len(items), size)
	}
	p := b.par[:size]
	o := 0
	for _, it := range items {
		p[o] = it.ID
		binary.LittleEndian.PutUint16(p[o+1:], it.Addr)
		binary.LittleEndian.PutUint16(p[o+3:], uint16(len(it.Data)))
		o += 5 + copy(p[o+5:], it.Data)
	}
	_, err := b.send(BroadcastID, InstBulkWrite, p)
	return err
}

func checkGroup(size int, ids, dst, errs []byte) error {
	if size < 1 || size > 4*64 || len(ids) == 0 || len(ids) > int(MaxID)+1 || len(dst) != len(ids)*size || len(errs) != len(ids) {
		return fmt.Errorf("%w: group of %d IDs, %d bytes each, into %d bytes and %d error slots",
			ErrArgument, len(ids), size, len(dst), len(errs))
	}
	for _, id := range ids {
		if id > MaxID {
			return fmt.Errorf("%w: ID %d in a group, want 0..%d", ErrArgument, id, MaxID)
		}
	}
	return nil
}

// Group reads and writes one 4-byte signed item of a fixed set of servos,
// the loop's two transactions: present positions in, goal positions out. It
// uses Fast Sync Read and falls back to Sync Read for good when a servo
// refuses it. Its methods allocate nothing.
type Group struct {
	bus    *Bus
	ids    []byte
	raw    []byte
	errs   []byte
	fast   bool
	reject error
}

// NewGroup prepares a group of ids; fast selects Fast Sync Read.
func (b *Bus) NewGroup(ids []byte, fast bool) (*Group, error) {
	if err := checkGroup(4, ids, make([]byte, 4*len(ids)), make([]byte, len(ids))); err != nil {
		return nil, err
	}
	return &Group{bus: b, ids: append([]byte(nil), ids...), raw: make([]byte, 4*len(ids)), errs: make([]byte, len(ids)), fast: fast}, nil
}

// IDs returns the group's IDs.
func (g *Group) IDs() []byte { return g.ids }

// Fast reports whether Fast Sync Read is in use, and why it was dropped.
func (g *Group) Fast() (bool, error) { return g.fast, g.reject }

// Errs returns the error byte of each servo's last reply (Alert included).
func (g *Group) Errs() []byte { return g.errs }

// ReadInt32 reads the 4-byte item at addr of every servo, sign-extended,
// into dst (one per ID). A servo's error byte comes back as a *StatusError
// (the first one set); with only the Alert bit the values are valid all the
// same.
func (g *Group) ReadInt32(addr uint16, dst []int32) error {
	if err := g.read(addr, dst); err != nil {
		return err
	}
	return g.alert()
}

// ReadInt32Raw is ReadInt32 for a loop that watches the Alert bits itself
// (in Errs): they are not errors, so a servo in alert costs no allocation.
// An error number is still returned as a *StatusError.
func (g *Group) ReadInt32Raw(addr uint16, dst []int32) error {
	if err := g.read(addr, dst); err != nil {
		return err
	}
	for i, e := range g.errs {
		if e&^AlertBit != 0 {
			return StatusErrorOf(g.ids[i], e)
		}
	}
	return nil
}

// read runs the group read and decodes the values; the servos' error bytes
// stay in Errs.
func (g *Group) read(addr uint16, dst []int32) error {
	if len(dst) != len(g.ids) {
		return fmt.Errorf("%w: %d values for %d IDs", ErrArgument, len(dst), len(g.ids))
	}
	if g.fast {
		_, err := g.bus.FastSyncRead(addr, 4, g.ids, g.raw, g.errs)
		if errors.Is(err, ErrStatus) {
			// An old firmware refused 0x8A: plain Sync Read from now on.
			g.fast, g.reject = false, err
		} else if err != nil {
			return err
		} else {
			decodeInt32(g.raw, dst)
			return nil
		}
	}
	if _, err := g.bus.SyncRead(addr, 4, g.ids, g.raw, g.errs); err != nil {
		return err
	}
	decodeInt32(g.raw, dst)
	return nil
}

// WriteInt32 writes src (one per ID) to the 4-byte item at addr with one
// Sync Write.
func (g *Group) WriteInt32(addr uint16, src []int32) error {
	if len(src) != len(g.ids) {
		return fmt.Errorf("%w: %d values for %d IDs", ErrArgument, len(src), len(g.ids))
	}
	for i, v := range src {
		binary.LittleEndian.PutUint32(g.raw[4*i:], uint32(v))
	}
	return g.bus.SyncWrite(addr, 4, g.ids, g.raw)
}

// alert returns a *StatusError for the first servo reporting an error or an
// alert; the values read are valid all the same.
func (g *Group) alert() error {
	for i, e := range g.errs {
		if e != 0 {
			return StatusErrorOf(g.ids[i], e)
		}
	}
	return nil
}

func decodeInt32(raw []byte, dst []int32) {
	for i := range dst {
		dst[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
	}
}
