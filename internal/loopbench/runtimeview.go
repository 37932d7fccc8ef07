package loopbench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/metrics"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RuntimeReport is what the Go runtime and the kernel said about a links
// run: the scheduler's latency (how long goroutines waited runnable), GC
// and other stop-the-world pauses, and each loop thread's kernel scheduling
// counters over the run.
type RuntimeReport struct {
	Trace        string        `json:"trace,omitempty"` // the runtime/trace file
	SchedLatency HistUS        `json:"sched_latency_us"`
	GCCycles     uint64        `json:"gc_cycles"`
	GCPause      HistUS        `json:"gc_pause_us"`    // /sched/pauses/total/gc
	OtherPause   HistUS        `json:"other_pause_us"` // /sched/pauses/total/other
	Threads      []ThreadSched `json:"threads"`
	Notes        []string      `json:"notes"`
}

// HistUS summarises a runtime/metrics histogram's growth over the run, in
// µs at bucket upper bounds (the runtime's buckets are coarse: a value is
// "at most").
type HistUS struct {
	Count   uint64  `json:"count"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	Max     float64 `json:"max"`
	Over1ms uint64  `json:"over_1ms"` // in buckets starting at 1 ms or later
}

// ThreadSched is a loop thread's /proc/self/task/TID/sched counters over
// the run (from its first sample to its last, a few hundred ms apart).
type ThreadSched struct {
	TID         int      `json:"tid"`
	Links       []string `json:"links"`
	Policy      int      `json:"policy"` // 1: SCHED_FIFO
	Voluntary   uint64   `json:"voluntary_switches"`
	Involuntary uint64   `json:"involuntary_switches"`
	Migrations  uint64   `json:"migrations"`
	RunMs       float64  `json:"run_ms"`
	WaitMs      *float64 `json:"wait_ms,omitempty"` // wait_sum: only with schedstats
}

var runtimeMetrics = []string{"/sched/latencies:seconds", "/gc/cycles/total:gc-cycles", "/sched/pauses/total/gc:seconds", "/sched/pauses/total/other:seconds"}

// runtimeView samples the runtime's metrics around a run, traces it when
// asked, and samples the loop threads' kernel counters while it runs.
type runtimeView struct {
	before []metrics.Sample
	trace  *os.File
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	first  map[int]map[string]float64
	last   map[int]map[string]float64
}

// startRuntimeView starts tracing to tracePath ("" = no trace) and the
// thread sampler over links; stop ends both.
func startRuntimeView(tracePath string, links []BenchLink) (*runtimeView, error) {
	v := &runtimeView{first: map[int]map[string]float64{}, last: map[int]map[string]float64{}}
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err != nil {
			return nil, fmt.Errorf("loopbench: trace file: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("loopbench: trace %s: %w", tracePath, err)
		}
		v.trace = f
	}
	v.before = readMetrics()
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	// The loop threads exit with their loops (a locked thread is not
	// reused): sample them while they live, keep the first and last reads.
	v.wg.Go(func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			v.sample(links)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return v, nil
}

func (v *runtimeView) sample(links []BenchLink) {
	for _, b := range links {
		tid := b.Timing.ThreadID()
		if tid == 0 {
			continue
		}
		f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/sched", tid))
		if err != nil {
			continue // gone: the last read stands
		}
		vals := parseSched(f)
		f.Close()
		v.mu.Lock()
		first, last := v.first[tid], v.last[tid]
		switch {
		case first == nil:
			v.first[tid], v.last[tid] = vals, vals
		case vals["policy"] == first["policy"] && vals["nr_switches"] >= last["nr_switches"]:
			// A thread that released its policy, or is exiting, no
			// longer runs a loop: its last read as a loop stands.
			v.last[tid] = vals
		}
		v.mu.Unlock()
	}
}

// parseSched reads "key : value" lines of /proc/PID/sched.
func parseSched(r io.Reader) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if x, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[strings.TrimSpace(k)] = x
		}
	}
	return out
}

func readMetrics() []metrics.Sample {
	s := make([]metrics.Sample, len(runtimeMetrics))
	for i, n := range runtimeMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	return s
}

// stop samples the threads a last time (the caller stops while the loops
// may still live), ends the trace and returns the report.
func (v *runtimeView) stop(links []BenchLink, tracePath string) RuntimeReport {
	v.cancel()
	v.wg.Wait()
	rep := RuntimeReport{Trace: tracePath, Threads: []ThreadSched{}, Notes: []string{}}
	if v.trace != nil {
		trace.Stop()
		if err := v.trace.Close(); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("trace %s: %v", tracePath, err))
		}
	}
	after := readMetrics()
	for i, a := range after {
		b := v.before[i]
		switch a.Value.Kind() {
		case metrics.KindFloat64Histogram:
			h := histDelta(b.Value.Float64Histogram(), a.Value.Float64Histogram())
			switch a.Name {
			case "/sched/latencies:seconds":
				rep.SchedLatency = h
			case "/sched/pauses/total/gc:seconds":
				rep.GCPause = h
			case "/sched/pauses/total/other:seconds":
				rep.OtherPause = h
			}
		case metrics.KindUint64:
			rep.GCCycles = a.Value.Uint64() - b.Value.Uint64()
		default:
			rep.Notes = append(rep.Notes, "runtime metric "+a.Name+" is not supported by this Go")
		}
	}
	names := map[int][]string{}
	for _, b := range links {
		if tid := b.Timing.ThreadID(); tid != 0 {
			names[tid] = append(names[tid], b.Link.Name())
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	noWait := false
	for tid, l := range names {
		f, e := v.first[tid], v.last[tid]
		if e == nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("thread %d (%s): its sched file was never read", tid, strings.Join(l, ",")))
			continue
		}
		d := func(k string) float64 { return e[k] - f[k] }
		ts := ThreadSched{
			TID: tid, Links: l, Policy: int(e["policy"]),
			Voluntary: uint64(d("nr_voluntary_switches")), Involuntary: uint64(d("nr_involuntary_switches")),
			Migrations: uint64(d("se.nr_migrations")), RunMs: math.Round(d("se.sum_exec_runtime")*1e3) / 1e3,
		}
		if _, ok := e["wait_sum"]; ok {
			w := math.Round(d("wait_sum")*1e3) / 1e3
			ts.WaitMs = &w
		} else {
			noWait = true
		}
		rep.Threads = append(rep.Threads, ts)
	}
	slices.SortFunc(rep.Threads, func(a, b ThreadSched) int { return a.TID - b.TID })
	if noWait {
		rep.Notes = append(rep.Notes, "no wait_sum in /proc/PID/task/TID/sched: the kernel keeps it only with schedstats (sysctl kernel.sched_schedstats=1)")
	}
	return rep
}

// histDelta summarises after − before, bucket by bucket.
func histDelta(before, after *metrics.Float64Histogram) HistUS {
	counts := slices.Clone(after.Counts)
	if len(before.Counts) == len(counts) {
		for i := range counts {
			counts[i] -= before.Counts[i]
		}
	}
	var h HistUS
	for i, c := range counts {
		h.Count += c
		if c > 0 && after.Buckets[i] >= 1e-3 {
			h.Over1ms += c
		}
	}
	if h.Count == 0 {
		return h
	}
	up := func(i int) float64 {
		b := after.Buckets[i+1]
		if math.IsInf(b, 1) {
			b = after.Buckets[i]
		}
		return math.Round(b*1e7) / 10
	}
	at := func(p float64) float64 {
		r := rank(p, h.Count)
		var cum uint64
		for i, c := range counts {
			if cum += c; cum >= r {
				return up(i)
			}
		}
		return 0
	}
	h.P50, h.P99 = at(0.5), at(0.99)
	for i := len(counts) - 1; i >= 0; i-- {
		if counts[i] > 0 {
			h.Max = up(i)
			break
		}
	}
	return h
}

// WriteText prints the runtime's and the kernel's view in a few lines.
func (r RuntimeReport) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Trace != "" {
		fmt.Fprintf(&b, "runtime trace: %s (go tool trace %s)\n", r.Trace, r.Trace)
	}
	fmt.Fprintf(&b, "go scheduler latency (runnable → running) µs, at most: p50 %.1f  p99 %.1f  max %.1f  over 1 ms %d of %d\n",
		r.SchedLatency.P50, r.SchedLatency.P99, r.SchedLatency.Max, r.SchedLatency.Over1ms, r.SchedLatency.Count)
	fmt.Fprintf(&b, "go pauses: GC cycles %d, GC stop-the-world %d (max %.1f µs), other %d (max %.1f µs)\n",
		r.GCCycles, r.GCPause.Count, r.GCPause.Max, r.OtherPause.Count, r.OtherPause.Max)
	for _, t := range r.Threads {
		wait := ""
		if t.WaitMs != nil {
			wait = fmt.Sprintf("  waited runnable %.1f ms", *t.WaitMs)
		}
		fmt.Fprintf(&b, "thread %d (%s) policy %d: switches voluntary %d  involuntary %d  migrations %d  ran %.1f ms%s\n",
			t.TID, strings.Join(t.Links, ","), t.Policy, t.Voluntary, t.Involuntary, t.Migrations, t.RunMs, wait)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
