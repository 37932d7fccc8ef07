package loopbench

import (
	"fmt"
	"io"

	"github.com/labbridge/bridge/latency"
	"github.com/labbridge/bridge/simulink"
)

// Replies records a link's reply latencies for `bridge bench link`: a
// simulink.Observer beside the metrics. Its methods run on the loop thread
// and allocate nothing; read it after the run.
type Replies struct {
	h    *latency.Histogram
	late uint64
}

// NewReplies returns an empty recorder.
func NewReplies() *Replies { return &Replies{h: latency.New()} }

// Exchanged implements simulink.Observer.
func (r *Replies) Exchanged(simulink.Status) {}

// Reply implements simulink.Observer.
func (r *Replies) Reply(ns int64, late bool) {
	r.h.Record(ns)
	if late {
		r.late++
	}
}

// Dropped implements simulink.Observer.
func (r *Replies) Dropped(simulink.DropReason) {}

// LinkReport is `bridge bench link`'s result: JSON field names of -json.
type LinkReport struct {
	RateHz    float64           `json:"rate_hz"`
	DurationS float64           `json:"duration_s"`
	Ticks     uint64            `json:"ticks"`
	Overruns  uint64            `json:"overruns"`
	Replies   uint64            `json:"replies"`
	Late      uint64            `json:"late"`
	LatencyUs LatencyUS         `json:"reply_latency_us"`
	Status    map[string]uint64 `json:"status"`
}

// Report summarizes a run of ticks at rateHz for durationS seconds, with
// the master's statistics.
func (r *Replies) Report(rateHz, durationS float64, ticks, overruns uint64, st simulink.MasterStats) LinkReport {
	sum := r.h.Summary()
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	rep := LinkReport{
		RateHz: rateHz, DurationS: durationS, Ticks: ticks, Overruns: overruns, Replies: sum.Count, Late: r.late,
		LatencyUs: LatencyUS{P50: us(sum.P50), P99: us(sum.P99), P999: us(sum.P999), Max: us(sum.Max), Min: us(sum.Min), Mean: sum.Mean / 1e3},
		Status:    map[string]uint64{},
	}
	for i, n := range st.Status {
		rep.Status[simulink.Status(i).String()] = n
	}
	return rep
}

// WriteText prints the report for a person.
func (l LinkReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "link  rate %g Hz  %gs  ticks %d  overruns %d  replies %d  late %d\n"+
		"reply latency µs  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n"+
		"status  OK %d  OK_NO_DELAY %d  DESYNC %d  TIMEOUT %d  RECONNECTED %d  HANDSHAKING %d\n",
		l.RateHz, l.DurationS, l.Ticks, l.Overruns, l.Replies, l.Late,
		l.LatencyUs.P50, l.LatencyUs.P99, l.LatencyUs.P999, l.LatencyUs.Max,
		l.Status["OK"], l.Status["OK_NO_DELAY"], l.Status["DESYNC"], l.Status["TIMEOUT"], l.Status["RECONNECTED"], l.Status["HANDSHAKING"])
	return err
}
