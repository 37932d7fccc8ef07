package simserve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/console"
	"github.com/labbridge/bridge/meca500/mecasim"
)

// Meca500 is `bridge sim meca500`: a simulated Meca500 on a TCP port, which
// mecademicpy, MecaPortal-less scripts and `bridge run` can drive. Faults
// are injected by lines typed on standard input and, with Control, by POST
// /fault/NAME; the parsing and the effects are mecasim.Robot.Control's.
type Meca500 struct {
	Listen   string
	Firmware string
	Virtual  bool // say R3-virtual in the banner
	Control  string
	Duration time.Duration // -duration: the caller bounds Serve's context by it
}

// Meca500Flags declares `bridge sim meca500`'s flags on fs; the returned
// function reads them into a Meca500.
func Meca500Flags(fs *flag.FlagSet) func() (Meca500, error) {
	listen := fs.String("listen", "127.0.0.1:10000", "the control port to serve (a real robot's is 10000)")
	firmware := fs.String("firmware", mecasim.DefaultFirmware, "firmware version to advertise (9.x or 10.x)")
	virtual := fs.Bool("virtual", false, "say R3-virtual in the banner, as MecaPortal's virtual robot")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	control := fs.String("control", "", "serve fault injection over HTTP here: POST /fault/NAME[?value=V] (estop, pstop, error, drop, delay, full), GET /status")
	return func() (Meca500, error) {
		if err := config.CheckDuration("sim meca500", "duration", *duration, true); err != nil {
			return Meca500{}, err
		}
		return Meca500{Listen: *listen, Firmware: *firmware, Virtual: *virtual, Control: *control, Duration: *duration}, nil
	}
}

// Serve serves the arm until ctx is done (the caller bounds it by Duration), taking
// faults from in (nil: none) and Control, saying on out how to connect and,
// at the end, what it served.
func (m Meca500) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	robot, err := mecasim.New(mecasim.Config{Firmware: m.Firmware, Virtual: m.Virtual})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", m.Listen)
	if err != nil {
		return fmt.Errorf("bridge sim meca500: cannot serve on %s: %w (another simulator or program holds it? try -listen 127.0.0.1:0)", m.Listen, err)
	}
	defer ln.Close()
	// Said before the console starts: nothing else writes yet.
	fmt.Fprintf(out, "simulated Meca500 R3 (firmware %s) on %s\n", m.Firmware, ln.Addr())
	fmt.Fprintf(out, "connect mecademicpy or a bridge link (address = %q); Ctrl-C stops\n", ln.Addr().String())
	con, err := console.Start(ctx, console.Config{Name: "bridge sim meca500", In: in, Out: out, Addr: m.Control,
		Apply: robot.Control, Status: robot.StateLine, Help: mecasim.ControlHelp})
	if err != nil {
		return err
	}
	defer con.Stop()
	con.Printf("type a fault to inject (help lists them): estop, estop release, estop reset, pstop…, error, drop, delay 500ms, full 10, status\n")
	err = robot.Serve(ctx, ln)
	q := robot.Joints()
	con.Printf("served %d motion command(s); joints [%.2f %.2f %.2f %.2f %.2f %.2f]\n", robot.Status().MotionCommands, q[0], q[1], q[2], q[3], q[4], q[5])
	return err
}
