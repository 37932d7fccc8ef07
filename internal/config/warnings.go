package config

import (
	"fmt"
	"math"
	"time"

	"github.com/labbridge/bridge/dynamixel"
)

// Warnings lists what the configuration allows but will not do as
// written, one line each, for `bridge check` and the start of a run to
// print. Today: a Dynamixel bus too slow for its link's rate, which would
// otherwise tick at what the bus carries and count overruns silently; and
// a link that re-handshakes after a pause of its partner shorter than a
// host's scheduling hiccup; a loop left at normal priority because the
// file did not set one; and a real-time loop that spins most of its
// period, which the kernel's real-time throttling stops for 50 ms a second;
// and a loop that shares its CPU with another link's camera thread.
func (c *Config) Warnings() []string {
	out := c.cameraCPUWarnings()
	for i := range c.Links {
		l := &c.Links[i]
		if w := l.timeoutWarning(linkKey(i, l.Name)); w != "" {
			out = append(out, w)
		}
		if l.priorityUnset {
			out = append(out, fmt.Sprintf("%s: loop.priority is not set, so the loop runs at normal priority (SCHED_OTHER), not at the SCHED_FIFO 80 of the shipped bridge.toml; set loop.priority = 80 in [link.loop] for real-time ticks, or 0 for normal priority without this warning", linkKey(i, l.Name)))
		}
		if w := l.spinWarning(linkKey(i, l.Name)); w != "" {
			out = append(out, w)
		}
		if p, ok := l.Plant.(*EmioPlant); ok {
			if w := p.busWarning(l, linkKey(i, l.Name)); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// spinShare is the share of a period a SCHED_FIFO loop may spin without a
// warning. The kernel stops every real-time thread of a CPU for the rest
// of a second once they have used 950 ms of it (sched_rt_runtime_us): a
// 50 ms stall of every loop on that CPU, measured in docs/realtime.md §17.
const spinShare = 0.5

// spinWarning says when a fixed spin keeps a real-time loop's CPU busy for
// most of each period.
func (l *LinkTable) spinWarning(link string) string {
	spin := l.Loop.Spin.Duration
	if l.Loop.Priority == 0 || spin <= 0 || l.RateHz <= 0 {
		return ""
	}
	period := time.Duration(float64(time.Second) / l.RateHz)
	if float64(spin) <= spinShare*float64(period) {
		return ""
	}
	return fmt.Sprintf("%s: loop.spin = %v keeps the loop's CPU busy for %.0f %% of each %v period at SCHED_FIFO %d; real-time threads that use more than 95 %% of a CPU are stopped by the kernel for 50 ms every second, every loop on that CPU with them; set spin = \"auto\" (at most a quarter of the period) or at most %v",
		link, spin, 100*float64(spin)/float64(period), period, l.Loop.Priority, time.Duration(spinShare*float64(period)))
}

// busLoad is the share of the period one tick's bus transactions may take:
// the rest is for the UDP exchange and the loop's own work.
const busLoad = 0.8

// busWarning says when the link's rate asks more of the bus than it
// carries, and what to change.
func (p *EmioPlant) busWarning(l *LinkTable, link string) string {
	latency, assumed := p.LatencyTimer.Duration, ""
	switch {
	case latency == 0 && p.Port == "sim":
		latency = time.Millisecond // what build gives the simulated adapter
	case latency == 0:
		latency, assumed = 16*time.Millisecond, " (latency_timer = 0: assumed the Linux default, 16 ms)"
	}
	returnDelay := dynamixel.DefaultReturnDelay
	tick := dynamixel.CycleTime(len(p.IDs), p.Baud, *p.FastSyncRead, latency, returnDelay)
	bytes := dynamixel.CycleBytes(len(p.IDs), *p.FastSyncRead)
	period := time.Duration(float64(time.Second) / l.RateHz)
	if float64(tick) <= busLoad*float64(period) {
		return ""
	}
	carries := float64(time.Second) / float64(tick)
	fit := math.Floor(busLoad * carries)
	return fmt.Sprintf("%s: rate_hz = %s asks more than the Dynamixel bus carries: one tick's servo I/O takes %v (%d bytes at %d baud, latency timer %v%s, return delay %v) against a period of %v, so the loop would tick at about %.0f Hz with overruns; lower rate_hz to %.0f or less, set latency_timer = \"1ms\" on the adapter, or raise plant.baud",
		link, show(l.RateHz), tick.Round(10*time.Microsecond), bytes, p.Baud, latency, assumed, returnDelay, period, carries, fit)
}

// minPause is the shortest pause of the partner a link should ride out
// without a re-handshake: a desktop host's scheduling hiccup.
const minPause = 10 * time.Millisecond

// timeoutWarning says when max_timeouts periods add up to less than
// minPause: at 1 kHz the default 3 re-handshakes after 3 ms.
func (l *LinkTable) timeoutWarning(link string) string {
	period := l.Period()
	pause := time.Duration(l.UDP.MaxTimeouts) * period
	if pause >= minPause {
		return ""
	}
	need := (minPause + period - 1) / period
	return fmt.Sprintf("%s: udp.max_timeouts = %d at rate_hz = %s re-handshakes when the partner pauses %v (%d periods of %v): a host's scheduling hiccup costs a re-handshake; set udp.max_timeouts = %d or more to ride out a pause of %v",
		link, l.UDP.MaxTimeouts, show(l.RateHz), pause, l.UDP.MaxTimeouts, period, need, minPause)
}

// cameraCPUWarnings says when a loop is pinned to the CPU of another link's
// real-time camera thread: pinned, that thread runs at its loop's priority
// (cameraPriority), so a frame's tracking, not preempted, delays the other
// loop's ticks. Measured with bridge sim on 2 CPUs, every loop on one: the
// Meca500 link at 1 kHz went from 48 µs to 1.1–1.2 ms of send lateness at
// p99 (docs/realtime.md §17).
func (c *Config) cameraCPUWarnings() []string {
	var out []string
	for i := range c.Links {
		cam := &c.Links[i]
		p, ok := cam.Plant.(*EmioPlant)
		if !ok || p.lockedThreads() == 0 || cam.Loop.CPU == nil || *cam.Loop.CPU < 0 {
			continue
		}
		for j := range c.Links {
			l := &c.Links[j]
			if j != i && l.Loop.CPU != nil && *l.Loop.CPU == *cam.Loop.CPU {
				out = append(out, fmt.Sprintf("%s: its loop shares CPU %d with %s, whose camera tracks frames there at the loop's real-time priority (about 0.5–2 ms a frame, not preempted): its ticks wait for that; give one of the two loops another CPU (loop.cpu)",
					linkKey(j, l.Name), *l.Loop.CPU, linkKey(i, cam.Name)))
			}
		}
	}
	return out
}
