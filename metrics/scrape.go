package metrics

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// scrapeEvery is how often /metrics gathers at most; a scrape within it of
// the last gather gets that gather's answer. Under 500 clients, 85 MB/s of
// the process's allocation was /metrics gathering anew for each request
// (the registry, /proc parsed by the process collector, the runtime's
// statistics), which made 37 GC cycles a minute, each a pause of every
// loop that wakes inside it (docs/realtime.md §17). Prometheus scrapes
// every second at the most, and every sample is at most this old.
const scrapeEvery = 250 * time.Millisecond

// scrapeKinds is how many answers are kept, one per pair of Accept and
// Accept-Encoding headers (text or protobuf, plain or gzip): a bound on
// what clients' headers can make the cache hold.
const scrapeKinds = 4

// scrapeCache answers /metrics from the last gather made within every for
// the same Accept and Accept-Encoding. Gathers run one at a time: requests
// that arrive during one wait for it and share its answer. The gather runs
// to the end even if its client leaves (its answer serves the others), so
// a shutdown does not log a failed encoding for every scrape in flight.
type scrapeCache struct {
	next  http.Handler
	every time.Duration
	now   func() time.Time

	gather  sync.Mutex   // held while next renders
	waiting atomic.Int32 // requests waiting for another's gather
	mu      sync.Mutex
	kept    [scrapeKinds]scrape
	oldest  int // the place the next new kind takes when all are used
}

// scrape is one kept answer; body and header are never changed once kept.
type scrape struct {
	key    string
	at     time.Time
	status int
	header http.Header
	body   []byte
}

func newScrapeCache(next http.Handler, every time.Duration, now func() time.Time) *scrapeCache {
	return &scrapeCache{next: next, every: every, now: now}
}

func (c *scrapeCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Accept") + "\x00" + r.Header.Get("Accept-Encoding")
	if s, ok := c.fresh(key); ok {
		s.writeTo(w)
		return
	}
	c.waiting.Add(1)
	c.gather.Lock()
	c.waiting.Add(-1)
	s, ok := c.fresh(key) // gathered while this one waited
	if !ok {
		rec := &answerRecorder{header: http.Header{}, status: http.StatusOK}
		c.next.ServeHTTP(rec, r.WithContext(context.WithoutCancel(r.Context())))
		s = scrape{key: key, at: c.now(), status: rec.status, header: rec.header, body: rec.body.Bytes()}
		if s.status == http.StatusOK {
			c.keep(s)
		}
	}
	c.gather.Unlock()
	s.writeTo(w)
}

// fresh is the kept answer for key if it is younger than every.
func (c *scrapeCache) fresh(key string) (scrape, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.kept {
		if s.header != nil && s.key == key && c.now().Sub(s.at) < c.every {
			return s, true
		}
	}
	return scrape{}, false
}

func (c *scrapeCache) keep(s scrape) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.kept {
		if c.kept[i].header == nil || c.kept[i].key == s.key {
			c.kept[i] = s
			return
		}
	}
	c.kept[c.oldest] = s
	c.oldest = (c.oldest + 1) % len(c.kept)
}

func (s scrape) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range s.header {
		h[k] = v
	}
	w.WriteHeader(s.status)
	_, _ = w.Write(s.body)
}

// answerRecorder is the http.ResponseWriter a gather writes into.
type answerRecorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *answerRecorder) Header() http.Header { return r.header }

func (r *answerRecorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *answerRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}
