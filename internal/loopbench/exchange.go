package loopbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labbridge/bridge/internal/latency"
)

// ExchangeConfig configures RunExchanges: a request/response exchange with
// a device (one tick's exchange with a V-REP scene, say) repeated at a
// rate, or back to back, for a duration or a count.
type ExchangeConfig struct {
	// Rate is exchanges per second on a grid of absolute deadlines; 0
	// runs them back to back.
	Rate     float64
	Duration time.Duration
	// Count stops after this many exchanges (0: Duration decides).
	Count uint64
	// Stop, if set, ends the run at the first failure for which it is true
	// (a connect refused for want of ports, say).
	Stop func(error) bool
}

// ExchangeReport is the outcome of RunExchanges; the JSON names are those
// of `bridge bench vrep -json`.
type ExchangeReport struct {
	Exchanges uint64            `json:"exchanges"`
	Failures  uint64            `json:"failures"`
	Errors    map[string]uint64 `json:"errors,omitempty"` // by message, the first 10 kinds
	Seconds   float64           `json:"seconds"`
	Rate      float64           `json:"achieved_rate"`
	RTT       latency.Summary   `json:"rtt"`
	// Stopped is the failure that ended the run (ExchangeConfig.Stop).
	Stopped   string  `json:"stopped,omitempty"`
	StoppedAt float64 `json:"stopped_at_s,omitempty"`
}

// RunExchanges calls exchange at the configured rate and records the
// duration of every successful call.
func RunExchanges(ctx context.Context, cfg ExchangeConfig, exchange func() error) (ExchangeReport, error) {
	if cfg.Rate < 0 || cfg.Duration <= 0 && cfg.Count == 0 {
		return ExchangeReport{}, fmt.Errorf("%w: rate %v, duration %v, count %d: want rate ≥ 0 and a duration or a count", ErrConfig, cfg.Rate, cfg.Duration, cfg.Count)
	}
	h := latency.New()
	rep := ExchangeReport{Errors: map[string]uint64{}}
	start := time.Now()
	var period time.Duration
	if cfg.Rate > 0 {
		period = time.Duration(float64(time.Second) / cfg.Rate)
	}
	next := start
	for n := uint64(0); cfg.Count == 0 || n < cfg.Count; n++ {
		if ctx.Err() != nil || cfg.Duration > 0 && time.Since(start) >= cfg.Duration {
			break
		}
		if period > 0 {
			next = next.Add(period)
			if d := time.Until(next); d > 0 {
				time.Sleep(d)
			}
		}
		t0 := time.Now()
		err := exchange()
		d := time.Since(t0)
		if err != nil {
			rep.Failures++
			msg := err.Error()
			if _, ok := rep.Errors[msg]; ok || len(rep.Errors) < 10 {
				rep.Errors[msg]++
			}
			if cfg.Stop != nil && cfg.Stop(err) {
				rep.Stopped, rep.StoppedAt = msg, time.Since(start).Seconds()
				break
			}
			continue
		}
		rep.Exchanges++
		h.Record(d.Nanoseconds())
	}
	rep.Seconds = time.Since(start).Seconds()
	if rep.Seconds > 0 {
		rep.Rate = float64(rep.Exchanges) / rep.Seconds
	}
	rep.RTT = h.Summary()
	return rep, nil
}

// WriteText writes the report for a person.
func (r ExchangeReport) WriteText(w io.Writer, name string) error {
	us := func(ns int64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }
	_, err := fmt.Fprintf(w, "%s: %d exchanges in %.1f s (%.0f/s), %d failed; round trip µs: p50 %s  p99 %s  p99.9 %s  max %s\n",
		name, r.Exchanges, r.Seconds, r.Rate, r.Failures, us(r.RTT.P50), us(r.RTT.P99), us(r.RTT.P999), us(r.RTT.Max))
	if err != nil {
		return err
	}
	msgs := make([]string, 0, len(r.Errors))
	for m := range r.Errors {
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	for _, m := range msgs {
		fmt.Fprintf(w, "  %d× %s\n", r.Errors[m], m)
	}
	if r.Stopped != "" {
		fmt.Fprintf(w, "  stopped after %.1f s: %s\n", r.StoppedAt, r.Stopped)
	}
	return nil
}

// JSON writes the report as one JSON object.
func (r ExchangeReport) JSON(w io.Writer) error { return json.NewEncoder(w).Encode(r) }

// TimeWait counts the TCP sockets of this network namespace in TIME_WAIT
// toward or from port (0: any), from /proc/net/tcp and tcp6.
func TimeWait(port int) (int, error) {
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		k, err := countTimeWait(f, port)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return 0, fmt.Errorf("loopbench: %w", err)
		}
		n += k
	}
	return n, nil
}

func countTimeWait(path string, port int) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseTimeWait(f, port), nil
}

// parseTimeWait counts the lines of a /proc/net/tcp table in state 06
// (TIME_WAIT) whose local or remote port is port.
func parseTimeWait(r io.Reader, port int) int {
	n := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "06" {
			continue
		}
		if port == 0 || hexPort(f[1]) == port || hexPort(f[2]) == port {
			n++
		}
	}
	return n
}

func hexPort(addr string) int {
	_, p, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	v, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return -1
	}
	return int(v)
}
