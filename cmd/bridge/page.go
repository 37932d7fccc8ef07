package main

import (
	"time"

	"github.com/labbridge/bridge/config"
	"github.com/labbridge/bridge/logging"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/statuspage"
)

// statusSnapshot reads every link for the status page, with the last
// warnings and errors that ring kept (nil: none). It runs on the metrics
// server's goroutine: the links' vectors and counters are atomics the loop
// publishes.
func statusSnapshot(links []*config.Built, clock *realtime.Clock, ring *logging.Ring, from string, started time.Time) func() statuspage.Snapshot {
	return func() statuspage.Snapshot {
		s := statuspage.Snapshot{Version: version, Config: from, Started: started, Links: make([]statuspage.Link, 0, len(links))}
		if ring != nil {
			s.Errors = ring.Recent()
		}
		for _, b := range links {
			l := pageLink(b, snapshot(b))
			// The state and its time from one read of the link: the
			// supervisor's event for it may still be on its way.
			st, at := b.Link.StateSince()
			l.State, l.StateSince = st.String(), clock.Time(at)
			s.Links = append(s.Links, l)
		}
		return s
	}
}

// pageLink is the terminal row r of b, with the vectors by field and the
// active faults, as the status page shows it.
func pageLink(b *config.Built, r linkRow) statuspage.Link {
	l := statuspage.Link{
		Name: r.Name, State: r.State, RateHz: b.Config.RateHz, Seq: r.Seq, Last: r.Last,
		Exchanges: r.Exchanges, RTTMs: float64(r.RTT) / float64(time.Millisecond),
		Counts: statuspage.Counts{
			OK: r.OK, OKNoDelay: r.OKNoDelay, Timeouts: r.Timeout, Desyncs: r.Desync,
			Reconnects: r.Reconn, Drops: r.Drop, Overruns: r.Overrun, Late: r.Late,
		},
		Status: r.Deps,
	}
	if b.Config.Plant != nil {
		l.Kind = b.Config.Plant.Kind()
	}
	if r.Exchanges > 0 {
		l.OKPct = 100 * float64(r.OK+r.OKNoDelay) / float64(r.Exchanges)
	}
	cmd := make([]float64, b.Layout.CommandLen())
	b.Link.Command(cmd)
	l.Command = fields(b.Layout.Command, cmd)
	meas := make([]float64, b.Layout.MeasureLen())
	if b.Link.Measurement(meas) {
		l.Measurement = fields(b.Layout.Measure, meas)
	} else {
		meas = nil
	}
	pageParts(b, &l, meas)
	if b.Faults != nil {
		for _, f := range b.Faults.Active() {
			l.Faults = append(l.Faults, statuspage.Fault{Name: f.Name, Title: f.Title, Detail: f.Detail, Since: f.Since})
		}
	}
	return l
}

// fields cuts v into the layout's fields.
func fields(layout []plant.Field, v []float64) []statuspage.Vector {
	out := make([]statuspage.Vector, 0, len(layout))
	for _, f := range layout {
		out = append(out, statuspage.Vector{Name: f.Name, Unit: f.Unit, Values: v[:f.Len:f.Len]})
		v = v[f.Len:]
	}
	return out
}
