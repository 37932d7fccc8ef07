package metrics

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/labbridge/bridge/internal/testutil"
)

// Beyond its limit the listener closes the connection that has waited
// longest without a request in a handler (no request yet, between
// requests, or a header still coming byte by byte); when every place is
// serving it answers the new one 503 and closes it. The clock is the test's.
func TestLimitListenerEvictsWaitingShedsBusy(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(inner, 2)
	var clock atomic.Int64
	l.now = func() time.Duration { return time.Duration(clock.Load()) }
	at := func(d time.Duration) { clock.Store(int64(d)) }
	type accepted struct {
		c   net.Conn
		err error
	}
	acc := make(chan accepted)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			acc <- accepted{c, err}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		_ = l.Close()
		for a := range acc { // the accept loop ends on the closed listener
			if a.err != nil {
				break
			}
			a.c.Close()
		}
		<-done
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	next := func() *limitConn {
		t.Helper()
		a := <-acc
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a.c.(*limitConn)
	}
	closed := func(c net.Conn, who string) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("read on %s = %v, want EOF", who, err)
		}
	}
	shed := func(want uint64) {
		t.Helper()
		c := dial()
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("shed client: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("shed client got %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if got := l.shed.Load(); got != want {
			t.Errorf("shed = %d, want %d", got, want)
		}
	}

	const sec = time.Second
	at(0)
	_ = dial()
	a := next()
	a.serving.Store(true) // its request is in a handler
	cb := dial()
	b := next()
	connState(b, http.StateActive) // a header still coming, byte by byte
	// b has waited longest without a request in a handler: the newcomer
	// takes its place.
	at(sec)
	_ = dial()
	c := next()
	if got := l.evicted.Load(); got != 1 {
		t.Fatalf("evicted = %d, want 1", got)
	}
	closed(cb, "the slow header's client")
	if l.open() != 2 {
		t.Errorf("open = %d, want 2", l.open())
	}
	// Both serving, however long: the newcomer is shed.
	c.serving.Store(true)
	at(10 * sec)
	shed(1)
	// Answers sent: c idle since 10 s, a since 11 s; c has waited longest.
	connState(c, http.StateIdle)
	at(11 * sec)
	connState(a, http.StateIdle)
	if a.serving.Load() || c.serving.Load() {
		t.Error("serving once idle")
	}
	at(12 * sec)
	_ = dial()
	_ = next()
	if got := l.evicted.Load(); got != 2 {
		t.Fatalf("evicted = %d, want 2", got)
	}
	l.mu.Lock()
	_, kept := l.conns[a]
	l.mu.Unlock()
	if !kept {
		t.Error("a evicted, though c had waited longer")
	}
	// Closing twice releases the place once.
	a.Close()
	a.Close()
	if l.open() != 1 {
		t.Errorf("open after closing one = %d, want 1", l.open())
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting open files: %v", err)
	}
	return len(ents)
}

func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A flood of idle connections (20,000 once took every file descriptor of the
// process) leaves the server with at most maxConns of them open, its heap
// bounded, and /healthz answering.
func TestServerIdleFlood(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("RLIMIT_NOFILE: %v", err)
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
			lim = raised
		}
	}
	base := startServer(t, prometheus.NewRegistry(), nil)
	addr := base[len("http://"):]
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
	if code, _ := getWith(client, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz before the flood: %d", code)
	}

	fdsBefore, heapBefore := openFDs(t), heapInuse()
	n := min(4000, int(min(lim.Cur, 1<<20))-fdsBefore-maxConns-256)
	if n < 4*maxConns {
		t.Skipf("RLIMIT_NOFILE %d leaves room for %d connections: too few to flood", lim.Cur, n)
	}
	clients := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range clients {
			c.Close()
		}
	})
	serverFDs := 0 // the most seen: open files less the test's own
	sampleFDs := func() { serverFDs = max(serverFDs, openFDs(t)-fdsBefore-len(clients)) }
	d := net.Dialer{Timeout: 30 * time.Second}
	for i := range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Logf("flood stopped at %d connections: %v", i, err)
			break
		}
		clients = append(clients, c)
		if i%250 == 0 {
			sampleFDs()
		}
	}
	if len(clients) < 4*maxConns {
		t.Skipf("only %d connections opened: too few to flood", len(clients))
	}
	sampleFDs()
	// A health check takes the place of an idle one.
	testutil.WaitFor(t, "/healthz 200 during the flood", func() bool {
		code, _ := getWith(client, base+"/healthz")
		return code == http.StatusOK
	})
	sampleFDs()
	heapDuring := heapInuse()
	const fdMargin = 16
	if serverFDs > maxConns+fdMargin {
		t.Errorf("the server held %d more open files with %d clients connected, want at most %d", serverFDs, len(clients), maxConns+fdMargin)
	}
	// Without the limit each connection holds about 8 KiB of buffers.
	const heapBound = 16 << 20
	if heapDuring > heapBefore+heapBound {
		t.Errorf("heap in use %d bytes during the flood, %d before: grew more than %d", heapDuring, heapBefore, heapBound)
	}

	for _, c := range clients {
		c.Close()
	}
	clients = clients[:0]
	deadline := time.Now().Add(60 * time.Second)
	for openFDs(t) > fdsBefore+fdMargin {
		if time.Now().After(deadline) {
			t.Fatalf("open files %d after the flood, %d before", openFDs(t), fdsBefore)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fdsAfter, heapAfter := openFDs(t), heapInuse()
	t.Logf("flood of %d idle connections (RLIMIT_NOFILE %d): open files before %d, server's during at most +%d, after %d; heap in use before %.1f MiB, during %.1f MiB, after %.1f MiB",
		n, lim.Cur, fdsBefore, serverFDs, fdsAfter, mib(heapBefore), mib(heapDuring), mib(heapAfter))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func getWith(c *http.Client, url string) (int, string) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitClosed reads c until the server closes it; a client's own deadline,
// far past the server's timeouts, is a failure.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: the server never closed the connection", what)
	}
}

// Clients that send half a header and hold it (slowloris), and keep-alive
// connections left idle, are closed by the server.
func TestServerClosesSlowAndIdle(t *testing.T) {
	base := startServer(t, prometheus.NewRegistry(), nil)
	addr := base[len("http://"):]
	var wg sync.WaitGroup
	for i := range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow"); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { waitClosed(t, c, "slowloris "+strconv.Itoa(i)) })
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("keep-alive /healthz = %d, close %v", resp.StatusCode, resp.Close)
	}
	wg.Go(func() { waitClosed(t, c, "idle keep-alive") })
	wg.Wait()
}

// One handler runs at a time, every endpoint together, but /healthz: a
// handler holding the gate keeps the next one out (parked, not runnable)
// while the health check answers.
func TestCPUGateRunsOneHandlerAtATime(t *testing.T) {
	entered := make(chan string, 2)
	release := make(chan struct{})
	index := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- r.URL.Path
		<-release
		_, _ = io.WriteString(w, "index\n")
	})
	gatherer := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		entered <- "/metrics"
		return nil, nil
	})
	srv, err := ListenWith("127.0.0.1:0", gatherer, func() error { return nil }, index, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	base := "http://" + srv.Addr().String()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()

	wg.Go(func() { _, _ = getWith(client, base+"/status.json") })
	if got := <-entered; got != "/status.json" {
		t.Fatalf("entered %s, want /status.json", got)
	}
	wg.Go(func() { _, _ = getWith(client, base+"/metrics") })
	// The health check answers past the held gate; by then the scrape has
	// long been read and waits for its place.
	if code, body := getWith(client, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while a handler holds the gate = %d %q, want 200", code, body)
	}
	select {
	case got := <-entered:
		t.Errorf("%s ran while /status.json held the gate", got)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if got := <-entered; got != "/metrics" {
		t.Errorf("after the release %s entered, want /metrics", got)
	}
}

// blockingConn's Write waits until unblock is closed.
type blockingConn struct {
	net.Conn
	writing chan struct{}
	unblock chan struct{}
}

func (c *blockingConn) Write(b []byte) (int, error) {
	close(c.writing)
	<-c.unblock
	return len(b), nil
}

// A handler's answer written to a client that does not read gives its place
// in the gate up until the write returns, and takes it back before the
// handler goes on.
func TestCPUGateLeftWhileWriting(t *testing.T) {
	g := newCPUGate(1)
	bc := &blockingConn{writing: make(chan struct{}), unblock: make(chan struct{})}
	lc := &limitConn{Conn: bc}
	g.enter()
	lc.gated = g
	wrote := make(chan error, 1)
	go func() {
		_, err := lc.Write([]byte("HTTP/1.1 200 OK\r\n"))
		wrote <- err
	}()
	<-bc.writing
	// The writer left: another handler gets in while the client stalls.
	g.enter()
	g.leave()
	close(bc.unblock)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if len(g) != 1 {
		t.Fatalf("after the write the gate holds %d, want the writer's 1", len(g))
	}
	g.leave()
}
