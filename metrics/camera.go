package metrics

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// Camera holds the metrics of a link's marker camera. Its methods allocate
// nothing and take no lock; ObserveAge runs on the loop thread.
type Camera struct {
	frames, held   prometheus.Counter
	stale, skipped prometheus.Counter
	track, age     prometheus.Histogram
	found, up, now prometheus.Gauge
}

// Camera registers the camera metrics of the link called name, whose camera
// delivers a frame every period:
//
//   - bridge_camera_frames_total: frames tracked;
//   - bridge_camera_held_frames_total: frames whose marker count was not
//     nb_markers, so the previous vector was kept (emioapi's rule);
//   - bridge_camera_track_seconds: tracker time per frame;
//   - bridge_camera_markers: markers accepted in the last frame;
//   - bridge_camera_up: 1 while the camera streams;
//   - bridge_marker_age_seconds (histogram) and bridge_marker_age_last_seconds:
//     how old the marker vector was when a tick took it, at its send;
//   - bridge_camera_stale_ticks_total: ticks that took a frame they had taken
//     already (no new frame was ready at the send);
//   - bridge_camera_skipped_frames_total: frames published that no tick took.
func (s *Set) Camera(name string, period time.Duration) (*Camera, error) {
	if name == "" || !utf8.ValidString(name) {
		return nil, fmt.Errorf("%w: link name %q (want non-empty UTF-8)", ErrInvalid, name)
	}
	if period <= 0 {
		return nil, fmt.Errorf("%w: link %q: camera period %v (want > 0)", ErrInvalid, name, period)
	}
	labels := prometheus.Labels{"link": name}
	buckets := Buckets(period)
	c := &Camera{
		frames: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "camera_frames_total",
			Help: "Camera frames tracked.", ConstLabels: labels}),
		held: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "camera_held_frames_total",
			Help: "Frames whose marker count was not nb_markers: the previous marker vector was kept.", ConstLabels: labels}),
		track: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "camera_track_seconds",
			Help: "Marker tracker time per frame.", ConstLabels: labels, Buckets: buckets}),
		age: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "marker_age_seconds",
			Help: "Age of the marker vector (since its frame was read) when a tick took it.", ConstLabels: labels, Buckets: buckets}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "camera_stale_ticks_total",
			Help: "Ticks that sent the marker vector of a frame already sent: no new frame was ready at the send.", ConstLabels: labels}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "camera_skipped_frames_total",
			Help: "Camera frames published that no tick sent.", ConstLabels: labels}),
		found: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "camera_markers",
			Help: "Markers accepted in the last frame.", ConstLabels: labels}),
		up: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "camera_up",
			Help: "1 while the camera streams, 0 while it is closed or being reopened.", ConstLabels: labels}),
		now: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "marker_age_last_seconds",
			Help: "Age of the marker vector at the last tick.", ConstLabels: labels}),
	}
	all := []prometheus.Collector{c.frames, c.held, c.stale, c.skipped, c.track, c.age, c.found, c.up, c.now}
	for i, col := range all {
		if err := s.reg.Register(col); err != nil {
			for _, done := range all[:i] {
				s.reg.Unregister(done)
			}
			return nil, fmt.Errorf("%w: camera of link %q: %w", ErrRegister, name, err)
		}
	}
	return c, nil
}

// ObserveFrame records one tracked frame.
func (c *Camera) ObserveFrame(trackNs int64, found int, held bool) {
	c.frames.Inc()
	if held {
		c.held.Inc()
	}
	c.track.Observe(seconds(trackNs))
	c.found.Set(float64(found))
}

// ObserveAge records the age of the vector a tick took.
func (c *Camera) ObserveAge(ageNs int64) {
	s := seconds(ageNs)
	c.age.Observe(s)
	c.now.Set(s)
}

// ObserveRead records a stale tick or frames skipped between two ticks.
func (c *Camera) ObserveRead(stale bool, skipped uint64) {
	if stale {
		c.stale.Inc()
	}
	if skipped > 0 {
		c.skipped.Add(float64(skipped))
	}
}

// ObserveUp records whether the camera streams.
func (c *Camera) ObserveUp(up bool) {
	if up {
		c.up.Set(1)
	} else {
		c.up.Set(0)
	}
}
