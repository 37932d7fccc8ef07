package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/record"
	"github.com/labbridge/bridge/internal/termview"
)

// cmdRecord is `bridge record`: receive the taps of one or many links and
// write them as they come (docs/tap.md §5), with a progress line.
func cmdRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("record", "record -listen ADDR -out run.csv|run.mat [-pcap run.pcap] [-duration D]", stderr)
	listen := addrFlag{s: "127.0.0.1:5004"}
	fs.Var(&listen, "listen", "where the taps arrive: the `address` given to bridge sim/run -tap or [link.tap] (a multicast address is joined)")
	out := fs.String("out", "", "run.csv writes run.LINK.csv for each link as packets come; run.mat writes them too, and at the end a MATLAB MAT-file with one struct per link")
	pcapPath := fs.String("pcap", "", "also write every datagram to this pcap `file`, for Wireshark (deploy/bridge-tap.lua)")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until Ctrl-C or SIGTERM)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := config.CheckDuration("record", "duration", *duration, true); err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintln(stderr, "bridge record: -out is required, like -out run.csv")
		return errUsage
	}
	cfg := record.Config{Out: *out, Local: listen.addr()}
	switch {
	case strings.HasSuffix(*out, ".mat"):
		cfg.Mat = *out
	case !strings.HasSuffix(*out, ".csv"):
		return fmt.Errorf("bridge record: -out %s: want run.csv (a CSV per link) or run.mat (a MAT-file, and the CSVs)", *out)
	}
	conn, err := record.Listen(listen.addr())
	if err != nil {
		return err
	}
	defer conn.Close()
	if local, ok := conn.LocalAddr().(interface{ AddrPort() netip.AddrPort }); ok && !listen.addr().Addr().IsMulticast() {
		cfg.Local = local.AddrPort()
	}
	// Every output is opened, or its folder tried, before anything is
	// said to be recorded (docs/tap.md §5); -out's first, so that an older
	// pcap is not emptied for a recording that cannot be made.
	if err := record.Probe(*out); err != nil {
		return fmt.Errorf("bridge %w", err)
	}
	if *pcapPath != "" {
		f, err := os.Create(*pcapPath)
		if err != nil {
			return fmt.Errorf("bridge %w", &record.WriteError{Path: *pcapPath, Flag: "-pcap", Err: err})
		}
		defer f.Close()
		cfg.Pcap, cfg.PcapPath = f, *pcapPath
	}
	rec, err := record.New(cfg)
	if err != nil {
		return fmt.Errorf("bridge %w", err)
	}
	// The bound address: -listen with port 0 says which port it got.
	fmt.Fprintf(stderr, "recording the taps arriving on %v into %s (Ctrl-C stops)\n", cfg.Local, *out)
	ctx, cancel := withDuration(ctx, *duration)
	defer cancel()
	var wg sync.WaitGroup
	var badMu sync.Mutex
	var lastBad error
	wg.Go(func() {
		// A write error ends Serve, and the recording with it.
		err = rec.Serve(ctx, conn, func(e error) { badMu.Lock(); lastBad = e; badMu.Unlock() })
		cancel()
	})
	term := termview.IsTerminal(stderr)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			if term {
				fmt.Fprintf(stderr, "\r\033[K%s", progress(rec))
			}
		}
	}
	wg.Wait()
	if term {
		fmt.Fprint(stderr, "\r\033[K")
	}
	closeErr := rec.Close()
	streams, bad := rec.Streams()
	if len(streams) == 0 {
		fmt.Fprintf(stdout, "no tap packet arrived on %v: start the bridge with -tap %v (or set [link.tap] address)\n", listen.addr(), listen.addr())
	}
	for _, s := range streams {
		if s.Path == "" {
			fmt.Fprintf(stdout, "%s: nothing written; %s (%.0f packets/s)\n", streamName(s), s.Counts, s.Rate)
			continue
		}
		fmt.Fprintf(stdout, "%s: %d rows in %s; %s (%.0f packets/s)\n", streamName(s), s.Rows, s.Path, s.Counts, s.Rate)
	}
	if cfg.Mat != "" && closeErr == nil && len(streams) > 0 {
		fmt.Fprintf(stdout, "MAT-file %s: one struct per link (load(\"%s\") in MATLAB or Octave)\n", cfg.Mat, cfg.Mat)
	}
	if bad > 0 {
		badMu.Lock()
		fmt.Fprintf(stdout, "%d datagrams were not tap packets; the last: %v\n", bad, lastBad)
		badMu.Unlock()
	}
	if err != nil {
		if errors.Is(err, record.ErrWrite) {
			return fmt.Errorf("bridge %w", err)
		}
		return err
	}
	if closeErr != nil {
		return fmt.Errorf("bridge %w", closeErr)
	}
	return nil
}

// progress is the live line: each link's packets, rate and losses.
func progress(r *record.Recorder) string {
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

func streamName(s record.Stream) string {
	if s.Name != "" {
		return s.Name
	}
	return fmt.Sprintf("SSRC %08x", s.SSRC)
}
