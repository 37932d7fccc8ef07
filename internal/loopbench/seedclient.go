package loopbench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"

	"github.com/labbridge/bridge/internal/latency"
)

// seedClient runs the seed tutorial's Python AZ client (docs/vrep.md §1),
// extracted from the seed document at run time, and times its exchanges.
//
//go:embed seedclient.py
var seedClient string

// SeedClientResult is what the seed's client did and printed.
type SeedClientResult struct {
	Report ExchangeReport
	// Good and Bad count its "sockect time=…" and "bad data" lines; Lines
	// are the first lines it printed.
	Good, Bad, Other int
	Lines            []string
}

// RunSeedClient runs the seed's Python client from the seed document at
// seed against the AZ scene at addr for n exchanges, back to back. It needs
// python3.
func RunSeedClient(ctx context.Context, seed, addr string, n int) (SeedClientResult, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return SeedClientResult{}, fmt.Errorf("loopbench: the seed's client needs python3: %w", err)
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, py, "-c", seedClient, seed, addr, fmt.Sprint(n))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return SeedClientResult{}, fmt.Errorf("loopbench: the seed's client: %w: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	var raw struct {
		RTT              []int64  `json:"rtt_ns"`
		Lines            []string `json:"lines"`
		Seconds          float64  `json:"seconds"`
		Good, Bad, Other int
	}
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		return SeedClientResult{}, fmt.Errorf("loopbench: the seed's client's report %q: %w", out.Bytes(), err)
	}
	h := latency.New()
	for _, ns := range raw.RTT {
		h.Record(ns)
	}
	if raw.Good == 0 && n > 0 {
		// A client that reached no scene reports nothing, not a failure.
		return SeedClientResult{}, fmt.Errorf("loopbench: the seed's client made no exchange with %s (%d failed, %d other): %q", addr, raw.Bad, raw.Other, raw.Lines)
	}
	r := SeedClientResult{Good: raw.Good, Bad: raw.Bad, Other: raw.Other, Lines: raw.Lines}
	r.Report = ExchangeReport{Exchanges: uint64(raw.Good), Failures: uint64(raw.Bad), RTT: h.Summary(), Seconds: raw.Seconds}
	if raw.Seconds > 0 {
		r.Report.Rate = float64(len(raw.RTT)) / raw.Seconds
	}
	return r, nil
}
