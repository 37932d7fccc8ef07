package simserve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/labbridge/bridge/internal/console"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// VREP is `bridge sim vrep`: a simulated scene with the seed's two-wheel
// robot behind the AZ socket or CoppeliaSim's ZMQ remote API.
type VREP struct {
	Protocol  vrep.Protocol
	Listen    string        // "" = the protocol's default address
	Step      time.Duration // simulation time per exchange (AZ) or step (ZMQ)
	Running   bool          // ZMQ: start with the simulation running
	Fault     vrepsim.Fault // misbehave every Every exchanges
	Every     int
	Delay     time.Duration // how long a delay fault holds the reply
	CloseLast bool          // AZ: wait for the client to close first
	Control   string        // HTTP fault endpoint
	Commands  bool          // read fault commands from the console's input
	Duration  time.Duration // -duration: the caller bounds Serve's context by it
}

// VREPFlags declares `bridge sim vrep`'s flags on fs; the returned function
// reads them into a VREP, refusing a protocol, fault or count it does not
// know with an error that names the flags and says what they accept.
func VREPFlags(fs *flag.FlagSet) func() (VREP, error) {
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
	return func() (VREP, error) {
		proto, err := vrep.ParseProtocol(*protocol)
		if err != nil {
			return VREP{}, fmt.Errorf("bridge sim vrep: -protocol %q: want az or zmq", *protocol)
		}
		f, err := vrepsim.ParseFault(*fault)
		if err != nil || *every < 0 || *duration < 0 {
			return VREP{}, fmt.Errorf("bridge sim vrep: -fault %q -every %d -duration %v: want a fault of refuse, close, short, magic, delay, restart, and -every, -duration ≥ 0", *fault, *every, *duration)
		}
		return VREP{Protocol: proto, Listen: *listen, Step: *step, Running: *running, Fault: f, Every: *every, Delay: *delay,
			CloseLast: *closeLast, Control: *control, Commands: *commands, Duration: *duration}, nil
	}
}

// Serve serves the scene until ctx is done (the caller bounds it by Duration), taking
// fault commands from in (when v.Commands) and v.Control, saying on out how
// to connect and, at the end, what it served.
func (v VREP) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	addr := v.Listen
	if addr == "" {
		addr = vrep.DefaultAZAddress
		if v.Protocol == vrep.ZMQ {
			addr = vrep.DefaultZMQAddress
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("bridge sim vrep: cannot serve on %s: %w (another scene or CoppeliaSim holds it? try -listen 127.0.0.1:0)", addr, err)
	}
	defer ln.Close()
	if v.Every > 0 && v.Fault != vrepsim.None {
		fmt.Fprintf(out, "fault %s every %d exchange(s)\n", v.Fault, v.Every)
	}
	if !v.Commands {
		in = nil
	}
	if v.Protocol == vrep.ZMQ {
		scene, err := vrepsim.NewZMQ(vrepsim.ZMQConfig{Step: v.Step, Running: v.Running, Delay: v.Delay, Every: v.Every, Periodic: v.Fault})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "simulated CoppeliaSim scene (ZMQ remote API, protocol 2) on %s: joints /MotorLeft and /MotorRight, step %v\n", ln.Addr(), v.Step)
		fmt.Fprintln(out, `connect RemoteAPIClient(port=…) or a bridge link (protocol = "zmq", address = "`+ln.Addr().String()+`"); Ctrl-C stops`)
		con, err := v.console(ctx, scene, in, out)
		if err != nil {
			return err
		}
		err = scene.Serve(ctx, ln)
		con.Stop()
		s := scene.World().Snapshot()
		fmt.Fprintf(out, "simulation time %.2f s, %d step(s); wheel angles [%.3f %.3f] rad\n", s.Time, s.Steps, s.Angles[0], s.Angles[1])
		return err
	}
	scene, err := vrepsim.NewAZ(vrepsim.AZConfig{Step: v.Step, Delay: v.Delay, Every: v.Every, Periodic: v.Fault, CloseLast: v.CloseLast})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "simulated V-REP scene (the seed's AZ socket) on %s: wheels MotorLeft and MotorRight, %v per exchange\n", ln.Addr(), v.Step)
	fmt.Fprintln(out, `connect the seed's client or a bridge link (address = "`+ln.Addr().String()+`"); Ctrl-C stops`)
	con, err := v.console(ctx, scene, in, out)
	if err != nil {
		return err
	}
	err = scene.Serve(ctx, ln)
	con.Stop()
	s, st := scene.World().Snapshot(), scene.Stats()
	fmt.Fprintf(out, "served %d exchange(s), %d with bad data, %d without data; simulation time %.2f s, wheel angles [%.3f %.3f] rad\n",
		st.Exchanges, st.BadData, st.NoData, s.Time, s.Angles[0], s.Angles[1])
	return err
}

// console lets a person (lines on in) and a script (HTTP on v.Control)
// inject faults into the running scene; the parsing is vrepsim.Control's.
func (v VREP) console(ctx context.Context, scene vrepsim.Controlled, in io.Reader, out io.Writer) (*console.Console, error) {
	return console.Start(ctx, console.Config{Name: "bridge sim vrep", In: in, Out: out, Addr: v.Control,
		Apply:  func(words []string) (string, error) { return vrepsim.Control(scene, words) },
		Status: scene.Status, Help: "delay SECONDS [N], drop, stop, play, pause, restart, fault KIND [N], every N [KIND], status"})
}
