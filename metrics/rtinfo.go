package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// RealTimeInfo is what the set-up of a link's loop thread got (not what was
// asked for): see realtime.SetupThread, whose *SetupError warnings name each
// setting it could not apply.
type RealTimeInfo struct {
	// Policy is the thread's scheduling policy: "SCHED_DEADLINE" (a loop
	// budget), "SCHED_FIFO", or "SCHED_OTHER" when no priority was asked
	// for or it was refused.
	Policy string
	// Priority is the SCHED_FIFO priority, 0 under the other policies.
	Priority int
	// CPUs is the CPU list the thread is pinned to ("1", "0-1"), "" when
	// it is not pinned.
	CPUs string
	// DMALatency: the thread holds /dev/cpu_dma_latency at 0
	// (realtime.Thread.HoldsDMALatency).
	DMALatency bool
	// LockedMemory: mlockall succeeded.
	LockedMemory bool
}

// realTime is a RealTimeInfo as its metrics export it.
type realTime struct {
	policy, priority, cpus string
	dma, mem               float64
}

// RealTime exports the real-time settings of the link's loop thread:
//
//   - bridge_realtime_info{policy,priority,cpus} = 1;
//   - bridge_realtime_dma_latency_held and bridge_realtime_memory_locked,
//     0 or 1.
//
// The two flags are gauges of their own rather than labels of the info
// metric so that an alert or a panel can test them (== 0) without matching
// label strings, and so that the DMA latency request, which the loop
// releases when it stops, can change without replacing the info series.
// Nothing is exported before the first call; each call replaces what the
// previous one exported (a loop started again). Safe from any goroutine.
func (l *Link) RealTime(rt RealTimeInfo) {
	r := &realTime{
		policy:   strings.ToValidUTF8(rt.Policy, "\uFFFD"),
		priority: strconv.Itoa(rt.Priority),
		cpus:     strings.ToValidUTF8(rt.CPUs, "\uFFFD"),
		dma:      boolValue(rt.DMALatency),
		mem:      boolValue(rt.LockedMemory),
	}
	l.coll.rt.Store(r)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *linkCollector) collectRealTime(ch chan<- prometheus.Metric) {
	r := c.rt.Load()
	if r == nil {
		return
	}
	ch <- constMetric(c.rtInfoDesc, 1, r.policy, r.priority, r.cpus)
	ch <- constMetric(c.dmaDesc, r.dma)
	ch <- constMetric(c.memDesc, r.mem)
}
