package loopbench

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/labbridge/bridge/realtime"
	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/internal/atomicfile"
)

// LateTick is one tick of a link later than the stall threshold, its
// instants on CLOCK_MONOTONIC (ns).
type LateTick struct {
	Planned  int64 // planned wake-up: the deadline less the lead
	Deadline int64 // the send's deadline (Planned when the loop has no lead)
	Wake     int64
	Send     int64 // 0: the tick sent nothing
	// CPU is where the loop thread was when the tick was observed, and
	// SleptCPU where it was at the end of the tick before, where it went to
	// sleep: a stalled thread may be woken on another CPU. -1 unknown.
	CPU, SleptCPU int32
	// Waited is how long the loop thread was runnable but not running, and
	// Ran how long it ran, from the end of the tick before to the end of
	// this one (the kernel's per-thread accounting, /proc/thread-self/
	// schedstat); -1 unknown. A thread that waited for most of a stall was
	// held by the kernel (no CPU was given to it), not by the Go runtime: a
	// goroutine waiting for a P sleeps on a futex, which is not waiting.
	Waited, Ran int64
	// Runs is how many times the thread was put on a CPU over the same
	// span, and UsualRuns as many over the last tick that was on time; -1
	// unknown. A thread that neither ran nor waited for most of a stall
	// was blocked: in its sleep, whose timer fired late, when it was put on
	// a CPU no more often than usual; in a wait of the runtime's as well
	// (a hand-over of a P is one more block and wake-up) when more often.
	Runs, UsualRuns int64
	// Breaks is how many times the spin guard demoted the loop thread over
	// the same span (bridge.LoopConfig.Guard); -1 unknown.
	Breaks int64
}

// End is when the stall ended: the later of the wake-up and the send.
func (r LateTick) End() int64 { return max(r.Wake, r.Send) }

// WakeLateness is the wake-up against the planned wake-up.
func (r LateTick) WakeLateness() int64 { return r.Wake - r.Planned }

// SendLateness is the send against the deadline; 0 without a send.
func (r LateTick) SendLateness() int64 {
	if r.Send == 0 {
		return 0
	}
	return r.Send - r.Deadline
}

// Lateness is the larger of the two.
func (r LateTick) Lateness() int64 { return max(r.WakeLateness(), r.SendLateness()) }

// tickStalls keeps a link's late ticks and its lateness per time bin, from
// the loop thread without allocating: both arrays are allocated before the
// run (KeepLate).
type tickStalls struct {
	threshold int64
	recs      []LateTick // appended within its capacity
	dropped   uint64
	lastCPU   int32        // the CPU at the end of the last tick, -1 unknown
	tid       atomic.Int32 // the loop thread, from its first tick
	firstTick int64        // the first tick's planned wake-up
	runStart  int64
	binW      int64
	bins      []int64 // max lateness per bin from runStart

	// The loop thread's schedstat file, opened at its first tick when
	// statOpen.
	statFD    int
	statOpen  bool
	statPath  []byte // NUL-terminated, made before the run
	statBuf   [64]byte
	last      threadStat // at the end of the tick before
	usualRuns int64      // runs over the last tick on time; -1 unknown

	breaks     func() uint64 // the loop's spin-guard breaks; nil unknown
	lastBreaks uint64
}

// threadStat is a thread's kernel accounting (proc(5), /proc/PID/schedstat):
// ns on a CPU, ns runnable and waiting for one, times put on a CPU; all -1
// when unknown.
type threadStat struct{ ran, waited, runs int64 }

var unknownStat = threadStat{-1, -1, -1}

func (t threadStat) known() bool { return t.ran >= 0 }

// KeepLate makes the observer record every tick later than threshold, up
// to capacity records (later ones are counted as dropped), and the largest
// lateness of each binWidth from runStart (CLOCK_MONOTONIC ns) over
// duration. Call it before the run.
func (t *LinkTiming) KeepLate(threshold time.Duration, capacity int, runStart int64, duration, binWidth time.Duration) {
	s := &t.stalls
	s.threshold, s.runStart, s.binW = int64(threshold), runStart, int64(binWidth)
	s.recs, s.dropped, s.bins, s.lastCPU = make([]LateTick, 0, max(capacity, 0)), 0, nil, -1
	s.statPath, s.last, s.usualRuns = []byte("/proc/thread-self/schedstat\x00"), unknownStat, -1
	if binWidth > 0 && duration > 0 {
		s.bins = make([]int64, int((duration+binWidth-1)/binWidth)+1)
	}
}

// LateTicks returns the records kept and how many were dropped beyond the
// capacity. Read after the run.
func (t *LinkTiming) LateTicks() ([]LateTick, uint64) { return t.stalls.recs, t.stalls.dropped }

// ThreadID is the loop thread's id, once it ticked; 0 before.
func (t *LinkTiming) ThreadID() int { return int(t.stalls.tid.Load()) }

func (s *tickStalls) start(at int64) {
	s.firstTick = at
	s.tid.Store(int32(unix.Gettid()))
	if len(s.statPath) > 0 && !s.statOpen {
		// Raw: the path is made before the run, so the loop thread
		// allocates nothing; a kernel without it leaves Waited unknown.
		dirfd := unix.AT_FDCWD
		fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&s.statPath[0])),
			uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
		if e == 0 {
			s.statFD, s.statOpen = int(fd), true
		}
	}
}

// release closes the schedstat file. Call it after the run.
func (s *tickStalls) release() {
	if s.statOpen {
		_ = unix.Close(s.statFD)
		s.statOpen = false
	}
}

// schedstat reads the loop thread's accounting, or unknownStat.
func (s *tickStalls) schedstat() threadStat {
	if !s.statOpen {
		return unknownStat
	}
	n, err := unix.Pread(s.statFD, s.statBuf[:], 0)
	if err != nil || n <= 0 {
		return unknownStat
	}
	return parseSchedstat(s.statBuf[:n])
}

// parseSchedstat reads "ran waited runs\n" (proc(5), /proc/PID/schedstat)
// without allocating; unknownStat if malformed.
func parseSchedstat(b []byte) threadStat {
	var v [3]int64
	i := 0
	for k := range v {
		start := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if v[k] > (1<<62)/10 {
				return unknownStat
			}
			v[k] = v[k]*10 + int64(b[i]-'0')
		}
		if i == start || (k < len(v)-1 && (i >= len(b) || b[i] != ' ')) || (k == len(v)-1 && i < len(b) && b[i] != '\n') {
			return unknownStat
		}
		i++
	}
	return threadStat{v[0], v[1], v[2]}
}

// bin raises the bin of the tick periods after the first one to v.
func (s *tickStalls) bin(periods uint64, period, v int64) {
	if len(s.bins) == 0 {
		return
	}
	i := max(s.firstTick+int64(periods)*period-s.runStart, 0) / s.binW
	i = min(i, int64(len(s.bins)-1))
	if v > s.bins[i] {
		s.bins[i] = v
	}
}

// observed ends a tick: it keeps r if late, and the CPU for the next
// tick's record. getcpu(2) is a system call, once a tick, only when
// records are kept.
func (s *tickStalls) observed(r LateTick, late bool) {
	if cap(s.recs) == 0 {
		return
	}
	cpu := currentCPU()
	st := s.schedstat()
	both := st.known() && s.last.known()
	if late {
		if len(s.recs) == cap(s.recs) {
			s.dropped++
		} else {
			r.CPU, r.SleptCPU = cpu, s.lastCPU
			r.Ran, r.Waited, r.Runs, r.UsualRuns, r.Breaks = -1, -1, -1, s.usualRuns, -1
			if s.breaks != nil {
				r.Breaks = int64(s.breaks() - s.lastBreaks)
			}
			if both {
				r.Ran, r.Waited, r.Runs = st.ran-s.last.ran, st.waited-s.last.waited, st.runs-s.last.runs
			}
			s.recs = append(s.recs, r)
		}
	} else if both {
		s.usualRuns = st.runs - s.last.runs
	} else {
		s.usualRuns = -1
	}
	s.lastCPU, s.last = cpu, st
	if s.breaks != nil {
		s.lastBreaks = s.breaks()
	}
}

// CountBreaks gives the observer the loop's count of spin-guard breaks
// (bridge.Link.SpinBreaks), so that each late tick says whether the guard
// broke it. Call it before the run; breaks must not block or allocate.
func (t *LinkTiming) CountBreaks(breaks func() uint64) { t.stalls.breaks = breaks }

// currentCPU is getcpu(2).
func currentCPU() int32 {
	var cpu, node uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); e != 0 {
		return -1
	}
	return int32(cpu)
}

// Attribution says whose a late tick is.
type Attribution string

// Attributions.
const (
	// AttrMachine: cyclictest threads on the CPUs the loop thread slept and
	// woke on, at the same priority, were late over at least half of the
	// stall: the machine did not run real-time threads there then.
	AttrMachine Attribution = "machine"
	// AttrOurs: cyclictest was late over less than half of the stall (or
	// not at all), and the stall lasted at least a period, so cyclictest
	// woke on time inside it: the machine ran threads of the loop's
	// priority there, ours was held by the process.
	AttrOurs Attribution = "ours"
	// AttrCPUWait: cyclictest was late over less than half of the stall,
	// but the loop thread itself waited on a run queue, runnable and not
	// run, for at least half of it (LateTick.Waited): the kernel held it,
	// not the Go runtime. Seen: a CPU of the VM with no scheduling event
	// for 1.2 ms while wake-ups queued on it, cyclictest's thread there
	// late only from its own next deadline (docs/realtime.md §17).
	AttrCPUWait Attribution = "waited for a CPU"
	// AttrTimer: the loop thread neither ran nor waited for a CPU for most
	// of the stall and was put on a CPU no more often than over a tick on
	// time: it was blocked in its own sleep, whose wake-up the kernel gave
	// late (on a VM: the host delivering the CPU's timer late). Seen in
	// runtime traces as a clock_nanosleep that returned late with the P
	// kept (docs/realtime.md §17).
	AttrTimer Attribution = "late timer"
	// AttrShort: as ours, but the stall was shorter than a period and may
	// have fallen between two of cyclictest's wakes.
	AttrShort Attribution = "unattributed (shorter than a period)"
	// AttrNoWatch: cyclictest did not run.
	AttrNoWatch Attribution = "unknown (no cyclictest)"
)

// machineShare is the share of a stall cyclictest's spikes must cover for
// it to be the machine's.
const machineShare = 0.5

// Attribute decides whose late tick r is, given the watch's spikes (sorted
// by wake-up), the largest spike's latency and the period: the machine's if
// spikes on r's CPUs (the one it slept on and the one it woke on; any CPU
// when both are unknown) cover at least half of [r.Planned, r.End()]; else
// waited for a CPU if the thread was runnable and not run for at least half
// of it; else a late timer if it was blocked for at least half of it and put
// on a CPU no more often than over a tick on time; else ours if r is at
// least a period late; else unattributed. It returns the
// largest overlapping spike, or -1, and the share covered.
func Attribute(r LateTick, spikes []Spike, maxSpike, period int64) (Attribution, int, float64) {
	best := -1
	type span struct{ from, to int64 }
	var covered []span
	onCPU := func(cpu int) bool {
		if cpu < 0 || (r.CPU < 0 && r.SleptCPU < 0) {
			return true
		}
		return int32(cpu) == r.CPU || int32(cpu) == r.SleptCPU
	}
	// Spikes that end (wake) after r starts, and start before it ends; a
	// spike starts at most maxSpike before its wake-up.
	i, _ := slices.BinarySearchFunc(spikes, r.Planned, func(s Spike, t int64) int { return cmpInt64(s.Wake, t) })
	for ; i < len(spikes) && spikes[i].Wake-maxSpike <= r.End(); i++ {
		s := spikes[i]
		if s.Start() > r.End() || !onCPU(s.CPU) {
			continue
		}
		covered = append(covered, span{max(s.Start(), r.Planned), min(s.Wake, r.End())})
		if best < 0 || s.Latency > spikes[best].Latency {
			best = i
		}
	}
	// The union of the overlaps.
	slices.SortFunc(covered, func(a, b span) int { return cmpInt64(a.from, b.from) })
	var sum, reach int64
	reach = r.Planned
	for _, c := range covered {
		from := max(c.from, reach)
		if c.to > from {
			sum += c.to - from
		}
		reach = max(reach, c.to)
	}
	share := 1.0
	if d := r.End() - r.Planned; d > 0 {
		share = float64(sum) / float64(d)
	}
	switch {
	case best >= 0 && share >= machineShare:
		return AttrMachine, best, share
	case r.Waited > 0 && float64(r.Waited) >= machineShare*float64(r.End()-r.Planned):
		return AttrCPUWait, best, share
	case r.Runs > 0 && r.UsualRuns > 0 && r.Runs <= r.UsualRuns && r.Ran >= 0 && r.Waited >= 0 &&
		float64(r.Ran+r.Waited) < machineShare*float64(r.End()-r.Planned):
		return AttrTimer, best, share
	case r.Lateness() >= period:
		return AttrOurs, best, share
	}
	return AttrShort, best, share
}

// TimeoutCause is what was late in the receive window of a TIMEOUT.
type TimeoutCause string

// Timeout causes.
const (
	// TimeoutMachine: cyclictest was late over at least half of the window
	// (on any CPU: the partner's thread may run on either).
	TimeoutMachine TimeoutCause = "machine"
	// TimeoutLateTick: the link's own tick was late (over the threshold)
	// within the window, which then closed early or began late.
	TimeoutLateTick TimeoutCause = "its late tick"
	// TimeoutPartner: neither: the machine and the loop were on time, and
	// the partner did not answer within the window.
	TimeoutPartner TimeoutCause = "the partner"
	// TimeoutUnknown: cyclictest did not run.
	TimeoutUnknown TimeoutCause = "unknown (no cyclictest)"
)

// AttributeTimeout decides what was late in the window of a TIMEOUT decided
// at at: the window is the period before it (at 1 kHz the receive window
// closes at the next deadline). late are the link's late ticks in the order
// of their planned wake-ups, longest their largest lateness; spikes and
// maxSpike as for Attribute, nil spikes when cyclictest did not run.
func AttributeTimeout(at, period int64, spikes []Spike, maxSpike int64, late []LateTick, longest int64, watched bool) TimeoutCause {
	from := at - period
	// A late tick of the link's own whose stall overlaps the window.
	i, _ := slices.BinarySearchFunc(late, at+1, func(r LateTick, t int64) int { return cmpInt64(r.Planned, t) })
	for i--; i >= 0 && late[i].Planned >= from-longest-period; i-- {
		if late[i].End() >= from {
			return TimeoutLateTick
		}
	}
	if !watched {
		return TimeoutUnknown
	}
	window := LateTick{Planned: from, Wake: from, Send: at, CPU: -1, SleptCPU: -1, Waited: -1, Ran: -1, Runs: -1, UsualRuns: -1, Breaks: -1}
	if a, _, _ := Attribute(window, spikes, maxSpike, period); a == AttrMachine {
		return TimeoutMachine
	}
	return TimeoutPartner
}

// TimeoutStalls counts TIMEOUTs by cause.
type TimeoutStalls struct {
	Timeouts int    `json:"timeouts"`
	Machine  int    `json:"machine"`
	LateTick int    `json:"late_tick"`
	Partner  int    `json:"partner"`
	Unknown  int    `json:"unknown"`
	Dropped  uint64 `json:"dropped"` // beyond the records' capacity: not attributed
}

func (t *TimeoutStalls) add(c TimeoutCause) {
	t.Timeouts++
	switch c {
	case TimeoutMachine:
		t.Machine++
	case TimeoutLateTick:
		t.LateTick++
	case TimeoutPartner:
		t.Partner++
	default:
		t.Unknown++
	}
}

func (t *TimeoutStalls) merge(o TimeoutStalls) {
	t.Timeouts += o.Timeouts
	t.Machine += o.Machine
	t.LateTick += o.LateTick
	t.Partner += o.Partner
	t.Unknown += o.Unknown
	t.Dropped += o.Dropped
}

// Stall is a late tick as reported: times in seconds from the run's start
// and µs; JSON field names of -json.
type Stall struct {
	Link           string      `json:"link"`
	AtS            float64     `json:"at_s"` // the planned wake-up
	LatenessUs     float64     `json:"lateness_us"`
	WakeLatenessUs float64     `json:"wake_lateness_us"`
	SendLatenessUs float64     `json:"send_lateness_us"`
	CPU            int         `json:"cpu"`
	SleptCPU       int         `json:"slept_cpu"`
	WaitedUs       float64     `json:"waited_us"`  // runnable, not run (LateTick.Waited); -1 unknown
	RanUs          float64     `json:"ran_us"`     // on a CPU (LateTick.Ran); -1 unknown
	Runs           int64       `json:"runs"`       // put on a CPU (LateTick.Runs); -1 unknown
	UsualRuns      int64       `json:"usual_runs"` // as many over a tick on time; -1 unknown
	Breaks         int64       `json:"breaks"`     // spin-guard demotions over it (LateTick.Breaks); -1 unknown
	Attribution    Attribution `json:"attribution"`
	Spike          *SpikeUs    `json:"cyclictest_spike,omitempty"` // the largest overlapping one
	rec            LateTick
}

// SpikeUs is a cyclictest spike as reported.
type SpikeUs struct {
	CPU       int     `json:"cpu"`
	LatencyUs float64 `json:"latency_us"`
	AtS       float64 `json:"at_s"` // its deadline, from the run's start
	// Covered is the share of the stall that the spikes on its CPUs cover.
	Covered float64 `json:"covered"`
}

// LinkStalls is one link's late ticks by attribution.
type LinkStalls struct {
	Name         string `json:"name"`
	Late         int    `json:"late"`
	Machine      int    `json:"machine"`
	Ours         int    `json:"ours"`
	CPUWait      int    `json:"cpu_wait"`
	Timer        int    `json:"late_timer"`
	Unattributed int    `json:"unattributed"`
	Dropped      uint64 `json:"dropped"` // beyond the records' capacity: not attributed
	// Timeouts are the link's TIMEOUTs by what was late in their window.
	Timeouts TimeoutStalls `json:"timeouts"`
}

// TimelineBin is one bin of the run: the largest lateness of every link in
// it, and of cyclictest's spikes (0: none over its --spike, spikeThreshold).
type TimelineBin struct {
	AtS             float64 `json:"at_s"`
	OursMaxUs       float64 `json:"ours_max_us"`
	CyclictestMaxUs float64 `json:"cyclictest_max_us"`
}

// StallReport is the stall attribution of one links run.
type StallReport struct {
	ThresholdUs float64 `json:"threshold_us"`
	// Cyclictest says whether the concurrent cyclictest ran ("ran", or why
	// not) and how.
	Cyclictest      string        `json:"cyclictest"`
	CyclictestArgs  string        `json:"cyclictest_args,omitempty"`
	CyclictestMax   []CPUMax      `json:"cyclictest_max_per_cpu,omitempty"`
	CyclictestP99Us float64       `json:"cyclictest_p99_us,omitempty"`
	Spikes          int           `json:"cyclictest_spikes"` // late by the threshold or more
	SpikesTruncated bool          `json:"cyclictest_spikes_truncated,omitempty"`
	Machine         int           `json:"machine"`
	Ours            int           `json:"ours"`
	CPUWait         int           `json:"cpu_wait"`
	Timer           int           `json:"late_timer"`
	Unattributed    int           `json:"unattributed"`
	Timeouts        TimeoutStalls `json:"timeouts"`
	PerLink         []LinkStalls  `json:"per_link"`
	Largest         []Stall       `json:"largest"`
	BinS            float64       `json:"bin_s"`
	Timeline        []TimelineBin `json:"timeline"`
	Records         []Stall       `json:"records"`
}

// largestStalls is how many stalls the report lists by size.
const largestStalls = 10

// NewStallReport attributes every link's late ticks against the watch's
// spikes (nil: cyclictest did not run, and why in watchErr), over the run
// from runStart with the given bin width.
func NewStallReport(links []BenchLink, watch *WatchResult, watchErr error, runStart int64, period, threshold, binW time.Duration) StallReport {
	rep := StallReport{ThresholdUs: usRound(int64(threshold)), BinS: binW.Seconds(), PerLink: []LinkStalls{}, Largest: []Stall{}, Timeline: []TimelineBin{}, Records: []Stall{}}
	sec := func(at int64) float64 { return math.Round(float64(at-runStart)/1e6) / 1e3 }
	var spikes []Spike
	var maxSpike int64
	switch {
	case watch != nil:
		rep.Cyclictest = "ran"
		rep.CyclictestArgs = "cyclictest " + strings.Join(watch.Config.Args("FILE"), " ")
		rep.CyclictestMax = watch.MaxPerCPU()
		rep.CyclictestP99Us = float64(watch.Hist.Stats().P99.Microseconds())
		rep.SpikesTruncated = watch.Truncated
		spikes = watch.Spikes
		for _, s := range spikes {
			maxSpike = max(maxSpike, s.Latency)
			if s.Latency >= int64(threshold) {
				rep.Spikes++
			}
		}
	case watchErr != nil:
		rep.Cyclictest = "did not run: " + watchErr.Error()
	default:
		rep.Cyclictest = "off"
	}
	for _, b := range links {
		recs, dropped := b.Timing.LateTicks()
		ls := LinkStalls{Name: b.Link.Name(), Late: len(recs), Dropped: dropped}
		for _, r := range recs {
			st := Stall{
				Link: ls.Name, AtS: sec(r.Planned), LatenessUs: usRound(r.Lateness()),
				WakeLatenessUs: usRound(r.WakeLateness()), SendLatenessUs: usRound(r.SendLateness()), CPU: int(r.CPU), SleptCPU: int(r.SleptCPU), rec: r,
				WaitedUs: -1, RanUs: -1, Runs: r.Runs, UsualRuns: r.UsualRuns, Breaks: r.Breaks,
			}
			if r.Waited >= 0 && r.Ran >= 0 {
				st.WaitedUs, st.RanUs = usRound(r.Waited), usRound(r.Ran)
			}
			st.Attribution = AttrNoWatch
			if watch != nil {
				var at int
				var share float64
				st.Attribution, at, share = Attribute(r, spikes, maxSpike, int64(period))
				if at >= 0 {
					s := spikes[at]
					st.Spike = &SpikeUs{CPU: s.CPU, LatencyUs: usRound(s.Latency), AtS: sec(s.Start()), Covered: math.Round(share*100) / 100}
				}
			}
			switch st.Attribution {
			case AttrMachine:
				ls.Machine++
			case AttrOurs:
				ls.Ours++
			case AttrCPUWait:
				ls.CPUWait++
			case AttrTimer:
				ls.Timer++
			default:
				ls.Unattributed++
			}
			rep.Records = append(rep.Records, st)
		}
		if b.Replies != nil {
			var longest int64
			for _, r := range recs {
				longest = max(longest, r.Lateness())
			}
			tos, dropped := b.Replies.Timeouts()
			ls.Timeouts.Dropped = dropped
			for _, at := range tos {
				ls.Timeouts.add(AttributeTimeout(at, int64(period), spikes, maxSpike, recs, longest, watch != nil))
			}
			rep.Timeouts.merge(ls.Timeouts)
		}
		rep.Machine += ls.Machine
		rep.Ours += ls.Ours
		rep.Unattributed += ls.Unattributed
		rep.CPUWait += ls.CPUWait
		rep.Timer += ls.Timer
		rep.PerLink = append(rep.PerLink, ls)
	}
	slices.SortStableFunc(rep.Records, func(a, b Stall) int { return cmpInt64(a.rec.Planned, b.rec.Planned) })
	largest := slices.Clone(rep.Records)
	slices.SortStableFunc(largest, func(a, b Stall) int { return cmpInt64(b.rec.Lateness(), a.rec.Lateness()) })
	rep.Largest = largest[:min(len(largest), largestStalls)]
	rep.Timeline = timeline(links, spikes, runStart, int64(binW))
	return rep
}

// timeline merges the links' bins and bins cyclictest's spikes alike.
func timeline(links []BenchLink, spikes []Spike, runStart, binW int64) []TimelineBin {
	n := 0
	for _, b := range links {
		n = max(n, len(b.Timing.stalls.bins))
	}
	if n == 0 || binW <= 0 {
		return []TimelineBin{}
	}
	out := make([]TimelineBin, n)
	for i := range out {
		out[i].AtS = math.Round(float64(int64(i)*binW)/1e6) / 1e3
	}
	for _, b := range links {
		for i, v := range b.Timing.stalls.bins {
			out[i].OursMaxUs = max(out[i].OursMaxUs, usRound(v))
		}
	}
	for _, s := range spikes {
		if i := (s.Start() - runStart) / binW; i >= 0 && i < int64(n) {
			out[i].CyclictestMaxUs = max(out[i].CyclictestMaxUs, usRound(s.Latency))
		}
	}
	// The last bin holds the run's end, usually a fraction of a bin: drop
	// it when nothing fell there.
	if l := out[n-1]; l.OursMaxUs == 0 && l.CyclictestMaxUs == 0 {
		out = out[:n-1]
	}
	return out
}

func usRound(ns int64) float64 { return math.Round(float64(ns)/1e2) / 10 }

// sparks are the levels of a sparkline, lowest first.
var sparks = []rune(" ▁▂▃▄▅▆▇█")

// sparkline draws vs on a log scale from lo (a blank at or below it) to
// hi (the top level).
func sparkline(vs []float64, lo, hi float64) string {
	var b strings.Builder
	for _, v := range vs {
		if v <= lo || lo <= 0 || hi <= lo {
			b.WriteRune(sparks[0])
			continue
		}
		f := math.Log(v/lo) / math.Log(hi/lo)
		i := 1 + int(f*float64(len(sparks)-2)+0.5)
		b.WriteRune(sparks[min(max(i, 1), len(sparks)-1)])
	}
	return b.String()
}

// WriteText prints the attribution: totals, per link, the largest stalls
// and the timeline.
func (s StallReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "stalls over %.0f µs: machine %d  waited for a CPU %d  late timer %d  ours %d  unattributed %d   cyclictest: %s\n",
		s.ThresholdUs, s.Machine, s.CPUWait, s.Timer, s.Ours, s.Unattributed, s.Cyclictest)
	if s.CyclictestArgs != "" {
		fmt.Fprintf(&b, "  concurrent %s\n  cyclictest p99 %.0f µs, max µs", s.CyclictestArgs, s.CyclictestP99Us)
		for _, m := range s.CyclictestMax {
			fmt.Fprintf(&b, "  cpu%d %.0f", m.CPU, m.MaxUs)
		}
		fmt.Fprintf(&b, ", spikes over the threshold %d", s.Spikes)
		if s.SpikesTruncated {
			b.WriteString(" (capacity reached: later ones missing)")
		}
		b.WriteByte('\n')
	}
	for _, l := range s.PerLink {
		fmt.Fprintf(&b, "  %-12s late %5d: machine %5d  waited for a CPU %5d  late timer %5d  ours %5d  unattributed %5d", l.Name, l.Late, l.Machine, l.CPUWait, l.Timer, l.Ours, l.Unattributed)
		if l.Dropped > 0 {
			fmt.Fprintf(&b, "  (+%d beyond the records' capacity)", l.Dropped)
		}
		b.WriteByte('\n')
	}
	if t := s.Timeouts; t.Timeouts > 0 || t.Dropped > 0 {
		fmt.Fprintf(&b, "TIMEOUTs %d: the machine late %d  the link's tick late %d  the partner %d", t.Timeouts, t.Machine, t.LateTick, t.Partner)
		if t.Unknown > 0 {
			fmt.Fprintf(&b, "  unknown %d", t.Unknown)
		}
		if t.Dropped > 0 {
			fmt.Fprintf(&b, "  (+%d beyond the records' capacity)", t.Dropped)
		}
		b.WriteByte('\n')
	}
	if len(s.Largest) > 0 {
		fmt.Fprintf(&b, "  largest stalls:\n  %8s  %-12s %9s %9s %9s %9s %9s %4s %4s  %-36s  %s\n", "at s", "link", "late µs", "wake µs", "send µs", "waited µs", "ran µs", "cpu", "brk", "attribution", "cyclictest spike")
		for _, st := range s.Largest {
			spike := "-"
			if sp := st.Spike; sp != nil {
				spike = fmt.Sprintf("cpu%d %.0f µs from %.3f s (covers %.0f%%)", sp.CPU, sp.LatencyUs, sp.AtS, sp.Covered*100)
			}
			brk := "-"
			if st.Breaks >= 0 {
				brk = strconv.FormatInt(st.Breaks, 10)
			}
			fmt.Fprintf(&b, "  %8.3f  %-12s %9.1f %9.1f %9.1f %9s %9s %5s %4s  %-36s  %s\n", st.AtS, st.Link, st.LatenessUs, st.WakeLatenessUs, st.SendLatenessUs,
				optUs(st.WaitedUs), optUs(st.RanUs), fmt.Sprintf("%d>%d", st.SleptCPU, st.CPU), brk, st.Attribution, spike)
		}
	}
	if len(s.Timeline) > 0 {
		ours := make([]float64, len(s.Timeline))
		ct := make([]float64, len(s.Timeline))
		hi := s.ThresholdUs * 10
		for i, t := range s.Timeline {
			ours[i], ct[i] = t.OursMaxUs, t.CyclictestMaxUs
			hi = max(hi, t.OursMaxUs, t.CyclictestMaxUs)
		}
		lo := s.ThresholdUs / 10
		fmt.Fprintf(&b, "  timeline, %gs a column, max lateness on a log scale (blank ≤ %.0f µs, █ %.0f µs):\n", s.BinS, lo, hi)
		fmt.Fprintf(&b, "    ours       |%s|\n", sparkline(ours, lo, hi))
		if s.Cyclictest == "ran" {
			fmt.Fprintf(&b, "    cyclictest |%s|  (spikes over %.0f µs only)\n", sparkline(ct, s.ThresholdUs, hi), s.ThresholdUs)
		}
		for _, t := range s.Timeline {
			if t.OursMaxUs > s.ThresholdUs || t.CyclictestMaxUs > s.ThresholdUs {
				fmt.Fprintf(&b, "    %6.1f s  ours max %8.0f µs  cyclictest max %8.0f µs\n", t.AtS, t.OursMaxUs, t.CyclictestMaxUs)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// optUs prints a duration that may be unknown (-1).
func optUs(v float64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// stallCSVHeader is the header row of WriteStallsCSV.
var stallCSVHeader = []string{"links", "link", "at_s", "planned_ns", "deadline_ns", "wake_ns", "send_ns", "lateness_us", "wake_lateness_us",
	"send_lateness_us", "slept_cpu", "cpu", "waited_us", "ran_us", "runs", "usual_runs", "attribution", "spike_cpu", "spike_latency_us", "spike_at_s", "breaks"}

// WriteStallsCSV writes every late tick of every run, one row each, its
// instants on CLOCK_MONOTONIC in ns.
func (r LinksReport) WriteStallsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(stallCSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, run := range r.Runs {
		if run.Stalls == nil {
			continue
		}
		for _, st := range run.Stalls.Records {
			row := []string{strconv.Itoa(run.Links), st.Link, f(st.AtS), strconv.FormatInt(st.rec.Planned, 10),
				strconv.FormatInt(st.rec.Deadline, 10), strconv.FormatInt(st.rec.Wake, 10), strconv.FormatInt(st.rec.Send, 10),
				f(st.LatenessUs), f(st.WakeLatenessUs), f(st.SendLatenessUs), strconv.Itoa(st.SleptCPU), strconv.Itoa(st.CPU),
				f(st.WaitedUs), f(st.RanUs), strconv.FormatInt(st.Runs, 10), strconv.FormatInt(st.UsualRuns, 10), string(st.Attribution), "", "", "", strconv.FormatInt(st.Breaks, 10)}
			if sp := st.Spike; sp != nil {
				row[17], row[18], row[19] = strconv.Itoa(sp.CPU), f(sp.LatencyUs), f(sp.AtS)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// stallWatch is the stall attribution around one links run: the late-tick
// records armed, and the concurrent cyclictest.
type stallWatch struct {
	on       bool
	cfg      LinksConfig
	links    []BenchLink
	runStart int64
	period   time.Duration
	watch    *Watch
	err      error
}

func (c StallConfig) bin() time.Duration {
	if c.Bin > 0 {
		return c.Bin
	}
	return time.Second
}

// startStallWatch arms the links' records and starts cyclictest, if cfg
// asks for them. A cyclictest that cannot run is reported, not an error:
// the records are attributed "unknown".
func startStallWatch(ctx context.Context, cfg LinksConfig, links []BenchLink) *stallWatch {
	sc := cfg.Stalls
	if sc.Threshold <= 0 {
		return &stallWatch{}
	}
	lc := links[0].Link.Config().Loop
	w := &stallWatch{on: true, cfg: cfg, links: links, period: lc.Period, runStart: links[0].Timing.clock.Now()}
	records := sc.Records
	if records <= 0 {
		records = 20_000
	}
	for _, b := range links {
		b.Timing.KeepLate(sc.Threshold, records, w.runStart, cfg.Duration, sc.bin())
		if b.Replies != nil {
			b.Replies.KeepTimeouts(b.Timing.clock, records)
		}
	}
	if !sc.Cyclictest {
		return w
	}
	cpus := []int{lc.CPU}
	if lc.CPU < 0 {
		if cpus, w.err = realtime.AllowedCPUs(); w.err != nil {
			return w
		}
	}
	if w.err = CanWatch(sc.Path, lc.Priority); w.err != nil {
		return w
	}
	// Room for every wake of every thread to be a spike, within reason.
	spikes := int(min(max(cfg.Duration/lc.Period*time.Duration(len(cpus)), 1000), 1_000_000))
	w.watch, w.err = StartWatch(ctx, WatchConfig{
		Path: sc.Path, Priority: lc.Priority, CPUs: cpus, Interval: lc.Period, Spike: spikeThreshold(sc.Threshold), MaxSpikes: spikes,
	})
	return w
}

// StallWatch is the stall attribution around a run its caller serves itself
// (bridge bench link): the late-tick records armed and the concurrent
// cyclictest, from WatchStalls until Stop.
type StallWatch struct{ w *stallWatch }

// WatchStalls arms the records of links (each with its Timing, and its
// Replies for the TIMEOUTs) and starts cyclictest as sc asks, for a run of
// about d from now. A cyclictest that cannot run is said in the report.
func WatchStalls(ctx context.Context, sc StallConfig, d time.Duration, links []BenchLink) *StallWatch {
	return &StallWatch{startStallWatch(ctx, LinksConfig{Duration: d, Stalls: sc}, links)}
}

// Stop ends cyclictest and attributes every late tick, once the links'
// loops have returned; nil when sc kept none.
func (s *StallWatch) Stop() *StallReport { return s.w.stop() }

// spikeThreshold is cyclictest's --spike for a stall threshold: well below
// it, because a stall of ours is attributed by how much of it cyclictest's
// late wakes cover, and a machine stall of just over the threshold that
// began between two of cyclictest's wakes makes it late by less than the
// threshold (seen: 1.05–1.3 ms late wake-ups of ours called "ours" with
// cyclictest late 0.5–0.9 ms beside them).
func spikeThreshold(threshold time.Duration) time.Duration {
	return max(threshold/10, minSpike)
}

// minSpike keeps cyclictest's spike list to the wakes that stand out of its
// ordinary jitter (its p99 here is 20–40 µs).
const minSpike = 50 * time.Microsecond

// stop ends cyclictest and attributes the records; nil when off.
func (w *stallWatch) stop() *StallReport {
	for _, b := range w.links {
		b.Timing.stalls.release() // the loops have returned
	}
	if !w.on {
		return nil
	}
	var res *WatchResult
	if w.watch != nil {
		if r, err := w.watch.Stop(); err != nil {
			w.err = err
		} else {
			res = &r
		}
	}
	rep := NewStallReport(w.links, res, w.err, w.runStart, w.period, w.cfg.Stalls.Threshold, w.cfg.Stalls.bin())
	return &rep
}

// RunFile is the file of the run of n links for a path given once for
// several runs: "trace.out" becomes "trace-links4.out"; with one run, path.
func RunFile(path string, n int, runs int) string {
	if path == "" || runs <= 1 {
		return path
	}
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-links%d%s", strings.TrimSuffix(path, ext), n, ext)
}

// WriteStallsFile writes WriteStallsCSV to path.
func (r LinksReport) WriteStallsFile(path string) error {
	// Through a temporary file renamed into place: a failed or interrupted
	// write leaves an older file whole.
	if err := atomicfile.Write(path, 0o644, r.WriteStallsCSV); err != nil {
		return fmt.Errorf("loopbench: records file: %w", err)
	}
	return nil
}
