// Package servoscan finds and pings Dynamixel servos for a person, as
// `bridge scan` and `bridge ping` do: the serial ports, every ID at every
// baud asked with a progress bar on a terminal, each servo's model,
// firmware and alert (docs/dynamixel.md). The bus is package dynamixel's.
package servoscan

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/labbridge/bridge/dynamixel"
)

// Line is the serial line the servos are on and how to read it.
type Line struct {
	Port         string        // a path, a by-id name, usb:VID:PID[:SERIAL] or "auto"
	LatencyTimer time.Duration // the adapter's; 0 = read it from sysfs
	ReturnDelay  time.Duration // the servos' Return Delay Time
	// Advice receives a warning when the adapter's latency timer slows
	// every read.
	Advice io.Writer
}

// LineFlags declares -port, -latency-timer and -return-delay on fs, into
// the returned Line.
func LineFlags(fs *flag.FlagSet, advice io.Writer) *Line {
	l := &Line{Advice: advice}
	fs.StringVar(&l.Port, "port", "auto", `serial port: a path, a /dev/serial/by-id name, "usb:VID:PID[:SERIAL]" or "auto" (the only U2D2)`)
	fs.DurationVar(&l.LatencyTimer, "latency-timer", 0, "the adapter's latency timer (0 = read it from sysfs, else 16ms)")
	fs.DurationVar(&l.ReturnDelay, "return-delay", 500*time.Microsecond, "the servos' Return Delay Time (factory: 500µs)")
	return l
}

// Open opens the line at baud (dynamixel.OpenBus).
func (l *Line) Open(baud int) (*dynamixel.Bus, func(), error) {
	bus, closePort, a, err := dynamixel.OpenBus(l.Port, dynamixel.BusConfig{Baud: baud, LatencyTimer: l.LatencyTimer, ReturnDelay: l.ReturnDelay, Margin: 3 * time.Millisecond})
	if a != "" && l.Advice != nil {
		fmt.Fprintln(l.Advice, a)
	}
	return bus, closePort, err
}

// ListPorts writes the serial ports on out.
func ListPorts(out io.Writer) error {
	ports, err := dynamixel.ListPorts()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d serial port(s)\n", len(ports))
	for _, p := range ports {
		fmt.Fprintf(out, "  %s\n", p)
	}
	return nil
}

// Scan pings ids at each baud on l, a line per servo found on out and,
// with bar, a progress bar on progress. Interrupted (ctx), it says what was
// found before and returns an error wrapping ctx's.
func Scan(ctx context.Context, l *Line, bauds []int, ids []byte, out, progress io.Writer, bar bool) error {
	n := 0
	for _, baud := range bauds {
		bus, closePort, err := l.Open(baud)
		if err != nil {
			return err
		}
		err = dynamixel.Scan(ctx, bus, ids, func(f dynamixel.Found) {
			if bar {
				fmt.Fprint(progress, "\r\033[K")
			}
			if f.Err == nil || errors.Is(f.Err, dynamixel.ErrAlert) {
				n++
			}
			fmt.Fprintln(out, f.Line(baud))
		}, func(done int) {
			if bar {
				fmt.Fprintf(progress, "\r%7d baud  [%-40s] %3d/%d", baud, strings.Repeat("#", 40*done/len(ids)), done, len(ids))
			}
		})
		if bar {
			fmt.Fprint(progress, "\r\033[K")
		}
		closePort()
		if err != nil && ctx.Err() != nil {
			fmt.Fprintf(out, "%d servo(s) found before the interrupt, at %d baud or below in the list\n", n, baud)
			return fmt.Errorf("servoscan: interrupted at %d baud: %w", baud, ctx.Err())
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%d servo(s) found\n", n)
	return nil
}

// MissingError is a ping that some servos did not answer.
type MissingError struct{ Missing, Of int }

func (e *MissingError) Error() string {
	return fmt.Sprintf("servoscan: %d of %d servo(s) did not answer", e.Missing, e.Of)
}

// Ping pings ids once at baud on l, a line per ID on out: its model,
// firmware and round trip, or why it did not answer.
func Ping(l *Line, baud int, ids []byte, out io.Writer) error {
	bus, closePort, err := l.Open(baud)
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
			fmt.Fprintf(out, "ID %3d: %v\n", id, err)
			continue
		}
		fmt.Fprintf(out, "ID %3d: model %d firmware %d in %v", id, model, fw, time.Since(t0).Round(10*time.Microsecond))
		if err != nil {
			fmt.Fprintf(out, "  ALERT: %v", err)
		}
		fmt.Fprintln(out)
	}
	if missing > 0 {
		return &MissingError{Missing: missing, Of: len(ids)}
	}
	return nil
}
