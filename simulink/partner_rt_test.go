package simulink

import (
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/realtime"
)

// ptFIFO is the priority of the FIFO-mode tests: below a link loop's 80, as
// the built-in partner runs.
const ptFIFO = 79

// ptModes runs body on the netpoller (priority 0) and in the FIFO mode; the
// latter skips where the process may not use SCHED_FIFO.
func ptModes(t *testing.T, body func(t *testing.T, priority int)) {
	t.Run("netpoller", func(t *testing.T) { body(t, 0) })
	t.Run("fifo", func(t *testing.T) {
		ptNeedFIFO(t)
		body(t, ptFIFO)
	})
}

func ptNeedFIFO(t testing.TB) {
	t.Helper()
	if err := probeFIFO(ptFIFO); err != nil {
		t.Skipf("SCHED_FIFO not permitted (%v): run as root, or with LimitRTPRIO=%d / CAP_SYS_NICE, to test the FIFO mode", err, ptFIFO)
	}
}

// TestPartnerFIFOThread: in the FIFO mode the receive loop runs on a thread
// of its own at the configured SCHED_FIFO priority, as the kernel reports it
// (sched_getattr on the thread), and answers over real sockets; on the
// netpoller it reports SCHED_OTHER.
func TestPartnerFIFOThread(t *testing.T) {
	ptNeedFIFO(t)
	r := ptNewRig(t, func(c *PartnerConfig) { c.Priority = ptFIFO })
	r.send(ptDatagram(-1, 0, 0, 0, 0, 0, 0, 0))
	r.recv()
	tid := r.p.threadID()
	if tid == 0 {
		t.Fatal("no receive thread recorded after a reply")
	}
	if tid == unix.Gettid() {
		t.Fatal("the receive thread is the test's own")
	}
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatalf("sched_getattr(%d): %v", tid, err)
	}
	if attr.Policy != unix.SCHED_FIFO || attr.Priority != ptFIFO {
		t.Errorf("receive thread %d: policy %d priority %d, want SCHED_FIFO (%d) %d", tid, attr.Policy, attr.Priority, unix.SCHED_FIFO, ptFIFO)
	}
	if attr.Flags&unix.SCHED_FLAG_RESET_ON_FORK == 0 {
		t.Error("a child process would inherit the receive thread's SCHED_FIFO")
	}
	if s := r.p.ThreadSettings(); s.Policy != "SCHED_FIFO" || s.Priority != ptFIFO {
		t.Errorf("ThreadSettings = %+v, want SCHED_FIFO %d", s, ptFIFO)
	}
	if self, err := unix.SchedGetAttr(0, 0); err != nil || self.Policy != 0 { // 0: SCHED_OTHER
		t.Errorf("the test's thread: %+v, %v; want SCHED_OTHER (the probe and the receive thread change only their own)", self, err)
	}

	net := ptNewRig(t, nil)
	if s := net.p.ThreadSettings(); s.Policy != "SCHED_OTHER" || net.p.threadID() != 0 {
		t.Errorf("netpoller mode: ThreadSettings = %+v, thread %d; want SCHED_OTHER and none", s, net.p.threadID())
	}
}

// A pinned partner's receive thread runs on its CPU only, as the kernel
// reports it: a built-in partner takes its loop's.
func TestPartnerFIFOPinned(t *testing.T) {
	ptNeedFIFO(t)
	cpus, err := realtime.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpus[len(cpus)-1]
	r := ptNewRig(t, func(c *PartnerConfig) { c.Priority, c.Pin, c.CPU = ptFIFO, true, cpu })
	r.send(ptDatagram(-1, 0, 0, 0, 0, 0, 0, 0))
	r.recv()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(r.p.threadID(), &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() != 1 || !set.IsSet(cpu) {
		t.Errorf("receive thread may run on %d CPUs (CPU %d: %v), want CPU %d only", set.Count(), cpu, set.IsSet(cpu), cpu)
	}
}

// TestPartnerFIFOStops: cancellation and Close stop the receive thread,
// which releases its thread id, and the sockets are closed once Close
// returns: the port can be bound again.
func TestPartnerFIFOStops(t *testing.T) {
	ptNeedFIFO(t)
	replies := ptListen(t)
	p, err := NewPartner(PartnerConfig{Listen: ptAny, ReplyTo: ptAddr(replies), MeasureLen: 7, CommandLen: 4, Priority: ptFIFO})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(context.Background()) }()
	for end := time.Now().Add(ptWait); p.threadID() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the receive thread did not start")
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	if p.threadID() != 0 {
		t.Error("thread id kept after Serve returned")
	}
	s, err := openSocket(p.Addr(), false, true, 0)
	if err != nil {
		t.Fatalf("the port is still bound after Close: %v", err)
	}
	s.close()
}

// TestPartnerFIFOReceiveAllocs: reading a datagram from the raw socket with
// its kernel timestamp and source, answering it and sending the reply
// allocates nothing, in both clock modes.
func TestPartnerFIFOReceiveAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates for system calls")
	}
	ptNeedFIFO(t)
	for _, kernel := range []bool{true, false} {
		master, replies := ptListen(t), ptListen(t)
		cfg := ptConfig(master, replies)
		cfg.Priority = ptFIFO
		p, err := newPartner(cfg, kernel)
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
			for {
				if _, err := p.rt.rx.wait(int64(ptWait)); err != nil {
					failed = err
					return
				}
				more, err := p.receiveRT()
				if err != nil {
					failed = err
					return
				}
				if more {
					return
				}
			}
		}
		one() // warm up
		allocs := testing.AllocsPerRun(300, one)
		s, st := p.SendTiming(), p.Stats()
		p.Close()
		if failed != nil {
			t.Fatal(failed)
		}
		if allocs != 0 {
			t.Errorf("kernel timestamps %v: %v allocations per datagram, want 0", kernel, allocs)
		}
		if s.Intervals != 301 || s.Missed != 0 || st.Replied != 302 || st.Dropped != 0 {
			t.Errorf("kernel timestamps %v: %+v, %+v; want 301 intervals, 302 replies", kernel, s, st)
		}
		if want := ClockUser; kernel {
			if s.Clock != ClockKernel {
				t.Errorf("clock %q, want %q", s.Clock, ClockKernel)
			}
		} else if s.Clock != want {
			t.Errorf("clock %q, want %q", s.Clock, want)
		}
	}
}

// TestPartnerFIFOSource: the raw socket's source address, decoded without
// allocating, is the sender's, which the Accept filter compares.
func TestPartnerFIFOSource(t *testing.T) {
	ptNeedFIFO(t)
	master, replies := ptListen(t), ptListen(t)
	cfg := ptConfig(master, replies)
	cfg.Priority = ptFIFO
	p, err := NewPartner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := master.WriteToUDPAddrPort(ptDatagram(1, 0, 0, 0, 0, 0, 0, 0), p.Addr()); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.rt.rx.wait(int64(ptWait)); !ok || err != nil {
		t.Fatalf("no datagram: %v", err)
	}
	n, _, ok, err := p.rt.rx.recv(p.rbuf, netip.Addr{})
	if !ok || err != nil || n != DatagramSize(7) {
		t.Fatalf("recv: %d bytes, ok %v, %v", n, ok, err)
	}
	if got, want := p.rt.rx.fromAddrPort(), ptAddr(master); got != want {
		t.Errorf("source %v, want %v", got, want)
	}
	if got, want := p.rbuf[:n], ptDatagram(1, 0, 0, 0, 0, 0, 0, 0); !slices.Equal(got, want) {
		t.Errorf("read % x, want % x", got, want)
	}
}

// BenchmarkPartnerProcessProportional is the model's work per datagram of a
// Meca500-sized link (21 measured values, 6 commands) with the proportional
// controller of bridge sim: decode, step, encode.
func BenchmarkPartnerProcessProportional(b *testing.B) {
	replies := ptListen(b)
	d := Dims{MeasureLen: 21, CommandLen: 6, Feature: Span{Off: 0, Len: 6}}
	ctl, err := NewProportional(d, 1, []float64{30, -20, 25, 0, 40, 45}, 30)
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPartner(PartnerConfig{Listen: ptAny, ReplyTo: ptAddr(replies), MeasureLen: 21, CommandLen: 6, Controller: ctl})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	in := ptDatagram(0, make([]float64, 21)...)
	src := ptAddr(replies)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		binary.LittleEndian.PutUint64(in, math.Float64bits(float64(i+1)))
		if p.process(in, src, p.wbuf) == 0 {
			b.Fatal("no reply")
		}
	}
}

// TestPartnerFIFONotPermitted: where SCHED_FIFO is refused, the partner
// warns once, at NewPartner, and answers on the netpoller, Serve after
// Serve.
func TestPartnerFIFONotPermitted(t *testing.T) {
	var logs strings.Builder
	master, replies := ptListen(t), ptListen(t)
	cfg := ptConfig(master, replies)
	cfg.Priority = ptFIFO
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	refuse := func(int) error { return unix.EPERM }
	p, err := newPartnerProbe(cfg, true, refuse)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.rx == nil || p.rt != nil {
		t.Fatal("not on the netpoller's sockets")
	}
	r := &ptRig{t: t, master: master, replies: replies, p: p, buf: make([]byte, 2048)}
	for range 2 { // a supervisor's restart must not warn again
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Serve(ctx) }()
		// Serve binds the sockets again after the first: send until it
		// answers.
		var got []byte
		for start := time.Now(); got == nil; {
			r.send(ptDatagram(3, 0, 0, 0, 1, 2, 3, 4))
			if err := replies.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			if n, _, err := replies.ReadFromUDPAddrPort(r.buf); err == nil {
				got = slices.Clone(r.buf[:n])
			} else if time.Since(start) > ptWait {
				t.Fatalf("no reply: %v", err)
			}
		}
		if want := ptDatagram(3, 1, 2, 3, 4); !slices.Equal(got, want) {
			t.Errorf("got % x, want % x", got, want)
		}
		if s := p.ThreadSettings(); s.Policy != "SCHED_OTHER" || p.threadID() != 0 {
			t.Errorf("ThreadSettings = %+v, thread %d; want SCHED_OTHER and none", s, p.threadID())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(logs.String(), "SCHED_FIFO not permitted"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "priority=79") || !strings.Contains(logs.String(), "LimitRTPRIO") {
		t.Errorf("the warning names neither the priority nor the fix:\n%s", logs.String())
	}
}

// A partner watched by the spin guard answers as before, and its receive
// thread, blocked between datagrams far longer than its threshold, is not
// demoted: the guard takes only a thread that keeps running.
func TestPartnerFIFOGuarded(t *testing.T) {
	ptNeedFIFO(t)
	g := testutil.SpinGuard(t)
	r := ptNewRig(t, func(c *PartnerConfig) { c.Priority, c.Guard, c.Period = ptFIFO, g, time.Millisecond })
	for i := range 3 {
		r.send(ptDatagram(-1, 0, 0, 0, 0, 0, 0, 0))
		r.recv()
		// Idle for at least 20 of the guard's passes, 5 ms or more, far
		// past the partner's 0.5 ms threshold.
		for before := g.Passes(); g.Passes() < before+20; {
			time.Sleep(time.Millisecond)
		}
		attr, err := unix.SchedGetAttr(r.p.threadID(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if attr.Policy != unix.SCHED_FIFO {
			t.Fatalf("round %d: the idle receive thread has policy %d, want SCHED_FIFO: the guard demoted a blocked thread", i, attr.Policy)
		}
	}
}
