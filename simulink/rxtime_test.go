package simulink

import (
	"context"
	"encoding/binary"
	"math"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Control messages as the kernel writes them on linux/amd64 and arm64
// (64-bit little-endian: an 8-byte length, level, type; 8-byte alignment).
const (
	cmTS     = "2000000000000000 01000000 23000000" // len 32, SOL_SOCKET, SCM_TIMESTAMPNS
	cmTSNew  = "2000000000000000 01000000 40000000" // len 32, SOL_SOCKET, SO_TIMESTAMPNS_NEW
	cmTSLvl0 = "2000000000000000 00000000 23000000" // len 32, IPPROTO_IP, type 35
	cmTSLen8 = "1800000000000000 01000000 23000000" // len 24: 8 bytes of data
	cmTSLong = "2800000000000000 01000000 23000000" // len 40
	// 1700000000.123456789 s
	tsSec  = "00f1536500000000"
	tsNsec = "15cd5b0700000000"
	tsNs   = int64(1_700_000_000_123_456_789)
	// IP_TOS (IPPROTO_IP, type 1), len 17: one byte of data, 7 of padding.
	cmTOS = "1100000000000000 00000000 01000000 b8 00000000000000"
)

func TestKernelTimestampTranscripts(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("transcripts of a 64-bit little-endian platform, this is %s", runtime.GOARCH)
	}
	for _, c := range []struct {
		name string
		oob  string
		ns   int64 // 0: none
	}{
		{"SCM_TIMESTAMPNS", ptJoin(cmTS, tsSec, tsNsec), tsNs},
		{"SO_TIMESTAMPNS_NEW", ptJoin(cmTSNew, tsSec, tsNsec), tsNs},
		{"after another message", ptJoin(cmTOS, cmTS, tsSec, tsNsec), tsNs},
		{"the first decides", ptJoin(cmTS, tsSec, tsNsec, cmTSNew, tsSec, "0000000000000000"), tsNs},
		{"trailing bytes", ptJoin(cmTS, tsSec, tsNsec, "ffffffff"), tsNs},
		{"epoch", ptJoin(cmTS, "0000000000000000", "0000000000000000"), 0},
		{"none", "", 0},
		{"another message only", cmTOS, 0},
		{"another message unpadded at the end", "1100000000000000 00000000 01000000 b8", 0},
		{"short header", "2000000000000000", 0},
		{"length zero", ptJoin("0000000000000000 01000000 23000000", tsSec, tsNsec), 0},
		{"length beyond the buffer", ptJoin(cmTSLong, tsSec, tsNsec), 0},
		{"data too short", ptJoin(cmTSLen8, tsSec, tsNsec), 0},
		{"other level", ptJoin(cmTSLvl0, tsSec, tsNsec), 0},
		{"nsec of 1 s", ptJoin(cmTS, tsSec, "00ca9a3b00000000"), 0},
		{"negative nsec", ptJoin(cmTS, tsSec, "ffffffffffffffff"), 0},
		{"negative sec", ptJoin(cmTS, "ffffffffffffffff", tsNsec), 0},
		{"sec beyond int64 ns", ptJoin(cmTS, "0000000000000080", tsNsec), 0},
		{"garbage after another message", ptJoin(cmTOS, "ffffffffffffffffffff"), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns, ok := kernelTimestamp(ptHex(t, c.oob))
			want := c.ns != 0 || c.name == "epoch"
			if ok != want || ns != c.ns {
				t.Errorf("got %d, %v; want %d, %v", ns, ok, c.ns, want)
			}
		})
	}
}

// FuzzKernelTimestamp: no control data makes the parser panic, loop or
// disagree with golang.org/x/sys/unix's parser (which allocates, so the
// partner does not use it) where that one accepts the data.
func FuzzKernelTimestamp(f *testing.F) {
	le64 := runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"
	if le64 {
		for _, s := range []string{
			ptJoin(cmTS, tsSec, tsNsec), ptJoin(cmTOS, cmTSNew, tsSec, tsNsec), ptJoin(cmTSLen8, tsSec, tsNsec), cmTOS, "",
		} {
			f.Add(ptHex(f, s))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ns, ok := kernelTimestamp(in)
		if ok && ns < 0 || !ok && ns != 0 {
			t.Fatalf("got %d, %v", ns, ok)
		}
		// x/sys casts the bytes to a Cmsghdr: give it an aligned copy.
		msgs, err := unix.ParseSocketControlMessage(append(make([]byte, 0, len(in)+8), in...))
		if err != nil {
			return
		}
		wantNs, wantOK := int64(0), false
		for _, m := range msgs {
			if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SO_TIMESTAMPNS_OLD && m.Header.Type != unix.SO_TIMESTAMPNS_NEW {
				continue
			}
			size := timespecLen / 2
			if m.Header.Type == unix.SO_TIMESTAMPNS_NEW {
				size = 8
			}
			if len(m.Data) >= 2*size {
				sec, nsec := readInt(m.Data, size), readInt(m.Data[size:], size)
				if sec >= 0 && sec <= (math.MaxInt64-999_999_999)/1_000_000_000 && nsec >= 0 && nsec < 1e9 {
					wantNs, wantOK = sec*1e9+nsec, true
				}
			}
			break
		}
		if ns != wantNs || ok != wantOK {
			t.Fatalf("% x: got %d, %v; x/sys reads %d, %v", in, ns, ok, wantNs, wantOK)
		}
	})
}

func readInt(b []byte, size int) int64 {
	if size == 8 {
		return int64(binary.NativeEndian.Uint64(b))
	}
	return int64(int32(binary.NativeEndian.Uint32(b)))
}

// ptTimedRun sends a handshake then measurements 0…n−1 through the rig,
// each after the reply to the previous one, so that none is lost.
func ptTimedRun(r *ptRig, first, n int) {
	r.t.Helper()
	for seq := first; seq < first+n; seq++ {
		r.send(ptDatagram(float64(seq), 9, 9, 9, 1, 1, 1, 1))
		r.recv()
	}
}

// TestPartnerTimesSends: over real loopback sockets, the partner takes a
// kernel timestamp of every measurement and times each pair of consecutive
// seq. Only counts are checked: a loaded machine may be slow, never wrong.
func TestPartnerTimesSends(t *testing.T) {
	const n = 200
	r := ptNewRig(t, nil)
	if !r.p.kernelClock {
		t.Fatal("the partner has no kernel timestamps on this Linux")
	}
	ptTimedRun(r, -1, 1)
	ptTimedRun(r, 0, n)
	s := r.p.SendTiming()
	if s.Clock != ClockKernel || s.Intervals != n-1 || s.Deviations != n-2 || s.Gaps != 0 || s.Missed != 0 || s.Backward != 0 {
		t.Fatalf("send timing %+v, want %d intervals on the kernel clock", s, n-1)
	}
	if s.RateHz <= 0 || s.MeanIntervalNs <= 0 {
		t.Errorf("rate %v Hz, mean %v ns", s.RateHz, s.MeanIntervalNs)
	}
	// A re-handshake, then a restart of the model: one gap each.
	ptTimedRun(r, -1, 1)
	ptTimedRun(r, 0, 10)
	r.p.Restart()
	ptTimedRun(r, 10, 10)
	s = r.p.SendTiming()
	if s.Intervals != n-1+9+9 || s.Gaps != 2 {
		t.Errorf("after a handshake and a restart: %+v, want %d intervals and 2 gaps", s, n-1+18)
	}
}

// TestPartnerKernelTimestampIsRealtime: the timestamp parsed from a real
// read is on CLOCK_REALTIME (checked to the hour, which no load can miss).
func TestPartnerKernelTimestampIsRealtime(t *testing.T) {
	replies, master := ptListen(t), ptListen(t)
	p, err := NewPartner(ptConfig(master, replies))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := master.WriteToUDPAddrPort(ptDatagram(1, 0, 0, 0, 0, 0, 0, 0), p.Addr()); err != nil {
		t.Fatal(err)
	}
	p.rx.SetReadDeadline(time.Now().Add(ptWait))
	_, oobn, _, _, err := p.rx.ReadMsgUDPAddrPort(p.rbuf, p.oob)
	if err != nil {
		t.Fatal(err)
	}
	ns, ok := kernelTimestamp(p.oob[:oobn])
	if d := time.Since(time.Unix(0, ns)); !ok || d.Abs() > time.Hour {
		t.Errorf("kernel timestamp %d (%v ago), ok %v, from % x", ns, d, ok, p.oob[:oobn])
	}
}

// TestPartnerUserClockFallback: without kernel timestamps the partner times
// with its own clock and says so.
func TestPartnerUserClockFallback(t *testing.T) {
	master, replies := ptListen(t), ptListen(t)
	p, err := newPartner(ptConfig(master, replies), false)
	if err != nil {
		t.Fatal(err)
	}
	r := &ptRig{t: t, master: master, replies: replies, p: p, buf: make([]byte, 2048)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	ptTimedRun(r, 0, 20)
	if s := p.SendTiming(); s.Clock != ClockUser || s.Intervals != 19 || s.Missed != 0 {
		t.Errorf("send timing %+v, want 19 intervals on the user clock", s)
	}
}

// TestPartnerReceiveAllocs: reading a datagram with its timestamp, timing it,
// answering it allocates nothing.
func TestPartnerReceiveAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates for system calls")
	}
	for _, kernel := range []bool{true, false} {
		master, replies := ptListen(t), ptListen(t)
		p, err := newPartner(ptConfig(master, replies), kernel)
		if err != nil {
			t.Fatal(err)
		}
		in := ptDatagram(0, 1, 2, 3, 0.1, 0.2, 0.3, 0.4)
		to := p.Addr()
		seq := 0.0
		var failed error
		one := func() {
			binary.LittleEndian.PutUint64(in, math.Float64bits(seq))
			seq++
			if _, err := master.WriteToUDPAddrPort(in, to); err != nil {
				failed = err
			}
			if err := p.receiveOne(); err != nil {
				failed = err
			}
		}
		one() // warm up
		allocs := testing.AllocsPerRun(300, one)
		s := p.SendTiming()
		p.Close()
		if failed != nil {
			t.Fatal(failed)
		}
		if allocs != 0 {
			t.Errorf("kernel timestamps %v: %v allocations per datagram, want 0", kernel, allocs)
		}
		if s.Intervals != 301 || s.Missed != 0 {
			t.Errorf("kernel timestamps %v: %+v, want 301 intervals", kernel, s)
		}
	}
}
