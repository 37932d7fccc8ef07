package dynamixel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrTimeout means a status packet did not arrive in time; see
	// *TimeoutError for which and how long.
	ErrTimeout = errors.New("dynamixel: no status packet")
	// ErrPort is a failure of the serial port itself (an unplugged adapter).
	ErrPort = errors.New("dynamixel: port failure")
	// ErrArgument is a request the bus refuses before sending anything.
	ErrArgument = errors.New("dynamixel: bad request")
)

// TimeoutError is a missing status packet: which servo did not answer
// which instruction in time. errors.Is(err, ErrTimeout) holds.
type TimeoutError struct {
	// ID is the servo whose status did not arrive: the one addressed, or
	// in a group read the first of the group that did not answer (the
	// servos after it wait for it, docs/dynamixel.md §6). It is
	// BroadcastID when the bytes received do not tell which (see Servo).
	ID   byte
	Inst byte
	// Got is the bytes received before the deadline: those of the missing
	// servo's status, or of the whole reply of a Fast Sync Read.
	Got     int
	Timeout time.Duration
	// Group lists the servos of a group read in the order they answer;
	// nil for an instruction to one servo.
	Group []byte
	// Answered is how many of Group answered in full before ID, the
	// first that did not; -1 when the bytes received do not tell.
	Answered int
}

// Servo returns the servo that did not answer, for a caller that counts
// failures per servo; ok is false when the reply does not tell (a broadcast,
// or a Fast Sync Read reply too garbled to count its blocks).
func (e *TimeoutError) Servo() (id byte, ok bool) {
	return e.ID, e.ID != BroadcastID
}

func (e *TimeoutError) Error() string {
	inst := instText(e.Inst)
	id, known := e.Servo()
	switch {
	case !known && e.Group != nil:
		return fmt.Sprintf("dynamixel: no readable reply to %s from %s within %v (the bytes received do not tell which servo failed)",
			inst, servoList(e.Group), e.Timeout)
	case !known:
		return fmt.Sprintf("dynamixel: no servo answered %s sent to all (ID %d) within %v", inst, BroadcastID, e.Timeout)
	}
	var note []string
	what := "did not answer " + inst
	// A Fast Sync Read's bytes are the whole reply's, not this servo's.
	if e.Got > 0 && e.Inst != InstFastSyncRead {
		what = "sent an incomplete reply to " + inst
		note = append(note, fmt.Sprintf("%d bytes", e.Got))
	}
	switch {
	case e.Answered > 0 && e.Answered <= len(e.Group):
		note = append(note, servoList(e.Group[:e.Answered])+" did")
	case e.Answered == 0 && len(e.Group) > 1:
		note = append(note, "nor did "+servoList(e.Group[1:])+", which answer after it")
	}
	s := fmt.Sprintf("dynamixel: servo %d %s within %v", id, what, e.Timeout)
	if len(note) > 0 {
		s += " (" + strings.Join(note, "; ") + ")"
	}
	return s
}

// Is makes errors.Is(err, ErrTimeout) hold.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// servoList names servos in words: "servo 3", "servos 0 and 1",
// "servos 1, 2 and 3".
func servoList(ids []byte) string {
	switch len(ids) {
	case 0:
		return "no servo"
	case 1:
		return fmt.Sprintf("servo %d", ids[0])
	}
	return "servos " + wordList(len(ids), "and", func(i int) int { return int(ids[i]) })
}

// wordList writes n numbers, item(0) to item(n-1), as a person would: "1,
// 2 and 3" with last = "and".
func wordList(n int, last string, item func(int) int) string {
	var b strings.Builder
	for i := range n {
		switch {
		case i == n-1 && i > 0:
			b.WriteString(" " + last + " ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(item(i)))
	}
	return b.String()
}

// BusConfig describes the line, to compute every timeout from the bytes on
// the wire instead of a fixed guess (docs/dynamixel.md §12.2, §13).
type BusConfig struct {
	// Baud is the line rate in bits/s (1 000 000 on the Emio).
	Baud int
	// LatencyTimer is the USB adapter's latency timer: the FTDI chip holds
	// a short reply this long (16 ms by default on Linux, 1 ms when set up).
	LatencyTimer time.Duration
	// ReturnDelay is the servos' Return Delay Time (address 9 × 2 µs; the
	// factory value is 500 µs).
	ReturnDelay time.Duration
	// Margin covers USB scheduling and the host waking up.
	Margin time.Duration
}

// DefaultBusConfig is the Emio's line with a factory adapter: 1 Mbps, 16 ms
// latency timer, 500 µs return delay.
func DefaultBusConfig() BusConfig {
	return BusConfig{Baud: 1000000, LatencyTimer: 16 * time.Millisecond, ReturnDelay: 500 * time.Microsecond, Margin: 3 * time.Millisecond}
}

// BusStats counts transactions and failures.
type BusStats struct {
	Transactions, Timeouts, Corrupt, Stale, PortErrors uint64
}

// Bus runs half-duplex transactions on a Port: flush the input, send one
// instruction, read the expected status packets. It is not safe for
// concurrent use; a link's loop owns it.
type Bus struct {
	port  Port
	cfg   BusConfig
	byteT time.Duration
	tx    []byte
	rx    []byte
	rxN   int
	// pending is the length of the packet receive returned, dropped by done.
	pending int
	par     []byte
	stats   BusStats
}

// NewBus returns a bus on port.
func NewBus(port Port, cfg BusConfig) (*Bus, error) {
	if cfg.Baud < 9600 || cfg.Baud > 10_500_000 {
		return nil, fmt.Errorf("%w: baud %d, want 9600..10500000", ErrArgument, cfg.Baud)
	}
	if cfg.LatencyTimer < 0 || cfg.ReturnDelay < 0 || cfg.Margin < 0 {
		return nil, fmt.Errorf("%w: negative latency timer, return delay or margin", ErrArgument)
	}
	return &Bus{
		port: port, cfg: cfg,
		byteT: time.Duration(int64(time.Second) * 10 / int64(cfg.Baud)),
		tx:    make([]byte, MaxPacket),
		rx:    make([]byte, 4*MaxPacket),
		par:   make([]byte, MaxPacket),
	}, nil
}

// Config returns the bus configuration.
func (b *Bus) Config() BusConfig { return b.cfg }

// SetConfig changes the timing model, e.g. after reading the servos' Return
// Delay Time.
func (b *Bus) SetConfig(cfg BusConfig) error {
	nb, err := NewBus(b.port, cfg)
	if err != nil {
		return err
	}
	b.cfg, b.byteT = nb.cfg, nb.byteT
	return nil
}

// Stats returns the counters.
func (b *Bus) Stats() BusStats { return b.stats }

// Port returns the bus's port.
func (b *Bus) Port() Port { return b.port }

// timeout is the time for txBytes out, replies·(their bytes) back, each reply
// after a return delay, one latency timer per direction, and the margin.
func (b *Bus) timeout(txBytes, rxBytes, replies int) time.Duration {
	return time.Duration(txBytes+rxBytes)*b.byteT + time.Duration(replies)*b.cfg.ReturnDelay +
		2*b.cfg.LatencyTimer + b.cfg.Margin
}

// send flushes stale input and writes one instruction.
func (b *Bus) send(id, inst byte, params []byte) (int, error) {
	n, err := MarshalInstruction(b.tx, id, inst, params)
	if err != nil {
		return 0, err
	}
	// Bytes of an earlier, timed-out transaction must not be read as this
	// one's reply (docs/dynamixel.md §13).
	if err := b.port.ResetInputBuffer(); err != nil {
		return 0, b.portErr("reset input", err)
	}
	b.rxN = 0
	if _, err := b.port.Write(b.tx[:n]); err != nil {
		return 0, b.portErr("write", err)
	}
	b.stats.Transactions++
	return n, nil
}

func (b *Bus) portErr(op string, err error) error {
	b.stats.PortErrors++
	return fmt.Errorf("%w: %s: %w", ErrPort, op, err)
}

// receive reads until a status from id arrives or the deadline passes.
// Statuses from other IDs and corrupt frames are skipped (resynchronising on
// the next header); anyID accepts every servo. stuffed is false for Fast
// Sync Read replies. The packet
// aliases the receive buffer until the next call.
func (b *Bus) receive(id, inst byte, deadline time.Time, timeout time.Duration, stuffed, anyID bool) (Packet, error) {
	polled := false // a last read was made after the deadline
	for {
		// Parse what is buffered.
		for b.rxN > 0 {
			h := FindHeader(b.rx[:b.rxN])
			if h < 0 {
				b.rxN = 0
				break
			}
			if h > 0 {
				copy(b.rx, b.rx[h:b.rxN])
				b.rxN -= h
			}
			p, used, err := ParsePacket(b.rx[:b.rxN], stuffed)
			if errors.Is(err, ErrIncomplete) {
				break
			}
			if err != nil {
				// Corrupt: skip this header and look for the next one.
				b.stats.Corrupt++
				copy(b.rx, b.rx[1:b.rxN])
				b.rxN--
				continue
			}
			if p.Inst != InstStatus || p.ID != id && !anyID {
				// An echo of our instruction, or a late reply to an
				// earlier request: drop it.
				b.stats.Stale++
				b.consume(used)
				continue
			}
			b.pending = used
			return p, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			// A caller held up past the deadline (a loaded machine) may
			// find the reply already waiting: look once without waiting
			// before calling it lost.
			if polled {
				b.stats.Timeouts++
				return Packet{}, &TimeoutError{ID: id, Inst: inst, Got: b.rxN, Timeout: timeout}
			}
			polled, left = true, 0
		}
		if b.rxN == len(b.rx) {
			b.rxN = 0 // garbage flood: drop it
		}
		if err := b.port.SetReadTimeout(left); err != nil {
			return Packet{}, b.portErr("set read timeout", err)
		}
		n, err := b.port.Read(b.rx[b.rxN:])
		if err != nil {
			return Packet{}, b.portErr("read", err)
		}
		b.rxN += n
	}
}

// consume drops the first n bytes of the receive buffer.
func (b *Bus) consume(n int) {
	copy(b.rx, b.rx[n:b.rxN])
	b.rxN -= n
}

// done releases the packet returned by the last receive.
func (b *Bus) done() {
	if b.pending > 0 {
		b.consume(b.pending)
		b.pending = 0
	}
}

// transact sends one instruction and returns the status of id, with its
// error byte as an error.
func (b *Bus) transact(id, inst byte, params []byte, rxData int) (Status, error) {
	s, err := b.exchange(id, inst, params, rxData)
	if err != nil {
		return s, err
	}
	return s, s.Error()
}

// exchange sends one instruction and returns the status of id; its error
// byte is left to the caller.
func (b *Bus) exchange(id, inst byte, params []byte, rxData int) (Status, error) {
	n, err := b.send(id, inst, params)
	if err != nil {
		return Status{}, err
	}
	to := b.timeout(n, minStatus+rxData, 1)
	p, err := b.receive(id, inst, time.Now().Add(to), to, true, false)
	if err != nil {
		return Status{}, err
	}
	defer b.done()
	if len(p.Params) < 1 {
		return Status{}, &CorruptError{What: "status length", Got: len(p.Params), Want: 1}
	}
	return Status{ID: p.ID, Err: p.Params[0], Data: p.Params[1:]}, nil
}

// Ping returns the model number and firmware version of id.
func (b *Bus) Ping(id byte) (model uint16, firmware byte, err error) {
	if id > MaxID {
		return 0, 0, fmt.Errorf("%w: ping ID %d, want 0..%d", ErrArgument, id, MaxID)
	}
	s, err := b.transact(id, InstPing, nil, 3)
	if err != nil && !errors.Is(err, ErrAlert) || errors.Is(err, ErrStatus) {
		return 0, 0, err
	}
	if len(s.Data) != 3 {
		return 0, 0, &CorruptError{What: "ping reply length", Got: len(s.Data), Want: 3}
	}
	return binary.LittleEndian.Uint16(s.Data), s.Data[2], err
}

// Read reads len(dst) bytes from addr of id into dst. A reply with only the
// Alert bit set fills dst and returns a *StatusError matching ErrAlert.
func (b *Bus) Read(id byte, addr uint16, dst []byte) error {
	e, err := b.ReadRaw(id, addr, dst)
	if err != nil {
		return err
	}
	return StatusErrorOf(id, e)
}

// ReadRaw is Read for a loop that watches the Alert bit itself: a reply
// with only the Alert bit set fills dst and returns its error byte with a
// nil error, so that a servo in alert costs no allocation. An error number
// is still returned as a *StatusError.
func (b *Bus) ReadRaw(id byte, addr uint16, dst []byte) (errByte byte, err error) {
	if id > MaxID || len(dst) == 0 || len(dst) > MaxPacket-minStatus {
		return 0, fmt.Errorf("%w: read %d bytes at %d from ID %d", ErrArgument, len(dst), addr, id)
	}
	p := b.par[:4]
	binary.LittleEndian.PutUint16(p, addr)
	binary.LittleEndian.PutUint16(p[2:], uint16(len(dst)))
	s, err := b.exchange(id, InstRead, p, len(dst))
	switch {
	case err != nil:
		return 0, err
	case s.Err&^AlertBit != 0:
		return s.Err, s.Error()
	case len(s.Data) != len(dst):
		return s.Err, &CorruptError{What: "read reply length", Got: len(s.Data), Want: len(dst)}
	}
	copy(dst, s.Data)
	return s.Err, nil
}

// Write writes data at addr of id and waits for its status.
func (b *Bus) Write(id byte, addr uint16, data []byte) error {
	return b.write(id, InstWrite, addr, data)
}

// RegWrite stages a write that Action applies.
func (b *Bus) RegWrite(id byte, addr uint16, data []byte) error {
	return b.write(id, InstRegWrite, addr, data)
}

func (b *Bus) write(id, inst byte, addr uint16, data []byte) error {
	if id > MaxID && id != BroadcastID || len(data) == 0 || len(data)+2 > len(b.par) {
		return fmt.Errorf("%w: write %d bytes at %d to ID %d", ErrArgument, len(data), addr, id)
	}
	p := b.par[:2+len(data)]
	binary.LittleEndian.PutUint16(p, addr)
	copy(p[2:], data)
	if id == BroadcastID {
		_, err := b.send(id, inst, p)
		return err // a broadcast write is never answered
	}
	_, err := b.transact(id, inst, p, 0)
	return err
}

// Action applies staged RegWrites. A broadcast Action is not answered.
func (b *Bus) Action(id byte) error {
	if id == BroadcastID {
		_, err := b.send(id, InstAction, nil)
		return err
	}
	_, err := b.transact(id, InstAction, nil, 0)
	return err
}

// Reboot restarts id; it answers first. RAM (torque, mode, goals) is reset.
func (b *Bus) Reboot(id byte) error {
	_, err := b.transact(id, InstReboot, nil, 0)
	return err
}

// Clear resets the multi-turn count of id to within one turn (stopped only).
func (b *Bus) Clear(id byte) error {
	_, err := b.transact(id, InstClear, []byte{0x01, 0x44, 0x58, 0x4C, 0x22}, 0)
	return err
}

// PingResult is one servo found by BroadcastPing.
type PingResult struct {
	ID       byte
	Model    uint16
	Firmware byte
}

// BroadcastPing asks every servo and collects the replies, which come in ID
// order, each after its return delay, until the last possible one is due.
func (b *Bus) BroadcastPing() ([]PingResult, error) {
	n, err := b.send(BroadcastID, InstPing, nil)
	if err != nil {
		return nil, err
	}
	to := b.timeout(n, 14*int(MaxID+1), int(MaxID+1))
	deadline := time.Now().Add(to)
	var found []PingResult
	for {
		// Accept a status from any ID.
		p, err := b.receive(BroadcastID, InstPing, deadline, to, true, true)
		if errors.Is(err, ErrTimeout) {
			return found, nil
		}
		if err != nil {
			return found, err
		}
		if len(p.Params) == 4 {
			found = append(found, PingResult{ID: p.ID, Model: binary.LittleEndian.Uint16(p.Params[1:]), Firmware: p.Params[3]})
		}
		b.done()
	}
}
