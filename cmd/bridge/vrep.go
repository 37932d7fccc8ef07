package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/labbridge/bridge/internal/console"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepbench"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// cmdSimVREP is `bridge sim vrep`: a simulated scene with the seed's
// two-wheel robot behind the AZ socket or the ZMQ remote API, until
// interrupted.
func cmdSimVREP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim vrep", "sim vrep [-protocol az|zmq] [-listen ADDR] [-step 50ms] [-fault KIND -every N] [-control ADDR]", stderr)
	protocol := fs.String("protocol", "az", `"az": the seed's socket (one exchange per connection); "zmq": CoppeliaSim's ZMQ remote API`)
	listen := fs.String("listen", "", "the port to serve (default 127.0.0.1:33211 for az, 127.0.0.1:23000 for zmq)")
	step := fs.Duration("step", 50*time.Millisecond, "simulation time per exchange (az) or per step (zmq)")
	running := fs.Bool("running", false, "zmq: start with the simulation running, instead of waiting for sim.startSimulation")
	fault := fs.String("fault", "none", "misbehave every -every exchanges: refuse, close, short, magic, delay or restart")
	every := fs.Int("every", 0, "how often -fault strikes: every N-th exchange (az) or call (zmq; a tick makes 2 per joint + 2); 0 = never")
	delay := fs.Duration("delay", 100*time.Millisecond, "how long a delay fault holds the reply")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	closeLast := fs.Bool("close-last", false, "az: wait for the client to close each connection first (the seed's script closes first)")
	control := fs.String("control", "", "serve fault commands over HTTP on this address (POST /fault/NAME, GET /status), e.g. 127.0.0.1:8765")
	commands := fs.Bool("commands", true, "read fault commands from standard input: delay 1, drop, stop, play, status, help")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	proto, err := vrep.ParseProtocol(*protocol)
	if err != nil {
		fmt.Fprintf(stderr, "bridge sim vrep: -protocol %q: want az or zmq\n", *protocol)
		return errUsage
	}
	f, err := vrepsim.ParseFault(*fault)
	if err != nil || *every < 0 || *duration < 0 {
		fmt.Fprintf(stderr, "bridge sim vrep: -fault %q -every %d -duration %v: want a fault of refuse, close, short, magic, delay, restart, and -every, -duration ≥ 0\n", *fault, *every, *duration)
		return errUsage
	}
	addr := *listen
	if addr == "" {
		addr = vrep.DefaultAZAddress
		if proto == vrep.ZMQ {
			addr = vrep.DefaultZMQAddress
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("bridge sim vrep: cannot serve on %s: %w (another scene or CoppeliaSim holds it? try -listen 127.0.0.1:0)", addr, err)
	}
	defer ln.Close()
	ctx, cancel := withDuration(ctx, *duration)
	defer cancel()
	if *every > 0 && f != vrepsim.None {
		fmt.Fprintf(stdout, "fault %s every %d exchange(s)\n", f, *every)
	}
	if proto == vrep.ZMQ {
		scene, err := vrepsim.NewZMQ(vrepsim.ZMQConfig{Step: *step, Running: *running, Delay: *delay, Every: *every, Periodic: f})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "simulated CoppeliaSim scene (ZMQ remote API, protocol 2) on %s: joints /MotorLeft and /MotorRight, step %v\n", ln.Addr(), *step)
		fmt.Fprintln(stdout, `connect RemoteAPIClient(port=…) or a bridge link (protocol = "zmq", address = "`+ln.Addr().String()+`"); Ctrl-C stops`)
		con, err := controlScene(ctx, scene, *control, *commands, stdout)
		if err != nil {
			return err
		}
		err = scene.Serve(ctx, ln)
		con.Stop()
		s := scene.World().Snapshot()
		fmt.Fprintf(stdout, "simulation time %.2f s, %d step(s); wheel angles [%.3f %.3f] rad\n", s.Time, s.Steps, s.Angles[0], s.Angles[1])
		return err
	}
	scene, err := vrepsim.NewAZ(vrepsim.AZConfig{Step: *step, Delay: *delay, Every: *every, Periodic: f, CloseLast: *closeLast})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "simulated V-REP scene (the seed's AZ socket) on %s: wheels MotorLeft and MotorRight, %v per exchange\n", ln.Addr(), *step)
	fmt.Fprintln(stdout, `connect the seed's client or a bridge link (address = "`+ln.Addr().String()+`"); Ctrl-C stops`)
	con, err := controlScene(ctx, scene, *control, *commands, stdout)
	if err != nil {
		return err
	}
	err = scene.Serve(ctx, ln)
	con.Stop()
	s, st := scene.World().Snapshot(), scene.Stats()
	fmt.Fprintf(stdout, "served %d exchange(s), %d with bad data, %d without data; simulation time %.2f s, wheel angles [%.3f %.3f] rad\n",
		st.Exchanges, st.BadData, st.NoData, s.Time, s.Angles[0], s.Angles[1])
	return err
}

// simStdin is where `bridge sim meca500` and `bridge sim vrep` read the
// commands a person types (a test's pipe).
var simStdin io.Reader = os.Stdin

// controlScene lets a person (lines on standard input) and a script (HTTP
// on addr) inject faults into the running scene; the parsing is
// vrepsim.Control's.
func controlScene(ctx context.Context, scene vrepsim.Controlled, addr string, commands bool, stdout io.Writer) (*console.Console, error) {
	var in io.Reader
	if commands {
		in = simStdin
	}
	return console.Start(ctx, console.Config{Name: "bridge sim vrep", In: in, Out: stdout, Addr: addr,
		Apply:  func(words []string) (string, error) { return vrepsim.Control(scene, words) },
		Status: scene.Status, Help: "delay SECONDS [N], drop, stop, play, pause, restart, fault KIND [N], every N [KIND], status"})
}

// benchVREP is `bridge bench vrep`: one tick's exchange with a scene, at a
// rate or back to back, against a simulated scene in this process or the
// scene at -address; with -seed, the seed's own Python client against the
// same scene in the same run.
func benchVREP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench vrep", "bench vrep [-protocol az|zmq] [-address HOST:PORT] [-rate HZ] [-duration D] [-json]", stderr)
	readFlags := vrepbench.Flags(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := readFlags()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return errUsage
	}
	res, err := vrepbench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bridge bench vrep: %w", err)
	}
	if *asJSON {
		return res.Report.JSON(stdout)
	}
	res.Report.WriteText(stdout, res.Name)
	if res.TimeWait >= 0 {
		fmt.Fprintf(stdout, "  %d sockets in TIME_WAIT toward or from %s\n", res.TimeWait, res.Address)
	}
	if py, g := res.Seed, res.Report; py != nil {
		py.WriteText(stdout, "seed python client")
		if py.RTT.P50 > 0 && g.RTT.P50 > 0 {
			fmt.Fprintf(stdout, "python/go round trip: p50 ×%.1f, p99 ×%.1f\n", float64(py.RTT.P50)/float64(g.RTT.P50), float64(py.RTT.P99)/float64(g.RTT.P99))
		}
	}
	return nil
}
