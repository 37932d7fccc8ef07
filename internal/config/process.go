package config

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/realtime"
)

// SetUpProcess applies the process-wide settings the links run best with,
// before they are built: GOMAXPROCS (Procs), the garbage collector's policy
// (realtime.DefaultGC), the loops' SCHED_DEADLINE budgets
// (SetUpBudgets), the nice value of the ordinary threads ([service]
// nice), and, with every real-time loop pinned, the other threads kept off
// the loops' CPUs (ConfineOthers). partners: with built-in partners. What
// it cannot do is logged as a warning saying what to grant or set; nothing
// stops the run.
func (c *Config) SetUpProcess(partners bool, logger *slog.Logger) {
	procs, warning := c.Procs(runtime.NumCPU(), runtime.GOMAXPROCS(0), partners)
	runtime.GOMAXPROCS(procs)
	if warning != "" {
		logger.Warn(warning)
	}
	c.SetUpBudgets(partners, logger)
	realtime.DefaultGC().Apply() // for the process's life
	if n := c.Service.Nice; n != nil && *n != 0 {
		if err := realtime.Renice(*n); err != nil {
			logger.Warn(niceWarning(*n, err))
		}
	}
	if cpus, warning := c.ConfineOthers(); warning != "" {
		logger.Warn(warning)
	} else if cpus != nil {
		logger.Info("threads other than the pinned loops' run on CPUs", "cpus", cpus)
	}
}

// StartSpinGuard starts the process's spin guard (realtime.SpinGuard) when a
// link asks for it (loop.spin_guard, the default) and its loop runs under
// SCHED_FIFO; nil when none needs it or it cannot start, which is logged
// saying what to do. Close it after the links.
func (c *Config) StartSpinGuard(logger *slog.Logger) *realtime.SpinGuard {
	top := 0 // the highest priority of a guarded loop
	for i := range c.Links {
		if l := &c.Links[i].Loop; *l.SpinGuard {
			top = max(top, l.Priority)
		}
	}
	if top == 0 {
		return nil
	}
	g, err := realtime.StartSpinGuard(realtime.SpinGuardConfig{})
	if err != nil {
		logger.Warn("the loops run without their spin guard: a loop that spins in the Go runtime can hold its CPU until the kernel's real-time throttling stops it (up to 0.95 s); set loop.spin_guard = false to silence this", "err", err)
		return nil
	}
	if err := g.Refused(); err != nil {
		logger.Warn(fmt.Sprintf("the spin guard runs as an ordinary thread, so it cannot break a spin on a CPU that a loop holds; grant LimitRTPRIO=%d (the loops' priority) or CAP_SYS_NICE", top), "err", err)
	} else if p := g.Priority(); p < top {
		logger.Warn(fmt.Sprintf("the spin guard runs at SCHED_FIFO %d, below the loops' %d, so it cannot break a spin on a CPU that a loop holds; grant LimitRTPRIO=%d or CAP_SYS_NICE", p, top, top))
	}
	return g
}

// niceWarning says what a refused [service] nice needs.
func niceWarning(nice int, err error) string {
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return fmt.Sprintf("service.nice = %d is not permitted, so the process's ordinary threads keep their nice value and may hand the loops their Ps late on a busy machine; grant LimitNICE=%d (or Nice=%d in the unit) or CAP_SYS_NICE, or set nice = 0", nice, nice, nice)
	}
	return fmt.Sprintf("service.nice = %d: %v", nice, err)
}

// BenchLink is the configuration of `bridge bench link`: one link named
// "bench" at rateHz with the loop settings of loop, on the in-memory plant
// (plant "sim") or the Emio's servos simulated on a pseudo-terminal (plant
// "emio": the real serial path), no camera, the defaults of every other
// key. No metrics server.
func BenchLink(rateHz float64, loop LoopTable, plant string) (*Config, error) {
	l := LinkTable{Name: "bench", RateHz: rateHz, Loop: loop}
	switch plant {
	case "sim":
		l.Plant = &SimPlant{}
	case "emio":
		l.Plant = &EmioPlant{Port: "sim"}
	default:
		return nil, fmt.Errorf("%w: plant %q: want sim (in-memory motors) or emio (servos on a pseudo-terminal)", ErrConfig, plant)
	}
	c := &Config{Service: Service{Metrics: ""}, Links: []LinkTable{l}}
	c.fillDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// SimLinks is the configuration of n links named link-00, link-01, … at
// rateHz, each with the in-memory plant ([link.plant] kind = "sim"), the
// loop settings of loop, and the defaults of every other key: what `bridge
// bench links` runs, as bridge sim would build it. No metrics server.
func SimLinks(n int, rateHz float64, loop LoopTable) (*Config, error) {
	c := &Config{Service: Service{Metrics: ""}}
	for i := range n {
		l := LinkTable{Name: fmt.Sprintf("link-%02d", i), RateHz: rateHz, Loop: loop, Plant: &SimPlant{}}
		if loop.CPU != nil {
			l.Loop.CPU = new(*loop.CPU) // each link its own, as a file's would be
		}
		if loop.DMALatency != nil {
			l.Loop.DMALatency = new(*loop.DMALatency)
		}
		c.Links = append(c.Links, l)
	}
	c.fillDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
