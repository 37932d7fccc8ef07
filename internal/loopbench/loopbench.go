// Package loopbench measures the wake-up lateness of the bridge's clock-master
// loop (bridge.Loop) and of cyclictest under the same settings, following the
// method of docs/realtime.md §0 and §4: a fixed rate, a fixed number of
// ticks, lateness = wake time − deadline, and percentiles over every tick.
package loopbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/realtime"
)

// ErrConfig is the sentinel of every invalid Config or CyclictestConfig.
var ErrConfig = errors.New("loopbench: invalid configuration")

// maxTicks bounds one run's lateness buffer (8 bytes a tick: 800 MB).
const maxTicks = 100_000_000

// Config is one loop benchmark run.
type Config struct {
	Rate     float64       // ticks per second, > 0
	Duration time.Duration // run length; the run is round(Duration × Rate) ticks
	// Loop thread options, as in bridge.LoopConfig.
	Priority   int
	CPU        int // -1 = no pinning
	Spin       time.Duration
	LockMemory bool
	DMALatency bool
	// Logger receives the loop's set-up warnings as they happen; nil = none
	// (they are in Result.Warnings either way).
	Logger *slog.Logger
}

// Period returns the loop period for the rate, rounded to the nanosecond.
func (c Config) Period() time.Duration { return ratePeriod(c.Rate) }

// Ticks returns the number of ticks the run records.
func (c Config) Ticks() int { return int(math.Round(c.Duration.Seconds() * c.Rate)) }

func ratePeriod(rate float64) time.Duration {
	return time.Duration(math.Round(float64(time.Second) / rate))
}

func validRate(rate float64) error {
	if !(rate > 0) || rate > 1e9 {
		return fmt.Errorf("loopbench: rate %v Hz: %w (want > 0 and at most 1e9)", rate, ErrConfig)
	}
	return nil
}

// Validate reports an invalid field; errors wrap ErrConfig and name it.
func (c Config) Validate() error {
	if err := validRate(c.Rate); err != nil {
		return err
	}
	if n := c.Ticks(); c.Duration <= 0 || n < 1 || n > maxTicks {
		return fmt.Errorf("loopbench: duration %v at %v Hz is %d ticks: %w (want 1..%d)",
			c.Duration, c.Rate, n, ErrConfig, maxTicks)
	}
	return c.loopConfig().Validate()
}

func (c Config) loopConfig() bridge.LoopConfig {
	return bridge.LoopConfig{
		Period:     c.Period(),
		Priority:   c.Priority,
		CPU:        c.CPU,
		Spin:       c.Spin,
		LockMemory: c.LockMemory,
		DMALatency: c.DMALatency,
	}
}

// Stats summarises lateness samples. Percentiles are nearest-rank: the
// smallest sample with at least p of all samples at or below it.
type Stats struct {
	Min, P50, P99, P999, Max, Mean time.Duration
}

// Summarize computes Stats over lateness samples in nanoseconds. It sorts ns
// in place.
func Summarize(ns []int64) Stats {
	if len(ns) == 0 {
		return Stats{}
	}
	slices.Sort(ns)
	var sum float64
	for _, v := range ns {
		sum += float64(v)
	}
	at := func(p float64) time.Duration { return time.Duration(ns[rank(p, uint64(len(ns)))-1]) }
	return Stats{
		Min:  time.Duration(ns[0]),
		P50:  at(0.50),
		P99:  at(0.99),
		P999: at(0.999),
		Max:  time.Duration(ns[len(ns)-1]),
		Mean: time.Duration(math.Round(sum / float64(len(ns)))),
	}
}

// rank is the 1-based nearest rank of percentile p among n samples.
func rank(p float64, n uint64) uint64 {
	r := uint64(math.Ceil(p * float64(n)))
	return min(max(r, 1), n)
}

// Result is one measured run, of the bridge loop or of cyclictest.
type Result struct {
	Tool     string // "bridge" or "cyclictest"
	RateHz   float64
	Duration time.Duration // nominal: Ticks periods
	Priority int
	CPU      int
	Ticks    uint64
	// Overruns: for the bridge, the periods the loop skipped; for
	// cyclictest, which never skips, the wakes late by a period or more.
	Overruns uint64
	Lateness Stats
	// Overflows counts cyclictest samples beyond its histogram range; a
	// percentile that falls among them is reported as Max.
	Overflows uint64
	Warnings  []string // set-up steps that were not permitted
}

// recorder is the loop observer of a run: it writes every tick's lateness
// into a buffer allocated before the run and stops the run when it is full.
type recorder struct {
	lateness []int64
	n        int
	overruns uint64
	stop     context.CancelFunc
}

func (r *recorder) ObserveTick(latenessNs, _ int64) {
	if r.n >= len(r.lateness) {
		return // the tick in flight when the stop was requested
	}
	r.lateness[r.n] = latenessNs
	r.n++
	if r.n == len(r.lateness) {
		r.stop()
	}
}

func (r *recorder) ObserveOverrun(periods int) {
	// Count only skips that precede a recorded tick.
	if r.n < len(r.lateness) {
		r.overruns += uint64(periods)
	}
}

func nopTick(*bridge.TickInfo) {}

// Run runs a bridge.Loop with a no-op tick for cfg.Ticks() ticks and
// summarises its lateness. If ctx ends first, Run returns the ticks recorded
// so far and an error wrapping ctx.Err().
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec := &recorder{lateness: make([]int64, cfg.Ticks()), stop: cancel}
	loop, err := bridge.NewLoop(cfg.loopConfig(), realtime.NewClock(), rec, cfg.Logger)
	if err != nil {
		return Result{}, err
	}
	if err := loop.Serve(runCtx, nopTick); err != nil {
		return Result{}, fmt.Errorf("loopbench: %w", err)
	}
	res := Result{
		Tool:     "bridge",
		RateHz:   cfg.Rate,
		Duration: time.Duration(rec.n) * cfg.Period(),
		Priority: cfg.Priority,
		CPU:      cfg.CPU,
		Ticks:    uint64(rec.n),
		Overruns: rec.overruns,
		Lateness: Summarize(rec.lateness[:rec.n]),
		Warnings: []string{},
	}
	for _, w := range loop.SetupWarnings() {
		res.Warnings = append(res.Warnings, w.Error())
	}
	if rec.n < len(rec.lateness) {
		return res, fmt.Errorf("loopbench: run stopped after %d of %d ticks: %w", rec.n, len(rec.lateness), context.Cause(ctx))
	}
	return res, nil
}
