package record

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// Session is one `bridge record`: the taps arriving at Listen written to
// Out (run.csv: a CSV per link; run.mat: the CSVs and a MAT-file at the
// end) and, with Pcap, every datagram to a pcap file (docs/tap.md §5).
type Session struct {
	Listen netip.AddrPort
	Out    string
	Pcap   string
	// Progress receives the banner and, when Live, a progress line redrawn
	// in place twice a second (a terminal); Summary receives what was
	// written, at the end.
	Progress io.Writer
	Live     bool
	Summary  io.Writer
}

// Run records until ctx is done or an output cannot be written, then says
// what each link's file holds. Every output is opened, or its folder tried,
// before anything is said to be recorded.
func (s Session) Run(ctx context.Context) error {
	cfg := Config{Out: s.Out, Local: s.Listen}
	switch {
	case strings.HasSuffix(s.Out, ".mat"):
		cfg.Mat = s.Out
	case !strings.HasSuffix(s.Out, ".csv"):
		return fmt.Errorf("%w: -out %s: want run.csv (a CSV per link) or run.mat (a MAT-file, and the CSVs)", ErrConfig, s.Out)
	}
	conn, err := Listen(s.Listen)
	if err != nil {
		return err
	}
	defer conn.Close()
	if local, ok := conn.LocalAddr().(interface{ AddrPort() netip.AddrPort }); ok && !s.Listen.Addr().IsMulticast() {
		cfg.Local = local.AddrPort()
	}
	// -out's folder first, so that an older pcap is not emptied for a
	// recording that cannot be made.
	if err := Probe(s.Out); err != nil {
		return err
	}
	if s.Pcap != "" {
		f, err := os.Create(s.Pcap)
		if err != nil {
			return &WriteError{Path: s.Pcap, Flag: "-pcap", Err: err}
		}
		defer f.Close()
		cfg.Pcap, cfg.PcapPath = f, s.Pcap
	}
	rec, err := New(cfg)
	if err != nil {
		return err
	}
	// The bound address: -listen with port 0 says which port it got.
	fmt.Fprintf(s.Progress, "recording the taps arriving on %v into %s (Ctrl-C stops)\n", cfg.Local, s.Out)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var badMu sync.Mutex
	var lastBad error
	wg.Go(func() {
		// A write error ends Serve, and the recording with it.
		err = rec.Serve(ctx, conn, func(e error) { badMu.Lock(); lastBad = e; badMu.Unlock() })
		cancel()
	})
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			if s.Live {
				fmt.Fprintf(s.Progress, "\r\033[K%s", progress(rec))
			}
		}
	}
	wg.Wait()
	if s.Live {
		fmt.Fprint(s.Progress, "\r\033[K")
	}
	closeErr := rec.Close()
	streams, bad := rec.Streams()
	out := s.Summary
	if len(streams) == 0 {
		fmt.Fprintf(out, "no tap packet arrived on %v: start the bridge with -tap %v (or set [link.tap] address)\n", s.Listen, s.Listen)
	}
	for _, st := range streams {
		if st.Path == "" {
			fmt.Fprintf(out, "%s: nothing written; %s (%.0f packets/s)\n", streamName(st), st.Counts, st.Rate)
			continue
		}
		fmt.Fprintf(out, "%s: %d rows in %s; %s (%.0f packets/s)\n", streamName(st), st.Rows, st.Path, st.Counts, st.Rate)
	}
	if cfg.Mat != "" && closeErr == nil && len(streams) > 0 {
		fmt.Fprintf(out, "MAT-file %s: one struct per link (load(\"%s\") in MATLAB or Octave)\n", cfg.Mat, cfg.Mat)
	}
	if bad > 0 {
		badMu.Lock()
		fmt.Fprintf(out, "%d datagrams were not tap packets; the last: %v\n", bad, lastBad)
		badMu.Unlock()
	}
	if err != nil {
		return err
	}
	return closeErr
}

// progress is the live line: each link's packets, rate and losses.
func progress(r *Recorder) string {
	if err := r.Err(); err != nil {
		// Nothing more is written: no progress to show.
		return "stopped: " + err.Error()
	}
	streams, bad := r.Streams()
	if len(streams) == 0 {
		return "waiting for tap packets…"
	}
	parts := make([]string, 0, len(streams)+1)
	for _, s := range streams {
		parts = append(parts, fmt.Sprintf("%s %d pkts %.0f/s lost %d reord %d", streamName(s), s.Received, s.Rate, s.Lost, s.Reordered))
	}
	if bad > 0 {
		parts = append(parts, fmt.Sprintf("%d bad", bad))
	}
	return strings.Join(parts, " | ")
}

func streamName(s Stream) string {
	if s.Name != "" {
		return s.Name
	}
	return fmt.Sprintf("SSRC %08x", s.SSRC)
}
