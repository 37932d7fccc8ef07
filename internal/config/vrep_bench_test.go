package config

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/latency"
	"github.com/labbridge/bridge/vrep"
)

// ticks records a loop's tick lateness and work once on is set (loop
// thread only; read after the loop has stopped).
type ticks struct {
	late, work *latency.Histogram
	on         *atomic.Bool
}

func (t ticks) ObserveTick(late, work int64) {
	if t.on.Load() {
		t.late.Record(late)
		t.work.Record(work)
	}
}
func (ticks) ObserveOverrun(int) {}

// BenchmarkVREPRelay runs the embedded default's V-REP link (the seed's AZ
// exchange with a simulated scene over TCP, one connection per tick) beside
// a link of the in-memory plant at the same rate, in one process, each with
// a built-in partner on loopback. One op is one V-REP tick. It reports both
// links' tick work (the tick's whole time on the loop thread, the Simulink
// exchange included) and lateness side by side, and the scene's exchange
// round trip, which the worker makes off the loop thread.
func BenchmarkVREPRelay(b *testing.B) {
	for _, rate := range []float64{20, 100, 500} {
		b.Run(fmt.Sprintf("rate=%g", rate), func(b *testing.B) { benchVREP(b, rate) })
	}
}

func benchVREP(b *testing.B, rate float64) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		b.Fatal(err)
	}
	l := &c.Links[2]
	l.RateHz = rate
	p := l.Plant.(*VREPPlant)
	p.Timeout.Duration = l.Period()
	p.VelTimeout.Duration = max(3*l.Period(), 100*time.Millisecond)
	l.UDP.MaxTimeouts = 50 // a hiccup of this busy machine is no reason to re-handshake
	mem, err := Parse(fmt.Appendf(nil, "[[link]]\nname = \"mem\"\nrate_hz = %g\napply = \"immediate\"\n[link.udp]\nmax_timeouts = 50\n", rate))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		b.Fatal(err)
	}
	var on atomic.Bool // the handshakes are not what is measured
	vt := ticks{latency.New(), latency.New(), &on}
	mt := ticks{latency.New(), latency.New(), &on}
	log := slog.New(slog.DiscardHandler)
	vl, err := l.Build(Env{Logger: log, Partner: true, Ephemeral: true, Loop: vt})
	if err != nil {
		b.Fatal(err)
	}
	defer vl.Close()
	ml, err := mem.Links[0].Build(Env{Logger: log, Partner: true, Ephemeral: true, Loop: mt})
	if err != nil {
		b.Fatal(err)
	}
	defer ml.Close()
	scene := vl.Link.Plant().(*vrep.Scene)
	var before vrep.Stats
	benchLinks(b, []*Built{vl, ml}, []bridge.Part{{Name: "vrep partner", Service: vl.Partner}, {Name: "mem partner", Service: ml.Partner}}, func() {
		before = scene.Stats()
		on.Store(true)
	})
	after := scene.Stats()
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	b.ReportMetric(us(vt.work.Quantile(0.5)), "vrep-work-p50-µs")
	b.ReportMetric(us(vt.work.Quantile(0.99)), "vrep-work-p99-µs")
	b.ReportMetric(us(mt.work.Quantile(0.5)), "mem-work-p50-µs")
	b.ReportMetric(us(mt.work.Quantile(0.99)), "mem-work-p99-µs")
	b.ReportMetric(us(vt.late.Quantile(0.99)), "vrep-late-p99-µs")
	b.ReportMetric(us(mt.late.Quantile(0.99)), "mem-late-p99-µs")
	b.ReportMetric(float64(after.Exchanges-before.Exchanges), "exchanges")
	b.ReportMetric(float64(after.Superseded-before.Superseded), "superseded")
	b.ReportMetric(0, "ns/op")
}
