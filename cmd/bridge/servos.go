package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/internal/servoscan"
	"github.com/labbridge/bridge/internal/simserve"
	"github.com/labbridge/bridge/internal/termview"
)

// cmdScan is `bridge scan`: list serial ports, then ping every ID at every
// baud rate asked.
func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scan", "scan [-port SPEC] [-bauds 1000000,57600] [-ids 0-252] [-list]", stderr)
	line := servoscan.LineFlags(fs, stderr)
	bauds := fs.String("bauds", "1000000,57600", `baud rates to try, comma-separated, or "all"`)
	idRange := fs.String("ids", "0-252", "IDs to ping: a range lo-hi or a comma-separated list")
	list := fs.Bool("list", false, "only list the serial ports")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := servoscan.ListPorts(stdout); err != nil || *list {
		return err
	}
	rates, err := dynamixel.ParseBauds(*bauds)
	if err != nil {
		return err
	}
	ids, err := dynamixel.ParseIDs(*idRange)
	if err != nil {
		return err
	}
	if err := servoscan.Scan(ctx, line, rates, ids, stdout, stderr, termview.IsTerminal(stderr)); err != nil {
		return fmt.Errorf("bridge scan: %w", err)
	}
	return nil
}

// cmdPing is `bridge ping`: ping some IDs once.
func cmdPing(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ping", "ping [-port SPEC] [-baud 1000000] [-ids 0,1,2,3]", stderr)
	line := servoscan.LineFlags(fs, stderr)
	baud := fs.Int("baud", 1000000, "baud rate")
	idList := fs.String("ids", "0,1,2,3", "IDs to ping")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ids, err := dynamixel.ParseIDs(*idList)
	if err != nil {
		return err
	}
	if err := servoscan.Ping(line, *baud, ids, stdout); err != nil {
		return fmt.Errorf("bridge ping: %w", err)
	}
	return nil
}

// cmdSimServos is `bridge sim servos`: simulated servos on a pseudo-terminal,
// a virtual U2D2 any software can open, until interrupted.
func cmdSimServos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim servos", "sim servos [-ids 0,1,2,3] [-baud 1000000] [-any-baud] [-link PATH] [-firmware 46] [-return-delay 0] [-latency 0]", stderr)
	read := simserve.ServosFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	servos, err := read()
	if err != nil {
		return err
	}
	ctx, cancel := withDuration(ctx, servos.Duration)
	defer cancel()
	return servos.Serve(ctx, stdout)
}

// cmdSimMeca500 is `bridge sim meca500`: a simulated Meca500 on a TCP port
// until interrupted, faults typed on standard input or posted to -control.
func cmdSimMeca500(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim meca500", "sim meca500 [-listen 127.0.0.1:10000] [-firmware 9.3.0] [-virtual] [-control 127.0.0.1:PORT]", stderr)
	read := simserve.Meca500Flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	arm, err := read()
	if err != nil {
		return err
	}
	ctx, cancel := withDuration(ctx, arm.Duration)
	defer cancel()
	return arm.Serve(ctx, simStdin, stdout)
}

// cmdSimVREP is `bridge sim vrep`: a simulated scene with the seed's
// two-wheel robot behind the AZ socket or the ZMQ remote API, until
// interrupted.
func cmdSimVREP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim vrep", "sim vrep [-protocol az|zmq] [-listen ADDR] [-step 50ms] [-fault KIND -every N] [-control ADDR]", stderr)
	read := simserve.VREPFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	scene, err := read()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return errUsage
	}
	ctx, cancel := withDuration(ctx, scene.Duration)
	defer cancel()
	return scene.Serve(ctx, simStdin, stdout)
}

// simStdin is where `bridge sim meca500` and `bridge sim vrep` read the
// commands a person types (a test's pipe).
var simStdin io.Reader = os.Stdin

// benchServos is `bridge bench servos`: the Emio cycle (one read of the four
// present positions, one sync write of the goals) against simulated servos
// on a pseudo-terminal with the byte time modelled, as a ratio to the bytes'
// wire time (docs/dynamixel.md §10).
func benchServos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench servos", "bench servos [-bauds 1000000,2000000,4000000] [-cycles 2000] [-fast=true] [-json]", stderr)
	bauds := fs.String("bauds", "1000000,2000000,4000000", "baud rates to model")
	cycles := fs.Int("cycles", 2000, "cycles per baud rate")
	fast := fs.Bool("fast", true, "use Fast Sync Read (false: Sync Read)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rates, err := dynamixel.ParseBauds(*bauds)
	if err != nil {
		return err
	}
	var rows []sim.ServoBenchRow
	for _, baud := range rates {
		r, err := sim.BenchServos(ctx, baud, *cycles, *fast)
		if err != nil {
			return fmt.Errorf("bridge bench servos: %w", err)
		}
		rows = append(rows, r)
	}
	if *asJSON {
		return printJSON(stdout, map[string]any{"fast_sync_read": *fast, "cycles": *cycles, "rows": rows})
	}
	return sim.WriteServoBenchText(stdout, *fast, *cycles, rows)
}
