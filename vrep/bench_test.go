package vrep_test

import (
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/latency"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// BenchmarkExchange is one tick's exchange with a simulated scene on
// loopback, on the caller's goroutine as the worker makes it: for AZ a
// connection, request, reply and close; for ZMQ two target velocities, a
// lock step, two joint angles and the time; and the lone sim.step. It
// reports the round trip's percentiles and the allocations per exchange.
func BenchmarkExchange(b *testing.B) {
	b.Run("az", func(b *testing.B) {
		_, addr := startAZ(b, vrepsim.AZConfig{})
		s := openScene(b, vrep.Config{Address: addr, Timeout: 5 * time.Second})
		runExchanges(b, func() error { return s.Exchange([]float64{0.5, -0.5}) })
	})
	b.Run("zmq-tick", func(b *testing.B) {
		_, addr := startZMQ(b, vrepsim.ZMQConfig{})
		s := openScene(b, vrep.Config{Protocol: vrep.ZMQ, Address: addr, Timeout: 5 * time.Second, Stepping: true, Start: true})
		runExchanges(b, func() error { return s.Exchange([]float64{0.5, -0.5}) })
	})
	b.Run("zmq-step", func(b *testing.B) {
		_, addr := startZMQ(b, vrepsim.ZMQConfig{Running: true})
		r, err := vrep.DialRemote(b.Context(), vrep.RemoteConfig{Address: addr, CallTimeout: 5 * time.Second, ClientTimeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Call("sim.setStepping", true); err != nil {
			b.Fatal(err)
		}
		runExchanges(b, func() error { _, err := r.Call("sim.step"); return err })
	})
}

func openScene(b *testing.B, cfg vrep.Config) *vrep.Scene {
	s, err := vrep.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	return s
}

func runExchanges(b *testing.B, exchange func() error) {
	h := latency.New()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := exchange(); err != nil {
			b.Fatal(err)
		}
		h.Record(time.Since(t0).Nanoseconds())
	}
	b.ReportMetric(float64(h.Quantile(0.5))/1e3, "p50-µs")
	b.ReportMetric(float64(h.Quantile(0.99))/1e3, "p99-µs")
}
