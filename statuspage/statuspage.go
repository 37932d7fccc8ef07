// Package statuspage serves a live status page of the bridge's links: the
// terminal status rows for a bridge that runs under systemd, where nobody
// sees the terminal. It knows nothing of links or configurations: the caller
// hands it a function that reads a Snapshot, called once per request on the
// HTTP server's goroutine, never on a loop thread.
package statuspage

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"math"
	"net/http"
	"time"
)

// page is the whole page: HTML, CSS and the script that polls
// /status.json. No external asset, so that it works on a lab network
// without internet.
//
//go:embed page.html
var page []byte

// Snapshot is the bridge's status at one moment.
type Snapshot struct {
	Version string    `json:"version"`
	Config  string    `json:"config"`
	Started time.Time `json:"started"`
	Links   []Link    `json:"links"`
}

// Link is one link's status.
type Link struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	State string `json:"state"` // starting, handshaking, running, degraded, stopped
	// StateSince is when the state began, when known.
	StateSince time.Time `json:"state_since,omitzero"`
	RateHz     float64   `json:"rate_hz"`
	Seq        int64     `json:"seq"`
	// Last is the last exchange's status.
	Last string `json:"last,omitempty"`
	// OKPct is the replies used (OK and OK_NO_DELAY) of all exchanges, in %.
	OKPct     float64 `json:"ok_pct"`
	Exchanges uint64  `json:"exchanges"`
	Counts    Counts  `json:"counts"`
	// RTTMs is the last reply's latency, from the send of the seq it answers.
	RTTMs float64 `json:"rtt_ms"`
	// LateP99Ms and LateMaxMs are the replies' lateness, when measured.
	LateP99Ms float64 `json:"late_p99_ms,omitempty"`
	LateMaxMs float64 `json:"late_max_ms,omitempty"`
	// Measurement and Command are the vectors by field of the layout.
	Measurement []Vector `json:"measurement"`
	Command     []Vector `json:"command"`
	// Status are extra lines: the camera's frames, the lock, stale ticks.
	Status []string `json:"status,omitempty"`
	Faults []Fault  `json:"faults,omitempty"`
}

// Counts are the link's exchange and loop counters since it started.
type Counts struct {
	OK         uint64 `json:"ok"`
	OKNoDelay  uint64 `json:"ok_no_delay"`
	Timeouts   uint64 `json:"timeouts"`
	Desyncs    uint64 `json:"desyncs"`
	Reconnects uint64 `json:"reconnects"`
	Drops      uint64 `json:"drops"`
	Overruns   uint64 `json:"overruns"`
	Late       uint64 `json:"late"`
}

// Vector is one field of a measurement or a command.
type Vector struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit,omitempty"`
	Values []float64 `json:"values"`
}

// MarshalJSON writes a non-finite value (a lost marker's NaN) as null:
// encoding/json refuses NaN, and one bad value must not blank the page.
func (v Vector) MarshalJSON() ([]byte, error) {
	vals := make([]*float64, len(v.Values))
	for i := range v.Values {
		if x := v.Values[i]; !math.IsNaN(x) && !math.IsInf(x, 0) {
			vals[i] = &v.Values[i]
		}
	}
	return json.Marshal(struct {
		Name   string     `json:"name"`
		Unit   string     `json:"unit,omitempty"`
		Values []*float64 `json:"values"`
	}{v.Name, v.Unit, vals})
}

// UnmarshalJSON reads null back as NaN.
func (v *Vector) UnmarshalJSON(data []byte) error {
	var w struct {
		Name   string     `json:"name"`
		Unit   string     `json:"unit"`
		Values []*float64 `json:"values"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	v.Name, v.Unit, v.Values = w.Name, w.Unit, make([]float64, len(w.Values))
	for i, p := range w.Values {
		v.Values[i] = math.NaN()
		if p != nil {
			v.Values[i] = *p
		}
	}
	return nil
}

// Fault is a fault active now.
type Fault struct {
	Name   string    `json:"name"`
	Title  string    `json:"title"`
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
}

// Handler serves the page at GET / and the snapshot at GET /status.json.
// snap is called once per /status.json request.
func Handler(snap func() Snapshot) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(page))
	})
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, _ *http.Request) {
		// Now is the server's clock, so that the page's uptime does not
		// depend on the browser's clock being right.
		body, err := json.Marshal(struct {
			Snapshot
			Now time.Time `json:"now"`
		}{snap(), time.Now()})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(append(body, '\n'))
	})
	return mux
}
