package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/latency"
	"github.com/labbridge/bridge/loopbench"
	"github.com/labbridge/bridge/sdnotify"
	"github.com/labbridge/bridge/simulink"
)

// cmdRun is `bridge run` and, with simulate, `bridge sim`.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer, simulate bool) error {
	name, synopsis := "run", "run [-config FILE] [-duration D] [-metrics ADDR]"
	if simulate {
		name, synopsis = "sim", "sim [-config FILE] [-duration D] [-metrics ADDR] [-ephemeral]"
	}
	fs := newFlagSet(name, synopsis, stderr)
	config := fs.String("config", "", "configuration file (default ./bridge.toml, else the embedded default)")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	metricsAddr := fs.String("metrics", "-", `listen address of /metrics ("" = off; default: the configuration's)`)
	ephemeral := false
	if simulate {
		fs.BoolVar(&ephemeral, "ephemeral", false, "use free loopback ports instead of the configured ones (runs beside a real Simulink)")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, from, err := loadConfig(*config)
	if err != nil {
		return err
	}
	return runConfig(ctx, cfg, from, simulate, ephemeral, *metricsAddr, *duration, stdout, stderr)
}

func runConfig(ctx context.Context, cfg *bridge.Config, from string, simulate, ephemeral bool, metricsAddr string,
	duration time.Duration, stdout, stderr io.Writer) error {
	if metricsAddr == "-" {
		metricsAddr = cfg.Service.Metrics
	}
	logger := newLogger(cfg.Service, stderr)
	a, err := wire(cfg, wireOpts{partner: simulate, ephemeral: ephemeral}, metricsAddr, logger, nil)
	if err != nil {
		return err
	}
	a.notify = sdnotify.New(os.Getenv("NOTIFY_SOCKET"))
	fmt.Fprintf(stdout, "bridge %s: %s, %d link(s), simulated devices: %v\n", version, from, len(a.links), allSimulated(cfg))
	a.describe(stdout)
	if !simulate {
		fmt.Fprintln(stdout, "waiting for a Simulink host: start the model now (Ctrl-C stops the bridge)")
	}
	return a.serve(ctx, stdout, duration)
}

func allSimulated(cfg *bridge.Config) bool {
	for _, l := range cfg.Links {
		if l.Plant.Kind != "sim" && l.Plant.Port != "sim" || l.Camera.Kind == "realsense" {
			return false
		}
	}
	return true
}

// cmdCheck is `bridge check`.
func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "check -config FILE", stderr)
	config := fs.String("config", "", "configuration file to validate (default ./bridge.toml, else the embedded default)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, from, err := loadConfig(*config)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok, %d link(s)\n", from, len(cfg.Links))
	for _, l := range cfg.Links {
		mc := l.MasterConfig(l.Plant.Motors)
		fmt.Fprintf(stdout, "  %s: %g Hz (clock %s), %s plant of %d motors, %d marker(s) (camera %s, side %s, sort %s), %v -> %v, replies on %v, apply %s, halt %s\n",
			l.Name, l.RateHz, l.Clock, l.Plant.Kind, l.Plant.Motors, *l.UDP.NbMarkers, l.Camera.Kind, l.Side, l.Sort, mc.Bind, mc.Remote, mc.Listen, l.Apply, l.Halt)
	}
	return nil
}

// cmdStartUDP is emioapi's `startUDP` with its flags and defaults, honoured.
func cmdStartUDP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("startUDP", "startUDP [--fps 30] [--nb_markers 1] [--side plan] [--sort y] [--remote_ip 127.0.0.1] [--remote_port 25000] [--local_port 25001] [--bind_port 9090] [--recv_timeout 0.1]", stderr)
	fps := fs.Int("fps", 30, "frames (ticks) per second: 30, 60 or 90, as the camera accepts")
	nbMarkers := fs.Int("nb_markers", 1, "markers tracked; must equal the Simulink model's mask value")
	side := fs.String("side", "plan", "marker frame: top, front or plan")
	sort := fs.String("sort", "y", "marker order: y or z")
	remoteIP := fs.String("remote_ip", "127.0.0.1", "Simulink host")
	remotePort := fs.Int("remote_port", simulink.DefaultRemotePort, "Simulink's UDP Receive port")
	localPort := fs.Int("local_port", simulink.DefaultLocalPort, "port replies arrive on")
	bindPort := fs.Int("bind_port", simulink.DefaultBindPort, "source port of measurements (the models accept only 9090)")
	recvTimeout := fs.Float64("recv_timeout", 0.1, "reply timeout in seconds")
	config := fs.String("config", "", "base configuration (default ./bridge.toml, else the embedded default)")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, from, err := loadConfig(*config)
	if err != nil {
		return err
	}
	if err := applyEmioFlags(cfg, emioFlags{*fps, *nbMarkers, *side, *sort, *remoteIP, *remotePort, *localPort, *bindPort, *recvTimeout}); err != nil {
		return err
	}
	return runConfig(ctx, cfg, from+" with startUDP flags", false, false, "-", *duration, stdout, stderr)
}

type emioFlags struct {
	fps, nbMarkers                  int
	side, sort, remoteIP            string
	remotePort, localPort, bindPort int
	recvTimeout                     float64
}

// applyEmioFlags sets the first link from emioapi's flags and revalidates.
func applyEmioFlags(cfg *bridge.Config, f emioFlags) error {
	bad := func(flag string, v any, want string) error {
		return fmt.Errorf("bridge startUDP: --%s %v: want %s", flag, v, want)
	}
	switch {
	case f.fps != 30 && f.fps != 60 && f.fps != 90:
		return bad("fps", f.fps, "30, 60 or 90 (the RealSense modes emioapi uses)")
	case f.nbMarkers < 1 || f.nbMarkers > 16:
		return bad("nb_markers", f.nbMarkers, "1..16")
	case f.side != "top" && f.side != "front" && f.side != "plan":
		return bad("side", f.side, "top, front or plan")
	case f.sort != "y" && f.sort != "z":
		return bad("sort", f.sort, "y or z")
	case !(f.recvTimeout > 0 && f.recvTimeout <= 10):
		return bad("recv_timeout", f.recvTimeout, "seconds, 0 < t ≤ 10")
	}
	ip, err := netip.ParseAddr(f.remoteIP)
	if err != nil {
		return bad("remote_ip", f.remoteIP, "a numeric IP address")
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"remote_port", f.remotePort}, {"local_port", f.localPort}, {"bind_port", f.bindPort}} {
		if p.v < 1 || p.v > 65535 {
			return bad(p.name, p.v, "1..65535")
		}
	}
	if len(cfg.Links) == 0 {
		return fmt.Errorf("bridge startUDP: the configuration has no link")
	}
	l := &cfg.Links[0]
	l.RateHz = float64(f.fps)
	if l.Camera.Kind != "none" {
		l.Camera.FPS = f.fps
	}
	oldMarkers := *l.UDP.NbMarkers
	*l.UDP.NbMarkers = f.nbMarkers
	l.UDP.Remote = netip.AddrPortFrom(ip, uint16(f.remotePort)).String()
	l.UDP.Listen = netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(f.localPort)).String()
	l.UDP.Bind = netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(f.bindPort)).String()
	l.UDP.RecvTimeout.Duration = time.Duration(f.recvTimeout * float64(time.Second))
	// The simulated lab follows nb_markers: more markers hang below the
	// first, 40 mm apart, and move with it; the partner then holds, since
	// its controller was tuned for the configured markers.
	if len(l.Plant.Y0) == 3*oldMarkers && len(l.Plant.J) == 3*oldMarkers*l.Plant.Motors && oldMarkers > 0 && f.nbMarkers != oldMarkers {
		y0, j := l.Plant.Y0[:3], l.Plant.J[:3*l.Plant.Motors]
		l.Plant.Y0, l.Plant.J = nil, nil
		for i := range f.nbMarkers {
			l.Plant.Y0 = append(l.Plant.Y0, y0[0], y0[1]-40*float64(i), y0[2])
			l.Plant.J = append(l.Plant.J, j...)
		}
		l.Partner.Controller = simulink.ControllerSpec{Kind: "hold"}
	} else if len(l.Plant.Y0) != 3*f.nbMarkers {
		l.Plant.Y0, l.Plant.J = nil, nil
		l.Partner.Controller = simulink.ControllerSpec{Kind: "hold"}
	}
	l.Side, l.Sort = f.side, f.sort
	return cfg.Validate()
}

// cmdPartner is `bridge partner`: the Simulink side.
func cmdPartner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("partner", "partner [flags]", stderr)
	listen := fs.String("listen", "127.0.0.1:25000", "where measurements arrive (Simulink's UDP Receive)")
	accept := fs.String("accept", "127.0.0.1:9090", `accept measurements only from this source ("" = any; port 0 = any port)`)
	replyTo := fs.String("reply-to", "127.0.0.1:25001", "where commands go (Simulink's UDP Send)")
	nbMarkers := fs.Int("nb_markers", 1, "markers per measurement")
	motors := fs.Int("motors", 4, "commands per reply")
	rate := fs.Float64("rate", 30, "tick rate of the bridge (Hz), for the sine and the rate limiter")
	delay := fs.Bool("delay", false, "one-tick-delay model: answer seq-1 instead of echoing seq")
	controller := fs.String("controller", "hold", "hold, constant, sine or jacobian (jacobian and parameters: use -config)")
	u := fs.String("u", "", "constant: comma-separated command (rad)")
	amp := fs.Float64("amplitude", 0.2, "sine: amplitude (rad)")
	freq := fs.Float64("frequency", 0.5, "sine: frequency (Hz)")
	config := fs.String("config", "", "take the controller of a link's [link.partner] from this file")
	linkName := fs.String("link", "", "with -config: the link (default the first)")
	drop := fs.Float64("drop", 0, "fault: probability of dropping a reply")
	dup := fs.Float64("duplicate", 0, "fault: probability of duplicating a reply")
	reorder := fs.Float64("reorder", 0, "fault: probability of swapping a reply with the next")
	wrong := fs.Float64("wrong-size", 0, "fault: probability of a reply one value short or long")
	replyDelay := fs.Duration("reply-delay", 0, "fault: delay every reply by this much")
	seed := fs.Uint64("seed", 1, "fault: random seed (SIGUSR1 pauses/resumes replies, SIGUSR2 restarts the model)")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	spec := simulink.ControllerSpec{Kind: *controller}
	switch *controller {
	case "constant":
		v, err := parseFloats(*u)
		if err != nil {
			return fmt.Errorf("bridge partner: -u: %w", err)
		}
		spec.U = v
	case "sine":
		spec.Amplitude, spec.Frequency = repeatF(*amp, *motors), repeatF(*freq, *motors)
	}
	if *config != "" {
		cfg, _, err := loadConfig(*config)
		if err != nil {
			return err
		}
		found := false
		for _, l := range cfg.Links {
			if *linkName == "" || l.Name == *linkName {
				spec, *nbMarkers, *motors, *rate, *delay = l.Partner.Controller, *l.UDP.NbMarkers, l.Plant.Motors, l.RateHz, l.Partner.Delay
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("bridge partner: no link %q in %s", *linkName, *config)
		}
	}
	ctl, err := simulink.NewController(spec, *nbMarkers, *motors, *rate)
	if err != nil {
		return err
	}
	parse := func(flag, s string) (netip.AddrPort, error) {
		if s == "" {
			return netip.AddrPort{}, nil
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return ap, fmt.Errorf("bridge partner: -%s %q: want address:port", flag, s)
		}
		return ap, nil
	}
	la, err := parse("listen", *listen)
	if err != nil {
		return err
	}
	aa, err := parse("accept", *accept)
	if err != nil {
		return err
	}
	ra, err := parse("reply-to", *replyTo)
	if err != nil {
		return err
	}
	// Always present, so that SIGUSR1 can pause the partner like a stopped
	// Simulink model.
	faults := &simulink.Faults{Drop: *drop, Duplicate: *dup, Reorder: *reorder, WrongSize: *wrong, Delay: *replyDelay, Seed: *seed}
	logger := newLogger(bridge.ServiceConfig{LogLevel: "info", LogFormat: "auto"}, stderr)
	p, err := simulink.NewPartner(simulink.PartnerConfig{
		Listen: la, Accept: aa, ReplyTo: ra, MeasureLen: 3**nbMarkers + *motors, CommandLen: *motors,
		Delay: *delay, Controller: ctl, Faults: faults, Logger: logger,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Fprintf(stdout, "partner: listening on %v (accepting %s), replying to %v from %v, %s controller\n",
		p.Addr(), orDefault(*accept, "any source"), ra, p.ReplyAddr(), orDefault(spec.Kind, "hold"))
	ctx, cancel := withDuration(ctx, *duration)
	defer cancel()
	// SIGUSR1 pauses or resumes the replies, SIGUSR2 restarts the model:
	// the faults of a Simulink session, on demand.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	var wg sync.WaitGroup
	sigCtx, stopSigs := context.WithCancel(ctx)
	wg.Go(func() {
		for {
			select {
			case <-sigCtx.Done():
				return
			case s := <-sigs:
				switch {
				case s == syscall.SIGUSR2:
					p.Restart()
					fmt.Fprintln(stdout, "partner: restarted")
				case faults.Paused():
					faults.Resume()
					fmt.Fprintln(stdout, "partner: resumed")
				default:
					faults.Pause()
					fmt.Fprintln(stdout, "partner: paused (SIGUSR1 again resumes)")
				}
			}
		}
	})
	err = p.Serve(ctx)
	stopSigs()
	wg.Wait()
	st := p.Stats()
	fmt.Fprintf(stdout, "partner: received %d, replied %d, handshakes %d, dropped %d, faulted %d, last seq %d\n",
		st.Received, st.Replied, st.Handshakes, st.Dropped, st.Faulted, st.LastSeq)
	return err
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			v, err := strconv.ParseFloat(s[start:i], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%q is not a list of finite numbers", s)
			}
			out = append(out, v)
			start = i + 1
		}
	}
	return out, nil
}

func repeatF(v float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// latencyObserver records reply latencies; written by the loop thread only,
// read after the run.
type latencyObserver struct {
	h    *latency.Histogram
	late uint64
}

func (o *latencyObserver) Exchanged(simulink.Status) {}
func (o *latencyObserver) Reply(ns int64, late bool) {
	o.h.Record(ns)
	if late {
		o.late++
	}
}
func (o *latencyObserver) Dropped(simulink.DropReason) {}

// benchLink is `bridge bench link`: one link with the simulated plant against
// the built-in partner on loopback, reporting reply latency.
func benchLink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench link", "bench link [-rate HZ] [-duration D] [-priority N] [-cpu N] [-dma-latency] [-partner process|builtin] [-json]", stderr)
	rate := fs.Float64("rate", 1000, "tick rate (Hz)")
	duration := fs.Duration("duration", 60*time.Second, "how long to run")
	priority := fs.Int("priority", 80, "SCHED_FIFO priority of the loop thread (0 = normal)")
	cpu := fs.Int("cpu", -1, "pin the loop thread to this CPU (-1 = no pinning)")
	dma := fs.Bool("dma-latency", true, "hold /dev/cpu_dma_latency at 0 during the run, as cyclictest does")
	asJSON := fs.Bool("json", false, "print one JSON object")
	partnerMode := fs.String("partner", "builtin", "builtin: the partner in this process, as bridge sim runs it; process: `bridge partner` in a process of its own; external: a host already running (a real Simulink model) at -remote")
	remote := fs.String("remote", "127.0.0.1:25000", "with -partner external: where the partner listens")
	listen := fs.String("listen", "0.0.0.0:25001", "with -partner external: where its replies arrive")
	bind := fs.String("bind", "0.0.0.0:9090", "with -partner external: source of the measurements")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *partnerMode != "process" && *partnerMode != "builtin" && *partnerMode != "external" {
		return fmt.Errorf("bridge bench link: -partner %q: want process, builtin or external", *partnerMode)
	}
	cfg, err := bridge.ParseConfig(defaultconfig.TOML())
	if err != nil {
		return err
	}
	cfg.Links = cfg.Links[:1]
	l := &cfg.Links[0]
	l.RateHz, l.Loop.Priority, l.Loop.CPU, l.Loop.DMALatency = *rate, *priority, cpu, dma
	l.Partner.Controller = simulink.ControllerSpec{Kind: "hold"}
	// The link alone, on its own clock: the camera has its own benchmark
	// (the tracker's) and would pace the loop at its frame rate.
	l.Clock, l.Camera.Kind = "timer", "none"
	if err := cfg.Validate(); err != nil {
		return err
	}
	obs := &latencyObserver{h: latency.New()}
	logger := newLogger(bridge.ServiceConfig{LogLevel: "warn", LogFormat: "text"}, stderr)
	runCtx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	opts := wireOpts{partner: true, ephemeral: true}
	switch *partnerMode {
	case "external":
		l.UDP.Remote, l.UDP.Listen, l.UDP.Bind = *remote, *listen, *bind
		if err := cfg.Validate(); err != nil {
			return err
		}
		opts = wireOpts{}
	case "process":
		stop, err := startPartnerProcess(runCtx, l, *rate)
		if err != nil {
			return err
		}
		defer stop()
		opts = wireOpts{}
	}
	a, err := wire(cfg, opts, "", logger, func(string) simulink.Observer { return obs })
	if err != nil {
		return err
	}
	if err := a.sup.Serve(runCtx); err != nil {
		a.close()
		return err
	}
	lp := a.links[0]
	st := lp.master.Stats()
	a.close()
	sum := obs.h.Summary()
	res := benchLinkResult{
		RateHz: *rate, DurationS: duration.Seconds(), Ticks: lp.link.Ticks(), Overruns: lp.link.Overruns(),
		Replies: sum.Count, Late: obs.late,
		LatencyUs: loopbench.LatencyUS{P50: us(sum.P50), P99: us(sum.P99), P999: us(sum.P999), Max: us(sum.Max), Min: us(sum.Min), Mean: sum.Mean / 1e3},
		Status:    map[string]uint64{},
	}
	for i, n := range st.Status {
		res.Status[simulink.Status(i).String()] = n
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "link  rate %g Hz  %v  ticks %d  overruns %d  replies %d  late %d\n",
		res.RateHz, *duration, res.Ticks, res.Overruns, res.Replies, res.Late)
	fmt.Fprintf(stdout, "reply latency µs  p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
		res.LatencyUs.P50, res.LatencyUs.P99, res.LatencyUs.P999, res.LatencyUs.Max)
	fmt.Fprintf(stdout, "status  OK %d  OK_NO_DELAY %d  DESYNC %d  TIMEOUT %d  RECONNECTED %d  HANDSHAKING %d\n",
		st.Status[simulink.OK], st.Status[simulink.OKNoDelay], st.Status[simulink.Desync], st.Status[simulink.Timeout], st.Status[simulink.Reconnected], st.Status[simulink.Handshaking])
	return nil
}

type benchLinkResult struct {
	RateHz    float64             `json:"rate_hz"`
	DurationS float64             `json:"duration_s"`
	Ticks     uint64              `json:"ticks"`
	Overruns  uint64              `json:"overruns"`
	Replies   uint64              `json:"replies"`
	Late      uint64              `json:"late"`
	LatencyUs loopbench.LatencyUS `json:"reply_latency_us"`
	Status    map[string]uint64   `json:"status"`
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// startPartnerProcess runs `bridge partner` (this executable) in a process of
// its own on free loopback ports and points the link at it.
func startPartnerProcess(ctx context.Context, l *bridge.LinkFile, rate float64) (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	listen, err := reservePort()
	if err != nil {
		return nil, err
	}
	replyTo, err := reservePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "partner", "-listen", listen.String(), "-accept", "127.0.0.1:0",
		"-reply-to", replyTo.String(), "-nb_markers", strconv.Itoa(*l.UDP.NbMarkers),
		"-motors", strconv.Itoa(l.Plant.Motors), "-rate", strconv.FormatFloat(rate, 'g', -1, 64))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bridge bench link: start partner: %w", err)
	}
	// The partner prints one line once its sockets are bound.
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "partner: listening") {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("bridge bench link: partner did not start (%q): %v", line, err)
	}
	go io.Copy(io.Discard, out)
	l.UDP.Remote = listen.String()
	l.UDP.Listen = replyTo.String()
	l.UDP.Bind = "127.0.0.1:0"
	return func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}, nil
}
