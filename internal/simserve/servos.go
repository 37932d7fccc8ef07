package simserve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/internal/config"
)

// Servos is `bridge sim servos`: simulated servos on a pseudo-terminal, a
// virtual U2D2.
type Servos struct {
	IDs         []byte
	Baud        int  // the servos' baud and the modelled line rate; 0 = 1 Mbaud, instant replies
	AnyBaud     bool // answer at whatever baud the client sets
	Link        string
	Firmware    byte
	ReturnDelay byte // in 2 µs units
	Latency     time.Duration
	Duration    time.Duration // -duration: the caller bounds Serve's context by it
}

// ServosFlags declares `bridge sim servos`'s flags on fs; the returned
// function reads them into a Servos, refusing what cannot run with an error
// that names the flag.
func ServosFlags(fs *flag.FlagSet) func() (Servos, error) {
	ids := fs.String("ids", "0,1,2,3", "servo IDs")
	baud := fs.Int("baud", 1000000, "the servos' baud rate, and the line rate of the byte time; 0 = 1000000 with instant replies")
	anyBaud := fs.Bool("any-baud", false, "answer at whatever baud the client sets (default: only at -baud, as real servos)")
	link := fs.String("link", "", "also make this path a symlink to the pseudo-terminal")
	firmware := fs.Int("firmware", 46, "firmware version (below 45: Fast Sync Read is refused)")
	rdt := fs.Int("return-delay", 0, "Return Delay Time in 2 µs units (factory: 250)")
	latency := fs.Duration("latency", 0, "model an FTDI latency timer (e.g. 1ms, 16ms); 0 = none")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	return func() (Servos, error) {
		if err := config.CheckDuration("sim servos", "duration", *duration, true); err != nil {
			return Servos{}, err
		}
		list, err := dynamixel.ParseIDs(*ids)
		if err != nil {
			return Servos{}, err
		}
		if *firmware < 0 || *firmware > 255 || *rdt < 0 || *rdt > 254 {
			return Servos{}, fmt.Errorf("bridge sim servos: -firmware %d / -return-delay %d: want 0..255 and 0..254", *firmware, *rdt)
		}
		if *baud != 0 {
			if _, err := dynamixel.BaudCode(*baud); err != nil {
				return Servos{}, fmt.Errorf("bridge sim servos: -baud: %w", err)
			}
		}
		return Servos{IDs: list, Baud: *baud, AnyBaud: *anyBaud, Link: *link, Firmware: byte(*firmware),
			ReturnDelay: byte(*rdt), Latency: *latency, Duration: *duration}, nil
	}
}

// Serve serves the servos until ctx is done (the caller bounds it by Duration),
// saying on out where they are and, at the end, what they served.
func (s Servos) Serve(ctx context.Context, out io.Writer) error {
	bc := dxlsim.DefaultBusConfig()
	bc.IDs = s.IDs
	bc.Servo.Firmware = s.Firmware
	bc.Servo.ReturnDelay = s.ReturnDelay
	bc.Timing = dxlsim.Timing{ReturnDelay: s.ReturnDelay > 0, Baud: s.Baud, Latency: s.Latency}
	bus, err := dxlsim.NewBus(bc)
	if err != nil {
		return err
	}
	if s.Link != "" {
		// A by-id-like path for a rehearsal: its folder need not exist yet.
		if err := os.MkdirAll(filepath.Dir(s.Link), 0o755); err != nil {
			return fmt.Errorf("bridge sim servos: -link %s: %w", s.Link, err)
		}
	}
	pt, err := dxlsim.NewPTY(bus, s.Link)
	if err != nil {
		return err
	}
	pt.AnswerAnyBaud(s.AnyBaud)
	servoBaud := s.Baud
	if servoBaud == 0 {
		servoBaud = 1000000 // dxlsim's default when no line rate is modelled
	}
	rate := fmt.Sprintf("at %d baud", servoBaud)
	if s.AnyBaud {
		rate += " (answering at any baud)"
	}
	fmt.Fprintf(out, "simulated servos %v (XM430-W210, firmware %d) %s on %s\n", s.IDs, s.Firmware, rate, pt.SlavePath())
	if s.Link != "" {
		fmt.Fprintf(out, "linked at %s\n", s.Link)
	}
	fmt.Fprintln(out, "open it with any Dynamixel software; Ctrl-C stops")
	err = pt.Serve(ctx)
	st := bus.Stats()
	fmt.Fprintf(out, "served %d instruction(s), %d repl(ies), %d corrupt, %d garbage byte(s)\n", st.Packets, st.Replies, st.Corrupt, st.Garbage)
	return err
}
