package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/internal/simserve"
	"github.com/labbridge/bridge/internal/termview"
)

// busFlags adds the serial flags of scan and ping to fs and returns how to
// open a bus with them at a baud rate (dynamixel.OpenSpec), warning on
// stderr when the adapter's latency timer slows every read.
func busFlags(fs *flag.FlagSet, stderr io.Writer) func(baud int) (*dynamixel.Bus, func(), error) {
	port := fs.String("port", "auto", `serial port: a path, a /dev/serial/by-id name, "usb:VID:PID[:SERIAL]" or "auto" (the only U2D2)`)
	latency := fs.Duration("latency-timer", 0, "the adapter's latency timer (0 = read it from sysfs, else 16ms)")
	rdt := fs.Duration("return-delay", 500*time.Microsecond, "the servos' Return Delay Time (factory: 500µs)")
	return func(baud int) (*dynamixel.Bus, func(), error) {
		return openBus(*port, baud, *latency, *rdt, stderr)
	}
}

// openBus opens the servo line spec at baud (dynamixel.OpenBus), saying on
// advice when the adapter's latency timer slows every read. latency 0 reads
// the adapter's timer.
func openBus(spec string, baud int, latency, returnDelay time.Duration, advice io.Writer) (*dynamixel.Bus, func(), error) {
	bus, closePort, a, err := dynamixel.OpenBus(spec, dynamixel.BusConfig{Baud: baud, LatencyTimer: latency, ReturnDelay: returnDelay, Margin: 3 * time.Millisecond})
	if a != "" {
		fmt.Fprintln(advice, a)
	}
	return bus, closePort, err
}

// cmdScan is `bridge scan`: list serial ports, then ping every ID at every
// baud rate asked.
func cmdScan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scan", "scan [-port SPEC] [-bauds 1000000,57600] [-ids 0-252] [-list]", stderr)
	openBus := busFlags(fs, stderr)
	bauds := fs.String("bauds", "1000000,57600", `baud rates to try, comma-separated, or "all"`)
	idRange := fs.String("ids", "0-252", "IDs to ping: a range lo-hi or a comma-separated list")
	list := fs.Bool("list", false, "only list the serial ports")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ports, err := dynamixel.ListPorts()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d serial port(s)\n", len(ports))
	for _, p := range ports {
		fmt.Fprintf(stdout, "  %s\n", p)
	}
	if *list {
		return nil
	}
	rates, err := dynamixel.ParseBauds(*bauds)
	if err != nil {
		return err
	}
	ids, err := dynamixel.ParseIDs(*idRange)
	if err != nil {
		return err
	}
	n := 0
	bar := termview.IsTerminal(stderr)
	for _, baud := range rates {
		bus, closePort, err := openBus(baud)
		if err != nil {
			return err
		}
		err = dynamixel.Scan(ctx, bus, ids, func(f dynamixel.Found) {
			if bar {
				fmt.Fprint(stderr, "\r\033[K")
			}
			if f.Err == nil || errors.Is(f.Err, dynamixel.ErrAlert) {
				n++
			}
			fmt.Fprintln(stdout, f.Line(baud))
		}, func(done int) {
			if bar {
				fmt.Fprintf(stderr, "\r%7d baud  [%-40s] %3d/%d", baud, strings.Repeat("#", 40*done/len(ids)), done, len(ids))
			}
		})
		if bar {
			fmt.Fprint(stderr, "\r\033[K")
		}
		closePort()
		if err != nil && ctx.Err() != nil {
			// Ctrl-C: what was found is said, and the exit is 130.
			fmt.Fprintf(stdout, "%d servo(s) found before the interrupt, at %d baud or below in the list\n", n, baud)
			return fmt.Errorf("bridge scan: interrupted at %d baud: %w", baud, ctx.Err())
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%d servo(s) found\n", n)
	return nil
}

// cmdPing is `bridge ping`: ping some IDs once.
func cmdPing(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ping", "ping [-port SPEC] [-baud 1000000] [-ids 0,1,2,3]", stderr)
	openBus := busFlags(fs, stderr)
	baud := fs.Int("baud", 1000000, "baud rate")
	idList := fs.String("ids", "0,1,2,3", "IDs to ping")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ids, err := dynamixel.ParseIDs(*idList)
	if err != nil {
		return err
	}
	bus, closePort, err := openBus(*baud)
	if err != nil {
		return err
	}
	defer closePort()
	missing := 0
	for _, id := range ids {
		t0 := time.Now()
		model, fw, err := bus.Ping(id)
		if err != nil && !errors.Is(err, dynamixel.ErrAlert) {
			missing++
			fmt.Fprintf(stdout, "ID %3d: %v\n", id, err)
			continue
		}
		fmt.Fprintf(stdout, "ID %3d: model %d firmware %d in %v", id, model, fw, time.Since(t0).Round(10*time.Microsecond))
		if err != nil {
			fmt.Fprintf(stdout, "  ALERT: %v", err)
		}
		fmt.Fprintln(stdout)
	}
	if missing > 0 {
		return fmt.Errorf("bridge ping: %d of %d servo(s) did not answer", missing, len(ids))
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
