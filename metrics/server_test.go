package metrics

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/labbridge/bridge/plant"
)

// startServer serves reg until the test ends and returns the base URL.
func startServer(t *testing.T, reg prometheus.Gatherer, health func() error) string {
	t.Helper()
	srv, err := Listen("127.0.0.1:0", reg, health, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve returned %v after cancel, want nil", err)
		}
	})
	return "http://" + srv.Addr().String()
}

// A server served again after it returned (the supervisor's restart) listens
// on the same address and answers; one that was closed refuses for good.
func TestServerServesAgain(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + srv.Addr().String() + "/healthz"
	for round := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if code, _ := tryGet(url); code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %s never answered", round, url)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := srv.Serve(context.Background()); !errors.Is(err, ErrServed) {
			t.Errorf("concurrent Serve = %v, want ErrServed", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("round %d: Serve = %v", round, err)
		}
	}
	srv.Close()
	if err := srv.Serve(context.Background()); !errors.Is(err, ErrClosed) || !errors.Is(err, plant.ErrPermanent) {
		t.Errorf("Serve after Close = %v, want ErrClosed, a permanent failure", err)
	}
}

func tryGet(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// sample returns the value of the exposition line starting with series.
func sample(t *testing.T, body, series string) float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), series+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
		if err != nil {
			t.Fatalf("%s: %v", series, err)
		}
		return v
	}
	t.Fatalf("series %s not in scrape:\n%.2000s", series, body)
	return 0
}

func TestServerScrape(t *testing.T) {
	reg, s := newSet(t)
	l, err := s.Link("x", 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		l.ObserveTick(30_000, 100_000)
	}
	base := startServer(t, reg, nil)

	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	if v := sample(t, body, `bridge_loop_ticks_total{link="x"}`); v != 7 {
		t.Errorf(`bridge_loop_ticks_total{link="x"} = %v, want 7`, v)
	}
	if v := sample(t, body, `bridge_loop_wakeup_lateness_seconds_bucket{link="x",le="0.01"}`); v != 7 {
		t.Errorf("lateness bucket at the period = %v, want 7", v)
	}
	if v := sample(t, body, `bridge_link_state{link="x",state="starting"}`); v != 1 {
		t.Errorf("state starting = %v, want 1", v)
	}
	sample(t, body, "go_goroutines")

	for _, tt := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/", http.StatusOK, "/metrics"},
		{"/healthz", http.StatusOK, "ok"},
		{"/nope", http.StatusNotFound, ""},
	} {
		code, body := get(t, base+tt.path)
		if code != tt.code || !strings.Contains(body, tt.contains) {
			t.Errorf("GET %s = %d %q, want %d containing %q", tt.path, code, body, tt.code, tt.contains)
		}
	}
}

func TestServerHealth(t *testing.T) {
	var failing atomic.Bool
	health := func() error {
		if failing.Load() {
			return errors.New("link servo degraded")
		}
		return nil
	}
	base := startServer(t, prometheus.NewRegistry(), health)
	tests := []struct {
		fail bool
		code int
		body string
	}{
		{false, http.StatusOK, "ok\n"},
		{true, http.StatusServiceUnavailable, "link servo degraded\n"},
		{false, http.StatusOK, "ok\n"},
	}
	for _, tt := range tests {
		failing.Store(tt.fail)
		code, body := get(t, base+"/healthz")
		if code != tt.code || body != tt.body {
			t.Errorf("fail=%v: /healthz = %d %q, want %d %q", tt.fail, code, body, tt.code, tt.body)
		}
	}
}

func TestListenErrors(t *testing.T) {
	if _, err := Listen("127.0.0.1:0", nil, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil gatherer: %v, want ErrInvalid", err)
	}
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The port is taken while srv holds it.
	if _, err := Listen(srv.Addr().String(), prometheus.NewRegistry(), nil, nil); err == nil || !strings.HasPrefix(err.Error(), "metrics: listen") {
		t.Errorf("Listen on a busy port: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := srv.Serve(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close = %v, want ErrClosed", err)
	}
}

// ListenWith hands "/" and every path but /metrics and /healthz to the
// caller's index; the server's own routes stay.
func TestListenWithIndex(t *testing.T) {
	index := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "index "+r.URL.Path)
	})
	srv, err := ListenWith("127.0.0.1:0", prometheus.NewRegistry(), nil, index, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()
	base := "http://" + srv.Addr().String()
	for path, want := range map[string]string{"/": "index /", "/status.json": "index /status.json", "/healthz": "ok\n"} {
		if code, body := get(t, base+path); code != http.StatusOK || body != want {
			t.Errorf("GET %s = %d %q, want 200 %q", path, code, body, want)
		}
	}
	if code, body := get(t, base+"/metrics"); code != http.StatusOK || strings.HasPrefix(body, "index") {
		t.Errorf("GET /metrics = %d %q, want the metrics", code, body)
	}
}

// Each endpoint has its own budget of requests in flight: beyond it a request
// gets 503 with Retry-After before any work is done, and a full status page
// leaves /healthz answering. /metrics: TestScrapeBudget.
func TestServerInFlightBudgets(t *testing.T) {
	entered := make(chan string)
	release := make(chan struct{})
	var indexCalls atomic.Int64
	gatherer := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		entered <- "/metrics"
		<-release
		return nil, nil
	})
	index := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		indexCalls.Add(1)
		entered <- r.URL.Path
		<-release
		_, _ = io.WriteString(w, "index\n")
	})
	// Handlers that wait hold their place in the CPU gate: a gate as wide
	// as the budgets, so that the budgets are what this test meets.
	srv, err := listenWith("127.0.0.1:0", gatherer, nil, index, nil, maxConns)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	base := "http://" + srv.Addr().String()
	var wg sync.WaitGroup
	defer func() {
		close(release) // before waiting: the held requests end
		wg.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	}()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 60 * time.Second}
	for _, tt := range []struct {
		path   string
		budget int
	}{
		{"/status.json", snapshotInFlight},
		{"/camera/x.jpg", cameraInFlight},
		{"/", pageInFlight},
	} {
		for range tt.budget {
			wg.Go(func() { _, _ = getWith(client, base+tt.path) })
			if got := <-entered; got != tt.path {
				t.Fatalf("entered %s, want %s", got, tt.path)
			}
		}
		calls := indexCalls.Load()
		resp, err := client.Get(base + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("GET %s beyond %d in flight = %d, Retry-After %q; want 503 with Retry-After", tt.path, tt.budget, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if indexCalls.Load() != calls {
			t.Errorf("GET %s beyond its budget reached the handler", tt.path)
		}
		if code, body := getWith(client, base+"/healthz"); code != http.StatusOK {
			t.Errorf("/healthz with %s full = %d %q, want 200", tt.path, code, body)
		}
	}
}
