// Package vrepbench measures one tick's exchange with a V-REP or
// CoppeliaSim scene (docs/vrep.md): at a rate or back to back, against a
// simulated scene it serves itself or a scene at an address, and the seed's
// own Python client against the same scene for comparison
// (loopbench.RunSeedClient). `bridge bench vrep` prints what it returns.
package vrepbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// ErrConfig is a Config that cannot run.
var ErrConfig = errors.New("vrepbench: invalid configuration")

// Config is one run.
type Config struct {
	Protocol vrep.Protocol
	// Address is the scene to measure; "" serves a simulated scene on a
	// loopback port for the run.
	Address  string
	Rate     float64       // exchanges per second; 0 back to back
	Duration time.Duration // how long to run
	Count    uint64        // stop after this many exchanges; 0: Duration decides
	Timeout  time.Duration // one exchange's
	// UntilExhausted (AZ) stops at the first connect that fails for want of
	// a local port (TIME_WAIT exhaustion).
	UntilExhausted bool
	// StepOnly (ZMQ) times sim.step alone, in lock step, instead of a whole
	// tick.
	StepOnly bool
	// Seed (AZ), if set, is the seed document whose Python client then
	// makes as many exchanges (at most 5 000) with the same scene, still
	// served, for comparison.
	Seed string
}

// Result is a run's report and what it was.
type Result struct {
	Report loopbench.ExchangeReport
	// Name says which client measured what: "go az client", "go zmq client,
	// sim.step alone".
	Name string
	// Address is the scene's (the simulated one's port when served here).
	Address string
	// TimeWait is how many sockets were left in TIME_WAIT toward or from
	// the scene's port (AZ connects once a tick); -1 when unknown.
	TimeWait int
	// Seed is the seed's Python client's report (Config.Seed), nil without.
	Seed *loopbench.ExchangeReport
}

// WriteText writes the report as text: the exchanges and their round trip,
// the sockets left in TIME_WAIT, and the seed's client beside ours with the
// ratio of their round trips.
func (r Result) WriteText(w io.Writer) error {
	if err := r.Report.WriteText(w, r.Name); err != nil {
		return err
	}
	if r.TimeWait >= 0 {
		fmt.Fprintf(w, "  %d sockets in TIME_WAIT toward or from %s\n", r.TimeWait, r.Address)
	}
	if py, g := r.Seed, r.Report; py != nil {
		py.WriteText(w, "seed python client")
		if py.RTT.P50 > 0 && g.RTT.P50 > 0 {
			_, err := fmt.Fprintf(w, "python/go round trip: p50 ×%.1f, p99 ×%.1f\n", float64(py.RTT.P50)/float64(g.RTT.P50), float64(py.RTT.P99)/float64(g.RTT.P99))
			return err
		}
	}
	return nil
}

// Run measures the exchanges cfg asks for.
func Run(ctx context.Context, cfg Config) (Result, error) {
	switch {
	case cfg.Rate < 0 || cfg.Duration <= 0:
		return Result{}, fmt.Errorf("%w: rate %v, duration %v: want a rate ≥ 0 and a duration > 0", ErrConfig, cfg.Rate, cfg.Duration)
	case cfg.StepOnly && cfg.Protocol != vrep.ZMQ:
		return Result{}, fmt.Errorf("%w: step-only times sim.step: it needs protocol zmq", ErrConfig)
	case cfg.Seed != "" && cfg.Protocol != vrep.AZ:
		return Result{}, fmt.Errorf("%w: the seed's client speaks AZ: it needs protocol az", ErrConfig)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	res := Result{Address: cfg.Address, TimeWait: -1, Name: "go " + cfg.Protocol.String() + " client"}
	var wg sync.WaitGroup
	sctx, stopScene := context.WithCancel(ctx)
	defer wg.Wait()
	defer stopScene()
	if res.Address == "" {
		ln, serve, err := simulatedScene(cfg.Protocol)
		if err != nil {
			return res, err
		}
		res.Address = ln.Addr().String()
		wg.Go(func() { _ = serve(sctx, ln) })
	}
	scene, err := vrep.New(vrep.Config{Protocol: cfg.Protocol, Address: res.Address, Timeout: cfg.Timeout, Stepping: true, Start: true})
	if err != nil {
		return res, err
	}
	defer scene.Close()
	if err := scene.Open(ctx); err != nil {
		return res, err
	}
	u := []float64{0.5, -0.5}
	exchange := func() error { return scene.Exchange(u) }
	if cfg.StepOnly {
		// The scene is open (started, in lock step): a second client of
		// ours alone steps it, the scene's own client being idle.
		scene.Close()
		r, err := vrep.DialRemote(ctx, vrep.RemoteConfig{Address: res.Address, CallTimeout: cfg.Timeout, ClientTimeout: 5 * time.Second})
		if err != nil {
			return res, err
		}
		defer r.Close()
		if _, err := r.Call("sim.setStepping", true); err != nil {
			return res, err
		}
		exchange = func() error { _, err := r.Call("sim.step"); return err }
		res.Name = "go zmq client, sim.step alone"
	}
	ec := loopbench.ExchangeConfig{Rate: cfg.Rate, Duration: cfg.Duration, Count: cfg.Count}
	if cfg.UntilExhausted {
		ec.Stop = func(err error) bool { return errors.Is(err, syscall.EADDRNOTAVAIL) }
	}
	if res.Report, err = loopbench.RunExchanges(ctx, ec, exchange); err != nil {
		return res, err
	}
	if cfg.Protocol == vrep.AZ {
		if tw, err := loopbench.TimeWait(portOf(res.Address)); err == nil {
			res.TimeWait = tw
		}
	}
	if cfg.Seed != "" {
		py, err := loopbench.RunSeedClient(ctx, cfg.Seed, res.Address, int(min(res.Report.Exchanges, 5000)))
		if err != nil {
			return res, err
		}
		res.Seed = &py.Report
	}
	return res, nil
}

// simulatedScene listens on a loopback port for a simulated scene of the
// protocol, and returns what serves it.
func simulatedScene(p vrep.Protocol) (net.Listener, func(context.Context, net.Listener) error, error) {
	var serve func(context.Context, net.Listener) error
	if p == vrep.ZMQ {
		s, err := vrepsim.NewZMQ(vrepsim.ZMQConfig{Running: true})
		if err != nil {
			return nil, nil, err
		}
		serve = s.Serve
	} else {
		s, err := vrepsim.NewAZ(vrepsim.AZConfig{})
		if err != nil {
			return nil, nil, err
		}
		serve = s.Serve
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("vrepbench: a loopback port for the simulated scene: %w", err)
	}
	return ln, serve, nil
}

// Port is the port of a host:port address, 0 when it has none.
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
