package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pion/rtp"

	"github.com/labbridge/bridge/tap/payload"
)

// maxHeld bounds the packets a link's stream holds before its first
// descriptor (docs/tap.md §5).
const maxHeld = 10000

var (
	// ErrPacket is a datagram that is not a tap packet.
	ErrPacket = errors.New("record: not a tap packet")
	// ErrConfig is a recorder that cannot start.
	ErrConfig = errors.New("record: bad configuration")
)

// Config says where a Recorder writes.
type Config struct {
	// Out is the CSV base name: "run.csv" writes run.LINK.csv per link.
	Out string
	// Pcap, when set, receives every datagram as a pcap file; Local is the
	// address it came to, for its headers.
	Pcap  io.Writer
	Local netip.AddrPort
	// PcapPath names Pcap in messages.
	PcapPath string
	// Mat, when set, is a MAT-file written at Close with one struct per
	// link (the CSVs are written all the same).
	Mat string
	// Create opens an output file; nil = os.Create, and New then checks
	// that the folders of Out and Mat take files.
	Create func(path string) (io.WriteCloser, error)
}

// Recorder turns tap packets into files. Packet is its one entry point,
// for one goroutine; Streams may be called from another.
type Recorder struct {
	cfg  Config
	pcap *pcapWriter

	mu      sync.Mutex // guards streams and the counters Streams reads
	streams map[uint32]*stream
	order   []*stream
	names   map[string]int
	bad     uint64
	// err is the first output that could not be written (a *WriteError):
	// from then on nothing more is recorded.
	err      error
	closed   bool
	closeErr error
}

// stream is one SSRC: one link of one bridge run.
type stream struct {
	ssrc uint32
	seq  sequence
	name string
	path string
	desc *payload.Descriptor
	file io.WriteCloser
	csv  *csvFile
	rec  payload.Record
	m, c int
	held []held
	// mismatched counts packets whose vector lengths differ from the
	// stream's first (a bridge restarted under the same SSRC, or a bug).
	mismatched uint64
	first      time.Time
	last       time.Time
}

type held struct {
	ext     int64
	payload []byte
}

// New makes a recorder.
func New(cfg Config) (*Recorder, error) {
	if cfg.Out == "" {
		return nil, fmt.Errorf("%w: no output file", ErrConfig)
	}
	if cfg.Create == nil {
		cfg.Create = func(p string) (io.WriteCloser, error) { return os.Create(p) }
		// A folder that takes no file is found now, not when the first
		// packet comes (or never, when none does).
		if err := Probe(cfg.Out); err != nil {
			return nil, err
		}
		if cfg.Mat != "" && filepath.Dir(cfg.Mat) != filepath.Dir(cfg.Out) {
			if err := Probe(cfg.Mat); err != nil {
				return nil, err
			}
		}
	}
	r := &Recorder{cfg: cfg, streams: make(map[uint32]*stream), names: make(map[string]int)}
	if cfg.Pcap != nil {
		p, err := newPcap(cfg.Pcap)
		if err != nil {
			return nil, &WriteError{Path: cfg.PcapPath, Flag: "-pcap", Opened: true, Err: err}
		}
		r.pcap = p
	}
	return r, nil
}

// Packet handles one datagram received from src at t. A datagram that is
// not a tap packet is an error and counted; it never stops the recorder.
// An output that cannot be written is an error wrapping ErrWrite (a
// *WriteError), and stops it: every later call returns the same error.
func (r *Recorder) Packet(pkt []byte, src netip.AddrPort, t time.Time) error {
	if err := r.Err(); err != nil {
		return err
	}
	if r.pcap != nil {
		if err := r.pcap.packet(t, src, r.cfg.Local, pkt); err != nil {
			return r.fail(&WriteError{Path: r.cfg.PcapPath, Flag: "-pcap", Opened: true, Rows: r.pcap.packets, Err: err})
		}
	}
	var h rtp.Header
	n, err := h.Unmarshal(pkt)
	if err == nil && h.Version != 2 {
		err = fmt.Errorf("RTP version %d", h.Version)
	}
	if err != nil {
		r.countBad()
		return fmt.Errorf("%w: %d bytes from %v: %w", ErrPacket, len(pkt), src, err)
	}
	end := len(pkt)
	if h.Padding && end > n {
		end -= int(pkt[end-1])
	}
	if end < n {
		r.countBad()
		return fmt.Errorf("%w: %d bytes of padding in a %d-byte packet from %v", ErrPacket, pkt[len(pkt)-1], len(pkt), src)
	}
	body := pkt[n:end]
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.streams[h.SSRC]
	if s == nil {
		s = &stream{ssrc: h.SSRC, first: t}
		r.streams[h.SSRC] = s
		r.order = append(r.order, s)
	}
	s.last = t
	ext, fresh := s.seq.add(h.SequenceNumber)
	if !fresh {
		return nil
	}
	if err := s.rec.Unmarshal(body); err != nil {
		r.bad++
		return fmt.Errorf("record: SSRC %08x, RTP seq %d: %w", h.SSRC, h.SequenceNumber, err)
	}
	if s.csv == nil && s.rec.Flags&payload.FlagDescriptor == 0 {
		if len(s.held) < maxHeld {
			s.held = append(s.held, held{ext, slices.Clone(body)})
			return nil
		}
	}
	if s.csv == nil {
		if err := r.open(s); err != nil {
			return r.failLocked(err)
		}
	}
	if err := s.write(ext); err != nil {
		if errors.Is(err, ErrWrite) {
			return r.failLocked(err)
		}
		return err
	}
	return nil
}

// Err is the error that stopped the recorder, nil while it records.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) fail(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failLocked(err)
}

// failLocked stops the recorder at its first write error; r.mu is held.
func (r *Recorder) failLocked(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

func (r *Recorder) countBad() {
	r.mu.Lock()
	r.bad++
	r.mu.Unlock()
}

// open names s, from the descriptor in s.rec when there is one, opens its
// CSV and writes the packets it held.
func (r *Recorder) open(s *stream) error {
	s.m, s.c = len(s.rec.Measurement), len(s.rec.Command)
	name := fmt.Sprintf("ssrc_%08x", s.ssrc)
	if s.rec.Flags&payload.FlagDescriptor != 0 {
		d := *s.rec.Descriptor
		d.Measure, d.Command = slices.Clone(d.Measure), slices.Clone(d.Command)
		s.desc = &d
		if id := ident(d.Link); id != "" {
			name = id
		}
	}
	// A link recorded twice (its bridge restarted: a new SSRC) gets a file
	// of its own.
	r.names[name]++
	if k := r.names[name]; k > 1 {
		name = fmt.Sprintf("%s_%d", name, k)
	}
	s.name = name
	base := strings.TrimSuffix(r.cfg.Out, filepath.Ext(r.cfg.Out))
	path := base + "." + name + ".csv"
	f, err := r.cfg.Create(path)
	if err != nil {
		return &WriteError{Path: path, Err: err}
	}
	cols := Columns(s.desc, s.m, s.c)
	csv, err := newCSV(f, path, cols)
	if err != nil {
		f.Close()
		return err
	}
	if r.cfg.Mat != "" {
		if csv.spill, err = newSpill(r.cfg.Mat, name, cols); err != nil {
			f.Close()
			return err
		}
	}
	// Only now is s a file being written: Streams shows its path.
	s.path, s.file, s.csv = path, f, csv
	// The held packets first, in the order they came; the current one
	// stays in s.rec for the caller to write after them.
	var tmp payload.Record
	for _, h := range s.held {
		if err := tmp.Unmarshal(h.payload); err != nil {
			continue // checked when it came
		}
		if len(tmp.Measurement) != s.m || len(tmp.Command) != s.c {
			s.mismatched++
			continue
		}
		if err := s.csv.row(h.ext, &tmp); err != nil {
			s.held = nil
			return err
		}
	}
	s.held = nil
	return nil
}

// write writes s.rec as the row of extended sequence number ext.
func (s *stream) write(ext int64) error {
	if len(s.rec.Measurement) != s.m || len(s.rec.Command) != s.c {
		s.mismatched++
		return fmt.Errorf("record: link %s: %d and %d values, the stream began with %d and %d", s.name, len(s.rec.Measurement), len(s.rec.Command), s.m, s.c)
	}
	return s.csv.row(ext, &s.rec)
}

// Close writes what streams still hold (without a descriptor, by
// position), closes the files and assembles the MAT-file. It never
// panics, whatever failed before, and returns the first error: the one
// that stopped the recorder, if one did. After a write error nothing more
// is written, and no MAT-file (an older one stays as it was). Calling it
// again returns the same error.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.closeErr
	}
	r.closed = true
	first := r.err
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	for _, s := range r.order {
		if r.err == nil && s.csv == nil && len(s.held) > 0 {
			last := s.held[len(s.held)-1]
			s.held = s.held[:len(s.held)-1]
			if err := s.rec.Unmarshal(last.payload); err == nil {
				if err := r.open(s); err != nil {
					keep(r.failLocked(err))
				} else if err := s.write(last.ext); err != nil {
					keep(r.failLocked(err))
				}
			}
		}
		if s.file != nil {
			if err := s.file.Close(); err != nil {
				keep(&WriteError{Path: s.path, Opened: true, Rows: s.csv.rows, Err: err})
			}
			s.file = nil
		}
	}
	if r.cfg.Mat != "" {
		var names []string
		var spills []*spill
		for _, s := range r.order {
			if s.csv != nil && s.csv.spill != nil {
				names, spills = append(names, matIdent(s.name)), append(spills, s.csv.spill)
			}
		}
		if first != nil {
			removeSpills(spills)
		} else {
			keep(writeMAT(r.cfg.Mat, names, spills))
		}
	}
	r.closeErr = first
	return first
}

// Stream is what the recorder knows of one link.
type Stream struct {
	SSRC  uint32
	Name  string // "" until its descriptor came
	Path  string // the CSV file, "" until it is open
	Rows  uint64
	Rate  float64 // packets per second since the first
	Bad   uint64  // packets of other lengths than the first
	First time.Time
	Last  time.Time
	Counts
}

// Streams reads every stream's counters, in the order they appeared.
func (r *Recorder) Streams() (out []Stream, bad uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.order {
		st := Stream{SSRC: s.ssrc, Name: s.name, Path: s.path, Bad: s.mismatched, First: s.first, Last: s.last, Counts: s.seq.Counts}
		if s.csv != nil {
			st.Rows = s.csv.rows
		}
		if d := s.last.Sub(s.first).Seconds(); d > 0 {
			st.Rate = float64(s.seq.Received-1) / d
		}
		out = append(out, st)
	}
	return out, r.bad
}

// Listen opens the socket a recorder reads: a multicast address is
// joined on every interface that can, anything else is bound.
func Listen(addr netip.AddrPort) (*net.UDPConn, error) {
	ua := net.UDPAddrFromAddrPort(addr)
	var c *net.UDPConn
	var err error
	if addr.Addr().IsMulticast() {
		c, err = net.ListenMulticastUDP("udp", nil, ua)
	} else {
		c, err = net.ListenUDP("udp", ua)
	}
	if err != nil {
		return nil, fmt.Errorf("record: listen on %v: %w", addr, err)
	}
	// Three links at 1 kHz must not overflow while the disk is slow.
	_ = c.SetReadBuffer(8 << 20)
	return c, nil
}

// Serve reads datagrams from c into r until ctx ends, c fails or an output
// cannot be written (an error wrapping ErrWrite); a bad datagram goes to
// bad (which may be nil) and reading goes on.
func (r *Recorder) Serve(ctx context.Context, c *net.UDPConn, bad func(error)) error {
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 65536)
	for {
		n, src, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("record: %w", err)
		}
		if err := r.Packet(buf[:n], src, time.Now()); err != nil {
			if errors.Is(err, ErrWrite) {
				return err
			}
			if bad != nil {
				bad(err)
			}
		}
	}
}
