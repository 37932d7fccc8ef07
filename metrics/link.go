package metrics

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/labbridge/bridge/simulink"
)

// Link holds the metric handles of one link. ObserveTick, ObserveOverrun, the
// simulink.Observer methods and the reject counters allocate nothing and take no
// lock: every series is resolved when the Link is created.
type Link struct {
	name string
	coll *linkCollector

	ticks, overruns, lateReplies, stateChanges prometheus.Counter
	rejNonFinite, rejClamped, stale            prometheus.Counter
	status                                     [simulink.NumStatus]prometheus.Counter
	dropped                                    [simulink.NumDropReason]prometheus.Counter
	restarts                                   *prometheus.CounterVec
}

var (
	_ simulink.Observer    = (*Link)(nil)
	_ simulink.DropCounter = (*Link)(nil)
)

// linkCollector reports the metrics of one link whose value or layout is
// specific to that link: histograms with period-derived buckets, the
// lateness window, the link state set and the real-time settings.
type linkCollector struct {
	lateness, cycle, reply prometheus.Histogram
	maxDesc, stateDesc     *prometheus.Desc
	// The send gate (bridge.LeadObserver): the measurement's age at the
	// send, the lead in use, and ticks whose measuring overran the lead.
	age                    prometheus.Histogram
	leadDesc, leadOverDesc *prometheus.Desc
	leadNs                 atomic.Int64
	leadOver               atomic.Uint64
	// breaks counts the spin guard's demotions of the loop thread
	// (Link.CountSpinBreaks); nil until set.
	breaks     atomic.Pointer[func() uint64]
	breaksDesc *prometheus.Desc

	// window is the lateness of the last minute of ticks, for the maximum
	// and the quantiles. It is counted in ticks, so a scrape only reads it:
	// any number of scrapers see the same values.
	window    *latenessWindow
	quantDesc *prometheus.Desc
	// state indexes linkStates. A single atomic makes the state set
	// consistent: a scrape never sees zero or two states at 1.
	state atomic.Int32

	// rt is what the loop thread's set-up got, nil until Link.RealTime.
	rt                           atomic.Pointer[realTime]
	rtInfoDesc, dmaDesc, memDesc *prometheus.Desc
}

// quantiles are the values of the quantile label of
// bridge_loop_lateness_quantile_seconds, in thousandths.
var quantiles = [...]struct {
	perMille uint64
	q        float64
}{{500, 0.5}, {990, 0.99}, {999, 0.999}}

func newLink(s *Set, name string, period time.Duration) (*Link, error) {
	constLabels := prometheus.Labels{"link": name}
	buckets := Buckets(period)
	hist := func(n, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: n, Help: help, ConstLabels: constLabels, Buckets: buckets,
		})
	}
	c := &linkCollector{
		lateness: hist("loop_wakeup_lateness_seconds", "When the tick's datagram left (or, for a tick that sent nothing, when the loop woke) minus the tick's deadline."),
		age:      hist("link_measurement_age_seconds", "Age of the measurement when its datagram left: from the loop's wake-up (the servo read's start) to the send."),
		leadDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "loop", "lead_seconds"),
			"How long before each deadline the loop wakes to measure, so that the datagram leaves at the deadline (learned with lead = \"auto\").", nil, constLabels),
		leadOverDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "loop", "lead_overruns_total"),
			"Ticks whose measuring took longer than the lead, so that the datagram left after the deadline.", nil, constLabels),
		breaksDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "loop", "spin_breaks_total"),
			"Times the spin guard put the loop thread to SCHED_OTHER because it ran outside the loop's code past its threshold (a Go thread spinning for one it keeps off its CPU); the loop restores its policy at its next step.", nil, constLabels),
		cycle: hist("loop_cycle_duration_seconds", "Work time per loop tick."),
		reply: hist("link_reply_latency_seconds", "Time from the send of a seq to its reply."),
		maxDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "loop", "lateness_max_seconds"),
			"Largest send lateness over the last minute of ticks (a sliding window; scrapes do not reset it).", nil, constLabels),
		// A summary, not a gauge: Prometheus reserves the quantile label
		// for summaries, and a summary's quantiles are over a sliding
		// window while its _count and _sum run since the start, as here.
		quantDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "loop", "lateness_quantile_seconds"),
			"Send lateness quantiles over the last minute of ticks (the window of bridge_loop_lateness_max_seconds), within 1.6 % (log-linear bins, 32 per octave); _count and _sum cover every tick since the start.",
			nil, constLabels),
		window: newLatenessWindow(period),
		rtInfoDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "realtime", "info"),
			"Scheduling of the link's loop thread as its set-up got it; the value is always 1. cpus is empty for a thread not pinned.",
			[]string{"policy", "priority", "cpus"}, constLabels),
		dmaDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "realtime", "dma_latency_held"),
			"1 while the link's loop holds /dev/cpu_dma_latency at 0 (no deep C-states), else 0.", nil, constLabels),
		memDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "realtime", "memory_locked"),
			"1 if the process's memory is locked (mlockall) for the link's loop, else 0.", nil, constLabels),
		stateDesc: prometheus.NewDesc(prometheus.BuildFQName(namespace, "link", "state"),
			"Link state as a state set: exactly one state is 1.", []string{"state"}, constLabels),
	}
	if err := s.reg.Register(c); err != nil {
		return nil, fmt.Errorf("%w: link %q: %w", ErrRegister, name, err)
	}
	l := &Link{name: name, coll: c, restarts: s.restarts}
	if err := l.resolve(s, period); err != nil {
		// Leave no half-made link behind, so the name can be tried again.
		s.reg.Unregister(c)
		match := prometheus.Labels{"link": name}
		for _, v := range []*prometheus.CounterVec{s.ticks, s.overruns, s.lateReplies, s.stateChanges, s.status, s.dropped, s.rejected, s.stale, s.restarts} {
			v.DeletePartialMatch(match)
		}
		s.period.DeletePartialMatch(match)
		return nil, fmt.Errorf("%w: link %q: %w", ErrRegister, name, err)
	}
	return l, nil
}

// resolve looks up every counter child of the link once, creating the series so
// that they are exported at 0 before anything happens.
func (l *Link) resolve(s *Set, period time.Duration) error {
	var err error
	get := func(v *prometheus.CounterVec, lvs ...string) prometheus.Counter {
		c, e := v.GetMetricWithLabelValues(lvs...)
		if e != nil && err == nil {
			err = e
		}
		return c
	}
	l.ticks = get(s.ticks, l.name)
	l.overruns = get(s.overruns, l.name)
	l.lateReplies = get(s.lateReplies, l.name)
	l.stateChanges = get(s.stateChanges, l.name)
	l.rejNonFinite = get(s.rejected, l.name, RejectNonFinite)
	l.rejClamped = get(s.rejected, l.name, RejectClamped)
	l.stale = get(s.stale, l.name)
	// Every link has a plant, which the supervisor reopens as "plant";
	// Devices adds the others.
	get(s.restarts, l.name, DevicePlant)
	for i := range l.status {
		l.status[i] = get(s.status, l.name, simulink.Status(i).String())
	}
	for i := range l.dropped {
		l.dropped[i] = get(s.dropped, l.name, simulink.DropReason(i).String())
	}
	if err != nil {
		return err
	}
	g, err := s.period.GetMetricWithLabelValues(l.name)
	if err != nil {
		return err
	}
	g.Set(period.Seconds())
	return nil
}

// Name returns the link label.
func (l *Link) Name() string { return l.name }

func seconds(ns int64) float64 { return float64(max(ns, 0)) / 1e9 }

// ObserveTick records one executed tick: its send lateness and its work
// time, in nanoseconds. Negative values (an early send) count as 0. It must
// be called by one goroutine at a time (the loop's): the lateness window has
// a single writer, which is what lets it go without a lock or a CAS.
func (l *Link) ObserveTick(latenessNs, workNs int64) {
	l.ticks.Inc()
	l.coll.lateness.Observe(seconds(latenessNs))
	l.coll.cycle.Observe(seconds(workNs))
	l.coll.window.observe(latenessNs)
}

// ObserveLead records the send gate of a tick (bridge.LeadObserver).
func (l *Link) ObserveLead(leadNs, ageNs int64, overran bool) {
	l.coll.leadNs.Store(leadNs)
	l.coll.age.Observe(seconds(ageNs))
	if overran {
		l.coll.leadOver.Add(1)
	}
}

// ObserveOverrun counts periods skipped by an overrunning tick; periods <= 0
// is ignored (a counter never goes down).
func (l *Link) ObserveOverrun(periods int) {
	if periods > 0 {
		l.overruns.Add(float64(periods))
	}
}

// Exchanged implements simulink.Observer: one call per tick with its status.
// Unknown statuses are ignored.
func (l *Link) Exchanged(s simulink.Status) {
	if int(s) < len(l.status) {
		l.status[s].Inc()
	}
}

// Reply implements simulink.Observer: it records the reply latency (negative counts
// as 0) and counts late replies.
func (l *Link) Reply(latencyNs int64, late bool) {
	l.coll.reply.Observe(seconds(latencyNs))
	if late {
		l.lateReplies.Inc()
	}
}

// Dropped implements simulink.Observer. Unknown reasons are ignored.
func (l *Link) Dropped(r simulink.DropReason) {
	if int(r) < len(l.dropped) {
		l.dropped[r].Inc()
	}
}

// DroppedN implements simulink.DropCounter: n datagrams dropped for one
// reason (a flood the kernel dropped) in one call.
func (l *Link) DroppedN(r simulink.DropReason, n uint64) {
	if int(r) < len(l.dropped) && n > 0 {
		l.dropped[r].Add(float64(n))
	}
}

// RejectedNonFinite counts a command refused because it held a NaN or ±Inf.
func (l *Link) RejectedNonFinite() { l.rejNonFinite.Inc() }

// Clamped counts a command clamped to the configured limits.
func (l *Link) Clamped() { l.rejClamped.Inc() }

// StaleMeasurement counts a measurement sent again because the device could
// not be read.
func (l *Link) StaleMeasurement() { l.stale.Inc() }

// SetState sets the link state (one of LinkStates) and counts the change if it
// is one. An unknown state returns an error wrapping ErrInvalid and changes
// nothing. Safe for concurrent use.
func (l *Link) SetState(state string) error {
	for i, s := range linkStates {
		if s == state {
			if old := l.coll.state.Swap(int32(i)); old != int32(i) {
				l.stateChanges.Inc()
			}
			return nil
		}
	}
	return fmt.Errorf("%w: link %q: state %q (want one of %s)",
		ErrInvalid, l.name, state, strings.Join(linkStates[:], ", "))
}

// State returns the current link state.
func (l *Link) State() string { return linkStates[l.coll.state.Load()] }

// DevicePlant is the device label of the restarts of a link's plant (the
// supervisor's reopening of the servos, the arm or the scene); its series
// exists from the link's creation.
const DevicePlant = "plant"

// Devices creates at 0 the bridge_device_restarts_total series of the named
// devices, so that they are exported before their first restart: pass the
// names of the link's dependencies as the supervisor knows them ("camera",
// "faults", …). The plant's series exists already. Off the loop thread.
func (l *Link) Devices(names ...string) {
	for _, n := range names {
		// Cannot fail: two labels, valid UTF-8.
		_, _ = l.restarts.GetMetricWithLabelValues(l.name, strings.ToValidUTF8(n, "\uFFFD"))
	}
}

// DeviceRestart counts a reconnection of the named device. It looks the series
// up by label, so it belongs off the loop thread. Invalid UTF-8 in device is
// replaced rather than refused: the restart still counts.
func (l *Link) DeviceRestart(device string) {
	c, err := l.restarts.GetMetricWithLabelValues(l.name, strings.ToValidUTF8(device, "\uFFFD"))
	if err == nil { // cannot fail: two labels, valid UTF-8
		c.Inc()
	}
}

// Describe implements prometheus.Collector.
func (c *linkCollector) Describe(ch chan<- *prometheus.Desc) {
	c.lateness.Describe(ch)
	c.cycle.Describe(ch)
	c.reply.Describe(ch)
	c.age.Describe(ch)
	ch <- c.maxDesc
	ch <- c.stateDesc
	ch <- c.leadDesc
	ch <- c.leadOverDesc
	ch <- c.breaksDesc
	ch <- c.quantDesc
	ch <- c.rtInfoDesc
	ch <- c.dmaDesc
	ch <- c.memDesc
}

// Collect implements prometheus.Collector. It only reads: scrapes do not
// disturb each other or the loop.
func (c *linkCollector) Collect(ch chan<- prometheus.Metric) {
	c.lateness.Collect(ch)
	c.cycle.Collect(ch)
	c.reply.Collect(ch)
	c.age.Collect(ch)
	c.collectWindow(ch)
	ch <- constMetric(c.leadDesc, seconds(c.leadNs.Load()))
	if m, err := prometheus.NewConstMetric(c.leadOverDesc, prometheus.CounterValue, float64(c.leadOver.Load())); err == nil {
		ch <- m
	}
	var breaks uint64
	if f := c.breaks.Load(); f != nil {
		breaks = (*f)()
	}
	if m, err := prometheus.NewConstMetric(c.breaksDesc, prometheus.CounterValue, float64(breaks)); err == nil {
		ch <- m
	}
	cur := int(c.state.Load())
	for i, s := range linkStates {
		v := 0.0
		if i == cur {
			v = 1
		}
		ch <- constMetric(c.stateDesc, v, s)
	}
	c.collectRealTime(ch)
}

// collectWindow reports the lateness window: its maximum, and its quantiles
// as a summary whose count and sum are the lateness histogram's.
func (c *linkCollector) collectWindow(ch chan<- prometheus.Metric) {
	var s windowSnapshot
	c.window.snapshot(&s)
	ch <- constMetric(c.maxDesc, seconds(s.max))
	var h dto.Metric
	if err := c.lateness.Write(&h); err != nil {
		ch <- prometheus.NewInvalidMetric(c.quantDesc, err)
		return
	}
	q := make(map[float64]float64, len(quantiles))
	for _, x := range quantiles {
		q[x.q] = s.quantile(x.perMille)
	}
	m, err := prometheus.NewConstSummary(c.quantDesc, h.GetHistogram().GetSampleCount(), h.GetHistogram().GetSampleSum(), q)
	if err != nil {
		m = prometheus.NewInvalidMetric(c.quantDesc, err)
	}
	ch <- m
}

func constMetric(d *prometheus.Desc, v float64, lvs ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, lvs...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// CountSpinBreaks makes bridge_loop_spin_breaks_total read breaks (the
// link's bridge.Link.SpinBreaks) at each scrape.
func (l *Link) CountSpinBreaks(breaks func() uint64) { l.coll.breaks.Store(&breaks) }
