package metrics

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// Limits of the HTTP server, so that clients cannot take the file
// descriptors, memory or CPU that the links need: 20,000 idle connections
// once made a V-REP link fail with "too many open files".
const (
	// maxConns is how many connections are open at once.
	maxConns = 64
	// Requests in flight per endpoint, each answered with 503 and
	// Retry-After beyond its budget before any work is done. /healthz has
	// its own, so a flood on / or /metrics cannot starve it.
	healthzInFlight  = 4
	metricsInFlight  = 4 // a scrape allocates (docs/realtime.md §9.3)
	snapshotInFlight = 2 // /status.json: a snapshot of every link
	cameraInFlight   = 2 // /camera/: a JPEG encoded per request
	pageInFlight     = 8 // the rest of the status page
)

// shedResponse is written to a connection accepted beyond the limit, before
// it is closed.
const shedResponse = "HTTP/1.1 503 Service Unavailable\r\n" +
	"Retry-After: 1\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Content-Length: 30\r\n\r\nmetrics: too many connections\n"

// limitListener keeps at most max connections open. Beyond that it makes room
// by closing the oldest connection that is idle (no request yet, or
// keep-alive between requests, as http.Server reports through connState);
// when every connection is busy it answers the new one 503 and closes it.
//
// It accepts and sheds rather than leaving the others in the kernel's backlog:
// a backlog full of idle clients would hold a health check behind them, then
// drop new connections altogether, while an idle flood that is accepted and
// closed costs nothing and lets /healthz in.
type limitListener struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[*limitConn]struct{}
	seq   uint64

	shed    atomic.Uint64 // answered 503 and closed at once
	evicted atomic.Uint64 // idle ones closed to make room
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: max, conns: make(map[*limitConn]struct{}, max)}
}

type limitConn struct {
	net.Conn
	l     *limitListener
	seq   uint64       // admission order: the oldest idle one goes first
	state atomic.Int32 // http.ConnState; StateNew until the server says more
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
		// A fresh socket's send buffer takes these few bytes without
		// blocking the accept loop.
		_, _ = io.WriteString(c, shedResponse)
		_ = c.Close()
	}
}

// admit gives c a place, closing the oldest idle connection if there is none
// free; nil if every place is busy.
func (l *limitListener) admit(c net.Conn) *limitConn {
	l.mu.Lock()
	var victim *limitConn
	if len(l.conns) >= l.max {
		for lc := range l.conns {
			if st := http.ConnState(lc.state.Load()); st != http.StateNew && st != http.StateIdle {
				continue
			}
			if victim == nil || lc.seq < victim.seq {
				victim = lc
			}
		}
		if victim == nil {
			l.mu.Unlock()
			return nil
		}
		delete(l.conns, victim)
	}
	l.seq++
	lc := &limitConn{Conn: c, l: l, seq: l.seq}
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

// connState is the http.Server's ConnState hook: it tells each connection's
// state to the listener, which evicts only idle ones.
func connState(c net.Conn, st http.ConnState) {
	if lc, ok := c.(*limitConn); ok {
		lc.state.Store(int32(st))
	}
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
