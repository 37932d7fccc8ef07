// Package metrics defines the Prometheus metrics of the bridge and serves them
// over HTTP, following docs/realtime.md §9: prefix bridge_, base units
// (seconds, celsius) with the unit suffix, counters ending in _total, info
// metrics ending in _info, a build_info metric, the link state as a state
// set, histograms with explicit buckets from 10 µs to the loop period plus
// the period itself, and the send lateness's maximum and quantiles over the
// last minute of ticks, which scrapes read without resetting.
//
// Everything is registered on a registry passed in by the caller, never on the
// global one. Every counter series a link can have is created at 0 when its
// handles are, except what the process cannot know in advance (a robot's
// 1xxx error codes). The per-tick and per-packet methods of Link allocate
// nothing and take no lock, so the loop thread may call them; servo readings
// are pulled at scrape time, off the loop thread.
package metrics

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

const namespace = "bridge"

// Errors returned by this package.
var (
	// ErrDuplicateLink: Set.Link was called twice with the same name.
	ErrDuplicateLink = errors.New("metrics: duplicate link")
	// ErrInvalid: a link name, period or state is not acceptable.
	ErrInvalid = errors.New("metrics: invalid argument")
	// ErrRegister: the registry refused a collector.
	ErrRegister = errors.New("metrics: registration failed")
)

// Link states, in the order of their lifecycle (see LinkStates).
const (
	StateStarting    = "starting"
	StateHandshaking = "handshaking"
	StateRunning     = "running"
	StateDegraded    = "degraded"
	StateStopped     = "stopped"
)

// linkStates is an array, not a slice, so nobody can change it through
// LinkStates.
var linkStates = [...]string{StateStarting, StateHandshaking, StateRunning, StateDegraded, StateStopped}

// LinkStates returns the values of the state label of bridge_link_state, in a
// fresh slice.
func LinkStates() []string { return append([]string(nil), linkStates[:]...) }

// Reasons of bridge_link_rejected_commands_total. A command of the wrong
// length never reaches the link: the Simulink master drops its datagram and
// counts it in bridge_link_dropped_datagrams_total{reason="size"}.
const (
	RejectNonFinite = "nonfinite"
	RejectClamped   = "clamped"
)

// NewRegistry returns a fresh registry holding the Go and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	// Two distinct collectors on an empty registry cannot collide, so
	// MustRegister cannot panic here.
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// BuildInfo labels bridge_build_info. An empty GoVersion means runtime.Version().
type BuildInfo struct {
	Version, Commit, GoVersion string
}

// ThisBuild is the BuildInfo of the running binary: version as set at
// build time, the VCS revision Go recorded ("unknown" without one) and the
// Go version.
func ThisBuild(version string) BuildInfo {
	b := BuildInfo{Version: version, Commit: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				b.Commit = s.Value
			}
		}
	}
	return b
}

// Set holds the metric vectors of one bridge process and hands out per-link
// handles.
type Set struct {
	reg prometheus.Registerer

	ticks, overruns, lateReplies, stateChanges *prometheus.CounterVec
	status, dropped, rejected, restarts        *prometheus.CounterVec
	stale                                      *prometheus.CounterVec
	tapSent, tapDropped, tapErrors             *prometheus.CounterVec
	period                                     *prometheus.GaugeVec

	mu    sync.Mutex
	links map[string]struct{}
}

// New registers bridge_build_info and the per-link vectors on reg. It returns an
// error wrapping ErrRegister (and the registry's error) if reg refuses any of
// them, for example because New already ran on it.
func New(reg prometheus.Registerer, info BuildInfo) (*Set, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil registerer", ErrInvalid)
	}
	if info.GoVersion == "" {
		info.GoVersion = runtime.Version()
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	s := &Set{
		reg:          reg,
		ticks:        counter("loop_ticks_total", "Loop ticks executed.", "link"),
		overruns:     counter("loop_overruns_total", "Loop periods skipped because a tick overran.", "link"),
		lateReplies:  counter("link_late_replies_total", "Replies that arrived after the receive window of their seq had closed.", "link"),
		stateChanges: counter("link_state_changes_total", "Link state transitions.", "link"),
		status:       counter("link_status_total", "Ticks by exchange status.", "link", "status"),
		dropped:      counter("link_dropped_datagrams_total", "Received datagrams discarded unused, by reason.", "link", "reason"),
		rejected:     counter("link_rejected_commands_total", "Commands refused or clamped before they reached a motor, by reason.", "link", "reason"),
		restarts:     counter("device_restarts_total", "Device reconnections by the supervisor.", "link", "device"),
		stale:        counter("link_stale_measurements_total", "Measurements sent again to the partner because the device could not be read.", "link"),
		tapSent:      counter("tap_packets_total", "Ticks the telemetry tap sent as RTP packets (docs/tap.md).", "link"),
		tapDropped:   counter("tap_dropped_total", "Ticks the telemetry tap dropped because its ring was full; the loop never waits for it.", "link"),
		tapErrors:    counter("tap_errors_total", "Tap packets that could not be sent.", "link"),
		period:       gauge("loop_period_seconds", "Configured loop period.", "link"),
		links:        make(map[string]struct{}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   namespace,
		Name:        "build_info",
		Help:        "Build information; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": info.Version, "commit": info.Commit, "go": info.GoVersion},
	})
	build.Set(1)
	for _, c := range []prometheus.Collector{build, s.ticks, s.overruns, s.lateReplies, s.stateChanges,
		s.status, s.dropped, s.rejected, s.restarts, s.stale, s.tapSent, s.tapDropped, s.tapErrors, s.period} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRegister, err)
		}
	}
	return s, nil
}

// Link registers the metrics of the link called name, whose loop period is
// period, and returns its handles. It fails with ErrDuplicateLink if name was
// already used on this Set, and with ErrInvalid for an empty or non-UTF-8 name
// or a period that is not positive.
//
// The histograms of a link have buckets derived from its period (see Buckets),
// and one HistogramVec has a single bucket layout, so each link gets its own
// collector whose histograms carry link as a constant label; the registry
// accepts any number of them side by side because their label values differ.
// The same collector reports what it computes at scrape time: the lateness
// window (bridge_loop_lateness_max_seconds and
// bridge_loop_lateness_quantile_seconds), bridge_link_state and the
// real-time settings (see Link.RealTime). Counters and the period gauge are
// children of the Set's vectors, looked up once here, including the
// restarts of the device "plant".
func (s *Set) Link(name string, period time.Duration) (*Link, error) {
	if name == "" || !utf8.ValidString(name) {
		return nil, fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	if period <= 0 {
		return nil, fmt.Errorf("%w: link %q: period %v (want > 0)", ErrInvalid, name, period)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.links[name]; ok {
		return nil, fmt.Errorf("%w %q", ErrDuplicateLink, name)
	}
	l, err := newLink(s, name, period)
	if err != nil {
		return nil, err
	}
	s.links[name] = struct{}{}
	return l, nil
}

// Buckets returns the histogram boundaries, in seconds, for a loop of the given
// period: powers of two times 10 µs below the period, then the period itself,
// 2× and 4× the period, so that "late by more than a period" is exact. A power
// within a billionth of the period is dropped in favour of the period. Periods
// that are not positive get nil.
func Buckets(period time.Duration) []float64 {
	if period <= 0 {
		return nil
	}
	p := period.Seconds()
	var b []float64
	for v := 10e-6; v < p*(1-1e-9); v *= 2 {
		b = append(b, v)
	}
	return append(b, p, 2*p, 4*p)
}
