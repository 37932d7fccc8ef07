package config

import (
	"fmt"
	"slices"

	"github.com/labbridge/bridge/realtime"
)

// ConfineOthers keeps the process's ordinary threads (the Go runtime's
// monitor and GC workers, the threads that hand a P to a locked thread, the
// HTTP server's) off the CPUs the links' loops are pinned to, when every
// real-time loop is pinned ([link.loop] cpu), and returns the CPUs it left
// them. A real-time thread of ours that spins in the runtime waiting for an
// ordinary thread it preempted on its own CPU runs until that thread is
// moved elsewhere, up to the kernel's real-time throttling
// (docs/realtime.md §17); kept off the loops' CPUs, those threads always
// have a CPU. A real-time loop left unpinned would be confined with them
// and meet the same hazard there, so then nothing is confined and the
// warning says why and what to do; so too when the loops take every CPU
// or the kernel refuses. Call it before the links start: threads made
// later inherit the affinity of the thread that makes them, and a loop,
// its built-in partner and its camera thread pin themselves to the loop's
// CPU.
func (c *Config) ConfineOthers() (cpus []int, warning string) {
	allowed, err := realtime.AllowedCPUs()
	if err != nil {
		return nil, err.Error()
	}
	cpus, warning = c.otherCPUs(allowed)
	if cpus == nil {
		return nil, warning
	}
	if err := realtime.Confine(cpus); err != nil {
		return nil, fmt.Sprintf("the process's other threads may still run on the loops' CPUs: %v", err)
	}
	return cpus, ""
}

// otherCPUs returns the CPUs of allowed that no loop is pinned to, or nil
// and why not: no loop is pinned (nothing to say), a real-time loop is not
// pinned, or the loops take every CPU.
func (c *Config) otherCPUs(allowed []int) ([]int, string) {
	var pinned []int
	unpinned := ""
	for i := range c.Links {
		l := &c.Links[i].Loop
		switch {
		case l.CPU != nil && *l.CPU >= 0:
			if !slices.Contains(pinned, *l.CPU) {
				pinned = append(pinned, *l.CPU)
			}
		case l.Priority > 0 && unpinned == "":
			unpinned = c.Links[i].Name
		}
	}
	switch {
	case len(pinned) == 0:
		return nil, ""
	case unpinned != "":
		return nil, fmt.Sprintf("link %q runs its real-time loop on no CPU of its own while other loops are pinned (CPUs %v): the process's other threads are not kept off the pinned CPUs, since the unpinned loop would share theirs; set [link.loop] cpu for %q too", unpinned, pinned, unpinned)
	}
	rest := slices.DeleteFunc(slices.Clone(allowed), func(c int) bool { return slices.Contains(pinned, c) })
	if len(rest) == 0 {
		return nil, fmt.Sprintf("the loops are pinned to CPUs %v, every CPU this process may use (%v): its other threads share them; leave one CPU free of loops", pinned, allowed)
	}
	return rest, ""
}
