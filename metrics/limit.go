package metrics

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of the HTTP server, so that clients cannot take the file
// descriptors, memory or CPU that the links need: 20,000 idle connections
// once made a V-REP link fail with "too many open files".
const (
	// maxConns is how many connections are open at once.
	maxConns = 64
	// Connections shed at once with their request read first, for at most
	// shedRead: a client whose request is read gets the 503 as an answer
	// (a 503 written before the request arrives reaches many HTTP clients
	// as a broken connection). Beyond that they are closed unanswered.
	maxShedding = 8
	shedRead    = 100 * time.Millisecond
	// Requests in flight per endpoint, each answered with 503 and
	// Retry-After beyond its budget before any work is done. /healthz has
	// its own, so a flood on / or /metrics cannot starve it.
	healthzInFlight  = 4
	metricsInFlight  = 4 // a scrape allocates (docs/realtime.md §9.3)
	snapshotInFlight = 2 // /status.json: a snapshot of every link
	cameraInFlight   = 2 // /camera/: a JPEG encoded per request
	pageInFlight     = 8 // the rest of the status page
	// handlersRunning is how many handlers run Go code at once, every
	// endpoint together (cpuGate).
	handlersRunning = 1
)

// shedResponse is written to a connection accepted beyond the limit, before
// it is closed.
const shedResponse = "HTTP/1.1 503 Service Unavailable\r\n" +
	"Retry-After: 1\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Content-Length: 30\r\n\r\nmetrics: too many connections\n"

// limitListener keeps at most max connections open. Beyond that it makes room
// by closing the connection that has waited longest without a request being
// served (never one whose request is in a handler): one with no request yet,
// one between keep-alive requests, or one still sending its header, as a
// slowloris client does byte by byte. When every place is serving, the new
// connection is answered 503 and closed.
//
// It accepts and sheds rather than leaving the others in the kernel's backlog:
// a backlog full of idle clients would hold a health check behind them, then
// drop new connections altogether, while an idle flood that is accepted and
// closed costs nothing and lets /healthz in. A newcomer always gets a place
// while one is waiting: protecting young connections from eviction instead
// (shedding the newcomer) let a flood that redials what is closed keep a
// health check out in 28 of 40 polls. Evicting slow headers keeps slowloris
// from holding every place until the header timeout.
type limitListener struct {
	net.Listener
	max int
	now func() time.Duration // monotonic

	mu    sync.Mutex
	conns map[*limitConn]struct{}

	shedding chan struct{} // a place per connection being shed
	shedders sync.WaitGroup

	shed    atomic.Uint64 // answered 503 (or closed) at once
	evicted atomic.Uint64 // waiting ones closed to make room
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	start := time.Now()
	return &limitListener{Listener: ln, max: max,
		now: func() time.Duration { return time.Since(start) }, conns: make(map[*limitConn]struct{}, max),
		shedding: make(chan struct{}, maxShedding)}
}

type limitConn struct {
	net.Conn
	l       *limitListener
	waiting atomic.Int64 // l.now() when it was admitted or last went idle
	serving atomic.Bool  // a request is in a handler or its answer is being sent
	// gated is the cpuGate in which this connection's handler holds a
	// place, nil outside one. It is used by the connection's serving
	// goroutine only: its handler and its writes (HTTP/1 runs a handler on
	// the goroutine that reads and answers the connection; the server's
	// background read only reads).
	gated cpuGate
	once  sync.Once
	err   error
}

// Close releases the connection's place; closing twice (an eviction, then
// the server) is harmless.
func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.release(c)
		c.err = c.Conn.Close()
	})
	return c.err
}

// Write gives the connection's place in the CPU gate up while the answer is
// written, which waits on the client when the socket's buffer is full: a
// client that reads slowly must not hold the place other handlers need.
func (c *limitConn) Write(b []byte) (int, error) {
	g := c.gated
	if g == nil {
		return c.Conn.Write(b)
	}
	g.leave()
	n, err := c.Conn.Write(b)
	g.enter()
	return n, err
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
		l.shed.Add(1)
		select {
		case l.shedding <- struct{}{}:
			l.shedders.Go(func() {
				defer func() { <-l.shedding }()
				shed(c)
			})
		default:
			_ = c.Close()
		}
	}
}

// Close closes the listener and waits for the connections being shed.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.shedders.Wait()
	return err
}

// shed reads c's request head, for at most shedRead, answers it 503 and
// closes it.
func shed(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(shedRead))
	var buf [1024]byte
	var tail [3]byte // the last bytes of the previous read, for a split "\r\n\r\n"
	for {
		n, err := c.Read(buf[:])
		if n > 0 {
			var both [len(tail) + len(buf)]byte
			m := copy(both[:], tail[:])
			m += copy(both[m:], buf[:n])
			if bytes.Contains(both[:m], []byte("\r\n\r\n")) {
				break
			}
			copy(tail[:], both[m-len(tail):m])
		}
		if err != nil {
			break
		}
	}
	// The socket's send buffer takes these few bytes at once.
	_ = c.SetDeadline(time.Now().Add(shedRead))
	_, _ = io.WriteString(c, shedResponse)
}

// admit gives c a place, closing the connection that has waited longest
// without a request in a handler when there is no free place; nil if there
// is none to close.
func (l *limitListener) admit(c net.Conn) *limitConn {
	now := l.now()
	l.mu.Lock()
	var victim *limitConn
	if len(l.conns) >= l.max {
		var oldest time.Duration
		for lc := range l.conns {
			if lc.serving.Load() {
				continue
			}
			if w := time.Duration(lc.waiting.Load()); victim == nil || w < oldest {
				victim, oldest = lc, w
			}
		}
		if victim == nil {
			l.mu.Unlock()
			return nil
		}
		delete(l.conns, victim)
	}
	lc := &limitConn{Conn: c, l: l}
	lc.waiting.Store(int64(now))
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Add(1)
		_ = victim.Close()
	}
	return lc
}

func (l *limitListener) release(c *limitConn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
}

// open returns how many connections hold a place.
func (l *limitListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// connState is the http.Server's ConnState hook: a connection goes idle once
// its answer is sent, and starts waiting again.
func connState(c net.Conn, st http.ConnState) {
	if lc, ok := c.(*limitConn); ok && st == http.StateIdle {
		lc.waiting.Store(int64(lc.l.now()))
		lc.serving.Store(false)
	}
}

// connKey holds a request's *limitConn in its context.
type connKey struct{}

// connContext is the http.Server's ConnContext hook.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// serving marks a request's connection as serving from the handler's start
// until the server reports it idle (its answer flushed), so the listener
// never evicts it: a header read in full is a request being answered, not
// a slowloris.
func serving(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(connKey{}).(*limitConn); ok {
			lc.serving.Store(true)
		}
		h.ServeHTTP(w, r)
	})
}

// cpuGate bounds how many handlers run Go code at once. Without it, 500
// clients kept up to 20 handlers runnable (every endpoint's budget), more
// than the process has Ps for: a link's loop thread, waking from its sleep
// without a P (the runtime hands an idle syscall's P to runnable work, and
// preempts a goroutine that kept its P for 10 ms), then waited behind them
// in the run queue, up to 134 ms at 1 kHz (docs/realtime.md §3). Waiting
// for a place parks a handler's goroutine: it is not runnable and takes no
// P. A handler gives its place up while its answer is written to a slow
// client (limitConn.Write). /healthz stays outside: it costs nothing and
// must answer while a scrape runs.
type cpuGate chan struct{}

func newCPUGate(n int) cpuGate { return make(cpuGate, n) }

func (g cpuGate) enter() { g <- struct{}{} }
func (g cpuGate) leave() { <-g }

// gated runs h inside g.
func gated(g cpuGate, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.enter()
		lc, _ := r.Context().Value(connKey{}).(*limitConn)
		if lc != nil {
			lc.gated = g
		}
		defer func() {
			if lc != nil {
				lc.gated = nil
			}
			g.leave()
		}()
		h.ServeHTTP(w, r)
	})
}

// inFlight serves at most n requests of h at once; the others get 503 with
// Retry-After before h does any work.
func inFlight(n int, h http.Handler) http.Handler {
	sem := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, "metrics: too many requests in flight, retry later", http.StatusServiceUnavailable)
		}
	})
}
