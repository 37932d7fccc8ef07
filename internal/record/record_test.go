package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/tap/payload"
)

// Losses and reordering, counted exactly from sequence numbers, across the
// 16-bit wrap.
func TestSequenceCounts(t *testing.T) {
	for _, tt := range []struct {
		name string
		seqs []uint16
		want Counts
	}{
		{"in order", []uint16{1, 2, 3, 4}, Counts{Received: 4}},
		{"two lost", []uint16{1, 2, 5, 6}, Counts{Received: 4, Lost: 2}},
		{"swapped", []uint16{1, 3, 2, 4}, Counts{Received: 4, Reordered: 1}},
		{"late by three", []uint16{1, 3, 4, 5, 2, 6}, Counts{Received: 6, Reordered: 1}},
		{"duplicate", []uint16{1, 2, 2, 3}, Counts{Received: 4, Duplicates: 1}},
		{"duplicate of a reordered", []uint16{1, 3, 2, 2}, Counts{Received: 4, Reordered: 1, Duplicates: 1}},
		{"across the wrap", []uint16{65534, 65535, 0, 1}, Counts{Received: 4}},
		{"lost across the wrap", []uint16{65534, 1, 2}, Counts{Received: 3, Lost: 2}},
		{"reordered across the wrap", []uint16{65535, 1, 0, 2}, Counts{Received: 4, Reordered: 1}},
		{"older than the first", []uint16{10, 11, 8, 12}, Counts{Received: 4, Reordered: 1, Lost: 1}},
		{"far too late", []uint16{1, 5000, 6000, 2}, Counts{Received: 4, Lost: 5997, TooLate: 1}},
	} {
		var q sequence
		for _, s := range tt.seqs {
			q.add(s)
		}
		if q.Counts != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, q.Counts, tt.want)
		}
	}
}

// memFiles collects the recorder's files in memory.
type memFiles map[string]*bytes.Buffer

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (m memFiles) create(p string) (io.WriteCloser, error) {
	b := new(bytes.Buffer)
	m[p] = b
	return nopCloser{b}, nil
}

var src = netip.MustParseAddrPort("127.0.0.1:40000")

func desc() *payload.Descriptor {
	return &payload.Descriptor{Link: "emio", RateHz: 100,
		Measure: []payload.Field{{Name: "markers", Unit: "mm", Len: 2}, {Name: "speed", Unit: "deg/s", Len: 1}},
		Command: []payload.Field{{Name: "angles", Unit: "rad", Len: 1}}}
}

// packet builds tap packet i of a 100 Hz link; with d, it carries the
// descriptor.
func packet(t testing.TB, ssrc uint32, seq uint16, i int, d *payload.Descriptor) []byte {
	t.Helper()
	r := payload.Record{Status: 2, State: 2, Seq: int64(i), Tick: uint64(i), Deadline: 1_700_000_000_000_000_000 + int64(i)*10_000_000,
		Sent: 1_700_000_000_000_000_000 + int64(i)*10_000_000 + 15_000, Lateness: 15_000, ReplyLatency: 250_000, Flags: payload.FlagApplied,
		Measurement: []float64{float64(i), 0.5, -1}, Command: []float64{0.25}, Applied: []float64{0.25}}
	if d != nil {
		r.Flags |= payload.FlagDescriptor
		r.Descriptor = d
	}
	h := rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, Timestamp: uint32(i * 10000), SSRC: ssrc, Marker: d != nil}
	b := make([]byte, h.MarshalSize()+r.MarshalSize())
	n, err := h.MarshalTo(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.MarshalTo(b[n:]); err != nil {
		t.Fatal(err)
	}
	return b
}

// A link's CSV: the header of docs/tap.md §5 from its descriptor, one row
// per packet, packets before the descriptor held and written first.
func TestCSV(t *testing.T) {
	files := memFiles{}
	r, err := New(Config{Out: "/tmp/run.csv", Create: files.create})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	// Joined mid-stream: two packets without descriptor, then one with.
	for i, d := range []*payload.Descriptor{nil, nil, desc(), nil} {
		if err := r.Packet(packet(t, 7, uint16(100+i), i, d), src, at); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	got := files["/tmp/run.emio.csv"]
	if got == nil {
		t.Fatalf("files %v", files)
	}
	want := "time_s,deadline_unix_s,rtp_seq,tick,seq,status,state,lateness_us,reply_latency_us,late,applied,stale,overrun," +
		"meas_markers_1_mm,meas_markers_2_mm,meas_speed_deg_per_s,cmd_angles_rad,applied_angles_rad\n" +
		"0,1700000000.000000,100,0,0,2,2,15,250,0,1,0,0,0,0.5,-1,0.25,0.25\n" +
		"0.01,1700000000.010000,101,1,1,2,2,15,250,0,1,0,0,1,0.5,-1,0.25,0.25\n" +
		"0.02,1700000000.020000,102,2,2,2,2,15,250,0,1,0,0,2,0.5,-1,0.25,0.25\n" +
		"0.03,1700000000.030000,103,3,3,2,2,15,250,0,1,0,0,3,0.5,-1,0.25,0.25\n"
	if got.String() != want {
		t.Errorf("CSV\n%s\nwant\n%s", got, want)
	}
	st, bad := r.Streams()
	if len(st) != 1 || st[0].Name != "emio" || st[0].Rows != 4 || bad != 0 {
		t.Errorf("streams %+v, bad %d", st, bad)
	}
}

// Two links and injected losses, reordering and duplicates: each link's
// counts exact, its file its own.
func TestManyLinksLossesReordering(t *testing.T) {
	files := memFiles{}
	r, _ := New(Config{Out: "run.csv", Create: files.create})
	d2 := desc()
	d2.Link = "arm"
	order := []int{0, 1, 2, 4, 3, 5, 5, 8, 9} // 6 and 7 lost, 3 late, 5 twice
	for k, i := range order {
		r.Packet(packet(t, 1, uint16(65530+i), i, map[bool]*payload.Descriptor{true: desc()}[k == 0]), src, time.Now())
		r.Packet(packet(t, 2, uint16(i), i, map[bool]*payload.Descriptor{true: d2}[k == 0]), src, time.Now())
	}
	st, _ := r.Streams()
	want := Counts{Received: 9, Lost: 2, Reordered: 1, Duplicates: 1}
	for _, s := range st {
		if s.Counts != want || s.Rows != 8 {
			t.Errorf("%s: %+v rows %d, want %+v and 8 rows", s.Name, s.Counts, s.Rows, want)
		}
	}
	if files["run.emio.csv"] == nil || files["run.arm.csv"] == nil {
		t.Errorf("files %v", files)
	}
	// The extended sequence numbers do not wrap.
	if !strings.Contains(files["run.emio.csv"].String(), "\n0.09,1700000000.090000,65539,") {
		t.Errorf("emio:\n%s", files["run.emio.csv"])
	}
}

// What is not a tap packet is an error, counted, and the recorder goes on.
func TestBadPackets(t *testing.T) {
	r, _ := New(Config{Out: "x.csv", Create: memFiles{}.create})
	good := packet(t, 3, 1, 0, desc())
	for _, b := range [][]byte{nil, {0x80}, append([]byte{0x40}, good[1:]...), good[:20]} {
		if err := r.Packet(b, src, time.Now()); err == nil {
			t.Errorf("%x accepted", b)
		} else if !strings.HasPrefix(err.Error(), "record: ") {
			t.Errorf("message %q", err)
		}
	}
	if err := r.Packet(good, src, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, bad := r.Streams(); bad != 4 {
		t.Errorf("bad %d, want 4", bad)
	}
	cut := packet(t, 3, 2, 1, desc())
	if err := r.Packet(cut[:len(cut)-40], src, time.Now()); !errors.Is(err, payload.ErrShort) && !errors.Is(err, payload.ErrDescriptor) {
		t.Errorf("a cut payload: %v", err)
	}
}

// A packet's row allocates nothing once its link's file is open.
func TestPacketAllocatesNothing(t *testing.T) {
	r, _ := New(Config{Out: "x.csv", Create: func(string) (io.WriteCloser, error) { return nopCloser{io.Discard}, nil }, Pcap: io.Discard, Local: src})
	r.Packet(packet(t, 9, 0, 0, desc()), src, time.Now())
	pkts := make([][]byte, 200)
	for i := range pkts {
		pkts[i] = packet(t, 9, uint16(i+1), i+1, nil)
	}
	i := 0
	if n := testing.AllocsPerRun(100, func() {
		if err := r.Packet(pkts[i], src, time.Now()); err != nil {
			t.Fatal(err)
		}
		i++
	}); n != 0 {
		t.Errorf("%v allocations per packet", n)
	}
}

// The pcap file: its header, and each datagram inside rebuilt IPv4 and UDP
// headers with a right IP checksum.
func TestPcap(t *testing.T) {
	var b bytes.Buffer
	r, _ := New(Config{Out: "x.csv", Create: memFiles{}.create, Pcap: &b, Local: netip.MustParseAddrPort("127.0.0.1:5004")})
	p := packet(t, 1, 1, 0, desc())
	r.Packet(p, src, time.Unix(1_700_000_000, 123_456_000))
	out := b.Bytes()
	if len(out) != 24+16+20+8+len(p) {
		t.Fatalf("%d bytes", len(out))
	}
	rec := out[24:]
	if !bytes.Equal(rec[:8], []byte{0x00, 0xf1, 0x53, 0x65, 0x40, 0xe2, 0x01, 0x00}) { // 1700000000 s, 123456 µs
		t.Errorf("timestamp % x", rec[:8])
	}
	ip := rec[16 : 16+20]
	if ipChecksum(ip) != 0 || ip[9] != 17 {
		t.Errorf("IP header % x", ip)
	}
	udp := rec[36:44]
	if udp[0] != 0x9c || udp[1] != 0x40 || udp[2] != 0x13 || udp[3] != 0x8c {
		t.Errorf("UDP ports % x", udp[:4])
	}
	if !bytes.Equal(rec[44:], p) {
		t.Error("the datagram differs")
	}
}

// Packet never panics, whatever comes.
func FuzzPacket(f *testing.F) {
	f.Add(packet(f, 1, 1, 0, desc()))
	f.Add(packet(f, 1, 2, 1, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := New(Config{Out: "x.csv", Create: func(string) (io.WriteCloser, error) { return nopCloser{io.Discard}, nil }, Pcap: io.Discard, Local: src})
		r.Packet(data, src, time.Now())
		r.Packet(data, src, time.Now())
		r.Close()
	})
}

// With a MAT-file asked, the CSVs are written as packets come and the
// MAT-file at Close, one struct per link whose fields are the CSV's
// columns; GNU Octave loads it.
func TestMAT(t *testing.T) {
	dir := t.TempDir()
	mat := filepath.Join(dir, "run.mat")
	r, err := New(Config{Out: mat, Mat: mat})
	if err != nil {
		t.Fatal(err)
	}
	d2 := desc()
	d2.Link = "arm"
	for i := range 500 {
		var d, e *payload.Descriptor
		if i == 0 {
			d, e = desc(), d2
		}
		r.Packet(packet(t, 1, uint16(i), i, d), src, time.Now())
		if i != 7 { // one lost on arm
			r.Packet(packet(t, 2, uint16(i), i, e), src, time.Now())
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(mat)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("MATLAB 5.0 MAT-file")) {
		t.Fatalf("header %q", b[:40])
	}
	for _, csv := range []string{"run.emio.csv", "run.arm.csv"} {
		if _, err := os.Stat(filepath.Join(dir, csv)); err != nil {
			t.Error(err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("spill files left: %v", left)
	}
	octave, err := exec.LookPath("octave-cli")
	if err != nil {
		testutil.RequirePeer(t, "GNU Octave (octave-cli), to load the MAT-file,", "apt-get install octave", err)
	}
	script := fmt.Sprintf(`s = load('%s');
assert(isstruct(s.emio) && isstruct(s.arm));
assert(numel(s.emio.time_s) == 500 && numel(s.arm.time_s) == 499);
assert(abs(s.emio.time_s(end) - 4.99) < 1e-12);
assert(s.emio.meas_markers_1_mm(300) == 299);
assert(all(s.emio.meas_speed_deg_per_s == -1));
assert(s.arm.rtp_seq(8) == 8);
assert(all(s.emio.applied == 1));
printf("ok %%d fields\n", numel(fieldnames(s.emio)));`, mat)
	out, err := exec.Command(octave, "--no-gui", "--norc", "--quiet", "--eval", script).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok 18 fields") {
		t.Fatalf("octave: %v\n%s", err, out)
	}
}

// A multicast tap is received where the recorder joined the group; a
// machine without a multicast route skips.
func TestMulticast(t *testing.T) {
	// Port 0: the kernel picks the group's port at the bind, and the
	// packet goes to the port the socket holds.
	c, err := Listen(netip.MustParseAddrPort("239.255.42.99:0"))
	if err != nil {
		t.Skipf("cannot join 239.255.42.99 here: %v", err)
	}
	defer c.Close()
	group := netip.AddrPortFrom(netip.MustParseAddr("239.255.42.99"), c.LocalAddr().(*net.UDPAddr).AddrPort().Port())
	tx, err := net.ListenUDP("udp4", nil)
	if err != nil {
		t.Skipf("no UDP: %v", err)
	}
	defer tx.Close()
	p := packet(t, 5, 1, 0, desc())
	if _, err := tx.WriteToUDPAddrPort(p, group); err != nil {
		t.Skipf("no multicast route here: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Skipf("multicast is not looped back here: %v", err)
	}
	if !bytes.Equal(buf[:n], p) {
		t.Errorf("received %d bytes, not the packet sent", n)
	}
}
