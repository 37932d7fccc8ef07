package loopbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labbridge/bridge/realtime"
	"golang.org/x/sys/unix"
)

// ErrSpikes reports cyclictest --spike output that cannot be read.
var ErrSpikes = errors.New("loopbench: malformed cyclictest spike output")

// Spike is one wake of a cyclictest thread later than its --spike
// threshold: the thread, the CPU it was pinned to, its lateness and its
// wake-up on CLOCK_MONOTONIC (cyclictest prints both in µs). It was late over
// [Wake−Latency, Wake]: from its deadline to its wake-up.
type Spike struct {
	Thread  int
	CPU     int   // -1 when the thread was not pinned to one CPU
	Latency int64 // ns
	Wake    int64 // ns, CLOCK_MONOTONIC
}

// Start is the spike's deadline: when cyclictest should have woken.
func (s Spike) Start() int64 { return s.Wake - s.Latency }

// ParseSpikes reads cyclictest's output for its spike lines,
// "T: 0 Spike:     281: TS:  46411758281" (thread, latency µs, wake µs),
// and its closing "spikes = N". Other lines are skipped. cpus maps thread
// i to its CPU (nil or short: -1). Errors wrap ErrSpikes and name the line;
// a count that disagrees with the lines read is one.
func ParseSpikes(r io.Reader, cpus []int) ([]Spike, error) {
	var spikes []Spike
	declared := -1
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if n, ok := strings.CutPrefix(line, "spikes = "); ok {
			v, err := strconv.Atoi(strings.TrimSpace(n))
			if err != nil {
				return nil, fmt.Errorf("%w: line %d %q: want a count", ErrSpikes, lineNo, line)
			}
			declared = v
			continue
		}
		if !strings.HasPrefix(line, "T:") || !strings.Contains(line, "Spike:") {
			continue
		}
		f := strings.Fields(strings.NewReplacer(":", " ").Replace(line))
		// T <thread> Spike <latency> TS <timestamp>
		if len(f) != 6 || f[0] != "T" || f[2] != "Spike" || f[4] != "TS" {
			return nil, fmt.Errorf("%w: line %d %q: want \"T: thread Spike: µs: TS: µs\"", ErrSpikes, lineNo, line)
		}
		th, err1 := strconv.Atoi(f[1])
		lat, err2 := strconv.ParseInt(f[3], 10, 64)
		ts, err3 := strconv.ParseInt(f[5], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil || th < 0 || lat < 0 || ts < 0 {
			return nil, fmt.Errorf("%w: line %d %q: want whole numbers", ErrSpikes, lineNo, line)
		}
		cpu := -1
		if th < len(cpus) {
			cpu = cpus[th]
		}
		spikes = append(spikes, Spike{Thread: th, CPU: cpu, Latency: lat * int64(time.Microsecond), Wake: ts * int64(time.Microsecond)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("loopbench: reading cyclictest output: %w", err)
	}
	if declared >= 0 && declared != len(spikes) {
		return nil, fmt.Errorf("%w: it counts %d spikes, %d lines read", ErrSpikes, declared, len(spikes))
	}
	slices.SortFunc(spikes, func(a, b Spike) int { return cmpInt64(a.Wake, b.Wake) })
	return spikes, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// WatchConfig is a cyclictest that runs concurrently with the links: one
// thread per CPU the links may run on, at their priority and period, until
// stopped, recording every wake later than Spike.
type WatchConfig struct {
	Path     string        // "" = cyclictest in PATH
	Priority int           // SCHED_FIFO 1..99, 0 = SCHED_OTHER
	CPUs     []int         // one thread pinned to each; empty = the process's CPUs
	Interval time.Duration // rounded to the µs
	Spike    time.Duration // record wakes later than this; rounded to the µs, at least 1 µs
	// MaxSpikes bounds what cyclictest keeps (--spike-nodes); 0 = 100 000.
	MaxSpikes int
}

// maxWatchLatency is the watch's histogram range: later wakes count as
// overflows; the spikes still have them exactly.
const maxWatchLatency = 100 * time.Millisecond

// Args returns the watch's cyclictest arguments, the histogram in histfile.
func (c WatchConfig) Args(histfile string) []string {
	cpus := make([]string, len(c.CPUs))
	for i, cpu := range c.CPUs {
		cpus[i] = strconv.Itoa(cpu)
	}
	nodes := c.MaxSpikes
	if nodes <= 0 {
		nodes = 100_000
	}
	return []string{"-m", "-p", strconv.Itoa(c.Priority), "-t", strconv.Itoa(len(c.CPUs)), "-a", strings.Join(cpus, ","),
		"-i", strconv.FormatInt(max(c.Interval.Round(time.Microsecond).Microseconds(), 1), 10), "-q",
		"--spike=" + strconv.FormatInt(max(c.Spike.Round(time.Microsecond).Microseconds(), 1), 10),
		"--spike-nodes=" + strconv.Itoa(nodes),
		"-h", strconv.FormatInt(maxWatchLatency.Microseconds(), 10), "--histfile=" + histfile}
}

// CanWatch says why a concurrent cyclictest cannot run here: no binary, or
// no right to SCHED_FIFO at priority (root, or RLIMIT_RTPRIO, as for the
// loops); nil if it can.
func CanWatch(path string, priority int) error {
	if path == "" {
		path = "cyclictest"
	}
	if _, err := exec.LookPath(path); err != nil {
		return fmt.Errorf("%w: %w", ErrNoCyclictest, err)
	}
	if priority > 0 && unix.Geteuid() != 0 {
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_RTPRIO, &lim); err != nil || lim.Cur < uint64(priority) {
			return fmt.Errorf("loopbench: cyclictest at SCHED_FIFO %d: not permitted (run as root or raise RLIMIT_RTPRIO to %d, e.g. LimitRTPRIO=%d)", priority, priority, priority)
		}
	}
	return nil
}

// Watch is a running concurrent cyclictest; Stop ends it and reads it.
type Watch struct {
	cfg  WatchConfig
	cmd  *exec.Cmd
	hist string
	out  bytes.Buffer
	wg   sync.WaitGroup
	err  error
}

// WatchResult is what a watch saw: its spikes (sorted by wake-up), its
// histogram over every wake of every thread, each thread's maximum, and
// what cyclictest said had failed.
type WatchResult struct {
	Config    WatchConfig
	Spikes    []Spike
	Hist      Histogram
	Warnings  []string
	Truncated bool // MaxSpikes reached: later spikes are missing
}

// StartWatch starts cyclictest as cfg says. It runs until Stop; ctx ending
// interrupts it as Stop does.
func StartWatch(ctx context.Context, cfg WatchConfig) (*Watch, error) {
	if cfg.Priority < 0 || cfg.Priority > 99 {
		return nil, fmt.Errorf("loopbench: cyclictest priority %d: %w (want 0..99)", cfg.Priority, ErrConfig)
	}
	if cfg.Interval < time.Microsecond {
		return nil, fmt.Errorf("loopbench: cyclictest interval %v: %w (want at least 1µs)", cfg.Interval, ErrConfig)
	}
	if len(cfg.CPUs) == 0 {
		cpus, err := realtime.AllowedCPUs()
		if err != nil {
			return nil, err
		}
		cfg.CPUs = cpus
	}
	bin := cfg.Path
	if bin == "" {
		bin = "cyclictest"
	}
	bin, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCyclictest, err)
	}
	f, err := os.CreateTemp("", "cyclictest-watch-*.hist")
	if err != nil {
		return nil, fmt.Errorf("loopbench: histogram file: %w", err)
	}
	w := &Watch{cfg: cfg, hist: f.Name()}
	if err := f.Close(); err != nil {
		os.Remove(w.hist)
		return nil, fmt.Errorf("loopbench: histogram file: %w", err)
	}
	w.cmd = exec.CommandContext(ctx, bin, cfg.Args(w.hist)...)
	// cyclictest prints its spikes and writes its histogram on SIGINT.
	w.cmd.Cancel = func() error { return w.cmd.Process.Signal(os.Interrupt) }
	w.cmd.WaitDelay = 10 * time.Second
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.out
	if err := w.cmd.Start(); err != nil {
		os.Remove(w.hist)
		return nil, fmt.Errorf("loopbench: %s: %w", bin, err)
	}
	w.wg.Go(func() { w.err = w.cmd.Wait() })
	return w, nil
}

// Stop interrupts cyclictest, waits for it and parses what it printed and
// wrote.
func (w *Watch) Stop() (WatchResult, error) {
	defer os.Remove(w.hist)
	// A cyclictest that already exited (it failed) has nothing to signal.
	_ = w.cmd.Process.Signal(os.Interrupt)
	w.wg.Wait()
	res := WatchResult{Config: w.cfg, Warnings: []string{}}
	out := w.out.String()
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if l := strings.ToLower(line); strings.Contains(l, "warn") || strings.Contains(l, "fail") || strings.Contains(l, "unable") {
			res.Warnings = append(res.Warnings, line)
		}
	}
	// Interrupted, cyclictest may exit non-zero; what it printed counts.
	if w.err != nil && !strings.Contains(out, "spikes = ") {
		return res, fmt.Errorf("loopbench: %s %s: %w: %s", w.cmd.Path, strings.Join(w.cmd.Args[1:], " "), w.err, strings.TrimSpace(out))
	}
	spikes, err := ParseSpikes(strings.NewReader(out), w.cfg.CPUs)
	if err != nil {
		return res, err
	}
	res.Spikes = spikes
	nodes := w.cfg.MaxSpikes
	if nodes <= 0 {
		nodes = 100_000
	}
	res.Truncated = len(spikes) >= nodes
	f, err := os.Open(w.hist)
	if err != nil {
		return res, fmt.Errorf("loopbench: histogram file: %w", err)
	}
	defer f.Close()
	if res.Hist, err = ParseHistfile(f); err != nil {
		return res, err
	}
	return res, nil
}

// MaxPerCPU returns each CPU's largest wake-up lateness, from the
// histogram's per-thread maxima (exact, overflows included).
func (r WatchResult) MaxPerCPU() []CPUMax {
	out := make([]CPUMax, 0, len(r.Hist.ThreadMax))
	for i, m := range r.Hist.ThreadMax {
		cpu := -1
		if i < len(r.Config.CPUs) {
			cpu = r.Config.CPUs[i]
		}
		out = append(out, CPUMax{CPU: cpu, MaxUs: float64(m.Microseconds())})
	}
	return out
}

// CPUMax is one cyclictest thread's maximum lateness, on its CPU.
type CPUMax struct {
	CPU   int     `json:"cpu"`
	MaxUs float64 `json:"max_us"`
}
