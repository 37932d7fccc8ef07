package config

import (
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"github.com/labbridge/bridge/realtime"
)

// Bounds of loop.budget = "auto" (AssignBudgets).
const (
	// autoBandwidth is the share of each CPU that "auto" reserves for all
	// deadline threads together; the kernel admits at most 95 %
	// (kernel.sched_rt_runtime_us), and the rest is left to other users.
	autoBandwidth = 0.9
	// autoShareMax bounds one thread's share of its period.
	autoShareMax = 0.5
	// minAutoShare is the smallest share "auto" gives: a 1 kHz tick's own
	// work is about 47 µs of CPU on a 2-vCPU VM, and a thread over its
	// budget waits for its next slice (realtime.DeadlineSlice). At 4 links
	// with their partners (0.225 each) no tick waited; at 8 (0.11) and 16
	// (0.056) many did (docs/realtime.md §18). Below it a loop keeps
	// SCHED_FIFO.
	minAutoShare = 0.2
)

// AssignBudgets gives each real-time, unpinned loop whose loop.budget is
// "auto" a SCHED_DEADLINE budget, on a machine of cpus CPUs, with built-in
// partners (each a deadline thread too) when partners: an equal share of
// autoBandwidth of the CPUs, less the explicit budgets, at most half of
// each period, as CPU time per period. When the share would be under
// minAutoShare every such loop keeps SCHED_FIFO, and the warning names
// them.
//
// Why deadline threads: a Go thread leaving a system call may spin with
// sched_yield for a thread it preempted; under SCHED_FIFO that spin lasts
// until real-time throttling (up to 0.95 s, and every link waits with it),
// under SCHED_DEADLINE the yield ends the thread's turn until its next
// period (docs/realtime.md §18).
func (c *Config) AssignBudgets(cpus int, partners bool) (warning string) {
	threads := 1.0
	if partners {
		threads = 2 // the loop and its partner's receive thread
	}
	avail := autoBandwidth * float64(cpus)
	auto := 0
	for i := range c.Links {
		l := &c.Links[i]
		switch {
		case l.Loop.Priority == 0 || *l.Loop.CPU >= 0 || l.Loop.Budget == nil:
		case l.Loop.Budget.Auto:
			auto++
		default:
			avail -= threads * float64(l.Loop.Budget.Duration) / float64(l.Period())
		}
	}
	if auto == 0 {
		return ""
	}
	share := min(autoShareMax, avail/(threads*float64(auto)))
	var names []string
	for i := range c.Links {
		l := &c.Links[i]
		if l.Loop.Priority == 0 || *l.Loop.CPU >= 0 || l.Loop.Budget == nil || !l.Loop.Budget.Auto {
			continue
		}
		l.budget = 0
		if share >= minAutoShare {
			l.budget = time.Duration(share * float64(l.Period())).Truncate(time.Microsecond)
		}
		names = append(names, linkKey(i, l.Name))
	}
	if share >= minAutoShare {
		return ""
	}
	return fmt.Sprintf("%s: loop.budget = \"auto\" would leave each of these %d real-time loops (and their partners) under %.0f%% of a CPU on %d CPUs, so they keep SCHED_FIFO, where a loop waiting in the Go runtime can stall every link for up to a second; pin them (loop.cpu), or run fewer links per machine",
		strings.Join(names, ", "), auto, 100*minAutoShare, cpus)
}

// SetUpBudgets is AssignBudgets for this machine (runtime.NumCPU), then a
// probe: where the kernel refuses a deadline thread (no CAP_SYS_NICE, as
// under the shipped unit, or an admission test full), the "auto" budgets
// go back to 0, SCHED_FIFO, with one line at Info saying why, rather than a
// warning from every loop thread at every start. A budget the file sets is
// left to warn from its thread.
func (c *Config) SetUpBudgets(partners bool, logger *slog.Logger) {
	if warning := c.AssignBudgets(runtime.NumCPU(), partners); warning != "" {
		logger.Warn(warning)
	}
	var least time.Duration
	var period time.Duration
	for i := range c.Links {
		l := &c.Links[i]
		if l.budget > 0 && l.Loop.Budget.Auto && (least == 0 || l.budget < least) {
			least, period = l.budget, l.Period()
		}
	}
	if least == 0 {
		return
	}
	if err := realtime.ProbeDeadline(least, period); err != nil {
		for i := range c.Links {
			if c.Links[i].Loop.Budget.Auto {
				c.Links[i].budget = 0
			}
		}
		logger.Info("loops run under SCHED_FIFO: the kernel refuses a deadline budget here (loop.budget = \"auto\")", "err", err.Error())
	}
}

// Budget returns the loop's SCHED_DEADLINE budget: loop.budget, what
// AssignBudgets gave "auto", or 0 (SCHED_FIFO).
func (l *LinkTable) Budget() time.Duration { return l.budget }
