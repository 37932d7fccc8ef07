package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/console"
	"github.com/labbridge/bridge/meca500/mecasim"
)

// cmdSimMeca500 is `bridge sim meca500`: a simulated Meca500 on a TCP port,
// which mecademicpy, MecaPortal-less scripts and `bridge run` can drive,
// until interrupted. While it runs, faults are injected by lines typed on
// standard input and, with -control, by POST /fault/NAME on a small HTTP
// endpoint; the parsing and the effects are mecasim.Robot.Control's.
func cmdSimMeca500(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim meca500", "sim meca500 [-listen 127.0.0.1:10000] [-firmware 9.3.0] [-virtual] [-control 127.0.0.1:PORT]", stderr)
	listen := fs.String("listen", "127.0.0.1:10000", "the control port to serve (a real robot's is 10000)")
	firmware := fs.String("firmware", mecasim.DefaultFirmware, "firmware version to advertise (9.x or 10.x)")
	virtual := fs.Bool("virtual", false, "say R3-virtual in the banner, as MecaPortal's virtual robot")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	control := fs.String("control", "", "serve fault injection over HTTP here: POST /fault/NAME[?value=V] (estop, pstop, error, drop, delay, full), GET /status")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	robot, err := mecasim.New(mecasim.Config{Firmware: *firmware, Virtual: *virtual})
	if err != nil {
		return err
	}
	if err := config.CheckDuration("sim meca500", "duration", *duration, true); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("bridge sim meca500: cannot serve on %s: %w (another simulator or program holds it? try -listen 127.0.0.1:0)", *listen, err)
	}
	defer ln.Close()
	// Said before the console starts: nothing else writes yet.
	fmt.Fprintf(stdout, "simulated Meca500 R3 (firmware %s) on %s\n", *firmware, ln.Addr())
	fmt.Fprintf(stdout, "connect mecademicpy or a bridge link (address = %q); Ctrl-C stops\n", ln.Addr().String())
	ctx, cancel := withDuration(ctx, *duration)
	defer cancel()
	out, err := console.Start(ctx, console.Config{Name: "bridge sim meca500", In: simStdin, Out: stdout, Addr: *control,
		Apply: robot.Control, Status: robot.StateLine, Help: mecasim.ControlHelp})
	if err != nil {
		return err
	}
	defer out.Stop()
	out.Printf("type a fault to inject (help lists them): estop, estop release, estop reset, pstop…, error, drop, delay 500ms, full 10, status\n")
	err = robot.Serve(ctx, ln)
	st := robot.Status()
	out.Printf("served %d motion command(s); joints %v\n", st.MotionCommands, fmtJoints(robot.Joints()))
	return err
}

func fmtJoints(q [6]float64) string {
	return fmt.Sprintf("[%.2f %.2f %.2f %.2f %.2f %.2f]", q[0], q[1], q[2], q[3], q[4], q[5])
}
