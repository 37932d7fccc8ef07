package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrServed: Serve was called more than once, or after Close.
var ErrServed = errors.New("metrics: server already served or closed")

// HTTP timeouts. A scrape of this process takes well under a second
// (docs/realtime.md §9.3); the limits only stop slow or stuck clients from
// holding connections.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	shutdownTimeout   = 3 * time.Second
)

// Server serves /metrics, /healthz and a small index page.
type Server struct {
	ln     net.Listener
	srv    *http.Server
	logger *slog.Logger
	used   atomic.Bool
}

// Listen binds addr (host:port; port 0 picks a free one, see Addr) and prepares
// the routes; nothing is served before Serve. gatherer is what /metrics
// exposes. health, when not nil, decides /healthz: nil error → 200 "ok",
// otherwise 503 with the error text. A nil logger discards logs.
func Listen(addr string, gatherer prometheus.Gatherer, health func() error, logger *slog.Logger) (*Server, error) {
	if gatherer == nil {
		return nil, fmt.Errorf("%w: listen %q: nil gatherer", ErrInvalid, addr)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelError)

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog:      errLog,
		ErrorHandling: promhttp.ContinueOnError, // a broken collector must not hide the others
		// Scrapes allocate (§9.3); a handful in flight is plenty.
		MaxRequestsInFlight: 4,
		Timeout:             writeTimeout - time.Second,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		plainText(w)
		if health != nil {
			if err := health(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, err.Error()+"\n")
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		plainText(w)
		_, _ = io.WriteString(w, "bridge\n\n/metrics  Prometheus metrics\n/healthz  health: 200 ok or 503 with the reason\n")
	})

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen %q: %w", addr, err)
	}
	return &Server{
		ln:     ln,
		logger: logger,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			ErrorLog:          errLog,
		},
	}, nil
}

func plainText(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
}

// Addr returns the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until ctx is done, then shuts down, giving requests in flight a
// few seconds to finish. It returns nil on such a clean stop, and an error if
// serving fails or the shutdown times out. It may be called once.
func (s *Server) Serve(ctx context.Context) error {
	if !s.used.CompareAndSwap(false, true) {
		return ErrServed
	}
	s.logger.Info("metrics: serving", "addr", s.ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()

	select {
	case err := <-errc: // the listener failed on its own
		return fmt.Errorf("metrics: serve %s: %w", s.ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	shutErr := s.srv.Shutdown(sctx)
	if shutErr != nil {
		_ = s.srv.Close() // drop the stragglers so the serve goroutine ends
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serve %s: %w", s.ln.Addr(), err)
	}
	if shutErr != nil {
		return fmt.Errorf("metrics: shutdown %s: %w", s.ln.Addr(), shutErr)
	}
	return nil
}

// Close releases the listener of a server that will not be served. After
// Serve has started, cancel its context instead.
func (s *Server) Close() error {
	if !s.used.CompareAndSwap(false, true) {
		return ErrServed
	}
	if err := s.ln.Close(); err != nil {
		return fmt.Errorf("metrics: close %s: %w", s.ln.Addr(), err)
	}
	return nil
}
