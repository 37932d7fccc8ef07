package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/labbridge/bridge/plant"
)

var (
	// ErrServed: Serve was called while another Serve runs.
	ErrServed = errors.New("metrics: server already serving")
	// ErrClosed: Serve was called after Close. It wraps plant.ErrPermanent:
	// a supervisor does not retry it.
	ErrClosed = fmt.Errorf("metrics: server closed (%w)", plant.ErrPermanent)
)

// HTTP timeouts. A scrape of this process takes well under a second
// (docs/realtime.md §9.3); the limits stop slow or stuck clients from holding
// one of the few connections (maxConns): headers dribbled in (slowloris) are
// cut after readHeaderTimeout, a keep-alive connection idle for idleTimeout
// is closed.
const (
	readHeaderTimeout = 2 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 5 * time.Second
	shutdownTimeout   = 3 * time.Second
)

// Server serves /metrics, /healthz and an index page: the routes, or the
// caller's (ListenWith).
type Server struct {
	addr    net.Addr // bound by Listen, kept across Serves
	handler http.Handler
	errLog  *log.Logger
	logger  *slog.Logger
	serving atomic.Bool

	mu     sync.Mutex
	ln     net.Listener // nil once a Serve has released it
	closed bool
}

// Listen binds addr (host:port; port 0 picks a free one, see Addr) and prepares
// the routes; nothing is served before Serve. gatherer is what /metrics
// exposes. health, when not nil, decides /healthz: nil error → 200 "ok",
// otherwise 503 with the error text. A nil logger discards logs.
func Listen(addr string, gatherer prometheus.Gatherer, health func() error, logger *slog.Logger) (*Server, error) {
	return ListenWith(addr, gatherer, health, nil, logger)
}

// ListenWith is Listen with the handler of every other path: index serves
// "/" and what lies under it (the status page). A nil index serves a short
// text index of the routes at "/" only.
func ListenWith(addr string, gatherer prometheus.Gatherer, health func() error, index http.Handler, logger *slog.Logger) (*Server, error) {
	return listenWith(addr, gatherer, health, index, logger, handlersRunning)
}

// listenWith is ListenWith with running handlers at once (cpuGate).
func listenWith(addr string, gatherer prometheus.Gatherer, health func() error, index http.Handler, logger *slog.Logger, running int) (*Server, error) {
	if gatherer == nil {
		return nil, fmt.Errorf("%w: listen %q: nil gatherer", ErrInvalid, addr)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelError)

	mux := http.NewServeMux()
	// Each endpoint has its own budget of requests in flight, and the
	// admitted ones but /healthz's share the CPU gate (limit.go).
	gate := newCPUGate(running)
	scrapes, _ := metricsHandler(gatherer, errLog, gate)
	mux.Handle("/metrics", scrapes)
	mux.Handle("GET /healthz", inFlight(healthzInFlight, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		plainText(w)
		if health != nil {
			if err := health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, err.Error()+"\n")
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})))
	if index != nil {
		// The snapshot and the thumbnails allocate: a budget each.
		mux.Handle("/status.json", inFlight(snapshotInFlight, gated(gate, index)))
		mux.Handle("/camera/", inFlight(cameraInFlight, gated(gate, index)))
		mux.Handle("/", inFlight(pageInFlight, gated(gate, index)))
	} else {
		mux.Handle("GET /{$}", inFlight(pageInFlight, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			plainText(w)
			_, _ = io.WriteString(w, "bridge\n\n/metrics  Prometheus metrics\n/healthz  health: 200 ok or 503 with the reason\n")
		})))
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %q: %w", addr, err)
	}
	return &Server{addr: ln.Addr(), ln: ln, handler: mux, errLog: errLog, logger: logger}, nil
}

// metricsHandler serves /metrics within its budget of requests in flight.
// A scrape within scrapeEvery of the last gather shares its answer without
// entering the gate (scrape.go).
func metricsHandler(gatherer prometheus.Gatherer, errLog *log.Logger, gate cpuGate) (http.Handler, *scrapeCache) {
	c := newScrapeCache(gated(gate, promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog:      errLog,
		ErrorHandling: promhttp.ContinueOnError, // a broken collector must not hide the others
		Timeout:       writeTimeout - time.Second,
	})), scrapeEvery, time.Now)
	return inFlight(metricsInFlight, c), c
}

func plainText(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
}

// Addr returns the bound address.
func (s *Server) Addr() net.Addr { return s.addr }

// Serve serves until ctx is done, then shuts down, giving requests in flight a
// few seconds to finish. It returns nil on such a clean stop, and an error if
// serving fails or the shutdown times out. Serve may be called again after it
// returned (the supervisor's restart after a failure): it listens on the same
// address again. After Close it returns ErrClosed.
func (s *Server) Serve(ctx context.Context) error {
	if !s.serving.CompareAndSwap(false, true) {
		return ErrServed
	}
	defer s.serving.Store(false)
	ln, err := s.listener()
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           serving(s.handler),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ConnState:         connState,
		ConnContext:       connContext,
		ErrorLog:          s.errLog,
	}
	s.logger.Info("metrics: serving", "addr", s.addr.String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(newLimitListener(ln, maxConns)) }()

	select {
	case err := <-errc: // the listener failed on its own; Serve closed it
		return fmt.Errorf("metrics: serve %s: %w", s.addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	if shutErr != nil {
		_ = srv.Close() // drop the stragglers so the serve goroutine ends
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serve %s: %w", s.addr, err)
	}
	if shutErr != nil {
		return fmt.Errorf("metrics: shutdown %s: %w", s.addr, shutErr)
	}
	return nil
}

// listener hands the bound listener to a Serve, or binds the address again
// for a Serve after the first.
func (s *Server) listener() (net.Listener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if ln := s.ln; ln != nil {
		s.ln = nil // http.Server.Serve closes it when it returns
		return ln, nil
	}
	ln, err := net.Listen("tcp", s.addr.String())
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %s again: %w", s.addr, err)
	}
	return ln, nil
}

// Close releases the listener of a server that is not serving; a later Serve
// returns ErrClosed. After Serve has started, cancel its context instead.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.ln == nil {
		return nil
	}
	ln := s.ln
	s.ln = nil
	if err := ln.Close(); err != nil {
		return fmt.Errorf("metrics: close %s: %w", s.addr, err)
	}
	return nil
}
