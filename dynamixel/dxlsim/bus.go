package dxlsim

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/dynamixel"
)

// Timing is the optional timing model of the replies. The zero Timing
// delivers every reply at once.
type Timing struct {
	// ReturnDelay makes each servo wait its Return Delay Time (address 9,
	// 2 µs units) after the instruction or the previous reply.
	ReturnDelay bool
	// Baud paces the replies at 10 bits per byte; 0 sends them instantly.
	Baud int
	// Latency holds received bytes as an FTDI adapter does: until this
	// latency timer expires after the first held byte, or a USB packet of
	// USBPacket bytes fills (docs/dynamixel.md §11). 0 is no batching.
	Latency time.Duration
	// USBPacket is the data size of one USB packet: 62 on full-speed FTDI
	// chips (the default), 510 on Hi-Speed ones.
	USBPacket int
}

func (t *Timing) validate() error {
	switch {
	case t.Baud < 0 || t.Baud > 20_000_000:
		return fmt.Errorf("%w: baud %d, want 0..20000000", ErrConfig, t.Baud)
	case t.Latency < 0 || t.Latency > time.Second:
		return fmt.Errorf("%w: latency %v, want 0..1s", ErrConfig, t.Latency)
	case t.USBPacket < 0 || t.USBPacket > 4096:
		return fmt.Errorf("%w: USB packet %d bytes, want 0..4096", ErrConfig, t.USBPacket)
	}
	if t.USBPacket == 0 {
		t.USBPacket = 62
	}
	return nil
}

// byteTime is the wire time of one byte, 0 without a baud rate.
func (t *Timing) byteTime() int64 {
	if t.Baud <= 0 {
		return 0
	}
	return int64(10*time.Second) / int64(t.Baud)
}

// BusConfig describes a simulated bus.
type BusConfig struct {
	// IDs are the servos on the bus; nil is Emio's 0, 1, 2, 3.
	IDs []byte
	// Servo configures every servo; its ID is replaced by each of IDs.
	Servo ServoConfig
	// Clock drives the plant; nil is the system's monotonic clock.
	Clock Clock
	// Timing is the initial timing model.
	Timing Timing
}

// DefaultBusConfig is Emio's bus: IDs 0..3 with DefaultServoConfig, no
// timing model.
func DefaultBusConfig() BusConfig {
	return BusConfig{IDs: []byte{0, 1, 2, 3}, Servo: DefaultServoConfig()}
}

// BusStats counts what the bus saw.
type BusStats struct {
	// Packets is the number of instruction packets with a good CRC.
	Packets uint64
	// Corrupt counts headers followed by a bad CRC, reserved byte or length;
	// a servo ignores them.
	Corrupt uint64
	// Garbage counts bytes skipped while looking for a header, and partial
	// packets dropped because the rest never came.
	Garbage uint64
	// Replies counts status packets sent (a Fast Sync Read reply is one).
	Replies uint64
}

// Bus is a simulated servo bus. Its fault toggles are safe for concurrent
// use with the transports.
type Bus struct {
	mu      sync.Mutex
	clock   Clock
	servos  []*Servo
	order   []*Servo // scratch for broadcast ping
	timing  Timing
	corrupt int
	line    int // the rate of the instruction being handled; 0 is not modelled
	stats   BusStats
	tx      [dynamixel.MaxPacket]byte
	par     [dynamixel.MaxPacket]byte

	echo atomic.Bool

	plugMu    sync.Mutex
	unplugged bool
	plugGen   uint64
	plugCh    chan struct{} // closed and replaced on every plug change
}

// NewBus returns a bus of servos at power-up.
func NewBus(cfg BusConfig) (*Bus, error) {
	if cfg.IDs == nil {
		cfg.IDs = DefaultBusConfig().IDs
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock()
	}
	if err := cfg.Timing.validate(); err != nil {
		return nil, err
	}
	b := &Bus{clock: cfg.Clock, timing: cfg.Timing, plugCh: make(chan struct{})}
	lay := newLayout(dynamixel.XM430W210())
	seen := map[byte]bool{}
	for _, id := range cfg.IDs {
		if seen[id] {
			return nil, fmt.Errorf("%w: servo ID %d listed twice", ErrConfig, id)
		}
		seen[id] = true
		sc := cfg.Servo
		sc.ID = id
		if sc.Baud == 0 && baudIndex(cfg.Timing.Baud) >= 0 {
			// A bus modelled at a line rate has its servos at that rate.
			sc.Baud = cfg.Timing.Baud
		}
		s, err := newServo(sc, cfg.Clock, &b.mu, lay)
		if err != nil {
			return nil, err
		}
		b.servos = append(b.servos, s)
	}
	b.order = make([]*Servo, 0, len(b.servos))
	return b, nil
}

// Servo returns the servo whose ID (address 7) is id, or nil.
func (b *Bus) Servo(id byte) *Servo {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.servos {
		if s.mem[dynamixel.AddrID] == id {
			return s
		}
	}
	return nil
}

// Servos returns the servos in configuration order.
func (b *Bus) Servos() []*Servo { return append([]*Servo(nil), b.servos...) }

// Stats returns the counters.
func (b *Bus) Stats() BusStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// SetTiming changes the timing model of the replies to come.
func (b *Bus) SetTiming(t Timing) error {
	if err := t.validate(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timing = t
	return nil
}

// withServo runs f on the servo with ID id under the bus lock.
func (b *Bus) withServo(id byte, f func(s *Servo)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.servos {
		if s.mem[dynamixel.AddrID] == id {
			s.advance(b.clock.Now())
			f(s)
			return nil
		}
	}
	return fmt.Errorf("%w: ID %d", ErrNoServo, id)
}

// SetMissing takes servo id off the bus (on) or puts it back: a missing
// servo hears nothing and answers nothing, and in a sync or bulk read it
// silences every servo listed after it, as on a real bus
// (docs/dynamixel.md §6).
func (b *Bus) SetMissing(id byte, on bool) error {
	return b.withServo(id, func(s *Servo) { s.missing = on })
}

// SetStalled blocks servo id's horn (on): it stops moving and its current
// saturates while it pushes toward its goal, so it heats up.
func (b *Bus) SetStalled(id byte, on bool) error {
	return b.withServo(id, func(s *Servo) { s.stalled = on })
}

// ForceOverheat raises servo id's overheating error at once: Alert in every
// status, torque off (the default Shutdown mask covers it), until a reboot.
func (b *Bus) ForceOverheat(id byte) error {
	return b.withServo(id, func(s *Servo) { s.overheat() })
}

// ForceHardwareError raises the hardware errors e on servo id at once (an
// overload, an electrical shock): Alert in every status and, for the errors
// in its Shutdown mask (overheating, electrical shock and overload by
// default), torque off until a reboot or a power cycle.
func (b *Bus) ForceHardwareError(id byte, e dynamixel.HardwareError) error {
	return b.withServo(id, func(s *Servo) { s.fail(e) })
}

// PowerOff cuts the power of the servos ids (every servo without ids): they
// go limp and silent, and lose their RAM (torque, goals, profile, hardware
// error) at PowerOn. A limp servo can be moved meanwhile (Servo.SetValue of
// Present Position), as an arm sags or a person moves it.
func (b *Bus) PowerOff(ids ...byte) error {
	return b.power(ids, func(s *Servo, _ int64) { s.powerOff() })
}

// PowerOn gives the power back to the servos ids (every servo without
// ids): each boots as at power-up (RAM back to its defaults, torque off,
// goal = present, hardware error cleared; EEPROM kept) and answers after
// its BootTime.
func (b *Bus) PowerOn(ids ...byte) error {
	return b.power(ids, func(s *Servo, now int64) { s.powerOn(now) })
}

// PowerCycle is PowerOff then PowerOn: a supply that dropped for a moment.
func (b *Bus) PowerCycle(ids ...byte) error {
	if err := b.PowerOff(ids...); err != nil {
		return err
	}
	return b.PowerOn(ids...)
}

// power runs f on the servos ids, or on every servo, under the bus lock;
// an unknown ID changes nothing.
func (b *Bus) power(ids []byte, f func(s *Servo, now int64)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var pick []*Servo
	for _, id := range ids {
		i := slices.IndexFunc(b.servos, func(s *Servo) bool { return s.mem[dynamixel.AddrID] == id })
		if i < 0 {
			return fmt.Errorf("%w: ID %d", ErrNoServo, id)
		}
		pick = append(pick, b.servos[i])
	}
	if ids == nil {
		pick = b.servos
	}
	now := b.clock.Now()
	for _, s := range pick {
		s.advance(now)
		f(s, now)
	}
	return nil
}

// CorruptNext spoils the CRC of the next n status packets.
func (b *Bus) CorruptNext(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.corrupt = max(n, 0)
}

// SetEcho makes the bus echo every instruction byte back before the
// replies, as a half-duplex adapter without direction control does.
func (b *Bus) SetEcho(on bool) { b.echo.Store(on) }

// Unplug makes the adapter go away: a Pipe fails every call with
// ErrUnplugged and loses what was in flight; a PTY closes its pair and
// removes its link, so its client's Read fails and a reopen finds nothing.
func (b *Bus) Unplug() { b.setPlugged(false) }

// Plug brings the adapter back: a Pipe works again and a PTY makes a new
// pair behind the same link.
func (b *Bus) Plug() { b.setPlugged(true) }

// Unplugged reports whether the adapter is unplugged.
func (b *Bus) Unplugged() bool {
	u, _, _ := b.plugState()
	return u
}

func (b *Bus) setPlugged(on bool) {
	b.plugMu.Lock()
	defer b.plugMu.Unlock()
	if b.unplugged != on {
		return
	}
	b.unplugged = !on
	if !on {
		b.plugGen++
	}
	close(b.plugCh)
	b.plugCh = make(chan struct{})
}

// plugState returns whether the adapter is unplugged, how many times it has
// been, and a channel closed at the next change.
func (b *Bus) plugState() (unplugged bool, gen uint64, changed <-chan struct{}) {
	b.plugMu.Lock()
	defer b.plugMu.Unlock()
	return b.unplugged, b.plugGen, b.plugCh
}

// hears reports whether s hears the instruction being handled: on the bus,
// powered, booted and, when the line's rate is known, at that rate. A servo
// at another rate sees garbage and never answers, as on a real line. b.mu is
// held.
func (b *Bus) hears(s *Servo, now int64) bool {
	return s.hears(now) && (b.line == 0 || b.line == s.baud())
}

// find returns the servo that hears id now, or nil.
func (b *Bus) find(id byte, now int64) *Servo {
	for _, s := range b.servos {
		if s.mem[dynamixel.AddrID] == id && b.hears(s, now) {
			return s
		}
	}
	return nil
}

// handle executes one instruction packet and queues the replies on out.
// b.mu is held.
func (b *Bus) handle(p dynamixel.Packet, out *outQueue) {
	now := b.clock.Now()
	b.stats.Packets++
	for _, s := range b.servos {
		s.advance(now)
		if b.hears(s, now) {
			s.lastComm = now // every instruction feeds the Bus Watchdog
		}
	}
	broadcast := p.ID == dynamixel.BroadcastID
	if !broadcast && p.ID > dynamixel.MaxID {
		return
	}
	switch p.Inst {
	case dynamixel.InstPing:
		b.ping(p.ID, out, now)
	case dynamixel.InstRead:
		b.read(p, out, now)
	case dynamixel.InstWrite, dynamixel.InstRegWrite:
		b.write(p, out, now)
	case dynamixel.InstAction:
		b.each(p, out, now, func(s *Servo) byte { return s.action(now) })
	case dynamixel.InstReboot:
		b.each(p, out, now, func(*Servo) byte { return 0 })
		b.after(p.ID, now, func(s *Servo) {
			s.rx.Reboots++
			s.boot(now)
		})
	case dynamixel.InstClear:
		b.each(p, out, now, func(s *Servo) byte { return s.clear(p.Params) })
	case dynamixel.InstFactoryReset:
		b.factoryReset(p, out, now)
	case dynamixel.InstSyncRead, dynamixel.InstBulkRead:
		if broadcast {
			b.groupRead(p, out, now)
		}
	case dynamixel.InstFastSyncRead, dynamixel.InstFastBulkRead:
		if broadcast {
			b.fastRead(p, out, now)
		}
	case dynamixel.InstSyncWrite:
		if broadcast {
			b.syncWrite(p.Params, now)
		}
	case dynamixel.InstBulkWrite:
		if broadcast {
			b.bulkWrite(p.Params, now)
		}
	case dynamixel.InstStatus:
		// Another device's reply on the bus: nothing for a servo to do.
	default:
		b.each(p, out, now, func(*Servo) byte { return errInstruction })
	}
}

// each runs f on the addressed servo and answers with its error number as
// Status Return Level allows; a broadcast runs f on every servo and is
// never answered (docs/dynamixel.md §4).
func (b *Bus) each(p dynamixel.Packet, out *outQueue, now int64, f func(s *Servo) byte) {
	if p.ID == dynamixel.BroadcastID {
		for _, s := range b.servos {
			if b.hears(s, now) {
				f(s)
			}
		}
		return
	}
	if s := b.find(p.ID, now); s != nil {
		code := f(s)
		if s.answers(p.Inst) {
			b.reply(out, s, code, 0)
		}
	}
}

// after runs f on the addressed servos once their replies are queued.
func (b *Bus) after(id byte, now int64, f func(s *Servo)) {
	for _, s := range b.servos {
		if b.hears(s, now) && (id == dynamixel.BroadcastID || s.mem[dynamixel.AddrID] == id) {
			f(s)
		}
	}
}

func (b *Bus) ping(id byte, out *outQueue, now int64) {
	if id != dynamixel.BroadcastID {
		if s := b.find(id, now); s != nil {
			b.pingReply(s, out)
		}
		return
	}
	// Every servo answers a broadcast ping, in ID order.
	b.order = b.order[:0]
	for _, s := range b.servos {
		if b.hears(s, now) {
			b.order = append(b.order, s)
		}
	}
	for i := 1; i < len(b.order); i++ {
		for j := i; j > 0 && b.order[j].mem[dynamixel.AddrID] < b.order[j-1].mem[dynamixel.AddrID]; j-- {
			b.order[j], b.order[j-1] = b.order[j-1], b.order[j]
		}
	}
	for _, s := range b.order {
		b.pingReply(s, out)
	}
}

func (b *Bus) pingReply(s *Servo, out *outQueue) {
	b.par[1] = s.mem[dynamixel.AddrModelNumber]
	b.par[2] = s.mem[dynamixel.AddrModelNumber+1]
	b.par[3] = s.firmware()
	b.reply(out, s, 0, 3)
}

func (b *Bus) read(p dynamixel.Packet, out *outQueue, now int64) {
	s := b.find(p.ID, now) // nil for a broadcast: a broadcast Read is never answered
	if s == nil || !s.answers(p.Inst) {
		return
	}
	if len(p.Params) != 4 {
		b.reply(out, s, errInstruction, 0)
		return
	}
	addr, n := int(binary.LittleEndian.Uint16(p.Params)), int(binary.LittleEndian.Uint16(p.Params[2:]))
	code := s.read(addr, n, b.par[1:])
	if code != 0 {
		n = 0
	}
	b.reply(out, s, code, n)
}

func (b *Bus) write(p dynamixel.Packet, out *outQueue, now int64) {
	if len(p.Params) < 2 {
		b.each(p, out, now, func(*Servo) byte { return errInstruction })
		return
	}
	addr, data := int(binary.LittleEndian.Uint16(p.Params)), p.Params[2:]
	if p.Inst == dynamixel.InstRegWrite {
		b.each(p, out, now, func(s *Servo) byte { return s.regWrite(addr, data) })
		return
	}
	b.each(p, out, now, func(s *Servo) byte { return s.write(addr, data, now) })
}

func (b *Bus) factoryReset(p dynamixel.Packet, out *outQueue, now int64) {
	if len(p.Params) != 1 {
		b.each(p, out, now, func(*Servo) byte { return errInstruction })
		return
	}
	opt := p.Params[0]
	code := byte(0)
	if !validReset(opt) {
		code = errDataRange
	}
	b.each(p, out, now, func(*Servo) byte { return code })
	if code != 0 {
		return
	}
	b.after(p.ID, now, func(s *Servo) {
		// FW 42+ ignores a broadcast reset of everything, which would
		// give every servo ID 1.
		if p.ID == dynamixel.BroadcastID && opt == 0xFF && s.firmware() >= clearFirmware {
			return
		}
		s.factoryReset(opt, now)
	})
}

// groupEntry returns entry i of a Sync Read (one address and length, a list
// of IDs) or Bulk Read ([id, addr, len] each), and the number of entries;
// ok is false for malformed parameters.
func groupEntry(p dynamixel.Packet, i int) (id byte, addr, n, count int, ok bool) {
	if p.Inst == dynamixel.InstSyncRead || p.Inst == dynamixel.InstFastSyncRead {
		if len(p.Params) < 5 {
			return 0, 0, 0, 0, false
		}
		count = len(p.Params) - 4
		if i < count {
			id = p.Params[4+i]
		}
		return id, int(binary.LittleEndian.Uint16(p.Params)), int(binary.LittleEndian.Uint16(p.Params[2:])), count, true
	}
	if len(p.Params) == 0 || len(p.Params)%5 != 0 {
		return 0, 0, 0, 0, false
	}
	count = len(p.Params) / 5
	if i < count {
		e := p.Params[5*i:]
		id, addr, n = e[0], int(binary.LittleEndian.Uint16(e[1:])), int(binary.LittleEndian.Uint16(e[3:]))
	}
	return id, addr, n, count, true
}

// groupRead answers a Sync or Bulk Read: one status per listed ID, in list
// order. Each servo answers after the one before it, so a silent one
// silences the rest (docs/dynamixel.md §6).
func (b *Bus) groupRead(p dynamixel.Packet, out *outQueue, now int64) {
	_, _, _, count, ok := groupEntry(p, 0)
	if !ok {
		return
	}
	for i := range count {
		id, addr, n, _, _ := groupEntry(p, i)
		s := b.find(id, now)
		if s == nil || !s.answers(p.Inst) {
			return
		}
		code := s.read(addr, n, b.par[1:])
		if code != 0 {
			n = 0
		}
		b.reply(out, s, code, n)
	}
}

// fastRead answers a Fast Sync or Fast Bulk Read with one packet of blocks
// [err, id, data, crc], each crc the running CRC of the packet so far and
// the last one the packet's CRC; it is not stuffed (docs/dynamixel.md §6).
// Each servo sends its block after the previous one, so a silent servo cuts
// the packet short. A servo whose firmware predates the fast reads answers
// with an ordinary Instruction Error status instead, and those after it
// stay silent.
func (b *Bus) fastRead(p dynamixel.Packet, out *outQueue, now int64) {
	_, _, _, count, ok := groupEntry(p, 0)
	if !ok {
		return
	}
	length := 1
	for i := range count {
		_, _, n, _, _ := groupEntry(p, i)
		length += n + 4
	}
	if 7+length > dynamixel.MaxPacket {
		return
	}
	tx := b.par[:] // b.tx stays free for an ordinary status
	tx[0], tx[1], tx[2], tx[3], tx[4] = 0xFF, 0xFF, 0xFD, 0x00, dynamixel.BroadcastID
	tx[5], tx[6], tx[7] = byte(length), byte(length>>8), dynamixel.InstStatus
	pos, from, sent := 8, 0, 0
	crc := uint16(0)
	for i := range count {
		id, addr, n, _, _ := groupEntry(p, i)
		s := b.find(id, now)
		if s == nil || !s.answers(p.Inst) {
			return
		}
		if s.firmware() < fastReadFirmware {
			m, _ := dynamixel.MarshalInstruction(b.tx[:], id, dynamixel.InstStatus, []byte{s.errByte(errInstruction)})
			b.emit(out, b.tx[:m], s.rdt(), true)
			return
		}
		code := s.read(addr, n, tx[pos+2:pos+2+n])
		if code != 0 {
			clear(tx[pos+2 : pos+2+n])
		}
		tx[pos], tx[pos+1] = s.errByte(code), id
		pos += 2 + n
		crc = dynamixel.CRC16(crc, tx[from:pos])
		tx[pos], tx[pos+1] = byte(crc), byte(crc>>8)
		from = pos
		pos += 2
		b.emit(out, tx[sent:pos], s.rdt(), i == count-1)
		sent = pos
	}
}

func (b *Bus) syncWrite(params []byte, now int64) {
	if len(params) < 4 {
		return
	}
	addr, n := int(binary.LittleEndian.Uint16(params)), int(binary.LittleEndian.Uint16(params[2:]))
	blocks := params[4:]
	if n == 0 || len(blocks)%(n+1) != 0 {
		return
	}
	for ; len(blocks) > 0; blocks = blocks[n+1:] {
		if s := b.find(blocks[0], now); s != nil {
			s.write(addr, blocks[1:n+1], now)
		}
	}
}

func (b *Bus) bulkWrite(params []byte, now int64) {
	// A malformed packet is dropped whole.
	for rest := params; len(rest) > 0; {
		if len(rest) < 5 {
			return
		}
		n := int(binary.LittleEndian.Uint16(rest[3:]))
		if len(rest) < 5+n {
			return
		}
		rest = rest[5+n:]
	}
	for rest := params; len(rest) > 0; {
		addr, n := int(binary.LittleEndian.Uint16(rest[1:])), int(binary.LittleEndian.Uint16(rest[3:]))
		if s := b.find(rest[0], now); s != nil {
			s.write(addr, rest[5:5+n], now)
		}
		rest = rest[5+n:]
	}
}

// reply queues a status from s with error number code and the n data bytes
// at b.par[1:]. MarshalInstruction stuffs it from INST on, as a status must.
func (b *Bus) reply(out *outQueue, s *Servo, code byte, n int) {
	b.par[0] = s.errByte(code)
	m, err := dynamixel.MarshalInstruction(b.tx[:], s.mem[dynamixel.AddrID], dynamixel.InstStatus, b.par[:1+n])
	if err != nil {
		return // longer than a servo can send: it cannot happen within the table
	}
	b.emit(out, b.tx[:m], s.rdt(), true)
}

// emit queues the bytes of a reply after a servo's return delay. end marks
// the end of a packet, where a pending CRC corruption applies.
func (b *Bus) emit(out *outQueue, pkt []byte, rdt time.Duration, end bool) {
	if end {
		b.stats.Replies++
		if b.corrupt > 0 {
			b.corrupt--
			pkt[len(pkt)-1] ^= 0x5A
		}
	}
	if !b.timing.ReturnDelay {
		rdt = 0
	}
	out.push(pkt, rdt, &b.timing)
}

// PresentAngles fills q with the present positions of the servos ids, in
// radians as emioapi converts them (dynamixel.PulseToRad): what the virtual
// lab's camera sees of the robot, read straight from the simulated servos
// without a bus transaction. Missing IDs and extra q values are left alone.
func (b *Bus) PresentAngles(ids []byte, q []float64) {
	for i, id := range ids {
		if i >= len(q) {
			return
		}
		if s := b.Servo(id); s != nil {
			q[i] = dynamixel.PulseToRad(int32(s.Value(dynamixel.ItemPresentPosition)))
		}
	}
}
