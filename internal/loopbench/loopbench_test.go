package loopbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

const usec = time.Microsecond

func TestParseHistfile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		file      string // testdata file, or
		text      string // inline content
		threads   int
		total     uint64
		overflows uint64
		stats     Stats
	}{
		{
			name: "real 1 thread, overflows", file: "cyclictest-1khz-h200.hist",
			threads: 1, total: 3000, overflows: 28,
			// p99.9 is rank 2997, among the 28 overflows: reported as Max.
			stats: Stats{Min: 7 * usec, P50: 26 * usec, P99: 132 * usec, P999: 670 * usec, Max: 670 * usec, Mean: 29 * usec},
		},
		{
			name: "real 2 threads", file: "cyclictest-2threads-h100.hist",
			threads: 2, total: 2000, overflows: 6,
			stats: Stats{Min: 12 * usec, P50: 24 * usec, P99: 44 * usec, P999: 424 * usec, Max: 424 * usec, Mean: 24 * usec},
		},
		{
			name:    "no summary: from the buckets",
			text:    "# Histogram\n000000 000000\n000001 000001\n000002 000002\n000003 000001\n000004 000000\n",
			threads: 1, total: 4,
			stats: Stats{Min: 1 * usec, P50: 2 * usec, P99: 3 * usec, P999: 3 * usec, Max: 3 * usec, Mean: 2 * usec},
		},
		{
			name:    "comments, blank lines, CRLF and tabs",
			text:    "# cyclictest\r\n\r\n# Histogram\r\n000005\t000010\r\n# a comment: with a colon\r\n000006\t000010\r\n\n# Total: 000000020\r\n",
			threads: 1, total: 20,
			stats: Stats{Min: 5 * usec, P50: 5 * usec, P99: 6 * usec, P999: 6 * usec, Max: 6 * usec, Mean: 5500 * time.Nanosecond},
		},
		{
			name:    "overflow line, everything overflowed",
			text:    "000000 000000\n000001 000000\n# Min Latencies: 00009\n# Avg Latencies: 00012\n# Max Latencies: 00020\n# Histogram Overflows: 00005\n# Histogram Overflow at cycle number:\n# Thread 0: 00001 00002 00003 00004 00005\n",
			threads: 1, total: 5, overflows: 5,
			stats: Stats{Min: 9 * usec, P50: 20 * usec, P99: 20 * usec, P999: 20 * usec, Max: 20 * usec, Mean: 12 * usec},
		},
		{
			name:    "-H summary column is not a thread",
			text:    "000001 000002 000002\n000002 000002 000002\n# Min Latencies: 00001\n# Avg Latencies: 00002\n# Max Latencies: 00002\n",
			threads: 1, total: 4,
			stats: Stats{Min: 1 * usec, P50: 1 * usec, P99: 2 * usec, P999: 2 * usec, Max: 2 * usec, Mean: 2 * usec},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := tc.text
			if tc.file != "" {
				b, err := os.ReadFile("testdata/" + tc.file)
				if err != nil {
					t.Fatal(err)
				}
				text = string(b)
			}
			h, err := ParseHistfile(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			if h.Threads != tc.threads || h.Total() != tc.total || h.Overflows != tc.overflows {
				t.Errorf("threads %d total %d overflows %d, want %d %d %d", h.Threads, h.Total(), h.Overflows, tc.threads, tc.total, tc.overflows)
			}
			if got := h.Stats(); got != tc.stats {
				t.Errorf("Stats() =\n %+v, want\n %+v", got, tc.stats)
			}
		})
	}
}

func TestParseHistfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty", "", "no histogram rows"},
		{"comments only", "# Histogram\n# Total: 0\n", "no histogram rows"},
		{"bad count", "000001 000002\n000002 x\n", `line 2 "000002 x"`},
		{"negative", "000001 -3\n", `line 1`},
		{"bucket only", "000001\n", "want a bucket and at least one count"},
		{"bad overflow", "000001 000001\n# Histogram Overflows: lots\n", `line 2`},
		{"bad summary", "000001 000001\n# Max Latencies: 1.5\n", `line 2`},
		{"huge bucket", "99999999 000001\n", "bucket beyond"},
		{"ragged rows", "000001 000001 000001\n000002 000001\n", "bucket 2 has 1 counts, want 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHistfile(strings.NewReader(tc.text))
			if !errors.Is(err, ErrHistfile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseHistfile = %v, want ErrHistfile mentioning %q", err, tc.want)
			}
		})
	}
}

func TestHistogramAtLeast(t *testing.T) {
	b, err := os.ReadFile("testdata/cyclictest-1khz-h200.hist")
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHistfile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		d    time.Duration
		want uint64
	}{
		{0, 3000},
		{100 * usec, 8 + 28},
		{200 * usec, 28}, // the range's end: only the overflows
		{time.Millisecond, 0},
	} {
		if got := h.AtLeast(tc.d); got != tc.want {
			t.Errorf("AtLeast(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func FuzzParseHistfile(f *testing.F) {
	for _, name := range []string{"cyclictest-1khz-h200.hist", "cyclictest-2threads-h100.hist"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("000001 000001\n# Histogram Overflows: 00003\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHistfile(bytes.NewReader(b))
		if err != nil {
			return
		}
		s := h.Stats()
		if s.Min > s.P50 || s.P50 > s.P99 || s.P99 > s.P999 || s.P999 > s.Max || s.Mean < s.Min || s.Mean > s.Max {
			t.Fatalf("percentiles out of order: %+v", s)
		}
	})
}

func TestSummarize(t *testing.T) {
	seq := func(n int) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(n - i) // reversed: Summarize must sort
		}
		return v
	}
	for _, tc := range []struct {
		name string
		ns   []int64
		want Stats
	}{
		{"empty", nil, Stats{}},
		{"one", []int64{7}, Stats{7, 7, 7, 7, 7, 7}},
		{"1..1000", seq(1000), Stats{Min: 1, P50: 500, P99: 990, P999: 999, Max: 1000, Mean: 501}},
		{"negative (early wake)", []int64{-5, 5, 10, 20}, Stats{Min: -5, P50: 5, P99: 20, P999: 20, Max: 20, Mean: 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.ns); got != tc.want {
				t.Errorf("Summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{Rate: 1000, Duration: time.Second, CPU: -1}, ""},
		{Config{Rate: 30, Duration: time.Second, Priority: 80, CPU: 1, Spin: time.Millisecond}, ""},
		{Config{Rate: 0, Duration: time.Second, CPU: -1}, "rate 0 Hz"},
		{Config{Rate: -1, Duration: time.Second, CPU: -1}, "rate -1 Hz"},
		{Config{Rate: 2e9, Duration: time.Second, CPU: -1}, "rate 2e+09 Hz"},
		{Config{Rate: 1000, Duration: 0, CPU: -1}, "duration 0s"},
		{Config{Rate: 1, Duration: time.Millisecond, CPU: -1}, "is 0 ticks"},
		{Config{Rate: 1e6, Duration: time.Hour, CPU: -1}, "is 3600000000 ticks"},
		{Config{Rate: 1000, Duration: time.Second, Priority: 100, CPU: -1}, "priority 100"},
		{Config{Rate: 1000, Duration: time.Second, CPU: -1, Spin: time.Millisecond}, "spin 1ms"},
	} {
		err := tc.cfg.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v, want valid", tc.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %q", tc.cfg, err, tc.want)
		}
		if _, rerr := Run(context.Background(), tc.cfg); rerr == nil {
			t.Errorf("%+v: Run accepted it", tc.cfg)
		}
	}
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"sleep", Config{Rate: 2000, Duration: 50 * time.Millisecond, CPU: -1}},
		{"fifo spin", Config{Rate: 2000, Duration: 50 * time.Millisecond, Priority: 80, CPU: 0, Spin: 100 * usec}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(context.Background(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Lateness
			if res.Ticks != 100 || res.Tool != "bridge" || res.Duration != 50*time.Millisecond || res.Warnings == nil {
				t.Errorf("Result %+v, want 100 ticks over 50ms by bridge, non-nil warnings", res)
			}
			if s.Min > s.P50 || s.P50 > s.P99 || s.P99 > s.P999 || s.P999 > s.Max || s.Mean < s.Min || s.Mean > s.Max {
				t.Errorf("inconsistent stats %+v", s)
			}
			// Spinning reads the clock that measures the wake: never early.
			if tc.cfg.Spin > 0 && s.Min < 0 {
				t.Errorf("spin woke %v early", -s.Min)
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Config{Rate: 1000, Duration: time.Minute, CPU: -1})
	if !errors.Is(err, context.DeadlineExceeded) || res.Ticks >= 60000 {
		t.Fatalf("Run = %d ticks, %v; want a partial run and DeadlineExceeded", res.Ticks, err)
	}
}

// The recorder runs on the loop thread: it must not allocate.
func TestRecorderAllocs(t *testing.T) {
	stops := 0
	r := &recorder{lateness: make([]int64, 100), stop: func() { stops++ }}
	if n := testing.AllocsPerRun(200, func() {
		r.ObserveTick(5, 1)
		r.ObserveOverrun(1)
	}); n != 0 {
		t.Fatalf("%v allocations per tick, want 0", n)
	}
	if r.n != 100 || stops != 1 || r.overruns != 99 {
		t.Fatalf("recorded %d, stops %d, overruns %d; want 100, 1, 99", r.n, stops, r.overruns)
	}
}

func TestCyclictestArgs(t *testing.T) {
	for _, tc := range []struct {
		cfg  CyclictestConfig
		want string
	}{
		{CyclictestConfig{Rate: 1000, Loops: 15000, Priority: 80, CPU: 1},
			"-m -p 80 -t1 -a 1 -i 1000 -l 15000 -q -h 10000 --histfile=H"},
		{CyclictestConfig{Rate: 30, Loops: 10, Priority: 50, CPU: -1, MaxLatency: 5 * time.Millisecond},
			"-m -p 50 -t1 -i 33333 -l 10 -q -h 5000 --histfile=H"},
		{CyclictestConfig{Rate: 200, Loops: 1, Priority: 80, CPU: 0},
			"-m -p 80 -t1 -a 0 -i 5000 -l 1 -q -h 50000 --histfile=H"},
	} {
		if err := tc.cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", tc.cfg, err)
		}
		if got := strings.Join(tc.cfg.Args("H"), " "); got != tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.cfg, got, tc.want)
		}
	}
}

func TestCyclictestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  CyclictestConfig
		want string
	}{
		{CyclictestConfig{Rate: 0, Loops: 1}, "rate 0 Hz"},
		{CyclictestConfig{Rate: 2e6, Loops: 1}, "cyclictest rate 2e+06 Hz"},
		{CyclictestConfig{Rate: 1000, Loops: 0}, "loops 0"},
		{CyclictestConfig{Rate: 1000, Loops: 1, Priority: 100}, "priority 100"},
		{CyclictestConfig{Rate: 1000, Loops: 1, CPU: -2}, "cpu -2"},
		{CyclictestConfig{Rate: 1000, Loops: 1, MaxLatency: -1}, "max latency -1ns"},
		{CyclictestConfig{Rate: 1000, Loops: 1, MaxLatency: time.Hour}, "max latency 1h0m0s"},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrConfig naming %q", tc.cfg, err, tc.want)
		}
	}
}

func TestRunCyclictestMissing(t *testing.T) {
	for _, tc := range []struct {
		name, path, env string
	}{
		{"not in PATH", "", t.TempDir()},
		{"bad path", "/nonexistent/cyclictest", os.Getenv("PATH")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.env)
			_, err := RunCyclictest(context.Background(), CyclictestConfig{Rate: 1000, Loops: 10, Priority: 80, CPU: -1, Path: tc.path})
			if !errors.Is(err, ErrNoCyclictest) || !strings.Contains(err.Error(), "rt-tests") {
				t.Fatalf("RunCyclictest = %v, want ErrNoCyclictest naming rt-tests", err)
			}
		})
	}
}

func TestRunCyclictestFails(t *testing.T) {
	_, err := RunCyclictest(context.Background(), CyclictestConfig{Rate: 1000, Loops: 10, Priority: 80, CPU: -1, Path: "false"})
	if err == nil || errors.Is(err, ErrNoCyclictest) || !strings.Contains(err.Error(), "-l 10") {
		t.Fatalf("RunCyclictest(false) = %v, want the failed command line", err)
	}
}

func TestRunCyclictest(t *testing.T) {
	if _, err := exec.LookPath("cyclictest"); err != nil {
		testutil.RequirePeer(t, "cyclictest", "apt-get install rt-tests", err)
	}
	res, err := RunCyclictest(context.Background(), CyclictestConfig{Rate: 2000, Loops: 100, Priority: 80, CPU: 0})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Lateness
	if res.Tool != "cyclictest" || res.Ticks != 100 || res.RateHz != 2000 || res.Duration != 50*time.Millisecond {
		t.Errorf("Result %+v", res)
	}
	if s.Min > s.P50 || s.P50 > s.P99 || s.P99 > s.P999 || s.P999 > s.Max {
		t.Errorf("inconsistent stats %+v", s)
	}
}

func sampleResults() (Result, Result) {
	b := Result{Tool: "bridge", RateHz: 1000, Duration: 15 * time.Second, Priority: 80, CPU: 1, Ticks: 15000, Overruns: 12,
		Lateness: Stats{Min: 5100 * time.Nanosecond, P50: 42100 * time.Nanosecond, P99: 120300 * time.Nanosecond,
			P999: 900200 * time.Nanosecond, Max: 5012 * usec, Mean: 45 * usec},
		Warnings: []string{"realtime: mlockall: cannot allocate memory"}}
	c := Result{Tool: "cyclictest", RateHz: 1000, Duration: 15 * time.Second, Priority: 80, CPU: 1, Ticks: 15000, Overruns: 3,
		Lateness: Stats{Min: 6 * usec, P50: 20 * usec, P99: 60 * usec, P999: 700 * usec, Max: 9000 * usec, Mean: 25 * usec}, Overflows: 2}
	return b, c
}

func TestCompareText(t *testing.T) {
	b, c := sampleResults()
	var out bytes.Buffer
	if err := Compare(b, c).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"bridge      rate 1000 Hz  ticks 15000  overruns 12  lateness µs  p50 42.1  p99 120.3  p99.9 900.2  max 5012.0  mean 45.0\n" +
		"            warning: realtime: mlockall: cannot allocate memory\n" +
		"cyclictest  rate 1000 Hz  ticks 15000  overruns 3  lateness µs  p50 20.0  p99 60.0  p99.9 700.0  max 9000.0  mean 25.0  (2 beyond the histogram)\n" +
		"ratio bridge/cyclictest  p50 2.1x  p99 2.0x\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestCompareJSON(t *testing.T) {
	b, c := sampleResults()
	c.Lateness.P50 = 0 // undefined ratio
	raw, err := json.Marshal(Compare(b, c))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Bridge     map[string]any      `json:"bridge"`
		Cyclictest map[string]any      `json:"cyclictest"`
		Ratio      map[string]*float64 `json:"ratio"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var k []string
		for s := range m {
			k = append(k, s)
		}
		slices.Sort(k)
		return k
	}
	wantKeys := []string{"cpu", "duration_s", "lateness_us", "overruns", "priority", "rate_hz", "ticks", "warnings"}
	if k := keys(got.Bridge); !slices.Equal(k, wantKeys) {
		t.Errorf("bridge keys %v, want %v", k, wantKeys)
	}
	if k := keys(got.Cyclictest); !slices.Equal(k, append(slices.Clone(wantKeys[:3]), append([]string{"overflows"}, wantKeys[3:]...)...)) {
		t.Errorf("cyclictest keys %v", k)
	}
	lat := got.Bridge["lateness_us"].(map[string]any)
	if lat["p50"] != 42.1 || lat["p99_9"] != 900.2 || got.Bridge["duration_s"] != 15.0 {
		t.Errorf("bridge lateness_us %v duration_s %v", lat, got.Bridge["duration_s"])
	}
	if got.Ratio["p50"] != nil || got.Ratio["p99"] == nil || *got.Ratio["p99"] != 2.005 {
		t.Errorf("ratio %s, want p50 null and p99 2.005", raw)
	}
	// An empty warning list is [] in JSON, not null.
	raw, _ = json.Marshal(Result{}.Report())
	if !bytes.Contains(raw, []byte(`"warnings":[]`)) {
		t.Errorf("empty warnings encoded as %s", raw)
	}
}

func BenchmarkRecorder(b *testing.B) {
	r := &recorder{lateness: make([]int64, 1<<16)}
	r.stop = func() { r.n = 0 } // wrap around instead of stopping
	for b.Loop() {
		r.ObserveTick(42, 1)
	}
}

func ExampleParseHistfile() {
	const hist = `# Histogram
000018 000003
000019 000005
000020 000001
# Total: 000000009
# Min Latencies: 00018
# Avg Latencies: 00018
# Max Latencies: 00250
# Histogram Overflows: 00001
`
	h, err := ParseHistfile(strings.NewReader(hist))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := h.Stats()
	fmt.Println(h.Total(), s.P50, s.P99, s.Max)
	// Output: 10 19µs 250µs 250µs
}

// A peer process is ready when it says so; one that says something else,
// or nothing in time, is stopped and the error says what it said.
func TestStartProcess(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	stop, err := StartProcess(exec.Command("sh", "-c", "echo 'partner: listening on x'; exec sleep 60"), "partner: listening", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := StartProcess(exec.Command("sh", "-c", "echo 'bind: address in use'; exec sleep 60"), "partner: listening", 30*time.Second); err == nil || !strings.Contains(err.Error(), "address in use") {
		t.Errorf("a peer that failed: %v", err)
	}
	if _, err := StartProcess(exec.Command("sh", "-c", "exec sleep 60"), "partner: listening", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not say") {
		t.Errorf("a silent peer: %v", err)
	}
}
