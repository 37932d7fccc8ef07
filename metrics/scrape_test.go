package metrics

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/labbridge/bridge/internal/testutil"
)

// fakeClock is a settable clock for the scrape cache.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// countingGatherer exposes one counter whose value is the number of gathers.
func countingGatherer(calls *atomic.Int64) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		n := float64(calls.Add(1))
		name, help := "bridge_gathers_total", "Gathers."
		typ := dto.MetricType_COUNTER
		return []*dto.MetricFamily{{Name: &name, Help: &help, Type: &typ,
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: &n}}}}}, nil
	})
}

func scrapeWith(t *testing.T, h http.Handler, encoding string) (int, http.Header, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return rec.Code, rec.Header(), string(body)
}

// A scrape within scrapeEvery of a gather gets that gather's answer; one
// after it gathers anew. Each encoding keeps its own answer, with its own
// headers.
func TestScrapeCacheSharesAGather(t *testing.T) {
	var calls atomic.Int64
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	h, c := metricsHandler(countingGatherer(&calls), discardLog, newCPUGate(1))
	c.now = clock.now

	code, _, first := scrapeWith(t, h, "")
	if code != http.StatusOK || !strings.Contains(first, "bridge_gathers_total 1") {
		t.Fatalf("first scrape = %d %q", code, first)
	}
	clock.add(scrapeEvery - time.Millisecond)
	if _, _, again := scrapeWith(t, h, ""); again != first {
		t.Errorf("a scrape within %v gathered again: %q, want %q", scrapeEvery, again, first)
	}
	// Another encoding is another answer, gathered for it.
	_, hdr, zipped := scrapeWith(t, h, "gzip")
	if hdr.Get("Content-Encoding") != "gzip" || !strings.Contains(zipped, "bridge_gathers_total 2") {
		t.Errorf("gzip scrape: encoding %q, body %q; want gzip of the second gather", hdr.Get("Content-Encoding"), zipped)
	}
	if _, hdr, plain := scrapeWith(t, h, ""); hdr.Get("Content-Encoding") != "" || plain != first {
		t.Errorf("plain scrape after a gzip one: encoding %q, body %q", hdr.Get("Content-Encoding"), plain)
	}
	clock.add(time.Millisecond)
	if _, _, later := scrapeWith(t, h, ""); !strings.Contains(later, "bridge_gathers_total 3") {
		t.Errorf("a scrape %v after the gather = %q, want a new gather", scrapeEvery, later)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d gathers, want 3", n)
	}
}

// An answer other than 200 (a gather that failed) is not kept: the next
// scrape gathers again.
func TestScrapeCacheKeepsNoFailure(t *testing.T) {
	var calls atomic.Int64
	failing := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		calls.Add(1)
		return nil, errors.New("broken collector")
	})
	h, c := metricsHandler(failing, discardLog, newCPUGate(1))
	c.now = (&fakeClock{t: time.Unix(1e9, 0)}).now
	for range 2 {
		if code, _, _ := scrapeWith(t, h, ""); code == http.StatusOK {
			t.Fatalf("a failed gather answered %d", code)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d gathers for two scrapes of a failing gatherer, want 2", n)
	}
}

// Clients' headers choose among at most scrapeKinds kept answers: a new
// kind takes the oldest place.
func TestScrapeCacheBoundsKinds(t *testing.T) {
	var calls atomic.Int64
	h, c := metricsHandler(countingGatherer(&calls), discardLog, newCPUGate(1))
	c.now = (&fakeClock{t: time.Unix(1e9, 0)}).now
	for i := range 3 * scrapeKinds {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", strings.Repeat("x", i))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	kinds := map[string]bool{}
	for _, s := range c.kept {
		kinds[s.key] = true
	}
	if len(kinds) != scrapeKinds || calls.Load() != 3*scrapeKinds {
		t.Errorf("%d kinds kept after %d gathers, want %d of %d", len(kinds), calls.Load(), scrapeKinds, 3*scrapeKinds)
	}
}

// /metrics has its budget of requests in flight: one gathers, the others
// wait for its answer, and one more gets 503 with Retry-After before any
// work is done. Those that waited get the one gather's answer.
func TestScrapeBudget(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	counting := countingGatherer(&calls)
	blocking := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		entered <- struct{}{}
		<-release
		return counting.Gather()
	})
	h, c := metricsHandler(blocking, discardLog, newCPUGate(1))
	c.now = (&fakeClock{t: time.Unix(1e9, 0)}).now // the answer stays fresh however slow the waiters
	bodies := make(chan string, metricsInFlight)
	var wg sync.WaitGroup
	for i := range metricsInFlight {
		wg.Go(func() {
			_, _, body := scrapeWith(t, h, "")
			bodies <- body
		})
		if i == 0 {
			<-entered
		}
	}
	testutil.WaitFor(t, "the others waiting for the gather", func() bool { return c.waiting.Load() == metricsInFlight-1 })
	code, hdr, _ := scrapeWith(t, h, "")
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("scrape beyond %d in flight = %d, Retry-After %q; want 503 with Retry-After", metricsInFlight, code, hdr.Get("Retry-After"))
	}
	close(release)
	wg.Wait()
	close(bodies)
	for body := range bodies {
		if !strings.Contains(body, "bridge_gathers_total 1\n") {
			t.Errorf("a waiting scrape got %q, want the one gather's answer", body)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d gathers for %d scrapes at once, want 1", n, metricsInFlight)
	}
}

// discardLog is the error log of a handler under test.
var discardLog = log.New(io.Discard, "", 0)
