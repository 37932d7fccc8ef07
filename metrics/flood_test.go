package metrics

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/labbridge/bridge/internal/testutil"
)

// scene stands for a link whose every tick opens a connection, as the V-REP
// link does with the seed's scene: the link that 20,000 idle connections to
// the metrics port once failed with "socket: too many open files".
type scene struct {
	ln        net.Listener
	exchanges atomic.Int64
	failures  atomic.Int64
	firstErr  atomic.Pointer[error]
	stop      chan struct{}
	wg        sync.WaitGroup
}

func startScene(t *testing.T) *scene {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scene{ln: ln, stop: make(chan struct{})}
	s.wg.Go(func() { // the scene: one byte back per connection
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var b [1]byte
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Read(b[:]); err == nil {
				_, _ = c.Write(b[:])
			}
			c.Close()
		}
	})
	s.wg.Go(func() { // the link: one exchange on a new connection per tick
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			if err := s.exchange(); err != nil {
				s.failures.Add(1)
				s.firstErr.CompareAndSwap(nil, &err)
				continue
			}
			s.exchanges.Add(1)
		}
	})
	t.Cleanup(func() {
		close(s.stop)
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *scene) exchange() error {
	c, err := net.DialTimeout("tcp", s.ln.Addr().String(), 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b := []byte{7}
	if _, err := c.Write(b); err != nil {
		return err
	}
	_, err = io.ReadFull(c, b)
	return err
}

// A flood of idle and slowloris connections while a link runs: the server
// holds at most maxConns of them, its heap stays bounded, /healthz answers
// and the link never fails. The process's soft limit on open files is set
// to what the flood's clients, the server's maxConns and a margin need, so
// a server that kept every connection would take the link's files; it needs
// no more than a CI default of 1024.
func TestServerFloodWhileLinkRuns(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("RLIMIT_NOFILE: %v", err)
	}
	base := startServer(t, prometheus.NewRegistry(), nil)
	addr := base[len("http://"):]
	sc := startScene(t)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
	testutil.WaitForWithin(t, 2*time.Minute, "the link's first exchanges", func() bool { return sc.exchanges.Load() >= 10 })

	const margin = 192 // the test's own files: the poller, the link's sockets in TIME_WAIT cost none
	fdsBefore, heapBefore := openFDs(t), heapInuse()
	n := int(min(2000, lim.Max-uint64(fdsBefore)-maxConns-margin))
	if lim.Max > 1<<20 {
		n = 2000
	}
	if n < 4*maxConns {
		t.Skipf("the hard limit on open files (RLIMIT_NOFILE %d) leaves room for %d connections: too few to flood; raise it with ulimit -Hn 4096", lim.Max, n)
	}
	tight := lim
	tight.Cur = uint64(fdsBefore + n + maxConns + margin)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &tight); err != nil {
		t.Skipf("setting RLIMIT_NOFILE to %d: %v", tight.Cur, err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })

	clients := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	serverFDs := 0 // the most seen: open files less the test's own clients
	sampleFDs := func() { serverFDs = max(serverFDs, openFDs(t)-fdsBefore-len(clients)) }
	failedBefore := sc.failures.Load()
	d := net.Dialer{Timeout: 30 * time.Second}
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("flood stopped at %d connections: %v", i, err)
		}
		if i%2 == 1 { // slowloris: half a header, a byte more later
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow")
		}
		clients = append(clients, c)
		if i%100 == 0 {
			sampleFDs()
		}
	}
	// The slow ones dribble a byte each while /healthz is asked and the
	// link ticks.
	stopDribble := make(chan struct{})
	var dribble sync.WaitGroup
	dribble.Go(func() {
		for {
			for i := 1; i < len(clients); i += 2 {
				select {
				case <-stopDribble:
					return
				default:
				}
				_, _ = clients[i].Write([]byte{'a'})
			}
			select {
			case <-stopDribble:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	exBefore := sc.exchanges.Load()
	testutil.WaitForWithin(t, 2*time.Minute, "/healthz 200 during the flood", func() bool {
		sampleFDs()
		code, _ := getWith(client, base+"/healthz")
		return code == http.StatusOK
	})
	testutil.WaitForWithin(t, 2*time.Minute, "the link's exchanges during the flood", func() bool {
		sampleFDs()
		return sc.exchanges.Load() >= exBefore+50
	})
	heapDuring := heapInuse()
	close(stopDribble)
	dribble.Wait()

	if f := sc.failures.Load() - failedBefore; f > 0 {
		err := sc.firstErr.Load()
		t.Errorf("the link failed %d exchanges during the flood, the first: %v", f, *err)
		if errors.Is(*err, syscall.EMFILE) {
			t.Errorf("the server took the link's files")
		}
	}
	const fdMargin = 32
	if serverFDs > maxConns+fdMargin {
		t.Errorf("the server held %d more open files with %d clients connected, want at most %d", serverFDs, len(clients), maxConns+fdMargin)
	}
	const heapBound = 16 << 20
	if heapDuring > heapBefore+heapBound {
		t.Errorf("heap in use %d bytes during the flood, %d before: grew more than %d", heapDuring, heapBefore, heapBound)
	}
	for _, c := range clients {
		c.Close()
	}
	clients = clients[:0]
	testutil.WaitForWithin(t, 2*time.Minute, "the open files back to before the flood", func() bool { return openFDs(t) <= fdsBefore+fdMargin })
	t.Logf("flood of %d connections (half slowloris) with a link running, RLIMIT_NOFILE %d: server's open files at most +%d; heap in use before %.1f MiB, during %.1f MiB; link exchanges %d, failures %d",
		n, tight.Cur, serverFDs, mib(heapBefore), mib(heapDuring), sc.exchanges.Load(), sc.failures.Load())
}
