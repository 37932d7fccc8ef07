package simulink

import (
	"bufio"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Control messages as the kernel writes them on linux/amd64 and arm64: an
// 8-byte length, level, type, the data, then padding to 8 bytes.
const (
	cmOvfl      = "1400000000000000 01000000 28000000" // len 20, SOL_SOCKET, SO_RXQ_OVFL
	cmOvflShort = "1300000000000000 01000000 28000000" // len 19: 3 bytes of data
	cmOvflLvl0  = "1400000000000000 00000000 28000000" // len 20, IPPROTO_IP, type 40
	pad4        = "00000000"
)

func TestRxqOverflowTranscripts(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("transcripts of a 64-bit little-endian platform, this is %s", runtime.GOARCH)
	}
	for _, c := range []struct {
		name  string
		oob   string
		drops uint32
		ok    bool
	}{
		{"one drop", ptJoin(cmOvfl, "01000000", pad4), 1, true},
		{"199000 drops", ptJoin(cmOvfl, "58090300", pad4), 199000, true},
		{"the largest count", ptJoin(cmOvfl, "ffffffff", pad4), 0xFFFFFFFF, true},
		{"unpadded at the end", ptJoin(cmOvfl, "07000000"), 7, true},
		{"after a timestamp", ptJoin(cmTS, tsSec, tsNsec, cmOvfl, "05000000", pad4), 5, true},
		{"after another message", ptJoin(cmTOS, cmOvfl, "05000000", pad4), 5, true},
		{"before a timestamp", ptJoin(cmOvfl, "05000000", pad4, cmTS, tsSec, tsNsec), 5, true},
		{"the first decides", ptJoin(cmOvfl, "05000000", pad4, cmOvfl, "06000000", pad4), 5, true},
		{"none", "", 0, false},
		{"a timestamp only", ptJoin(cmTS, tsSec, tsNsec), 0, false},
		{"short header", "1400000000000000 01000000", 0, false},
		{"data too short", ptJoin(cmOvflShort, "050000", "00"), 0, false},
		{"length beyond the buffer", ptJoin(cmOvfl, "0500"), 0, false},
		{"length zero", ptJoin("0000000000000000 01000000 28000000", "05000000", pad4), 0, false},
		{"other level", ptJoin(cmOvflLvl0, "05000000", pad4), 0, false},
		{"garbage before it", ptJoin("ffffffffffffffff 01000000 28000000", cmOvfl, "05000000", pad4), 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			drops, ok := rxqOverflow(ptHex(t, c.oob))
			if drops != c.drops || ok != c.ok {
				t.Errorf("got %d, %v; want %d, %v", drops, ok, c.drops, c.ok)
			}
		})
	}
}

// FuzzRxqOverflow: no control data makes the parser panic, loop or
// disagree with golang.org/x/sys/unix's parser where that one accepts the
// data.
func FuzzRxqOverflow(f *testing.F) {
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		for _, s := range []string{
			ptJoin(cmOvfl, "01000000", pad4), ptJoin(cmTS, tsSec, tsNsec, cmOvfl, "05000000", pad4),
			ptJoin(cmOvflShort, "050000", "00"), cmTOS, "",
		} {
			f.Add(ptHex(f, s))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		drops, ok := rxqOverflow(in)
		if !ok && drops != 0 {
			t.Fatalf("got %d, %v", drops, ok)
		}
		// x/sys casts the bytes to a Cmsghdr: give it an aligned copy.
		msgs, err := unix.ParseSocketControlMessage(append(make([]byte, 0, len(in)+8), in...))
		if err != nil {
			return
		}
		var want uint32
		wantOK := false
		for _, m := range msgs {
			if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SO_RXQ_OVFL {
				continue
			}
			if len(m.Data) >= 4 {
				want, wantOK = binary.NativeEndian.Uint32(m.Data), true
			}
			break
		}
		if drops != want || ok != wantOK {
			t.Fatalf("% x: got %d, %v; x/sys reads %d, %v", in, drops, ok, want, wantOK)
		}
	})
}

// softnetDrops is the packets the kernel dropped in its per-CPU input
// queues (the second column of /proc/net/softnet_stat), which loopback
// traffic goes through before any socket; -1 when it cannot be read.
func softnetDrops() int64 {
	f, err := os.Open("/proc/net/softnet_stat")
	if err != nil {
		return -1
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Fields(sc.Text())
		if len(cols) < 2 {
			return -1
		}
		v, err := strconv.ParseUint(cols[1], 16, 32)
		if err != nil {
			return -1
		}
		n += int64(v)
	}
	return n
}

// countingObserver counts drops, many at once.
type countingObserver struct {
	NopObserver
	calls, n [NumDropReason]atomic.Uint64
}

func (o *countingObserver) DroppedN(r DropReason, n uint64) { o.calls[r].Add(1); o.n[r].Add(n) }

// singleObserver has no DroppedN.
type singleObserver struct {
	dropped [NumDropReason]atomic.Uint64
}

func (*singleObserver) Exchanged(Status)         {}
func (*singleObserver) Reply(int64, bool)        {}
func (o *singleObserver) Dropped(r DropReason)   { o.dropped[r].Add(1) }
func (o *singleObserver) total(r DropReason) int { return int(o.dropped[r].Load()) }

// floodRig is a master whose remote is a plain UDP socket the test sends
// from.
type floodRig struct {
	t     *testing.T
	m     *Master
	snd   *net.UDPConn
	to    netip.AddrPort
	clock *monoClock
	sent  uint64
	meas  []float64
	cmd   []float64
}

func newFloodRig(t *testing.T, obs Observer, edit func(*MasterConfig)) *floodRig {
	t.Helper()
	snd, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(snd.LocalAddr().(*net.UDPAddr).AddrPort())
	cfg.MaxTimeouts = 1000 // a lost tail datagram is retried, not a re-handshake
	if edit != nil {
		edit(&cfg)
	}
	clock := newMonoClock()
	m, err := NewMaster(cfg, clock, obs)
	if err != nil {
		snd.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { snd.Close(); m.Close() })
	to, err := m.ListenAddr()
	if err != nil {
		t.Fatal(err)
	}
	if !m.ReplySocket().KernelDrops {
		t.Skip("the kernel refused SO_RXQ_OVFL: its drops cannot be counted here")
	}
	return &floodRig{t: t, m: m, snd: snd, to: to, clock: clock,
		meas: make([]float64, cfg.MeasureLen), cmd: make([]float64, cfg.CommandLen)}
}

func (r *floodRig) send(b []byte) {
	r.t.Helper()
	if _, err := r.snd.WriteToUDPAddrPort(b, r.to); err != nil {
		r.t.Fatalf("send %d: %v", r.sent, err)
	}
	r.sent++
}

// settle makes the kernel's count complete: the count comes with the next
// datagram queued, so reply to the handshake, then to one exchange, each
// resent until the master reads it (it may find the buffer still full).
func (r *floodRig) settle() {
	r.t.Helper()
	for i := 0; !r.m.Synced(); i++ {
		if i == 50 {
			r.t.Fatal("no handshake reply read in 50 tries")
		}
		r.send(datagram(-1, 0, 0, 0, 0))
		r.m.Exchange(r.meas, r.cmd, r.clock.in(200*time.Millisecond))
	}
	for i := 0; ; i++ {
		if i == 50 {
			r.t.Fatal("no reply read in 50 tries")
		}
		r.send(datagram(float64(r.m.Stats().Seq), 1, 2, 3, 4))
		if s := r.m.Exchange(r.meas, r.cmd, r.clock.in(200*time.Millisecond)); s == OKNoDelay {
			return
		}
	}
}

// A flood that overruns the receive buffer while the master is not reading
// is counted: every datagram sent is read or reported dropped by the
// kernel, with one observer call for all of them.
func TestKernelDropsCounted(t *testing.T) {
	obs := &countingObserver{}
	r := newFloodRig(t, obs, func(c *MasterConfig) { c.RecvBuffer = DefaultRecvBuffer })
	before := softnetDrops()
	const flood = 20000
	junk := make([]byte, 8) // the wrong size: DropSize once read
	for range flood {
		r.send(junk)
	}
	r.settle()
	st := r.m.Stats()
	kernel := st.Dropped[DropKernel]
	t.Logf("buffer %d B (asked %d, forced %v): sent %d, read %d, dropped by the kernel %d",
		r.m.ReplySocket().Buffer, DefaultRecvBuffer, r.m.ReplySocket().Forced, r.sent, st.Received, kernel)
	if kernel == 0 {
		t.Fatalf("%d datagrams into a %d-byte buffer and no kernel drop counted", flood, r.m.ReplySocket().Buffer)
	}
	if got := obs.n[DropKernel].Load(); got != kernel {
		t.Errorf("the observer was told of %d kernel drops, the stats say %d", got, kernel)
	}
	if calls := obs.calls[DropKernel].Load(); calls > 10 {
		t.Errorf("%d observer calls for %d kernel drops", calls, kernel)
	}
	if st.Received+kernel != r.sent {
		// Loopback loses nothing else unless the kernel's per-CPU input
		// queue overflowed, which this host's load can cause.
		if after := softnetDrops(); before < 0 || after != before {
			t.Skipf("sent %d, read %d + dropped %d: the kernel's input queues dropped %d (softnet_stat), not this socket",
				r.sent, st.Received, kernel, after-before)
		}
		t.Errorf("sent %d = read %d + dropped by the kernel %d does not hold", r.sent, st.Received, kernel)
	}
	if st.Dropped[DropSize]+st.Dropped[DropFlushed] == 0 {
		t.Errorf("no junk datagram read: drops %v", st.Dropped)
	}
}

// An observer without DroppedN hears of a burst through Dropped, a bounded
// number of times; the stats count every drop.
func TestKernelDropsWithoutDroppedN(t *testing.T) {
	obs := &singleObserver{}
	r := newFloodRig(t, obs, func(c *MasterConfig) { c.RecvBuffer = DefaultRecvBuffer })
	junk := make([]byte, 8)
	for range 5000 {
		r.send(junk)
	}
	r.settle()
	kernel := r.m.Stats().Dropped[DropKernel]
	got := obs.total(DropKernel)
	if kernel == 0 || got == 0 || uint64(got) > kernel {
		t.Fatalf("%d kernel drops counted, the observer heard %d", kernel, got)
	}
	// One batch per datagram that carried a new count; each at most
	// MaxDroppedCalls calls.
	if batches := r.m.Stats().Received; uint64(got) > batches*MaxDroppedCalls {
		t.Errorf("%d Dropped calls for %d datagrams read", got, batches)
	}
}

// The count is the socket's total: a step across the uint32 wrap is a small
// step, and a repeated count is no drop.
func TestKernelDropCountWraps(t *testing.T) {
	obs := &countingObserver{}
	m := &Master{obs: obs, dropN: obs}
	for _, c := range []struct {
		count uint32
		want  uint64
	}{
		{5, 5}, {5, 5}, {0xFFFFFFF0, 0xFFFFFFF0}, {3, 0xFFFFFFF0 + 19}, {3, 0xFFFFFFF0 + 19},
	} {
		if d := c.count - m.kernelSeen; d != 0 {
			m.kernelSeen = c.count
			m.dropMany(DropKernel, uint64(d))
		}
		if got := m.st.dropped[DropKernel].Load(); got != c.want {
			t.Fatalf("after count %d: %d drops, want %d", c.count, got, c.want)
		}
	}
	if obs.n[DropKernel].Load() != 0xFFFFFFF0+19 || obs.calls[DropKernel].Load() != 3 {
		t.Errorf("observer: %d drops in %d calls", obs.n[DropKernel].Load(), obs.calls[DropKernel].Load())
	}
}

// A buffer sized for bursts is granted, past net.core.rmem_max where the
// process may force it.
func TestReceiveBufferGranted(t *testing.T) {
	const asked = 1 << 20
	r := newFloodRig(t, nil, func(c *MasterConfig) { c.RecvBuffer = asked })
	rs := r.m.ReplySocket()
	t.Logf("asked %d B, granted %d B (forced %v)", rs.BufferAsked, rs.Buffer, rs.Forced)
	if rs.BufferAsked != asked || rs.Buffer <= 0 {
		t.Fatalf("%+v", rs)
	}
	if rs.Forced && rs.Buffer < asked {
		t.Errorf("forced %d bytes, granted %d", asked, rs.Buffer)
	}
	// The system's default when none is asked.
	d := newFloodRig(t, nil, func(c *MasterConfig) { c.RecvBuffer = 0 })
	if rs := d.m.ReplySocket(); rs.Buffer <= 0 || rs.Forced {
		t.Errorf("default buffer: %+v", rs)
	}
}

// Reading a datagram that carries a drop count allocates nothing.
func TestKernelDropsReceiveAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates in system calls")
	}
	obs := &countingObserver{}
	r := newFloodRig(t, obs, func(c *MasterConfig) { c.RecvBuffer = DefaultRecvBuffer })
	junk := make([]byte, 8)
	for range 2000 {
		r.send(junk)
	}
	r.settle()
	if r.m.Stats().Dropped[DropKernel] == 0 {
		t.Fatal("no kernel drop to carry")
	}
	// Each junk datagram from now on carries the (unchanged) count; flood
	// once more between runs so that some carry a new one.
	allocs := testing.AllocsPerRun(200, func() {
		for range 20 {
			r.snd.WriteToUDPAddrPort(junk, r.to)
		}
		if !r.m.await(int64(time.Second)) {
			t.Fatal("nothing to read")
		}
		r.m.flush()
	})
	if allocs != 0 {
		t.Errorf("%v allocations per read with a drop count", allocs)
	}
}
