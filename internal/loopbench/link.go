package loopbench

import (
	"fmt"
	"io"
	"math"

	"github.com/labbridge/bridge/internal/latency"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// Replies records a link's reply latencies for `bridge bench link`: a
// simulink.Observer beside the metrics. Its methods run on the loop thread
// and allocate nothing; read it after the run.
type Replies struct {
	h    *latency.Histogram
	late uint64
	// When each TIMEOUT was decided, once KeepTimeouts armed it: the stall
	// watch attributes them (AttributeTimeout).
	clock      *realtime.Clock
	timeouts   []int64
	tosDropped uint64
}

// NewReplies returns an empty recorder.
func NewReplies() *Replies { return &Replies{h: latency.New()} }

// KeepTimeouts records the instant of each of the next capacity TIMEOUTs on
// clock; beyond that they are only counted. Call it before the run.
func (r *Replies) KeepTimeouts(clock *realtime.Clock, capacity int) {
	r.clock, r.timeouts, r.tosDropped = clock, make([]int64, 0, capacity), 0
}

// Timeouts returns the instants KeepTimeouts kept and how many did not fit.
func (r *Replies) Timeouts() ([]int64, uint64) { return r.timeouts, r.tosDropped }

// Exchanged implements simulink.Observer: a TIMEOUT's instant is kept when
// asked, in the room made before the run.
func (r *Replies) Exchanged(st simulink.Status) {
	if st != simulink.Timeout || r.clock == nil {
		return
	}
	if len(r.timeouts) < cap(r.timeouts) {
		r.timeouts = append(r.timeouts, r.clock.Now())
	} else {
		r.tosDropped++
	}
}

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
	Plant     string            `json:"plant"`
	RateHz    float64           `json:"rate_hz"`
	DurationS float64           `json:"duration_s"`
	Ticks     uint64            `json:"ticks"`
	Overruns  uint64            `json:"overruns"`
	Replies   uint64            `json:"replies"`
	Late      uint64            `json:"late"`
	LatencyUs LatencyUS         `json:"reply_latency_us"`
	Status    map[string]uint64 `json:"status"`
	// LeadUs is the lead the loop learned (or was given): how long before
	// each deadline it woke to measure; LateSends the ticks whose measuring
	// overran it, so that their datagram left late.
	LeadUs    float64 `json:"lead_us"`
	LateSends uint64  `json:"late_sends"`
	// Stalls attributes every tick later than the threshold: the
	// machine's (a cyclictest at the loop's priority and period, run
	// concurrently, was late at the same moment) or the bridge's.
	Stalls *StallReport `json:"stalls,omitempty"`
	// The partner's view of the link's sends (SendTimingReport). With an
	// external partner, whose own report gives it, send_deviation_us is
	// absent and send_clock empty.
	SendDeviationUs *DeviationUS `json:"send_deviation_us,omitempty"`
	SendRateHz      float64      `json:"send_rate_hz"`
	SendClock       string       `json:"send_clock"`
	SendIntervals   uint64       `json:"send_intervals"`
	SendGaps        uint64       `json:"send_gaps"`
}

// SetSendTiming adds the partner's view of the sends to the report.
func (l *LinkReport) SetSendTiming(s SendTimingReport) {
	d := s.DeviationUs
	l.SendDeviationUs, l.SendRateHz, l.SendClock, l.SendIntervals, l.SendGaps = &d, s.RateHz, s.Clock, s.Intervals, s.Gaps
}

// DeviationUS is the deviation of the send intervals from the period, in
// microseconds.
type DeviationUS struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// SendTimingReport is simulink.SendTimingStats as printed: JSON field names
// of the send_timing of `bridge partner -json`.
type SendTimingReport struct {
	Clock          string      `json:"clock"`
	Intervals      uint64      `json:"intervals"`
	Gaps           uint64      `json:"gaps"`
	Backward       uint64      `json:"backward"`
	Missed         uint64      `json:"missed"`
	MeanIntervalUs float64     `json:"mean_interval_us"`
	PeriodUs       float64     `json:"period_us"`
	RateHz         float64     `json:"rate_hz"`
	DeviationUs    DeviationUS `json:"deviation_us"`
}

// nsToUS rounds to the ns, so that JSON carries no binary noise.
func nsToUS(ns float64) float64 { return math.Round(ns) / 1e3 }

// NewSendTimingReport converts s for printing.
func NewSendTimingReport(s simulink.SendTimingStats) SendTimingReport {
	return SendTimingReport{
		Clock: s.Clock, Intervals: s.Intervals, Gaps: s.Gaps, Backward: s.Backward, Missed: s.Missed,
		MeanIntervalUs: nsToUS(s.MeanIntervalNs), PeriodUs: nsToUS(s.PeriodNs),
		RateHz: math.Round(s.RateHz*1e6) / 1e6,
		DeviationUs: DeviationUS{
			P50: nsToUS(float64(s.P50Ns)), P99: nsToUS(float64(s.P99Ns)), P999: nsToUS(float64(s.P999Ns)), Max: nsToUS(float64(s.MaxNs)),
		},
	}
}

// String is the report on one line: "send interval 33.333 ms (30.000 Hz
// achieved) over N intervals, deviation µs p50 … (kernel timestamps), gaps g".
func (s SendTimingReport) String() string {
	if s.Intervals == 0 {
		return fmt.Sprintf("send interval unknown: no two measurements of consecutive seq (%s timestamps), gaps %d", s.Clock, s.Gaps)
	}
	return fmt.Sprintf("send interval %.3f ms (%.3f Hz achieved) over %d intervals, deviation µs p50 %.1f p99 %.1f p99.9 %.1f max %.1f (%s timestamps), gaps %d",
		s.MeanIntervalUs/1e3, s.RateHz, s.Intervals, s.DeviationUs.P50, s.DeviationUs.P99, s.DeviationUs.P999, s.DeviationUs.Max, s.Clock, s.Gaps)
}

// PartnerReport is what `bridge partner -json` prints as its last line: the
// partner's counters and its view of the master's send timing.
type PartnerReport struct {
	Received   uint64           `json:"received"`
	Replied    uint64           `json:"replied"`
	Handshakes uint64           `json:"handshakes"`
	Dropped    uint64           `json:"dropped"`
	Faulted    uint64           `json:"faulted"`
	SendErrors uint64           `json:"send_errors"`
	LastSeq    int64            `json:"last_seq"`
	SendTiming SendTimingReport `json:"send_timing"`
}

// NewPartnerReport converts a partner's statistics for printing.
func NewPartnerReport(st simulink.PartnerStats, timing simulink.SendTimingStats) PartnerReport {
	return PartnerReport{
		Received: st.Received, Replied: st.Replied, Handshakes: st.Handshakes, Dropped: st.Dropped,
		Faulted: st.Faulted, SendErrors: st.SendErrors, LastSeq: st.LastSeq,
		SendTiming: NewSendTimingReport(timing),
	}
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
	_, err := fmt.Fprintf(w, "link  plant %s  rate %g Hz  %gs  ticks %d  overruns %d  replies %d  late %d  lead %.0f µs  late sends %d\n"+
		"reply latency µs  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n"+
		"status  OK %d  OK_NO_DELAY %d  DESYNC %d  TIMEOUT %d  RECONNECTED %d  HANDSHAKING %d\n",
		l.Plant, l.RateHz, l.DurationS, l.Ticks, l.Overruns, l.Replies, l.Late, l.LeadUs, l.LateSends,
		l.LatencyUs.P50, l.LatencyUs.P99, l.LatencyUs.P999, l.LatencyUs.Max,
		l.Status["OK"], l.Status["OK_NO_DELAY"], l.Status["DESYNC"], l.Status["TIMEOUT"], l.Status["RECONNECTED"], l.Status["HANDSHAKING"])
	if err != nil {
		return err
	}
	switch {
	case l.SendDeviationUs == nil:
		_, err = io.WriteString(w, "partner's view  unknown here: run `bridge partner` as the partner, its report at exit gives the send timing\n")
	case l.SendIntervals == 0:
		_, err = fmt.Fprintf(w, "partner's view  no two measurements of consecutive seq (%s timestamps), gaps %d\n", l.SendClock, l.SendGaps)
	default:
		ratio := ""
		if s := l.Stalls; s != nil && s.CyclictestP99Us > 0 {
			ratio = fmt.Sprintf("  (p99 %.2f× the concurrent cyclictest's)", l.SendDeviationUs.P99/s.CyclictestP99Us)
		}
		_, err = fmt.Fprintf(w, "partner's view  send rate %.3f Hz over %d intervals, deviation µs  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (%s timestamps), gaps %d%s\n",
			l.SendRateHz, l.SendIntervals, l.SendDeviationUs.P50, l.SendDeviationUs.P99, l.SendDeviationUs.P999, l.SendDeviationUs.Max, l.SendClock, l.SendGaps, ratio)
	}
	if err != nil || l.Stalls == nil {
		return err
	}
	return l.Stalls.WriteText(w)
}
