package loopbench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// LatencyUS is lateness statistics in microseconds.
type LatencyUS struct {
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Report is a Result as printed: JSON field names of `bridge bench loop
// --json`, durations in seconds and microseconds.
type Report struct {
	Tool       string    `json:"-"`
	RateHz     float64   `json:"rate_hz"`
	DurationS  float64   `json:"duration_s"`
	Ticks      uint64    `json:"ticks"`
	Overruns   uint64    `json:"overruns"`
	LatenessUS LatencyUS `json:"lateness_us"`
	Overflows  uint64    `json:"overflows,omitempty"`
	Priority   int       `json:"priority"`
	CPU        int       `json:"cpu"`
	Warnings   []string  `json:"warnings"`
}

func microseconds(d time.Duration) float64 {
	// Round to 0.1 ns so JSON carries no binary noise.
	return math.Round(float64(d)/float64(time.Microsecond)*1e4) / 1e4
}

// Report converts r for printing.
func (r Result) Report() Report {
	w := r.Warnings
	if w == nil {
		w = []string{}
	}
	return Report{
		Tool:      r.Tool,
		RateHz:    r.RateHz,
		DurationS: r.Duration.Seconds(),
		Ticks:     r.Ticks,
		Overruns:  r.Overruns,
		LatenessUS: LatencyUS{
			Min:  microseconds(r.Lateness.Min),
			P50:  microseconds(r.Lateness.P50),
			P99:  microseconds(r.Lateness.P99),
			P999: microseconds(r.Lateness.P999),
			Max:  microseconds(r.Lateness.Max),
			Mean: microseconds(r.Lateness.Mean),
		},
		Overflows: r.Overflows,
		Priority:  r.Priority,
		CPU:       r.CPU,
		Warnings:  w,
	}
}

// WriteText prints r on one line, then one line per warning.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s  rate %g Hz  ticks %d  overruns %d  lateness µs  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f",
		r.Tool, r.RateHz, r.Ticks, r.Overruns,
		r.LatenessUS.P50, r.LatenessUS.P99, r.LatenessUS.P999, r.LatenessUS.Max, r.LatenessUS.Mean)
	if r.Overflows > 0 {
		fmt.Fprintf(&b, "  (%d beyond the histogram)", r.Overflows)
	}
	b.WriteByte('\n')
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "%-10s  warning: %s\n", "", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Ratio is bridge / cyclictest lateness; a field is nil when cyclictest's
// value is 0 (the ratio is undefined).
type Ratio struct {
	P50 *float64 `json:"p50"`
	P99 *float64 `json:"p99"`
}

// Comparison is a bridge run beside a cyclictest run with the same settings.
type Comparison struct {
	Bridge     Report `json:"bridge"`
	Cyclictest Report `json:"cyclictest"`
	Ratio      Ratio  `json:"ratio"`
}

// Compare puts the two runs side by side.
func Compare(bridge, cyclictest Result) Comparison {
	return Comparison{
		Bridge:     bridge.Report(),
		Cyclictest: cyclictest.Report(),
		Ratio: Ratio{
			P50: ratio(bridge.Lateness.P50, cyclictest.Lateness.P50),
			P99: ratio(bridge.Lateness.P99, cyclictest.Lateness.P99),
		},
	}
}

func ratio(a, b time.Duration) *float64 {
	if b <= 0 {
		return nil
	}
	r := math.Round(float64(a)/float64(b)*1000) / 1000
	return &r
}

// WriteText prints both runs and the ratios.
func (c Comparison) WriteText(w io.Writer) error {
	if err := c.Bridge.WriteText(w); err != nil {
		return err
	}
	if err := c.Cyclictest.WriteText(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "ratio bridge/cyclictest  p50 %s  p99 %s\n", fmtRatio(c.Ratio.P50), fmtRatio(c.Ratio.P99))
	return err
}

func fmtRatio(r *float64) string {
	if r == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1fx", *r)
}
