package realtime

import (
	"os"
	"runtime/debug"
)

// GC is the garbage collector's policy of a process with real-time loops.
//
// Each collection cycle stops the world twice and runs functions on every
// P, and both take the P of each loop sleeping in a system call, so a loop
// that wakes in that moment waits for a thread of the runtime to give it
// one back; when that thread is one the loop preempted on its own CPU, the
// loop spins in the runtime until the kernel moves the thread or throttles
// real-time threads, up to a second (docs/realtime.md §17). The loops
// allocate nothing; what collects is the rest of the process, an HTTP
// server under load above all: 500 clients on the metrics server made 370
// to 560 cycles a minute at the runtime's default (GOGC=100 on a heap of a
// few MB), against 35 at a GC percent of 1000. The limit bounds what the
// larger percent lets the heap grow to.
type GC struct {
	Percent int   // debug.SetGCPercent; GOGC in the environment wins
	Limit   int64 // debug.SetMemoryLimit, bytes; GOMEMLIMIT in the environment wins
}

// DefaultGC is the policy of bridge run and the benchmarks: a heap that
// grows to 11 times what is live before a cycle (a live heap of a few MB
// collects every few seconds under HTTP load, not several times a second),
// and never beyond 256 MiB, the limit deploy/bridge@.service sets.
func DefaultGC() GC { return GC{Percent: 1000, Limit: 256 << 20} }

// Apply sets g, but leaves alone what the environment sets (GOGC,
// GOMEMLIMIT: a person's choice, or the service unit's), and returns a
// function that restores what was set before.
func (g GC) Apply() (restore func()) {
	percent, limit := -2, int64(-1) // -2: not changed
	if _, ok := os.LookupEnv("GOGC"); !ok && g.Percent != 0 {
		percent = debug.SetGCPercent(g.Percent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok && g.Limit > 0 {
		limit = debug.SetMemoryLimit(g.Limit)
	}
	return func() {
		if percent != -2 {
			debug.SetGCPercent(percent)
		}
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}
