package loopbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrNoCyclictest reports that the cyclictest binary is missing.
	ErrNoCyclictest = errors.New("loopbench: cyclictest not found in PATH (install the Debian package rt-tests)")
	// ErrHistfile reports a cyclictest histogram file that cannot be read.
	ErrHistfile = errors.New("loopbench: malformed cyclictest histogram file")
)

// maxBuckets bounds the histogram a file may describe (1 bucket per µs).
const maxBuckets = 1_000_000

// CyclictestConfig is one cyclictest run: one measuring thread on an
// absolute clock_nanosleep timer with mlockall, like the bridge loop.
type CyclictestConfig struct {
	Rate     float64 // wakes per second; the interval is rounded to the µs
	Loops    int     // wakes to measure, >= 1
	Priority int     // SCHED_FIFO priority 1..99; 0 = SCHED_OTHER
	CPU      int     // pin the thread; -1 = no pinning
	// MaxLatency is the histogram range; later wakes only count as
	// overflows. 0 = 10 periods, at least 10 ms.
	MaxLatency time.Duration
	// Path is the cyclictest binary; "" = look it up in PATH.
	Path string
}

func (c CyclictestConfig) interval() time.Duration {
	return ratePeriod(c.Rate).Round(time.Microsecond)
}

func (c CyclictestConfig) maxLatency() time.Duration {
	if c.MaxLatency > 0 {
		return c.MaxLatency.Round(time.Microsecond)
	}
	return max(10*c.interval(), 10*time.Millisecond)
}

// Validate reports an invalid field; errors wrap ErrConfig and name it.
func (c CyclictestConfig) Validate() error {
	if err := validRate(c.Rate); err != nil {
		return err
	}
	switch {
	case c.Rate > 1e6:
		return fmt.Errorf("loopbench: cyclictest rate %v Hz: %w (want at most 1e6: its interval is in µs)", c.Rate, ErrConfig)
	case c.Loops < 1:
		return fmt.Errorf("loopbench: cyclictest loops %d: %w (want >= 1)", c.Loops, ErrConfig)
	case c.Priority < 0 || c.Priority > 99:
		return fmt.Errorf("loopbench: cyclictest priority %d: %w (want 0..99)", c.Priority, ErrConfig)
	case c.CPU < -1:
		return fmt.Errorf("loopbench: cyclictest cpu %d: %w (want -1 or a CPU index)", c.CPU, ErrConfig)
	case c.MaxLatency < 0 || c.maxLatency() > maxBuckets*time.Microsecond:
		return fmt.Errorf("loopbench: cyclictest max latency %v: %w (want 0 for the default or up to %v)",
			c.MaxLatency, ErrConfig, maxBuckets*time.Microsecond)
	}
	return nil
}

// Args returns cyclictest's arguments for the run, writing the histogram to
// histfile.
func (c CyclictestConfig) Args(histfile string) []string {
	args := []string{"-m", "-p", strconv.Itoa(c.Priority), "-t1"}
	if c.CPU >= 0 {
		args = append(args, "-a", strconv.Itoa(c.CPU))
	}
	return append(args,
		"-i", strconv.FormatInt(c.interval().Microseconds(), 10),
		"-l", strconv.Itoa(c.Loops),
		"-q",
		"-h", strconv.FormatInt(c.maxLatency().Microseconds(), 10),
		"--histfile="+histfile,
	)
}

// CyclictestLike is the cyclictest run that measures the same thing as the
// loop benchmark cfg did in ticks ticks: same rate and length, SCHED_FIFO 80
// when the loop ran without a priority, and CPU 1 when it was not pinned
// (cyclictest must run on one CPU).
func CyclictestLike(cfg Config, ticks uint64) CyclictestConfig {
	ct := CyclictestConfig{Rate: cfg.Rate, Loops: int(ticks), Priority: cfg.Priority, CPU: cfg.CPU}
	if ct.Priority == 0 {
		ct.Priority = 80
	}
	if ct.CPU < 0 {
		ct.CPU = 1
	}
	return ct
}

// RunCyclictest runs cyclictest as configured and summarises its histogram.
func RunCyclictest(ctx context.Context, cfg CyclictestConfig) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	bin := cfg.Path
	if bin == "" {
		bin = "cyclictest"
	}
	bin, err := exec.LookPath(bin)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrNoCyclictest, err)
	}
	f, err := os.CreateTemp("", "cyclictest-*.hist")
	if err != nil {
		return Result{}, fmt.Errorf("loopbench: histogram file: %w", err)
	}
	hist := f.Name()
	defer os.Remove(hist)
	if err := f.Close(); err != nil {
		return Result{}, fmt.Errorf("loopbench: histogram file: %w", err)
	}

	cmd := exec.CommandContext(ctx, bin, cfg.Args(hist)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return Result{}, fmt.Errorf("loopbench: %s %s: %w: %s", bin, strings.Join(cmd.Args[1:], " "), err, bytes.TrimSpace(out))
	}
	f, err = os.Open(hist)
	if err != nil {
		return Result{}, fmt.Errorf("loopbench: histogram file: %w", err)
	}
	defer f.Close()
	h, err := ParseHistfile(f)
	if err != nil {
		return Result{}, err
	}
	period := cfg.interval()
	n := h.Total()
	res := Result{
		Tool:      "cyclictest",
		RateHz:    float64(time.Second) / float64(period),
		Duration:  time.Duration(n) * period,
		Priority:  cfg.Priority,
		CPU:       cfg.CPU,
		Ticks:     n,
		Overruns:  h.AtLeast(period),
		Lateness:  h.Stats(),
		Overflows: h.Overflows,
		Warnings:  []string{},
	}
	// cyclictest reports what it could not set on its output, e.g. the
	// /dev/cpu_dma_latency line; keep the ones that say something failed.
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(line)
		if l := strings.ToLower(line); strings.Contains(l, "warn") || strings.Contains(l, "fail") || strings.Contains(l, "unable") {
			res.Warnings = append(res.Warnings, line)
		}
	}
	return res, nil
}

// Histogram is a cyclictest latency histogram (--histfile), summed over its
// threads.
type Histogram struct {
	// Counts[i] is the number of wakes late by [i, i+1) µs: cyclictest
	// truncates to the µs.
	Counts    []uint64
	Overflows uint64 // wakes beyond the histogram range
	Threads   int
	// Min, Avg and Max are cyclictest's own summary lines (whole µs, over
	// all wakes including overflows); Avg is the mean over threads. HasSummary
	// says whether the file had them.
	Min, Avg, Max time.Duration
	HasSummary    bool
	// ThreadMax is each thread's Max Latencies value, in thread order.
	ThreadMax []time.Duration
}

// Total returns the number of wakes, overflows included.
func (h Histogram) Total() uint64 {
	n := h.Overflows
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// AtLeast returns the number of wakes late by d or more. Overflows count when
// d is within the histogram range.
func (h Histogram) AtLeast(d time.Duration) uint64 {
	first := int(d / time.Microsecond)
	if first > len(h.Counts) {
		return 0
	}
	n := h.Overflows
	for _, c := range h.Counts[first:] {
		n += c
	}
	return n
}

// Stats returns the lateness statistics. A percentile among the overflows
// is reported as Max, the only value known there. Min, Max and Mean come
// from the summary lines when the file has them (kept consistent with the
// buckets), else from the buckets.
func (h Histogram) Stats() Stats {
	total := h.Total()
	if total == 0 {
		return Stats{}
	}
	var sum float64
	var counted uint64
	first, last := -1, -1
	for i, c := range h.Counts {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
		sum += float64(i) * float64(c)
		counted += c
	}
	var s Stats
	if h.Overflows > 0 {
		// An overflow is at least the histogram's range: count it there, so
		// the mean stays between the minimum and the maximum.
		last = len(h.Counts)
		if first < 0 {
			first = last
		}
		sum += float64(len(h.Counts)) * float64(h.Overflows)
	}
	s.Min, s.Max = us(first), us(last)
	if n := counted + h.Overflows; n > 0 {
		// Rounding in the float sum must not carry the mean past an end.
		s.Mean = min(max(time.Duration(math.Round(sum/float64(n)*float64(time.Microsecond))), s.Min), s.Max)
	}
	if h.HasSummary {
		s.Max = max(s.Max, h.Max)
		if counted > 0 {
			s.Min = min(s.Min, h.Min)
		} else {
			s.Min = min(max(s.Min, h.Min), s.Max)
		}
		s.Mean = min(max(h.Avg, s.Min), s.Max)
	}
	at := func(p float64) time.Duration {
		r := rank(p, total)
		var cum uint64
		for i, c := range h.Counts {
			if cum += c; cum >= r {
				return us(i)
			}
		}
		return s.Max
	}
	s.P50, s.P99, s.P999 = at(0.50), at(0.99), at(0.999)
	return s
}

func us(i int) time.Duration {
	if i < 0 {
		return 0
	}
	return time.Duration(i) * time.Microsecond
}

// ParseHistfile reads a cyclictest --histfile: rows "bucket count…" with one
// count column per thread, and "#" lines, of which it reads the Min, Avg and
// Max Latencies and Histogram Overflows summaries. Blank lines and other
// comments are skipped. Errors wrap ErrHistfile and name the line.
func ParseHistfile(r io.Reader) (Histogram, error) {
	var (
		h    Histogram
		rows [][]uint64 // per row: bucket, counts…
		mins []uint64
		avgs []uint64
		maxs []uint64
	)
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		bad := func(why string) (Histogram, error) {
			return Histogram{}, fmt.Errorf("%w: line %d %q: %s", ErrHistfile, lineNo, line, why)
		}
		if comment, ok := strings.CutPrefix(line, "#"); ok {
			key, vals, ok := strings.Cut(comment, ":")
			if !ok {
				continue
			}
			var dst *[]uint64
			switch strings.TrimSpace(key) {
			case "Min Latencies":
				dst = &mins
			case "Avg Latencies":
				dst = &avgs
			case "Max Latencies":
				dst = &maxs
			case "Histogram Overflows":
				var ov []uint64
				if err := parseUints(vals, &ov); err != nil {
					return bad(err.Error())
				}
				for _, v := range ov {
					if h.Overflows, ok = addCount(h.Overflows, v); !ok {
						return bad("the overflow counts do not fit 64 bits")
					}
				}
				continue
			default:
				continue
			}
			if err := parseUints(vals, dst); err != nil {
				return bad(err.Error())
			}
			continue
		}
		var row []uint64
		if err := parseUints(line, &row); err != nil {
			return bad(err.Error())
		}
		if len(row) < 2 {
			return bad("want a bucket and at least one count")
		}
		if row[0] >= maxBuckets {
			return bad(fmt.Sprintf("bucket beyond %d µs", maxBuckets))
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return Histogram{}, fmt.Errorf("loopbench: reading cyclictest histogram: %w", err)
	}
	if len(rows) == 0 {
		return Histogram{}, fmt.Errorf("%w: no histogram rows", ErrHistfile)
	}

	// One count column per thread; cyclictest -H adds a summary column,
	// which the number of values in the summary lines tells apart.
	h.Threads = len(rows[0]) - 1
	if len(mins) > 0 && len(mins) < h.Threads {
		h.Threads = len(mins)
	}
	var top uint64
	for _, row := range rows {
		if len(row)-1 < h.Threads {
			return Histogram{}, fmt.Errorf("%w: bucket %d has %d counts, want %d", ErrHistfile, row[0], len(row)-1, h.Threads)
		}
		top = max(top, row[0])
	}
	h.Counts = make([]uint64, top+1)
	total := h.Overflows
	for _, row := range rows {
		for _, c := range row[1 : 1+h.Threads] {
			h.Counts[row[0]] += c
			var ok bool
			// The total bounds every bucket, so one check covers both.
			if total, ok = addCount(total, c); !ok {
				return Histogram{}, fmt.Errorf("%w: bucket %d: the counts do not fit 64 bits", ErrHistfile, row[0])
			}
		}
	}
	if len(mins) > 0 && len(avgs) > 0 && len(maxs) > 0 {
		h.HasSummary = true
		h.Min = time.Duration(slices.Min(mins)) * time.Microsecond
		h.Max = time.Duration(slices.Max(maxs)) * time.Microsecond
		for _, m := range maxs {
			h.ThreadMax = append(h.ThreadMax, time.Duration(m)*time.Microsecond)
		}
		var sum float64
		for _, a := range avgs {
			sum += float64(a)
		}
		h.Avg = time.Duration(math.Round(sum / float64(len(avgs)) * float64(time.Microsecond)))
	}
	return h, nil
}

// addCount returns a+b, and false when the sum does not fit a uint64.
func addCount(a, b uint64) (uint64, bool) {
	sum := a + b
	return sum, sum >= a
}

// parseUints appends the whitespace-separated unsigned integers of s to dst.
func parseUints(s string, dst *[]uint64) error {
	for f := range strings.FieldsSeq(s) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a count", f)
		}
		*dst = append(*dst, v)
	}
	return nil
}
