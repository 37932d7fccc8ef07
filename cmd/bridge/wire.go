package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/sdnotify"
	"github.com/labbridge/bridge/sim"
	"github.com/labbridge/bridge/simulink"
)

// loadConfig reads path, or ./bridge.toml, or the embedded default.
func loadConfig(path string) (*bridge.Config, string, error) {
	if path == "" {
		if _, err := os.Stat("bridge.toml"); err == nil {
			path = "bridge.toml"
		}
	}
	if path == "" {
		c, err := bridge.ParseConfig(defaultconfig.TOML())
		return c, "embedded bridge.toml", err
	}
	c, err := bridge.LoadConfig(path)
	return c, path, err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func newLogger(cfg bridge.ServiceConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" || (cfg.LogFormat == "auto" && !isTerminal(w)) {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// wiring options.
type wireOpts struct {
	partner   bool // a built-in partner on each link
	ephemeral bool // loopback ports chosen by the kernel instead of the configured ones
}

// linkParts is one wired link.
type linkParts struct {
	file    *bridge.LinkFile
	link    *bridge.Link
	master  *simulink.Master
	plant   bridge.Plant
	partner *simulink.Partner
	metrics *metrics.Link
	camera  *linkCamera
}

// app is a wired bridge: links, supervisor, metrics.
type app struct {
	cfg     *bridge.Config
	logger  *slog.Logger
	server  *metrics.Server
	sup     *bridge.Supervisor
	links   []*linkParts
	closers []io.Closer
	notify  *sdnotify.Notifier
	// bg runs the simulated devices; close stops them and waits.
	bg        sync.WaitGroup
	simServos []simServos
	alerts    []alertSource
}

// alertSource is a plant whose servo alerts are reported.
type alertSource struct {
	link   string
	motors *emio.Motors
}

// reportAlerts logs servo hardware alerts as they come (the loop only
// records them), until ctx is done.
func (a *app) reportAlerts(ctx context.Context) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, s := range a.alerts {
			al, n := s.motors.Alert()
			if al == nil {
				continue
			}
			a.logger.Warn("servo hardware alert: the servo protects itself (torque off on overheating or overload); let it cool, then reboot it",
				"link", s.link, "id", al.ID, "hardware_error", al.Hardware.String(), "temperature_c", al.TemperatureC,
				"temperature_limit_c", al.LimitC, "alerts", n, "diagnosis_err", al.Err)
		}
	}
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i].Close()
	}
	a.closers = nil
	a.bg.Wait()
}

// reservePort asks the kernel for a free loopback UDP port. The socket is
// closed before the port is bound again, a race only a simulation accepts.
func reservePort() (netip.AddrPort, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return netip.AddrPort{}, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort(), nil
}

// wire builds everything the configuration describes. Nothing runs yet.
func wire(cfg *bridge.Config, opts wireOpts, metricsAddr string, logger *slog.Logger, obs func(name string) simulink.Observer) (*app, error) {
	if cfg.Service.GOMAXPROCS > 0 {
		runtime.GOMAXPROCS(cfg.Service.GOMAXPROCS)
	}
	a := &app{cfg: cfg, logger: logger}
	reg := metrics.NewRegistry()
	set, err := metrics.New(reg, metrics.BuildInfo{Version: version, Commit: buildCommit()})
	if err != nil {
		return nil, err
	}
	clock := realtime.NewClock()
	var sup *bridge.Supervisor
	states := map[string]*metrics.Link{}
	var statesMu sync.Mutex
	sup = bridge.NewSupervisor(bridge.SupervisorConfig{
		Logger: logger,
		OnEvent: func(ev bridge.Event) {
			statesMu.Lock()
			m := states[ev.Link]
			statesMu.Unlock()
			if m != nil {
				m.SetState(ev.To.String())
				if ev.Cause == bridge.CauseDeviceReopened {
					m.DeviceRestart("plant")
				}
			}
		},
	})
	a.sup = sup
	for i := range cfg.Links {
		lf := &cfg.Links[i]
		lp, err := a.wireLink(lf, opts, set, clock, logger, obs)
		if err != nil {
			a.close()
			return nil, fmt.Errorf("link %q: %w", lf.Name, err)
		}
		statesMu.Lock()
		states[lf.Name] = lp.metrics
		statesMu.Unlock()
		a.links = append(a.links, lp)
		if err := sup.AddLink(lp.link); err != nil {
			a.close()
			return nil, err
		}
		if lp.camera != nil {
			if err := sup.Add("camera "+lf.Name, lp.camera.cam); err != nil {
				a.close()
				return nil, err
			}
		}
		if lp.partner != nil {
			if err := sup.Add("partner "+lf.Name, lp.partner); err != nil {
				a.close()
				return nil, err
			}
		}
	}
	if len(a.alerts) > 0 {
		if err := sup.Add("servo alerts", serviceFunc(a.reportAlerts)); err != nil {
			a.close()
			return nil, err
		}
	}
	if metricsAddr != "" {
		health := func() error {
			for _, lp := range a.links {
				if s := lp.link.State(); s == bridge.Degraded || s == bridge.Stopped {
					return fmt.Errorf("link %s is %s", lp.file.Name, s)
				}
				if lp.camera != nil && !lp.camera.cam.Streaming() {
					return fmt.Errorf("link %s: the camera is not streaming (markers held)", lp.file.Name)
				}
			}
			return nil
		}
		srv, err := metrics.Listen(metricsAddr, reg, health, logger)
		if err != nil {
			a.close()
			return nil, err
		}
		a.server = srv
		if err := sup.Add("metrics", srv); err != nil {
			a.close()
			return nil, err
		}
	}
	return a, nil
}

func (a *app) wireLink(lf *bridge.LinkFile, opts wireOpts, set *metrics.Set, clock *realtime.Clock,
	logger *slog.Logger, obs func(string) simulink.Observer) (*linkParts, error) {
	lp := &linkParts{file: lf}
	mcfg := lf.MasterConfig(lf.Plant.Motors)
	if opts.ephemeral {
		lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
		mcfg.Bind = netip.AddrPortFrom(lo, 0)
		listen, err := reservePort()
		if err != nil {
			return nil, err
		}
		mcfg.Listen = listen
	}
	if opts.partner {
		ctl, err := simulink.NewController(lf.Partner.Controller, *lf.UDP.NbMarkers, lf.Plant.Motors, lf.RateHz)
		if err != nil {
			return nil, err
		}
		listen := mcfg.Remote
		accept := netip.AddrPortFrom(mcfg.Remote.Addr(), mcfg.Bind.Port())
		if opts.ephemeral {
			listen = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
			accept = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
		}
		replyTo := netip.AddrPortFrom(mcfg.Remote.Addr(), mcfg.Listen.Port())
		p, err := simulink.NewPartner(simulink.PartnerConfig{
			Listen: listen, Accept: accept, ReplyTo: replyTo,
			MeasureLen: mcfg.MeasureLen, CommandLen: mcfg.CommandLen,
			Delay: lf.Partner.Delay, Controller: ctl, Logger: logger.With("partner", lf.Name),
		})
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, p)
		lp.partner = p
		mcfg.Remote = p.Addr()
	}
	ml, err := set.Link(lf.Name, lf.Period())
	if err != nil {
		return nil, err
	}
	lp.metrics = ml
	var mobs simulink.Observer = ml
	if obs != nil {
		mobs = fanout{ml, obs(lf.Name)}
	}
	m, err := simulink.NewMaster(mcfg, clock, mobs)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, m)
	lp.master = m
	lc, err := a.newCamera(lf, set, clock, logger)
	if err != nil {
		return nil, err
	}
	lp.camera = lc
	var markers emio.MarkerSource
	if lc != nil {
		markers = lc.cam
	}
	plant, openErr, err := a.newPlant(lf, clock, logger, markers)
	if err != nil {
		return nil, err
	}
	lp.plant = plant
	if lc != nil && lc.sim != nil {
		for _, ss := range a.simServos {
			if ss.link == lf.Name {
				lc.sim.setAngles(servoAngles(ss.bus, ss.ids))
			}
		}
	}
	lcfg := lf.LinkConfig()
	if lc != nil && lc.event != nil {
		lcfg.Loop.Trigger = lc.event
	}
	l, err := bridge.NewLink(lcfg, plant, m, clock, ml, ml, logger)
	if err != nil {
		return nil, err
	}
	lp.link = l
	if openErr != nil {
		// No device yet: the link starts degraded and the supervisor keeps
		// trying to open it, with backoff, while the loop ticks.
		logger.Warn("device not available; the link starts degraded", "link", lf.Name, "err", openErr)
		l.DeviceFailed(openErr)
	}
	return lp, nil
}

// newPlant builds the plant a link file names. A device that cannot be
// opened yet is not an error: openErr says why, and the link starts degraded.
func (a *app) newPlant(lf *bridge.LinkFile, clock *realtime.Clock, logger *slog.Logger, markers emio.MarkerSource) (plant bridge.Plant, openErr, err error) {
	switch lf.Plant.Kind {
	case "sim":
		c := sim.MotorsConfig{
			Motors:       lf.Plant.Motors,
			TimeConstant: lf.Plant.TimeConstant.Duration,
			Initial:      lf.Plant.Initial,
			Markers:      *lf.UDP.NbMarkers,
			Y0:           lf.Plant.Y0,
			J:            lf.Plant.J,
		}
		if c.Y0 == nil {
			c.Y0 = make([]float64, 3*c.Markers)
		}
		if c.J == nil {
			c.J = make([]float64, 3*c.Markers*c.Motors)
		}
		m, err := sim.NewMotors(c, clock)
		return m, nil, err
	case "dynamixel":
		return a.newServos(lf, logger, markers)
	}
	return nil, nil, fmt.Errorf("plant kind %q is not available in this build", lf.Plant.Kind)
}

// newServos builds the Emio plant on Dynamixel servos: real ones on a serial
// port, or simulated ones on a pseudo-terminal when port = "sim", so that the
// real serial path runs either way.
func (a *app) newServos(lf *bridge.LinkFile, logger *slog.Logger, markers emio.MarkerSource) (bridge.Plant, error, error) {
	p := &lf.Plant
	ids := make([]byte, len(p.IDs))
	for i, id := range p.IDs {
		ids[i] = byte(id)
	}
	mode := dynamixel.ModePosition
	if p.Mode == "extended" {
		mode = dynamixel.ModeExtendedPosition
	}
	latency := p.LatencyTimer.Duration
	cfg := emio.Config{
		IDs: ids, Mode: mode, ProfileVelocity: int64(*p.ProfileVelocity), Markers: *lf.UDP.NbMarkers, Fast: *p.FastSyncRead,
		Logger: logger.With("link", lf.Name),
	}
	if p.Port == "sim" {
		bc := dxlsim.DefaultBusConfig()
		bc.IDs = ids
		// Model the wire and a U2D2 with its latency timer at 1 ms.
		bc.Timing = dxlsim.Timing{Baud: p.Baud, Latency: time.Millisecond}
		sb, err := dxlsim.NewBus(bc)
		if err != nil {
			return nil, nil, err
		}
		pt, err := dxlsim.NewPTY(sb, "")
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		a.bg.Go(func() {
			if err := pt.Serve(ctx); err != nil {
				logger.Error("simulated servos stopped", "link", lf.Name, "err", err)
			}
		})
		a.closers = append(a.closers, closerFunc(func() error { cancel(); return nil }))
		if latency == 0 {
			latency = time.Millisecond
		}
		cfg.Open = func() (dynamixel.Port, error) { return dynamixel.OpenSerial(pt.Path(), p.Baud) }
		if markers == nil && len(p.Y0) == 3*cfg.Markers && len(p.J) == 3*cfg.Markers*len(ids) && cfg.Markers > 0 {
			lm, err := sim.NewLinearMarkers(p.Y0, p.J, len(ids))
			if err != nil {
				return nil, nil, err
			}
			cfg.Source = lm
		}
		a.simServos = append(a.simServos, simServos{link: lf.Name, bus: sb, pty: pt, ids: ids})
	} else {
		spec := p.Port
		if latency == 0 {
			// The adapter's own latency timer makes the timeouts right.
			ports, _ := dynamixel.ListPorts()
			if path, err := dynamixel.Resolve(spec, ports); err == nil {
				if ms, ok, err := dynamixel.LatencyTimer(path); err == nil && ok {
					latency = max(time.Duration(ms)*time.Millisecond, time.Millisecond)
				}
			}
		}
		cfg.Open = func() (dynamixel.Port, error) {
			ports, _ := dynamixel.ListPorts()
			path, err := dynamixel.Resolve(spec, ports)
			if err != nil {
				return nil, err
			}
			if ms, ok, err := dynamixel.LatencyTimer(path); err == nil && ok && ms > 1 {
				logger.Warn(dynamixel.LatencyAdvice(path, ms), "link", lf.Name)
			}
			return dynamixel.OpenSerial(path, p.Baud)
		}
	}
	if markers != nil {
		cfg.Source = markers // the camera measures the markers
	}
	if latency == 0 {
		latency = 16 * time.Millisecond
	}
	margin := 3 * time.Millisecond
	if p.Port == "sim" {
		// Simulated servos are a goroutine, not hardware: on a loaded
		// machine (tests beside a camera under the race detector) they
		// can answer late; a late reply must not read as a dead servo.
		margin = 20 * time.Millisecond
	}
	cfg.Bus = dynamixel.BusConfig{Baud: p.Baud, LatencyTimer: latency, ReturnDelay: 500 * time.Microsecond, Margin: margin}
	m, err := emio.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	a.closers = append(a.closers, closerFunc(m.Close))
	a.alerts = append(a.alerts, alertSource{link: lf.Name, motors: m})
	openCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m, m.Open(openCtx), nil
}

// simServos is a simulated servo bus served by the app.
type simServos struct {
	link string
	bus  *dxlsim.Bus
	pty  *dxlsim.PTY
	ids  []byte
}

type serviceFunc func(ctx context.Context) error

func (f serviceFunc) Serve(ctx context.Context) error { return f(ctx) }

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// fanout sends the master's observations to two observers.
type fanout struct{ a, b simulink.Observer }

func (f fanout) Exchanged(s simulink.Status)    { f.a.Exchanged(s); f.b.Exchanged(s) }
func (f fanout) Reply(ns int64, late bool) { f.a.Reply(ns, late); f.b.Reply(ns, late) }
func (f fanout) Dropped(r simulink.DropReason)  { f.a.Dropped(r); f.b.Dropped(r) }

// describe says where each link sends and waits.
func (a *app) describe(w io.Writer) {
	for _, lp := range a.links {
		mc := lp.master.Config()
		from, _ := lp.master.LocalAddr()
		at, _ := lp.master.ListenAddr()
		fmt.Fprintf(w, "link %s: %g Hz, sends %d-byte datagrams from %v to %v, waits for %d-byte replies on %v",
			lp.file.Name, lp.file.RateHz, simulink.DatagramSize(mc.MeasureLen), from, mc.Remote, simulink.DatagramSize(mc.CommandLen), at)
		if lp.partner != nil {
			fmt.Fprintf(w, " (built-in partner, %s controller)", orDefault(lp.file.Partner.Controller.Kind, "hold"))
		}
		fmt.Fprintln(w)
	}
	if a.server != nil {
		fmt.Fprintf(w, "metrics: http://%v/metrics\n", a.server.Addr())
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// statusLine is one link's live status.
func statusLine(lp *linkParts) string {
	st := lp.master.Stats()
	cmd := make([]float64, lp.file.Plant.Motors)
	lp.link.Command(cmd)
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-11s seq %-7d %-11s rtt %-9v ok %d/%d late %d timeout %d desync %d reconn %d drop %d overrun %d cmd [",
		lp.file.Name, lp.link.State(), st.Seq, st.LastStatus, st.LastLatency.Round(time.Microsecond),
		st.Status[simulink.OK], st.Status[simulink.OKNoDelay], st.Late, st.Status[simulink.Timeout], st.Status[simulink.Desync],
		st.Status[simulink.Reconnected], sumDrops(st), lp.link.Overruns())
	for i, v := range cmd {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%+.3f", v)
	}
	b.WriteByte(']')
	if lp.camera != nil {
		vec := make([]float64, 3**lp.file.UDP.NbMarkers)
		s := lp.camera.cam.Latest(vec)
		b.WriteString(" markers [")
		for i, v := range vec {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f", v)
		}
		fmt.Fprintf(&b, "] frame %d found %d", s.Frame, s.Found)
		if lp.file.Clock == "camera" {
			fmt.Fprintf(&b, " no-frame ticks %d", lp.link.MissedTriggers())
		}
		if s.Held {
			b.WriteString(" (held)")
		}
	}
	return b.String()
}

func sumDrops(st simulink.MasterStats) uint64 {
	var n uint64
	for _, d := range st.Dropped {
		n += d
	}
	return n
}

// serve runs the app until ctx is done (or duration elapses when > 0), with a
// live status view on a terminal.
func (a *app) serve(ctx context.Context, stdout io.Writer, duration time.Duration) error {
	ctx, cancel := withDuration(ctx, duration)
	defer cancel()
	var wg sync.WaitGroup
	viewCtx, stopView := context.WithCancel(ctx)
	if isTerminal(stdout) {
		wg.Go(func() { a.view(viewCtx, stdout) })
	}
	if a.notify != nil && a.notify.Enabled() {
		wg.Go(func() { a.systemd(viewCtx) })
	}
	err := a.sup.Serve(ctx)
	stopView()
	wg.Wait()
	for _, lp := range a.links {
		fmt.Fprintln(stdout, statusLine(lp))
	}
	a.close()
	return err
}

// view redraws one line per link until ctx is done.
func (a *app) view(ctx context.Context, w io.Writer) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	drawn := 0
	for {
		select {
		case <-ctx.Done():
			if drawn > 0 {
				// \r first: a ^C echoed by the terminal moved the cursor.
				fmt.Fprintf(w, "\r\033[%dA\033[J", drawn)
			}
			return
		case <-t.C:
		}
		var b strings.Builder
		if drawn > 0 {
			fmt.Fprintf(&b, "\r\033[%dA", drawn)
		}
		for _, lp := range a.links {
			b.WriteString("\r\033[K")
			b.WriteString(statusLine(lp))
			b.WriteByte('\n')
		}
		io.WriteString(w, b.String())
		drawn = len(a.links)
	}
}

// readyTicks is how many ticks every link runs before READY=1.
const readyTicks = 10

// systemd sends READY=1 once every link ticks, STOPPING=1 when ctx ends,
// and pings the watchdog only while the loops advance (docs/realtime.md §11).
func (a *app) systemd(ctx context.Context) {
	ticks := func() (total uint64, all bool) {
		all = true
		for _, lp := range a.links {
			n := lp.link.Ticks()
			total += n
			all = all && n >= readyTicks
		}
		return total, all
	}
	t := time.NewTicker(10 * time.Millisecond)
	for ready := false; !ready; {
		select {
		case <-ctx.Done():
			t.Stop()
			a.notify.Stopping()
			return
		case <-t.C:
		}
		if _, all := ticks(); all {
			ready = true
			if err := a.notify.Ready(fmt.Sprintf("%d link(s) ticking", len(a.links))); err != nil {
				a.logger.Warn("systemd notification failed", "err", err)
			}
		}
	}
	t.Stop()
	wd := &sdnotify.Watchdog{N: a.notify, Interval: sdnotify.WatchdogInterval(os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID"), os.Getpid()),
		Progress: func() uint64 { n, _ := ticks(); return n }}
	if err := wd.Serve(ctx); err != nil {
		a.logger.Warn("systemd watchdog failed", "err", err)
	}
	a.notify.Stopping()
}

// withDuration bounds ctx by d when d > 0 (the -duration flags).
func withDuration(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}
