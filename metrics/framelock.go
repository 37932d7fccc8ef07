package metrics

import (
	"fmt"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// LockReading is what a loop locked to a camera's frames reports at each
// scrape (a framelock.Lock's Status, in the metrics' units).
type LockReading struct {
	State   string   // one of States
	States  []string // every state, for the state set
	RateHz  float64  // the camera's estimated frame rate
	PPM     float64  // its difference from nominal, ppm (positive: faster)
	Phase   float64  // the newest frame's arrival minus its prediction, s
	Jitter  float64  // p99 of the arrivals above the fitted line, s
	Offset  float64  // where the ticks sit after each predicted frame, s
	Relocks uint64   // fits started over
}

// FrameLock registers the metrics of the camera lock of the link called
// name; read is called at each scrape, off the loop thread:
//
//   - bridge_camera_lock_state{state}: locking, locked or lost (a state set);
//   - bridge_camera_rate_hz and bridge_camera_clock_error_ppm: the camera's
//     frame rate as the lock estimates it, and its difference from nominal;
//   - bridge_camera_phase_error_seconds: the newest frame's arrival minus
//     its prediction; bridge_camera_arrival_jitter_seconds: the p99 of it;
//   - bridge_camera_tick_offset_seconds: where the ticks sit after each
//     predicted frame;
//   - bridge_camera_relocks_total: fits started over (a replug, a jump).
func (s *Set) FrameLock(name string, read func() LockReading) error {
	if name == "" || !utf8.ValidString(name) {
		return fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	if read == nil {
		return fmt.Errorf("%w: link %q: no lock reading", ErrInvalid, name)
	}
	labels := prometheus.Labels{"link": name}
	desc := func(n, help string, vars ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "camera", n), help, vars, labels)
	}
	c := &lockCollector{
		read:    read,
		state:   desc("lock_state", "The loop's lock on the camera's frames as a state set: locking, locked or lost.", "state"),
		rate:    desc("rate_hz", "The camera's frame rate as the lock estimates it."),
		ppm:     desc("clock_error_ppm", "The camera's frame rate's difference from nominal, in ppm (positive: faster)."),
		phase:   desc("phase_error_seconds", "The newest frame's arrival minus the lock's prediction of it."),
		jitter:  desc("arrival_jitter_seconds", "The p99 of the frames' arrival after the lock's fitted line."),
		offset:  desc("tick_offset_seconds", "Where the ticks sit after each predicted frame instant: the p99 of the time a frame takes to be ready, plus a margin."),
		relocks: desc("relocks_total", "Times the lock started its fit over (a replugged camera, a jump in the frames)."),
	}
	if err := s.reg.Register(c); err != nil {
		return fmt.Errorf("%w: camera lock of link %q: %w", ErrRegister, name, err)
	}
	return nil
}

type lockCollector struct {
	read                                             func() LockReading
	state, rate, ppm, phase, jitter, offset, relocks *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *lockCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.rate, c.ppm, c.phase, c.jitter, c.offset, c.relocks} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *lockCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.read()
	for _, s := range r.States {
		v := 0.0
		if s == r.State {
			v = 1
		}
		ch <- constMetric(c.state, v, s)
	}
	ch <- constMetric(c.rate, r.RateHz)
	ch <- constMetric(c.ppm, r.PPM)
	ch <- constMetric(c.phase, r.Phase)
	ch <- constMetric(c.jitter, r.Jitter)
	ch <- constMetric(c.offset, r.Offset)
	if m, err := prometheus.NewConstMetric(c.relocks, prometheus.CounterValue, float64(r.Relocks)); err == nil {
		ch <- m
	}
}
