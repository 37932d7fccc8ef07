package metrics

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Relay holds the metrics of a robot a link drives over TCP (a Meca500):
// its state as the robot reports it, its errors and safety stops by code,
// the connections, the watchdog and the age of its newest sample. Its
// methods run on the relay's reader and supervisor goroutines;
// WatchdogRefreshed runs on the loop thread and allocates nothing.
type Relay struct {
	state      *prometheus.GaugeVec
	flags      [4]prometheus.Gauge
	errs       *prometheus.CounterVec
	stops      *prometheus.CounterVec
	reconnects prometheus.Counter
	watchdog   prometheus.Counter
	full       prometheus.Counter
	connected  atomic.Bool
}

// RelayFlags are the values of the flag label of bridge_relay_robot_state.
var relayFlags = [4]string{"activated", "homed", "error", "paused"}

// Codes whose series exist from the start (docs/meca500.md §3). The safety
// stops are the Meca500's whole set: PStop1, EStop, PStop2 and 3080–3087.
// Errors are the 3xxx ones the relay counts (motion error, drive error,
// torque limit, collision, work zone); a refused command's 1xxx code, of
// which there are hundreds, gets its series when it first happens.
var (
	relayStopCodes  = [...]int{3069, 3070, 3032, 3080, 3081, 3082, 3083, 3084, 3085, 3086, 3087}
	relayErrorCodes = [...]int{3005, 3006, 3029, 3041, 3049}
)

// Relay registers the relay metrics of the link called name; age reports
// how old the robot's newest sample is, in seconds (NaN before one):
//
//   - bridge_relay_robot_state{flag}: 1 or 0 for activated, homed, error,
//     paused, as the robot's last status said;
//   - bridge_relay_errors_total{code}: errors the robot reported (the 3xxx
//     ones at 0 from the start, a 1xxx code from its first time);
//   - bridge_relay_safety_stops_total{code}: safety-stop events (EStop 3070,
//     PStop1 3069, connection drop 3086, …), every code at 0 from the start;
//   - bridge_relay_reconnects_total: start-ups after the first;
//   - bridge_relay_watchdog_refreshes_total: ticks that refreshed the
//     robot's connection watchdog;
//   - bridge_relay_buffer_full_total: motion commands refused as the
//     robot's queue was full;
//   - bridge_relay_sample_age_seconds: age of the robot's newest sample.
func (s *Set) Relay(name string, age func() float64) (*Relay, error) {
	if name == "" || !utf8.ValidString(name) {
		return nil, fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	if age == nil {
		return nil, fmt.Errorf("%w: link %q: no sample age", ErrInvalid, name)
	}
	labels := prometheus.Labels{"link": name}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help, ConstLabels: labels})
	}
	r := &Relay{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "relay_robot_state",
			Help: "The robot's status flags as it last reported them: 1 set, 0 clear.", ConstLabels: labels}, []string{"flag"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "relay_errors_total",
			Help: "Errors the robot reported, by code.", ConstLabels: labels}, []string{"code"}),
		stops: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "relay_safety_stops_total",
			Help: "Safety-stop events the robot reported, by code.", ConstLabels: labels}, []string{"code"}),
		reconnects: counter("relay_reconnects_total", "Connections to the robot after the first that completed the start-up."),
		watchdog:   counter("relay_watchdog_refreshes_total", "Ticks that refreshed the robot's connection watchdog."),
		full:       counter("relay_buffer_full_total", "Motion commands the robot refused because its queue was full."),
	}
	for i, f := range relayFlags {
		r.flags[i] = r.state.WithLabelValues(f)
	}
	for _, c := range relayStopCodes {
		r.stops.WithLabelValues(strconv.Itoa(c))
	}
	for _, c := range relayErrorCodes {
		r.errs.WithLabelValues(strconv.Itoa(c))
	}
	ageFn := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "relay_sample_age_seconds",
		Help: "Age of the robot's newest monitoring sample.", ConstLabels: labels}, age)
	all := []prometheus.Collector{r.state, r.errs, r.stops, r.reconnects, r.watchdog, r.full, ageFn}
	for i, c := range all {
		if err := s.reg.Register(c); err != nil {
			for _, done := range all[:i] {
				s.reg.Unregister(done)
			}
			return nil, fmt.Errorf("%w: relay of link %q: %w", ErrRegister, name, err)
		}
	}
	return r, nil
}

// RobotState records the robot's status flags.
func (r *Relay) RobotState(activated, homed, inError, paused bool) {
	for i, on := range [4]bool{activated, homed, inError, paused} {
		v := 0.0
		if on {
			v = 1
		}
		r.flags[i].Set(v)
	}
}

// RobotError counts an error the robot reported.
func (r *Relay) RobotError(code int) { r.errs.WithLabelValues(strconv.Itoa(code)).Inc() }

// SafetyStop counts a safety-stop event that became active.
func (r *Relay) SafetyStop(code, state int) {
	if state == 1 || code == 3086 || code == 3083 {
		r.stops.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

// Connected counts a completed start-up; every one after the first is a
// reconnection.
func (r *Relay) Connected() {
	if r.connected.Swap(true) {
		r.reconnects.Inc()
	}
}

// WatchdogRefreshed counts a tick that refreshed the watchdog.
func (r *Relay) WatchdogRefreshed() { r.watchdog.Inc() }

// BufferFull counts a motion command refused for a full queue.
func (r *Relay) BufferFull() { r.full.Inc() }
