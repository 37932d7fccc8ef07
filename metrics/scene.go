package metrics

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Scene holds the metrics of a link whose plant is a simulation scene
// reached over TCP (V-REP / CoppeliaSim, docs/vrep.md): the exchange's
// round trip, failures by reason, the scene's clock, reconnections,
// restarts of the simulation, ticks superseded and dead-man stops. Every
// method allocates nothing; Superseded and DeadmanStop run on the loop
// thread, the others on the scene's worker or the supervisor.
type Scene struct {
	rtt        prometheus.Histogram
	failures   []prometheus.Counter
	simTime    atomic.Uint64
	reconnects prometheus.Counter
	restarts   prometheus.Counter
	superseded prometheus.Counter
	stops      prometheus.Counter
}

// Scene registers the scene metrics of the link called name, whose period
// sets the round trip's buckets; reasons are the values of the reason
// label, each with a series from the start (index i counts Failed(i)):
//
//   - bridge_vrep_exchange_seconds: one tick's exchange with the scene;
//   - bridge_vrep_failures_total{reason}: exchanges that failed;
//   - bridge_vrep_sim_time_seconds: the scene's clock at the last reply;
//   - bridge_vrep_reconnects_total: the scene answering again after the
//     link went degraded;
//   - bridge_vrep_restarts_total: the simulation time going backwards;
//   - bridge_vrep_superseded_total: ticks whose targets were replaced before
//     the worker could send them (the scene is slower than the link);
//   - bridge_vrep_deadman_stops_total: velocities zeroed for want of a fresh
//     command.
func (s *Set) Scene(name string, period time.Duration, reasons []string) (*Scene, error) {
	if name == "" || !utf8.ValidString(name) {
		return nil, fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	if period <= 0 {
		return nil, fmt.Errorf("%w: link %q: period %v", ErrInvalid, name, period)
	}
	labels := prometheus.Labels{"link": name}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels})
	}
	sc := &Scene{
		rtt: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "vrep_exchange_seconds",
			Help:        "One tick's exchange with the scene: connection, request and reply (AZ), or the tick's remote API calls (ZMQ).",
			ConstLabels: labels, Buckets: Buckets(period)}),
		reconnects: counter("vrep_reconnects_total", "The scene answering again after the link went degraded."),
		restarts:   counter("vrep_restarts_total", "Restarts of the simulation, seen as its time going backwards."),
		superseded: counter("vrep_superseded_total", "Ticks whose targets were replaced by the next tick's before the scene could take them."),
		stops:      counter("vrep_deadman_stops_total", "Velocities commanded to zero because no fresh command came within vel_timeout."),
	}
	sc.simTime.Store(math.Float64bits(math.NaN()))
	fails := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "vrep_failures_total",
		Help: "Exchanges with the scene that failed, by reason.", ConstLabels: labels}, []string{"reason"})
	for _, r := range reasons {
		sc.failures = append(sc.failures, fails.WithLabelValues(r))
	}
	simTime := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "vrep_sim_time_seconds",
		Help: "The scene's simulation time at its last reply (NaN before one).", ConstLabels: labels},
		func() float64 { return math.Float64frombits(sc.simTime.Load()) })
	all := []prometheus.Collector{sc.rtt, fails, simTime, sc.reconnects, sc.restarts, sc.superseded, sc.stops}
	for i, c := range all {
		if err := s.reg.Register(c); err != nil {
			for _, done := range all[:i] {
				s.reg.Unregister(done)
			}
			return nil, fmt.Errorf("%w: scene of link %q: %w", ErrRegister, name, err)
		}
	}
	return sc, nil
}

// Exchanged records one exchange's round trip and the scene's clock.
func (sc *Scene) Exchanged(rtt time.Duration, simTime float64) {
	sc.rtt.Observe(rtt.Seconds())
	sc.simTime.Store(math.Float64bits(simTime))
}

// Failed counts a failed exchange of the reason at index i of the reasons
// given to Set.Scene; an index out of range counts as the first.
func (sc *Scene) Failed(i int) {
	if i < 0 || i >= len(sc.failures) {
		i = 0
	}
	if len(sc.failures) > 0 {
		sc.failures[i].Inc()
	}
}

// Reconnected counts the scene answering again.
func (sc *Scene) Reconnected() { sc.reconnects.Inc() }

// Restarted counts a restart of the simulation.
func (sc *Scene) Restarted() { sc.restarts.Inc() }

// Superseded counts a tick whose targets were replaced before being sent.
func (sc *Scene) Superseded() { sc.superseded.Inc() }

// DeadmanStop counts velocities zeroed by the dead-man.
func (sc *Scene) DeadmanStop() { sc.stops.Inc() }
