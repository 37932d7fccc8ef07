package main

import (
	"image"
	"math"
	"time"

	"github.com/labbridge/bridge/camera"
	"github.com/labbridge/bridge/config"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/statuspage"
)

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

// linkCamera finds b's camera among its parts.
func linkCamera(b *config.Built) cameraPart {
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
func pageParts(b *config.Built, l *statuspage.Link, meas []float64) {
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
	if c := linkCamera(b); c != nil {
		in := c.Info()
		pc := &statuspage.Camera{Streaming: in.Streaming, Why: in.Why, FPS: in.FPS, Frames: in.Frames,
			Thumbnail: statuspage.ThumbnailPath(b.Config.Name)}
		if in.Sample.Valid {
			pc.Frame, pc.Found, pc.Held = in.Sample.Frame, in.Sample.Found, in.Sample.Held
			pc.AgeMs = new(ms(in.Age))
		}
		l.Camera = pc
	}
}

// thumbnails is the page's Thumbnail: the named link's camera frame, drawn
// on the request's goroutine.
func thumbnails(links []*config.Built) func(link string, width int) (image.Image, bool) {
	return func(link string, width int) (image.Image, bool) {
		for _, b := range links {
			if b.Config.Name != link {
				continue
			}
			c := linkCamera(b)
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
