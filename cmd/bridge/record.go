package main

import (
	"context"
	"fmt"
	"io"

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
	ctx, cancel := withDuration(ctx, *duration)
	defer cancel()
	err := record.Session{Listen: listen.addr(), Out: *out, Pcap: *pcapPath,
		Progress: stderr, Live: termview.IsTerminal(stderr), Summary: stdout}.Run(ctx)
	if err != nil {
		return fmt.Errorf("bridge %w", err)
	}
	return nil
}
