package loopbench

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

const (
	usNs = int64(time.Microsecond)
	msNs = int64(time.Millisecond)
)

// A real cyclictest -t2 -a 0,1 --spike=100 transcript: every spike line
// read, its thread mapped to its CPU, sorted by wake-up, in ns.
func TestParseSpikesTranscript(t *testing.T) {
	b, err := os.ReadFile("testdata/cyclictest-spikes-2threads.txt")
	if err != nil {
		t.Fatal(err)
	}
	spikes, err := ParseSpikes(bytes.NewReader(b), []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(spikes) != 66 {
		t.Fatalf("%d spikes, want 66 (spikes = 66)", len(spikes))
	}
	// "T: 1 Spike:     225: TS:  46540878124", the earliest.
	if s := spikes[0]; s != (Spike{Thread: 1, CPU: 1, Latency: 225 * usNs, Wake: 46540878124 * usNs}) {
		t.Errorf("first spike %+v", s)
	}
	if !slices.IsSortedFunc(spikes, func(a, b Spike) int { return cmpInt64(a.Wake, b.Wake) }) {
		t.Error("spikes not sorted by wake-up")
	}
	maxLat := slices.MaxFunc(spikes, func(a, b Spike) int { return cmpInt64(a.Latency, b.Latency) })
	if maxLat.Latency != 1217*usNs || maxLat.CPU != 0 || maxLat.Start() != 46543578128*usNs-1217*usNs {
		t.Errorf("largest spike %+v", maxLat)
	}
	// Its histogram file: one maximum per thread.
	f, err := os.Open("testdata/cyclictest-spikes-2threads.hist")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := ParseHistfile(f)
	if err != nil {
		t.Fatal(err)
	}
	got := WatchResult{Config: WatchConfig{CPUs: []int{0, 1}}, Hist: h}.MaxPerCPU()
	if want := []CPUMax{{0, 1217}, {1, 991}}; !slices.Equal(got, want) {
		t.Errorf("MaxPerCPU = %v, want %v", got, want)
	}
}

func TestParseSpikesErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"T: 0 Spike: x: TS: 5\n", "whole numbers"},
		{"T: 0 Spike: 5: TS:\n", "want \"T: thread"},
		{"T: 0 Spike: 5: TS: 7\nspikes = 2\n", "counts 2 spikes, 1 lines read"},
		{"spikes = many\n", "want a count"},
	} {
		if _, err := ParseSpikes(strings.NewReader(tc.text), nil); !errors.Is(err, ErrSpikes) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSpikes(%q) = %v, want ErrSpikes with %q", tc.text, err, tc.want)
		}
	}
	s, err := ParseSpikes(strings.NewReader("# /dev/cpu_dma_latency set to 0us\nT: 3 Spike: 5: TS: 7\nspikes = 1\n"), []int{0})
	if err != nil || len(s) != 1 || s[0].CPU != -1 {
		t.Errorf("a thread beyond the CPU list: %+v, %v", s, err)
	}
}

// A late tick is the machine's when a spike on its CPU overlaps it, ours
// when none does and it lasted a period, else unattributed.
func TestAttribute(t *testing.T) {
	const period = msNs
	// Spikes at [Wake−Latency, Wake], sorted by wake-up.
	spikes := []Spike{
		{CPU: 0, Latency: 2 * msNs, Wake: 12 * msNs},   // [10, 12] msNs on CPU 0
		{CPU: 1, Latency: 300 * usNs, Wake: 21 * msNs}, // [20.7, 21] msNs on CPU 1
		{CPU: 1, Latency: 5 * msNs, Wake: 26 * msNs},   // [21, 26] msNs on CPU 1
		{CPU: 0, Latency: 3 * msNs, Wake: 40 * msNs},   // [37, 40] msNs on CPU 0
	}
	maxSpike := 5 * msNs
	tick := func(planned, end int64, cpu int32) LateTick {
		return LateTick{Planned: planned, Deadline: planned, Wake: end, CPU: cpu, SleptCPU: cpu}
	}
	for _, tc := range []struct {
		name  string
		r     LateTick
		want  Attribution
		spike int
	}{
		{"inside a spike on its CPU", tick(10500*usNs, 11800*usNs, 0), AttrMachine, 0},
		{"overlapping its start, most of it", tick(9800*usNs, 10900*usNs, 0), AttrMachine, 0},
		{"overlapping its end, most of it", tick(11*msNs, 12500*usNs, 0), AttrMachine, 0},
		{"the spike on another CPU", tick(10500*usNs, 11800*usNs, 1), AttrOurs, -1},
		{"slept on the spike's CPU, woke on another", LateTick{Planned: 10500 * usNs, Deadline: 10500 * usNs, Wake: 11800 * usNs, CPU: 1, SleptCPU: 0}, AttrMachine, 0},
		{"a spike covering less than half", tick(8*msNs, 11*msNs, 0), AttrOurs, 0},
		{"a spike covering a tenth of a short stall", tick(11900*usNs, 12800*usNs, 0), AttrShort, 0},
		{"the largest of two overlapping", tick(20800*usNs, 22*msNs, 1), AttrMachine, 2},
		{"a long spike whose wake-up is far after", tick(24*msNs, 25*msNs, 1), AttrMachine, 2},
		{"unknown CPU: any", tick(38*msNs, 39500*usNs, -1), AttrMachine, 3},
		{"after every spike, a period late", tick(50*msNs, 52*msNs, 0), AttrOurs, -1},
		{"just after a spike, shorter than a period", tick(12100*usNs, 12900*usNs, 0), AttrShort, -1},
		{"a send late after an on-time wake-up", LateTick{Planned: 36 * msNs, Deadline: 36500 * usNs, Wake: 36010 * usNs, Send: 38500 * usNs, CPU: 0}, AttrMachine, 3},
		{"runnable for most of it", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 52 * msNs, CPU: 0, SleptCPU: 0, Waited: 1500 * usNs}, AttrCPUWait, -1},
		{"runnable for half of a short one", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 50800 * usNs, CPU: 0, SleptCPU: 0, Waited: 400 * usNs}, AttrCPUWait, -1},
		{"runnable for a third of it", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 53 * msNs, CPU: 0, SleptCPU: 0, Waited: msNs}, AttrOurs, -1},
		{"waited, but inside a spike: the machine's", LateTick{Planned: 10500 * usNs, Deadline: 10500 * usNs, Wake: 11800 * usNs, CPU: 0, SleptCPU: 0, Waited: msNs}, AttrMachine, 0},
		{"wait unknown", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 52 * msNs, CPU: 0, SleptCPU: 0, Waited: -1}, AttrOurs, -1},
		{"blocked, put on a CPU as often as usual", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 52 * msNs, CPU: 0, SleptCPU: 0, Waited: 50 * usNs, Ran: 20 * usNs, Runs: 3, UsualRuns: 3}, AttrTimer, -1},
		{"blocked, less often than usual", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 52 * msNs, CPU: 0, SleptCPU: 0, Waited: 50 * usNs, Ran: 20 * usNs, Runs: 2, UsualRuns: 3}, AttrTimer, -1},
		{"blocked once more than usual: a wait of the runtime's", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 52 * msNs, CPU: 0, SleptCPU: 0, Waited: 50 * usNs, Ran: 20 * usNs, Runs: 4, UsualRuns: 3}, AttrOurs, -1},
		{"running for most of it: a spin", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 52 * msNs, CPU: 0, SleptCPU: 0, Waited: 50 * usNs, Ran: 1500 * usNs, Runs: 3, UsualRuns: 3}, AttrOurs, -1},
		{"usual runs unknown", LateTick{Planned: 50 * msNs, Deadline: 50 * msNs, Wake: 52 * msNs, CPU: 0, SleptCPU: 0, Waited: 50 * usNs, Ran: 20 * usNs, Runs: 3, UsualRuns: -1}, AttrOurs, -1},
	} {
		got, at, _ := Attribute(tc.r, spikes, maxSpike, period)
		if got != tc.want || at != tc.spike {
			t.Errorf("%s: Attribute = %q, spike %d; want %q, %d", tc.name, got, at, tc.want, tc.spike)
		}
	}
	if got, at, _ := Attribute(tick(0, 2*msNs, 0), nil, 0, period); got != AttrOurs || at != -1 {
		t.Errorf("no spikes: %q %d", got, at)
	}
}

// The observer keeps ticks later than the threshold, with their instants,
// counts those beyond its capacity, and bins every tick's lateness.
func TestLinkTimingKeepsLate(t *testing.T) {
	clock := realtime.NewClock()
	lt := NewLinkTiming(clock, time.Millisecond)
	start := clock.Now()
	lt.KeepLate(500*time.Microsecond, 2, start, 10*time.Second, time.Second)
	lt.sendIsWake = true
	lt.ObserveTick(10*usNs, 5*usNs)  // on time
	lt.ObserveTick(800*usNs, 5*usNs) // late
	lt.ObserveTick(600*usNs, 5*usNs) // late
	lt.ObserveTick(900*usNs, 5*usNs) // late, beyond the capacity
	recs, dropped := lt.LateTicks()
	if len(recs) != 2 || dropped != 1 {
		t.Fatalf("%d records, %d dropped; want 2, 1", len(recs), dropped)
	}
	r := recs[0]
	if r.Lateness() != 800*usNs || r.Wake-r.Deadline != 800*usNs || r.Send != r.Wake || r.Planned != r.Deadline {
		t.Errorf("record %+v", r)
	}
	if r.CPU < 0 {
		t.Errorf("CPU %d: getcpu failed", r.CPU)
	}
	// The kernel's accounting of the thread between two ticks; the test's
	// goroutine may change threads, so only that it was read.
	if r.Ran < 0 || r.Waited < 0 || r.Runs < 0 { // UsualRuns: -1, no tick on time had one before it
		t.Errorf("ran %d, waited %d ns, runs %d (usually %d): /proc/thread-self/schedstat not read", r.Ran, r.Waited, r.Runs, r.UsualRuns)
	}
	if lt.ThreadID() == 0 {
		t.Error("no thread id after the first tick")
	}
	if m := slices.Max(lt.stalls.bins); m != 900*usNs {
		t.Errorf("bins' max %d, want 900 µs", m)
	}

	// After a tick on time, a late one knows how often the thread was put
	// on a CPU over a tick on time.
	u := NewLinkTiming(clock, time.Millisecond)
	u.KeepLate(500*time.Microsecond, 2, start, time.Second, time.Second)
	u.sendIsWake = true
	u.ObserveTick(10*usNs, 5*usNs)
	u.ObserveTick(10*usNs, 5*usNs)
	u.ObserveTick(800*usNs, 5*usNs)
	if recs, _ := u.LateTicks(); len(recs) != 1 || recs[0].UsualRuns < 0 || recs[0].Runs < 0 {
		t.Errorf("after ticks on time: %+v", recs)
	}

	// A gated tick: woke on time (lead 200 µs), sent 700 µs late.
	g := NewLinkTiming(clock, time.Millisecond)
	g.KeepLate(500*time.Microsecond, 10, start, time.Second, time.Second)
	g.ObserveLead(200*usNs, 900*usNs, true)
	g.ObserveTick(700*usNs, 950*usNs)
	recs, _ = g.LateTicks()
	if len(recs) != 1 {
		t.Fatalf("gated: %d records", len(recs))
	}
	r = recs[0]
	if r.SendLateness() != 700*usNs || r.WakeLateness() != 0 || r.Deadline-r.Planned != 200*usNs || r.Send-r.Wake != 900*usNs {
		t.Errorf("gated record %+v: wake %d, send %d", r, r.WakeLateness(), r.SendLateness())
	}

	if raceEnabled {
		return
	}
	big := NewLinkTiming(clock, time.Millisecond)
	big.KeepLate(500*time.Microsecond, 1000, start, time.Second, time.Second)
	big.sendIsWake = true
	if n := testing.AllocsPerRun(100, func() {
		big.ObserveTick(10*usNs, 5*usNs)
		big.ObserveTick(900*usNs, 5*usNs)
	}); n != 0 {
		t.Errorf("the observer allocates %v times a tick while keeping records", n)
	}
}

func stallLink(t *testing.T, name string, clock *realtime.Clock) BenchLink {
	t.Helper()
	timing := NewLinkTiming(clock, time.Millisecond)
	l, err := bridge.NewLink(bridge.LinkConfig{
		Name: name, Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: []bridge.Limit{{Min: -1, Max: 1}},
	}, &stubPlant{}, stubExchanger{}, clock, timing, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return BenchLink{Link: l, Timing: timing}
}

// The report counts each link's attributions, lists the largest first,
// bins the run for the timeline, and writes every record as CSV.
func TestNewStallReport(t *testing.T) {
	clock := realtime.NewClock()
	const start = 1000 * msNs
	a, b := stallLink(t, "a", clock), stallLink(t, "b", clock)
	for _, l := range []BenchLink{a, b} {
		l.Timing.KeepLate(time.Millisecond, 10, start, 3*time.Second, time.Second)
		l.Timing.stalls.firstTick = start
	}
	add := func(l BenchLink, planned, late, waited int64, cpu int32) {
		l.Timing.stalls.recs = append(l.Timing.stalls.recs, LateTick{Planned: planned, Deadline: planned, Wake: planned + late, CPU: cpu, SleptCPU: cpu,
			Waited: waited, Ran: 30 * usNs, Runs: 4, UsualRuns: 3}) // blocked once more than usual: not a late timer
		l.Timing.stalls.bin(uint64((planned-start)/msNs), msNs, late)
	}
	add(a, start+100*msNs, 2*msNs, 0, 0)            // machine: the spike below
	add(a, start+1500*msNs, 3*msNs, 1*msNs, 1)      // ours: it waited a third of it
	add(b, start+2200*msNs, 9*msNs, -1, 1)          // ours, the largest; its wait unknown
	add(b, start+2600*msNs, 1200*usNs, 900*usNs, 0) // waited for a CPU
	watch := &WatchResult{
		Config: WatchConfig{CPUs: []int{0, 1}, Priority: 80, Interval: time.Millisecond, Spike: 100 * time.Microsecond},
		Spikes: []Spike{{Thread: 0, CPU: 0, Latency: 4 * msNs, Wake: start + 103*msNs},
			// Below the threshold: not counted, and a quarter of the last stall.
			{Thread: 0, CPU: 0, Latency: 300 * usNs, Wake: start + 2600*msNs + 1200*usNs}},
		Hist: Histogram{Counts: []uint64{5}, ThreadMax: []time.Duration{4 * time.Millisecond, 20 * time.Microsecond}},
	}
	// Link b's TIMEOUTs: one in its largest stall, one in the machine's
	// spike, one with nothing late; one beyond the room.
	b.Replies = NewReplies()
	b.Replies.KeepTimeouts(clock, 3)
	b.Replies.timeouts = append(b.Replies.timeouts, start+2205*msNs, start+102*msNs, start+2900*msNs)
	b.Replies.tosDropped = 1
	rep := NewStallReport([]BenchLink{a, b}, watch, nil, start, time.Millisecond, time.Millisecond, time.Second)
	if rep.Machine != 1 || rep.Ours != 2 || rep.CPUWait != 1 || rep.Unattributed != 0 || rep.Cyclictest != "ran" || rep.Spikes != 1 {
		t.Fatalf("%+v", rep)
	}
	wantTO := TimeoutStalls{Timeouts: 3, Machine: 1, LateTick: 1, Partner: 1, Dropped: 1}
	if rep.PerLink[0] != (LinkStalls{Name: "a", Late: 2, Machine: 1, Ours: 1}) || rep.PerLink[1] != (LinkStalls{Name: "b", Late: 2, Ours: 1, CPUWait: 1, Timeouts: wantTO}) {
		t.Errorf("per link %+v", rep.PerLink)
	}
	if rep.Timeouts != wantTO {
		t.Errorf("timeouts %+v, want %+v", rep.Timeouts, wantTO)
	}
	if len(rep.Largest) != 4 || rep.Largest[0].Link != "b" || rep.Largest[0].LatenessUs != 9000 || rep.Largest[2].Spike == nil || rep.Largest[2].Spike.AtS != 0.099 {
		t.Errorf("largest %+v", rep.Largest)
	}
	if w := rep.Largest[0]; w.WaitedUs != -1 || w.RanUs != -1 {
		t.Errorf("an unknown wait reported as %v µs waited, %v µs ran", w.WaitedUs, w.RanUs)
	}
	if w := rep.Largest[3]; w.Attribution != AttrCPUWait || w.WaitedUs != 900 || w.RanUs != 30 {
		t.Errorf("the stall it waited through: %+v", w)
	}
	want := []TimelineBin{{0, 2000, 4000}, {1, 3000, 0}, {2, 9000, 300}}
	if !slices.Equal(rep.Timeline, want) {
		t.Errorf("timeline %+v, want %+v", rep.Timeline, want)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"machine 1  waited for a CPU 1  late timer 0  ours 2", "cpu0 4000", "cpu0 4000 µs from 0.099 s", "ours       |",
		"TIMEOUTs 3: the machine late 1  the link's tick late 1  the partner 1  (+1 beyond the records' capacity)"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	var out bytes.Buffer
	if err := (LinksReport{Runs: []LinksRun{{Links: 2, Stalls: &rep}}}).WriteStallsCSV(&out); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(rows) != 5 || !slices.Equal(rows[0], stallCSVHeader) {
		t.Fatalf("CSV %v, %v", rows, err)
	}
	if r := rows[1]; r[1] != "a" || r[3] != "1100000000" || r[12] != "0" || r[13] != "30" || r[14] != "4" || r[15] != "3" || r[16] != "machine" || r[17] != "0" || r[18] != "4000" {
		t.Errorf("first row %v", r)
	}
	if r := rows[4]; r[12] != "900" || r[16] != string(AttrCPUWait) {
		t.Errorf("last row %v", r)
	}

	// Without cyclictest: why, and nothing attributed.
	none := NewStallReport([]BenchLink{a}, nil, ErrNoCyclictest, start, time.Millisecond, time.Millisecond, time.Second)
	if !strings.HasPrefix(none.Cyclictest, "did not run: ") || none.Unattributed != 2 || none.Records[0].Attribution != AttrNoWatch {
		t.Errorf("without cyclictest %+v", none)
	}
}

func TestWatchArgs(t *testing.T) {
	got := strings.Join(WatchConfig{Priority: 80, CPUs: []int{0, 1}, Interval: time.Millisecond, Spike: 500 * time.Microsecond}.Args("H"), " ")
	want := "-m -p 80 -t 2 -a 0,1 -i 1000 -q --spike=500 --spike-nodes=100000 -h 100000 --histfile=H"
	if got != want {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if RunFile("t.out", 4, 2) != "t-links4.out" || RunFile("t.out", 4, 1) != "t.out" || RunFile("", 4, 2) != "" {
		t.Error("RunFile")
	}
}

func TestHistDelta(t *testing.T) {
	bk := []float64{0, 1e-6, 1e-3, 2e-3}
	before := &metrics.Float64Histogram{Counts: []uint64{5, 1, 0}, Buckets: bk}
	after := &metrics.Float64Histogram{Counts: []uint64{103, 1, 1}, Buckets: bk}
	h := histDelta(before, after)
	if h != (HistUS{Count: 99, P50: 1, P99: 2000, Max: 2000, Over1ms: 1}) {
		t.Errorf("%+v", h)
	}
}

func TestParseSched(t *testing.T) {
	m := parseSched(strings.NewReader("bridge (1, #threads: 9)\n-----\nse.sum_exec_runtime  :   12.5\nnr_involuntary_switches :  3\ncurrent_node=0, numa_group_id=0\n"))
	if m["se.sum_exec_runtime"] != 12.5 || m["nr_involuntary_switches"] != 3 || len(m) != 2 {
		t.Errorf("%v", m)
	}
}

// A run with stall attribution: the concurrent cyclictest runs (or the
// report says why not), and the report and the runtime's view are there.
func TestRunLinksStalls(t *testing.T) {
	clock := realtime.NewClock()
	links := []BenchLink{stallLink(t, "a", clock), stallLink(t, "b", clock)}
	run, err := RunLinks(context.Background(), LinksConfig{
		Model: ModelThread, Duration: 300 * time.Millisecond,
		Stalls: StallConfig{Threshold: 500 * time.Microsecond, Cyclictest: true},
	}, links)
	if err != nil {
		t.Fatal(err)
	}
	if run.Stalls == nil || run.Runtime == nil || len(run.Stalls.PerLink) != 2 {
		t.Fatalf("stalls %+v, runtime %+v", run.Stalls, run.Runtime)
	}
	if _, lookErr := exec.LookPath("cyclictest"); lookErr != nil {
		if !strings.Contains(run.Stalls.Cyclictest, "did not run") {
			t.Errorf("cyclictest absent, report says %q", run.Stalls.Cyclictest)
		}
		t.Skip("cyclictest not installed (apt-get install rt-tests): the concurrent run is not tested")
	}
	if run.Stalls.Cyclictest != "ran" || len(run.Stalls.CyclictestMax) == 0 {
		t.Errorf("cyclictest %q, max %v", run.Stalls.Cyclictest, run.Stalls.CyclictestMax)
	}
	if _, err := json.Marshal(run); err != nil {
		t.Fatal(err)
	}
}

// The records file is written whole or not at all: a path that cannot be
// written is an error naming it, and an older file stays as it was.
func TestWriteStallsFileFails(t *testing.T) {
	var r LinksReport
	if err := r.WriteStallsFile(filepath.Join(t.TempDir(), "missing", "late.csv")); err == nil || !strings.Contains(err.Error(), "late.csv") {
		t.Errorf("WriteStallsFile into a missing folder = %v, want an error naming the file", err)
	}
	path := filepath.Join(t.TempDir(), "late.csv")
	if err := r.WriteStallsFile(path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) == 0 {
		t.Errorf("records file: %d bytes, %v; want the CSV header at least", len(b), err)
	}
}

func TestParseSchedstat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want threadStat
	}{
		{"676736 0 1\n", threadStat{676736, 0, 1}},
		{"3300000000 12345 4952\n", threadStat{3300000000, 12345, 4952}},
		{"1 2 3", threadStat{1, 2, 3}},
		{"", unknownStat},
		{"12", unknownStat},
		{"12 ", unknownStat},
		{"12 7", unknownStat},
		{"12 7 ", unknownStat},
		{"12 x 3\n", unknownStat},
		{"1 2 3 4\n", unknownStat},
		{"-1 2 3\n", unknownStat},
		{" 1 2 3\n", unknownStat},
		{"99999999999999999999 1 1\n", unknownStat},
	} {
		if got := parseSchedstat([]byte(tc.in)); got != tc.want {
			t.Errorf("parseSchedstat(%q) = %+v; want %+v", tc.in, got, tc.want)
		}
	}
}

func FuzzParseSchedstat(f *testing.F) {
	f.Add([]byte("676736 0 1\n"))
	f.Add([]byte("99999999999999999999 1 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := parseSchedstat(b)
		if st != unknownStat && (st.ran < 0 || st.waited < 0 || st.runs < 0) {
			t.Fatalf("parseSchedstat(%q) = %+v: partly known", b, st)
		}
	})
}

// The observer's cost per tick while keeping records: on time (getcpu and
// the schedstat read) and late (the record too, up to 100 000 kept).
func BenchmarkLinkTimingKeepLate(b *testing.B) {
	clock := realtime.NewClock()
	for _, late := range []bool{false, true} {
		name := "on time"
		lateness := int64(10 * usNs)
		if late {
			name, lateness = "late", 900*usNs
		}
		b.Run(name, func(b *testing.B) {
			lt := NewLinkTiming(clock, time.Millisecond)
			lt.KeepLate(500*time.Microsecond, 100_000, clock.Now(), time.Hour, time.Second)
			lt.sendIsWake = true
			b.ReportAllocs()
			for b.Loop() {
				lt.ObserveTick(lateness, 5*usNs)
			}
			lt.stalls.release()
		})
	}
}

// A TIMEOUT is the machine's when cyclictest was late over its window, the
// link's own when one of its ticks was late in it, else the partner's.
func TestAttributeTimeout(t *testing.T) {
	const period = msNs
	spikes := []Spike{{CPU: 1, Latency: 2 * msNs, Wake: 12 * msNs}} // [10, 12] ms on CPU 1
	maxSpike := 2 * msNs
	late := []LateTick{
		{Planned: 30 * msNs, Deadline: 30 * msNs, Wake: 31500 * usNs, CPU: 0, SleptCPU: 0},  // [30, 31.5] ms
		{Planned: 60 * msNs, Deadline: 60 * msNs, Wake: 60 * msNs, Send: 62 * msNs, CPU: 0}, // [60, 62] ms
	}
	longest := 2 * msNs
	for _, tc := range []struct {
		name    string
		at      int64
		watched bool
		want    TimeoutCause
	}{
		{"cyclictest late on another CPU over the window", 11800 * usNs, true, TimeoutMachine},
		{"cyclictest late over a tenth of it", 10100 * usNs, true, TimeoutPartner},
		{"its tick late in the window", 31 * msNs, true, TimeoutLateTick},
		{"its tick's stall ended just inside the window", 32400 * usNs, true, TimeoutLateTick},
		{"its tick's stall ended before the window", 33 * msNs, true, TimeoutPartner},
		{"a late send in the window", 62500 * usNs, true, TimeoutLateTick},
		{"the window after the next tick's", 64 * msNs, true, TimeoutPartner},
		{"nothing late", 80 * msNs, true, TimeoutPartner},
		{"no cyclictest, nothing of ours late", 80 * msNs, false, TimeoutUnknown},
		{"no cyclictest, its tick late", 31 * msNs, false, TimeoutLateTick},
	} {
		var sp []Spike
		if tc.watched {
			sp = spikes
		}
		if got := AttributeTimeout(tc.at, period, sp, maxSpike, late, longest, tc.watched); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Replies keeps the instant of each TIMEOUT, in the room made before the
// run, and counts the rest; other statuses are not kept.
func TestRepliesKeepTimeouts(t *testing.T) {
	clock := realtime.NewClock()
	r := NewReplies()
	r.Exchanged(simulink.Timeout) // not armed: nothing kept
	r.KeepTimeouts(clock, 2)
	before := clock.Now()
	for _, st := range []simulink.Status{simulink.OK, simulink.Timeout, simulink.Desync, simulink.Timeout, simulink.Timeout} {
		r.Exchanged(st)
	}
	tos, dropped := r.Timeouts()
	if len(tos) != 2 || dropped != 1 || tos[0] < before || tos[1] < tos[0] {
		t.Fatalf("kept %v (from %d), dropped %d; want 2 instants in order and 1 dropped", tos, before, dropped)
	}
	if raceEnabled {
		return
	}
	r.KeepTimeouts(clock, 1000)
	if n := testing.AllocsPerRun(100, func() {
		r.Exchanged(simulink.OK)
		r.Exchanged(simulink.Timeout)
	}); n != 0 {
		t.Errorf("Exchanged allocates %v times while keeping TIMEOUTs", n)
	}
}
