package config

import (
	"fmt"
	"image"
	"math"
	"strings"
	"time"

	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/emio/camera"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/shadow"
	"github.com/labbridge/bridge/internal/statuspage"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/simulink"
)

// ServiceStatus is systemd's STATUS= line: each link's state and what is
// wrong with it now, so that `systemctl status` says it.
func ServiceStatus(links []*Built) string {
	parts := make([]string, 0, len(links))
	for _, b := range links {
		s := b.Config.Name + ": " + b.Link.State().String()
		if b.Faults != nil {
			for _, f := range b.Faults.Active() {
				s += "; " + f.Title
				if f.Detail != "" {
					s += " (" + f.Detail + ")"
				}
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

// PageSnapshot is the status page's Snapshot of links: each link's Page,
// with the last warnings and errors that ring kept (nil: none), the
// version and the configuration's name. It runs on the metrics server's
// goroutine.
func PageSnapshot(links []*Built, ring *logging.Ring, version, from string, started time.Time) func() statuspage.Snapshot {
	return func() statuspage.Snapshot {
		s := statuspage.Snapshot{Version: version, Config: from, Started: started, Links: make([]statuspage.LinkStatus, 0, len(links))}
		if ring != nil {
			s.Errors = ring.Recent()
		}
		for _, b := range links {
			s.Links = append(s.Links, b.Page())
		}
		return s
	}
}

// Page is the link's status as the status page and the terminal show it:
// its state and counters, its vectors by field, what its plant offers
// beyond the generic link (the loop's lateness, the servos, the camera)
// and its active faults. Safe from any goroutine: the link publishes what
// it reads in atomics.
func (b *Built) Page() statuspage.LinkStatus {
	st := b.Master.Stats()
	// The state and its time from one read of the link: the supervisor's
	// event for it may still be on its way.
	state, since := b.Link.StateSince()
	l := statuspage.LinkStatus{
		Name: b.Config.Name, State: state.String(), StateSince: b.clock.Time(since), RateHz: b.Config.RateHz,
		Seq: st.Seq, Last: st.LastStatus.String(), RTTMs: ms(st.LastLatency.Round(time.Microsecond)),
		Counts: statuspage.Counts{
			OK: st.Status[simulink.OK], OKNoDelay: st.Status[simulink.OKNoDelay], Timeouts: st.Status[simulink.Timeout],
			Desyncs: st.Status[simulink.Desync], Reconnects: st.Status[simulink.Reconnected],
			Overruns: b.Link.Overruns(), Late: st.Late,
		},
	}
	for _, n := range st.Status {
		l.Exchanges += n
	}
	for _, d := range st.Dropped {
		l.Counts.Drops += d
	}
	if b.Config.Plant != nil {
		l.Kind = b.Config.Plant.Kind()
	}
	if l.Exchanges > 0 {
		l.OKPct = 100 * float64(l.Counts.OK+l.Counts.OKNoDelay) / float64(l.Exchanges)
	}
	l.Status = b.Status()
	if n := b.Link.Stale(); n > 0 {
		l.Status = append(l.Status, fmt.Sprintf("stale %d", n))
	}
	if b.Config.Clock == "frame" {
		l.Status = append(l.Status, fmt.Sprintf("missed frame ticks %d", b.Link.MissedTriggers()))
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
	b.pageParts(&l, meas)
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

// servoLister is a plant with servos whose status the ticks read (the
// Emio's motors); safe from any goroutine.
type servoLister interface {
	Servos(dst []emio.ServoStatus) []emio.ServoStatus
}

// cameraPart is a link's part that is a camera (the Emio's, among Deps).
type cameraPart interface {
	Info() camera.Info
	Thumbnail(width int) (*image.RGBA, uint64, bool)
}

// camera finds b's camera among its parts.
func (b *Built) camera() cameraPart {
	for _, d := range b.Deps {
		if c, ok := d.Service.(cameraPart); ok {
			return c
		}
	}
	return nil
}

// finite is x for JSON, nil when unknown (NaN) or not finite.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return new(x)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// pageParts adds to l what b's plant offers beyond the generic link: the
// loop's lateness, the servos (with their angles from the measurement
// meas, nil when there is none yet) and the camera.
func (b *Built) pageParts(l *statuspage.LinkStatus, meas []float64) {
	if b.Metrics != nil {
		lt := b.Metrics.Lateness()
		if lt.Ticks > 0 {
			l.Lateness = &statuspage.Lateness{P99Ms: ms(lt.P99), MaxMs: ms(lt.Max), Ticks: lt.Ticks}
		}
	}
	if sl, ok := b.Plant.(servoLister); ok {
		var angles []float64
		if meas != nil {
			if off, n, ok := b.Layout.Find("angles"); ok && off+n <= len(meas) {
				angles = meas[off : off+n]
			}
		}
		for i, s := range sl.Servos(nil) {
			sv := statuspage.Servo{ID: int(s.ID), TempC: finite(s.TemperatureC), LimitC: finite(s.LimitC),
				Alerting: s.Alerting, Alerts: s.Alerts, MissedReads: s.MissedReads}
			if s.HardwareError != 0 {
				sv.HardwareError = s.HardwareError.String()
			}
			if i < len(angles) {
				sv.AngleRad = finite(angles[i])
			}
			l.Servos = append(l.Servos, sv)
		}
	}
	if b.Shadow != nil {
		l.Shadow = b.shadowStatus()
	}
	if c := b.camera(); c != nil {
		in := c.Info()
		pc := &statuspage.CameraStatus{Streaming: in.Streaming, Why: in.Why, FPS: in.FPS, Frames: in.Frames,
			Thumbnail: statuspage.ThumbnailPath(b.Config.Name)}
		if in.Sample.Valid {
			pc.Frame, pc.Found, pc.Held = in.Sample.Frame, in.Sample.Found, in.Sample.Held
			pc.AgeMs = new(ms(in.Age))
		}
		l.Camera = pc
	}
}

// shownEndedFaults is how many of the twin's ended faults the page lists.
const shownEndedFaults = 5

// shadowStatus is the twin's part of the page.
func (b *Built) shadowStatus() *statuspage.Shadow {
	var snap shadow.Snapshot
	b.Shadow.Snapshot(&snap)
	_, _, _, modelled := b.Shadow.Fields()
	thr := make([]float64, 0, len(snap.Divergence))
	for _, f := range b.Layout.Measure {
		for range f.Len {
			thr = append(thr, b.Config.Shadow.Threshold[f.Name])
		}
	}
	for j, m := range modelled {
		if !m {
			snap.MaxAbs[j], thr[j] = math.NaN(), 0
		}
	}
	st := &statuspage.Shadow{Divergence: fields(b.Layout.Measure, snap.Divergence), MaxAbs: fields(b.Layout.Measure, snap.MaxAbs),
		Threshold: fields(b.Layout.Measure, thr), Ticks: snap.Ticks, Dropped: snap.Dropped}
	now := b.clock.Now()
	ended := 0
	for i := len(snap.Faults) - 1; i >= 0; i-- {
		f := snap.Faults[i]
		sf := statuspage.ShadowFault{Message: f.Message, Ended: f.Ended, AgoS: time.Duration(now - f.Since).Seconds()}
		switch {
		case !f.Ended:
			st.Faults = append([]statuspage.ShadowFault{sf}, st.Faults...)
		case ended < shownEndedFaults:
			ended++
			st.Faults = append(st.Faults, sf)
		}
	}
	return st
}

// Thumbnails is the status page's Thumbnail: the named link's camera
// frame, drawn on the request's goroutine.
func Thumbnails(links []*Built) func(link string, width int) (image.Image, bool) {
	return func(link string, width int) (image.Image, bool) {
		for _, b := range links {
			if b.Config.Name != link {
				continue
			}
			c := b.camera()
			if c == nil {
				return nil, false
			}
			if img, _, ok := c.Thumbnail(width); ok {
				return img, true
			}
			return nil, true // no frame yet: 503, the page tries again
		}
		return nil, false
	}
}
