package config

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/latency"
	"github.com/labbridge/bridge/meca500/mecasim"
	"github.com/labbridge/bridge/simulink"
)

// lateness records a loop's tick lateness (loop thread only; read after
// the loop has stopped).
type lateness struct{ h *latency.Histogram }

func (l lateness) ObserveTick(ns, _ int64) { l.h.Record(ns) }
func (lateness) ObserveOverrun(int)        {}

// stamping wraps the partner's controller: it tags each reply with its seq
// in joint 6's speed (1 + (seq mod 1000)/1000 °/s, harmless) and notes when
// the reply left, so that the robot can tell which reply a MoveJointsVel
// carries and how long it took to reach it.
type stamping struct {
	simulink.Controller
	sent *[1000]atomic.Int64
}

func (s stamping) Step(seq int64, y, u []float64) {
	s.Controller.Step(seq, y, u)
	u[5] = 1 + float64(seq%1000)/1000
	s.sent[seq%1000].Store(time.Now().UnixNano())
}

// BenchmarkMeca500Relay runs the embedded default's two links in one
// process, the Emio (30 Hz on its virtual camera) beside the Meca500 at
// the sub-benchmark's rate and apply mode, the Meca500 on a simulated
// robot reached over TCP as a real one would be. One op is one Meca500
// tick. It reports the command-to-robot latency (the partner's reply
// leaving → its MoveJointsVel read by the robot, so the UDP and TCP hops
// are included) and both links' tick lateness.
func BenchmarkMeca500Relay(b *testing.B) {
	for _, bc := range []struct {
		rate  float64
		apply string
	}{{100, "immediate"}, {1000, "immediate"}, {100, "previous"}} {
		b.Run(fmt.Sprintf("rate=%g/apply=%s", bc.rate, bc.apply), func(b *testing.B) {
			benchRelay(b, bc.rate, bc.apply)
		})
	}
}

func benchRelay(b *testing.B, rate float64, apply string) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		b.Fatal(err)
	}
	emioLate, mecaLate, cmdLat := latency.New(), latency.New(), latency.New()
	var sent [1000]atomic.Int64
	var mu sync.Mutex
	robot, err := mecasim.New(mecasim.Config{MonitoringInterval: time.Millisecond, OnCommand: func(name string, args []float64) {
		if name != "MoveJointsVel" || len(args) != 6 || args[5] < 1 {
			return
		}
		now := time.Now().UnixNano()
		if t0 := sent[int(math.Round((args[5]-1)*1000))%1000].Load(); t0 > 0 {
			mu.Lock()
			cmdLat.Record(now - t0)
			mu.Unlock()
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Skipf("no loopback TCP port: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var world sync.WaitGroup
	world.Go(func() { robot.Serve(ctx, ln) })
	defer func() { cancel(); world.Wait(); ln.Close() }()

	// The Meca500 link as a lab writes it: the robot's address, its own
	// ports, and a partner of our own that stamps its replies.
	l := &c.Links[1]
	l.RateHz, l.Apply = rate, apply
	p := l.Plant.(*Meca500Plant)
	p.Address = ln.Addr().String()
	p.MonitoringInterval.Duration = min(p.MonitoringInterval.Duration, l.Period())
	l.UDP.MaxTimeouts = 50 // a hiccup of this busy machine is no reason to re-handshake
	ctl, err := l.Controller()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		b.Fatal(err)
	}
	// The master binds port 0, our partner is told the bound ports, then
	// the master is pointed at the partner's.
	log := slog.New(slog.DiscardHandler)
	meca, err := l.Build(Env{Logger: log, Ephemeral: true, Loop: lateness{mecaLate}})
	if err != nil {
		b.Fatal(err)
	}
	defer meca.Close()
	from, err1 := meca.Master.LocalAddr()
	listen, err2 := meca.Master.ListenAddr()
	if err1 != nil || err2 != nil {
		b.Fatal(err1, err2)
	}
	partner, err := simulink.NewPartner(simulink.PartnerConfig{
		Listen: netip.AddrPortFrom(listen.Addr(), 0), Accept: from, ReplyTo: listen,
		MeasureLen: l.Plant.Layout().MeasureLen(), CommandLen: 6, Controller: stamping{ctl, &sent},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer partner.Close()
	if err := meca.Master.SetRemote(partner.Addr()); err != nil {
		b.Fatal(err)
	}
	emio, err := c.Links[0].Build(Env{Logger: log, Partner: true, Ephemeral: true, Loop: lateness{emioLate}})
	if err != nil {
		b.Fatal(err)
	}
	defer emio.Close()

	benchLinks(b, []*Built{meca, emio}, []bridge.Part{{Name: "meca500 partner", Service: partner}, {Name: "emio partner", Service: emio.Partner}}, nil)
	mu.Lock()
	defer mu.Unlock()
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	b.ReportMetric(us(cmdLat.Quantile(0.5)), "cmd-p50-µs")
	b.ReportMetric(us(cmdLat.Quantile(0.99)), "cmd-p99-µs")
	b.ReportMetric(us(mecaLate.Quantile(0.5)), "meca-late-p50-µs")
	b.ReportMetric(us(mecaLate.Quantile(0.99)), "meca-late-p99-µs")
	b.ReportMetric(us(mecaLate.Max()), "meca-late-max-µs")
	b.ReportMetric(us(emioLate.Quantile(0.5)), "emio-late-p50-µs")
	b.ReportMetric(us(emioLate.Quantile(0.99)), "emio-late-p99-µs")
	b.ReportMetric(float64(cmdLat.Count()), "commands")
	b.ReportMetric(0, "ns/op")
}
