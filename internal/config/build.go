package config

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/internal/atomicfile"
	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/internal/shadow"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
	"github.com/labbridge/bridge/tap"
	"github.com/labbridge/bridge/tap/payload"
)

// Env is what building a link takes from the process.
type Env struct {
	Clock  *realtime.Clock
	Logger *slog.Logger
	// Metrics registers the link's metrics; nil: none.
	Metrics *metrics.Set
	// Observer also sees every exchange of the link's master (a
	// benchmark's latency histogram); nil: none.
	Observer simulink.Observer
	// Partner adds the built-in Simulink stand-in of [link.partner].
	Partner bool
	// Faults, if set, makes the built-in partner misbehave (tests pause it).
	Faults *simulink.Faults
	// Loop also sees every tick of the link's loop (a benchmark's lateness
	// histogram); nil: none.
	Loop bridge.LoopObserver
	// Ephemeral binds the master on loopback ports the kernel picks (port
	// 0) instead of the configured ones, so that a simulation runs beside a
	// real Simulink. With Partner, the partner is told the bound ports;
	// without, the master sends to the configured remote until the caller
	// points it at its partner (Master.SetRemote).
	Ephemeral bool
	// Home is the user's home directory, where emioapi keeps a lab's
	// camera files; "" looks nowhere.
	Home string
	// Replay, with Partner, replaces [link.partner.controller]: the built-in
	// partner answers each measurement with what Replay computes, echoing
	// its seq (no one-tick delay), so that a command reaches the plant on
	// the tick it was recorded on (internal/replay).
	Replay simulink.Controller
	// Plant, if set, stands in for the configured plant's devices, which
	// are then not built (a replay that feeds recorded measurements to a
	// host); its layout must be the configuration's.
	Plant plant.Plant
	// Recorder also sees every tick of the link (a replay); with a tap,
	// both do.
	Recorder bridge.TickRecorder
	// PlantTime is bridge.LinkConfig.PlantTime (a replay's).
	PlantTime func(deadline int64) int64
	// Guard is the process's spin guard (Config.StartSpinGuard); nil: none.
	Guard *realtime.SpinGuard
}

// Built is one link, built and ready to be supervised: add Link to a
// bridge.Supervisor with Metrics and Deps, serve, then Close.
type Built struct {
	Config  *LinkTable
	Link    *bridge.Link
	Master  *simulink.Master
	Partner *simulink.Partner // nil unless Env.Partner
	Metrics *metrics.Link     // nil unless Env.Metrics
	// Faults watches what can go wrong with the link, for the log,
	// /healthz and systemd's STATUS=; it is one of Deps.
	Faults *fault.Watcher
	// Deps are the services the link depends on (its camera, its alert
	// reporter): the supervisor starts them before the link and stops them
	// after its halt.
	Deps   []bridge.Part
	Layout plant.Layout
	// Plant is the link's plant as built, for an observer that checks with
	// a type assertion what it offers besides plant.Plant (the Emio's
	// servo status for the status page). Safe only through methods the
	// plant documents as safe off the loop thread.
	Plant plant.Plant
	// Tap is the link's telemetry tap, nil when off.
	Tap *tap.Tap
	// Simulated is the simulated servo bus of an Emio on port = "sim" (for
	// tests that inject faults), else nil.
	Simulated *dxlsim.Bus
	// LabCamera is the virtual camera of an Emio with camera kind = "sim"
	// (for tests that unplug it), else nil.
	LabCamera *sim.LabCamera
	// Motors are the in-memory motors of a link of plant kind "sim" (for
	// a person or a test to jam one), else nil.
	Motors *sim.Motors
	// Shadow is the link's shadow twin ([link.shadow]), nil when off.
	Shadow *shadow.Twin
	// Meca500 is the simulated robot of a Meca500 link with address =
	// "sim" (for tests that inject faults), else nil.
	Meca500 *SimMeca500
	// VREP is the simulated scene of a V-REP link with address = "sim"
	// (for tests that inject faults), else nil.
	VREP *SimScene

	clock   *realtime.Clock // the link's: Page dates its state with it
	closers []func() error
	views   []view
	// world runs the simulated devices (the robot itself, as far as the
	// bridge can tell) from build to Close.
	world     sync.WaitGroup
	worldCtx  context.Context
	stopWorld context.CancelFunc
}

// builder is the state of one Build, handed to the plant's kind.
type builder struct {
	env   Env
	link  *LinkTable
	built *Built
	sim   *dxlsim.Bus
	lab   *sim.LabCamera
	// motors are the in-memory motors of a plant of kind sim.
	motors *sim.Motors
}

// parts are what a kind builds.
type parts struct {
	plant plant.Plant
	// openErr: the device could not be opened yet; the link starts
	// degraded and the supervisor keeps trying.
	openErr error
	// trigger or pacer paces the loop when the link's clock is one of the
	// plant's: a tick on each event, or deadlines the plant's clock places.
	trigger bridge.Trigger
	pacer   bridge.Pacer
	// views report on parts that are not services (a camera lock).
	views []view
	// probes are the faults of the plant's kind (a hot servo, a camera
	// down), watched beside the link's own.
	probes  []fault.Probe
	deps    []bridge.Part
	closers []func() error
}

// world runs a simulated device until Close.
func (b *builder) world(name string, serve func(context.Context) error) {
	ctx := b.worldCtx()
	log := b.env.Logger
	b.built.world.Go(func() {
		if err := serve(ctx); err != nil {
			log.Error("simulated device stopped", "link", b.link.Name, "device", name, "err", err)
		}
	})
}

func (b *builder) worldCtx() context.Context {
	if b.built.stopWorld == nil {
		b.built.worldCtx, b.built.stopWorld = context.WithCancel(context.Background())
	}
	return b.built.worldCtx
}

// Build builds the link: its Simulink master (and built-in partner), its
// metrics, its plant and the services the plant needs. Devices are opened;
// one that cannot be opened yet is logged and the link starts degraded.
// Nothing runs until the supervisor serves the link, except simulated
// devices, which run from here to Close as real hardware would.
func (l *LinkTable) Build(env Env) (bb *Built, err error) {
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	if env.Clock == nil {
		env.Clock = realtime.NewClock()
	}
	b := &builder{env: env, link: l, built: &Built{Config: l, Layout: l.Plant.Layout(), clock: env.Clock}}
	built := b.built
	defer func() {
		if err != nil {
			built.Close()
			err = fmt.Errorf("link %q: %w", l.Name, err)
		}
	}()
	mcfg := l.MasterConfig()
	if env.Ephemeral {
		// Port 0: the kernel picks each port at the bind, and the partner
		// is told the bound ones, so no port is free between choosing it
		// and binding it.
		lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
		mcfg.Bind, mcfg.Listen = netip.AddrPortFrom(lo, 0), netip.AddrPortFrom(lo, 0)
	}
	var obs simulink.Observer
	if env.Metrics != nil {
		if built.Metrics, err = env.Metrics.Link(l.Name, l.Period()); err != nil {
			return nil, err
		}
		obs = built.Metrics
	}
	switch {
	case env.Observer != nil && obs != nil:
		obs = fanout{obs, env.Observer}
	case env.Observer != nil:
		obs = env.Observer
	}
	if built.Master, err = simulink.NewMaster(mcfg, env.Clock, obs); err != nil {
		return nil, err
	}
	built.closers = append(built.closers, built.Master.Close)
	if env.Partner {
		p, err := l.newPartner(built.Master, env)
		if err != nil {
			return nil, err
		}
		built.closers = append(built.closers, p.Close)
		built.Partner = p
		if err := built.Master.SetRemote(p.Addr()); err != nil {
			return nil, err
		}
	}
	// getsockopt reports twice what was granted (socket(7)).
	if rs := built.Master.ReplySocket(); !rs.KernelDrops {
		env.Logger.Warn("the kernel does not report the datagrams it drops on this socket; a flood will not show in the metrics", "link", l.Name)
	} else if rs.BufferAsked > 0 && rs.Buffer < 2*rs.BufferAsked {
		env.Logger.Info("the reply socket's receive buffer is smaller than asked: raise net.core.rmem_max, or give the service CAP_NET_ADMIN",
			"link", l.Name, "asked_bytes", rs.BufferAsked, "granted_bytes", rs.Buffer/2)
	}
	var ps *parts
	if env.Plant != nil {
		ps = &parts{plant: env.Plant}
	} else {
		ps, err = l.Plant.build(b)
	}
	built.Simulated, built.LabCamera, built.Motors = b.sim, b.lab, b.motors
	if ps != nil {
		built.closers = append(built.closers, ps.closers...)
	}
	if err != nil {
		return nil, err
	}
	built.Deps = ps.deps
	built.Plant = ps.plant
	lcfg := l.LinkConfig()
	lcfg.Loop.Guard = guardOf(l, env)
	lcfg.Loop.Trigger = ps.trigger
	lcfg.PlantTime = env.PlantTime
	lcfg.Loop.Pacer = ps.pacer
	built.views = ps.views
	var loopObs bridge.LoopObserver
	var cmdObs bridge.CommandObserver
	if built.Metrics != nil {
		loopObs, cmdObs = threadMetrics{built.Metrics}, built.Metrics
	}
	switch {
	case env.Loop != nil && loopObs != nil:
		loopObs = loopFanout{loopObs, env.Loop}
	case env.Loop != nil:
		loopObs = env.Loop
	}
	if l.Tap.Address != "" {
		tp, err := l.newTap(env, built.Layout, "")
		if err != nil {
			return nil, err
		}
		built.closers = append(built.closers, tp.Close)
		built.Tap, lcfg.Recorder = tp, tp
		built.Deps = append(built.Deps, bridge.Part{Name: "tap", Service: tp})
	}
	var twinProbe []fault.Probe
	if l.Shadow.Enabled && env.Plant == nil {
		var out bridge.TickRecorder
		if l.Tap.Address != "" {
			// The twin's divergence beside the link's ticks, as a stream of
			// its own: bridge record writes it as LINK_shadow.
			tt, err := l.newTap(env, built.Layout, payload.TwinSuffix)
			if err != nil {
				return nil, err
			}
			built.closers = append(built.closers, tt.Close)
			built.Deps = append(built.Deps, bridge.Part{Name: "shadow tap", Service: tt})
			out = tt
		}
		tw, probe, err := l.newTwin(b, out)
		if err != nil {
			return nil, err
		}
		built.Shadow, twinProbe = tw, []fault.Probe{probe}
		if env.Metrics != nil {
			if err := env.Metrics.Shadow(l.Name, twinValues(tw), twinReading(tw)); err != nil {
				return nil, err
			}
		}
		lcfg.Recorder = addRecorder(lcfg.Recorder, tw)
		built.Deps = append(built.Deps, bridge.Part{Name: "shadow", Service: tw})
	}
	lcfg.Recorder = addRecorder(lcfg.Recorder, env.Recorder)
	if built.Link, err = bridge.NewLink(lcfg, ps.plant, built.Master, env.Clock, loopObs, cmdObs, env.Logger); err != nil {
		return nil, err
	}
	if built.Metrics != nil {
		built.Metrics.CountSpinBreaks(built.Link.SpinBreaks)
	}
	probes := append(append(linkProbes(built.Link, built.Master), ps.probes...), twinProbe...)
	fcfg := fault.Config{Link: l.Name, Logger: env.Logger, Probes: probes}
	if env.Metrics != nil {
		names := make([]string, len(probes))
		for i, p := range probes {
			names[i] = p.Name
		}
		if fcfg.Sink, err = env.Metrics.Faults(l.Name, names); err != nil {
			return nil, err
		}
	}
	if built.Faults, err = fault.New(fcfg); err != nil {
		return nil, err
	}
	built.Deps = append(built.Deps, bridge.Part{Name: "faults", Service: built.Faults})
	if built.Metrics != nil {
		// The supervisor counts a restart of any part by its name: every
		// series exists at 0 from the start.
		for _, d := range built.Deps {
			built.Metrics.Devices(d.Name)
		}
	}
	if ps.openErr != nil {
		// No device yet: the link starts degraded and the supervisor keeps
		// trying to open it while the loop ticks.
		env.Logger.Warn("device not available; the link starts degraded and the bridge keeps trying", "link", l.Name, "err", ps.openErr)
		built.Link.DeviceFailed(ps.openErr)
	}
	return built, nil
}

// Descriptor is what the link's tap says of it (docs/tap.md §4): its name,
// rate and every value of its plant's layout; a recording's columns are
// named from it (record.Columns).
func (l *LinkTable) Descriptor() payload.Descriptor { return l.descriptor(l.Plant.Layout()) }

func (l *LinkTable) descriptor(layout plant.Layout) payload.Descriptor {
	fields := func(fs []plant.Field) []payload.Field {
		out := make([]payload.Field, len(fs))
		for i, f := range fs {
			out[i] = payload.Field{Name: f.Name, Unit: f.Unit, Len: f.Len}
		}
		return out
	}
	return payload.Descriptor{Link: l.Name, RateHz: l.RateHz, Measure: fields(layout.Measure), Command: fields(layout.Command)}
}

// newTap makes the link's telemetry tap: its descriptor names the link and
// every value of the layout (docs/tap.md §4). A suffix makes the tap of a
// stream beside the link's (payload.TwinSuffix: the twin's divergence per measured
// value, no command).
func (l *LinkTable) newTap(env Env, layout plant.Layout, suffix string) (*tap.Tap, error) {
	d := l.descriptor(layout)
	if suffix != "" {
		d.Link, d.Command = d.Link+suffix, nil
	}
	cfg := tap.Config{
		Address: netip.MustParseAddrPort(l.Tap.Address), PayloadType: uint8(l.Tap.PayloadType), Clock: env.Clock,
		Descriptor: d,
	}
	if env.Metrics != nil {
		obs, err := env.Metrics.Tap(d.Link)
		if err != nil {
			return nil, err
		}
		cfg.Observer = obs
	}
	return tap.New(cfg)
}

// threadMetrics is the link's metrics as the loop's observer, with the loop
// thread's real-time settings exported.
type threadMetrics struct{ *metrics.Link }

// ThreadSettings implements bridge.ThreadObserver.
func (m threadMetrics) ThreadSettings(s realtime.Settings) {
	cpus := ""
	if s.CPU >= 0 {
		cpus = strconv.Itoa(s.CPU)
	}
	m.RealTime(metrics.RealTimeInfo{Policy: s.Policy, Priority: s.Priority, CPUs: cpus, DMALatency: s.DMALatency, LockedMemory: s.LockedMemory})
}

// Observer is what the supervisor tells of the link (its metrics), or nil:
// pass it to bridge.Supervisor.AddLink.
func (b *Built) Observer() bridge.LinkObserver {
	if b.Metrics == nil {
		return nil // not a nil *metrics.Link in an interface
	}
	return b.Metrics
}

// Close stops the simulated devices and releases what the link holds
// (sockets, ports, the camera library). Call it after the supervisor has
// returned. It is idempotent.
func (b *Built) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	if b.stopWorld != nil {
		b.stopWorld()
	}
	b.world.Wait()
	return errors.Join(errs...)
}

// Describe says, in one line for a person, where the link sends and waits.
func (b *Built) Describe() string {
	mc := b.Master.Config()
	from, _ := b.Master.LocalAddr()
	at, _ := b.Master.ListenAddr()
	s := fmt.Sprintf("link %s: %g Hz, sends %d-byte datagrams from %v to %v, waits for %d-byte replies on %v",
		b.Config.Name, b.Config.RateHz, simulink.DatagramSize(mc.MeasureLen), from, mc.Remote, simulink.DatagramSize(mc.CommandLen), at)
	if b.Partner != nil {
		s += fmt.Sprintf(" (built-in partner, %s controller)", cmp.Or(b.Config.Partner.Controller.Kind, "hold"))
	}
	return s
}

// Status lines of the link's dependencies that have one (the camera's
// newest frame), for a person watching.
func (b *Built) Status() []string {
	var out []string
	for _, d := range b.Deps {
		if s, ok := d.Service.(interface{ Status() string }); ok {
			out = append(out, s.Status())
		}
	}
	for _, v := range b.views {
		out = append(out, v.Status())
	}
	return out
}

// Summary is the account of the run that the link's parts give at its end
// (a camera: its tracker's time and the markers' age at the send; a camera
// lock: the rate it found), one line each.
func (b *Built) Summary() []string {
	var out []string
	for _, d := range b.Deps {
		if s, ok := d.Service.(interface{ Summary() string }); ok {
			out = append(out, s.Summary())
		}
	}
	for _, v := range b.views {
		out = append(out, v.Summary())
	}
	return out
}

// view is a part of a link that is not a service but has something to say:
// a short status for the live line, a summary at the end.
type view interface {
	Status() string
	Summary() string
}

// newPartner builds the built-in partner of [link.partner], where the master
// sends: Simulink's side of the emioapi ports, or, Ephemeral, a loopback port
// the kernel picks, accepting from and replying to the master's bound ports.
func (l *LinkTable) newPartner(m *simulink.Master, env Env) (*simulink.Partner, error) {
	ctl, delay := env.Replay, false
	if ctl == nil {
		var err error
		if ctl, err = l.Controller(); err != nil {
			return nil, err
		}
		delay = l.Partner.Delay
	}
	mcfg := m.Config()
	listen := mcfg.Remote
	accept := netip.AddrPortFrom(mcfg.Remote.Addr(), mcfg.Bind.Port())
	replyTo := netip.AddrPortFrom(mcfg.Remote.Addr(), mcfg.Listen.Port())
	if env.Ephemeral {
		from, err := m.LocalAddr()
		if err != nil {
			return nil, err
		}
		at, err := m.ListenAddr()
		if err != nil {
			return nil, err
		}
		unmap := func(ap netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) }
		listen = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
		accept, replyTo = unmap(from), unmap(at)
	}
	return simulink.NewPartner(simulink.PartnerConfig{
		Listen: listen, Accept: accept, ReplyTo: replyTo,
		MeasureLen: mcfg.MeasureLen, CommandLen: mcfg.CommandLen,
		Delay: delay, Controller: ctl, Faults: env.Faults, Logger: env.Logger.With("partner", l.Name),
		Priority: partnerPriority(l.Loop.Priority),
		// With its loop: a pinned loop's CPU holds the link's real-time
		// threads, and confinement keeps the process's others off it.
		Pin: *l.Loop.CPU >= 0, CPU: *l.Loop.CPU,
		// A partner at its loop's priority, and under SCHED_DEADLINE with
		// it: it is a locked Go thread as the loop is, with the same waits.
		Budget: l.budget, BudgetPeriod: l.Period(),
		Guard: guardOf(l, env), Period: l.Period(),
	})
}

// PartnerPriority is the SCHED_FIFO priority the link's built-in partner
// runs its receive thread at (partnerPriority): for `bridge partner` to
// stand in for it.
func (l *LinkTable) PartnerPriority() int { return partnerPriority(l.Loop.Priority) }

// partnerPriority is the SCHED_FIFO priority of a built-in partner's
// receive thread: its loop's, 0 (the netpoller) when the loop is not
// real-time either. Not one below: the Go runtime's own waits between
// threads (a goroutine leaving a system call while another thread holds it
// to take its P) spin with sched_yield, which gives the CPU only to threads
// of the same or a higher priority; a loop spinning on a lower-priority
// partner it had preempted waited until the kernel's real-time throttling
// stopped it, 0.5–0.95 s (docs/realtime.md §17).
func partnerPriority(loop int) int {
	return max(loop, 0)
}

// MasterConfig returns the link's Simulink master configuration: the
// endpoints of [link.udp] and the lengths of the plant.
func (l *LinkTable) MasterConfig() simulink.MasterConfig {
	lay := l.Plant.Layout()
	return simulink.MasterConfig{
		Remote:            netip.MustParseAddrPort(l.UDP.Remote),
		Bind:              netip.MustParseAddrPort(l.UDP.Bind),
		Listen:            netip.MustParseAddrPort(l.UDP.Listen),
		MeasureLen:        lay.MeasureLen(),
		CommandLen:        lay.CommandLen(),
		RecvTimeout:       l.UDP.RecvTimeout.Duration,
		HandshakeInterval: l.UDP.HandshakeInterval.Duration,
		MaxTimeouts:       l.UDP.MaxTimeouts,
		MaxDesyncs:        l.UDP.MaxDesyncs,
		RecvBuffer:        l.UDP.RecvBuffer,
		PinPartner:        *l.UDP.PinPartner,
	}
}

// LinkConfig returns the bridge.LinkConfig of a validated link.
func (l *LinkTable) LinkConfig() bridge.LinkConfig {
	apply, _ := bridge.ParseApplyMode(l.Apply)
	halt, _ := plant.ParseHaltPolicy(l.Halt)
	return bridge.LinkConfig{
		Name: l.Name,
		Loop: bridge.LoopConfig{
			Period:     l.Period(),
			Priority:   l.Loop.Priority,
			CPU:        *l.Loop.CPU,
			Spin:       l.Loop.Spin.Duration,
			AutoSpin:   l.Loop.Spin.Auto,
			Lead:       l.Loop.Lead.Duration,
			AutoLead:   l.Loop.Lead.Auto,
			LockMemory: l.Loop.LockMemory,
			DMALatency: *l.Loop.DMALatency,
			Budget:     l.budget,
		},
		Apply:  apply,
		Halt:   halt,
		Limits: l.Plant.Limits(),
		Margin: l.Margin.Duration,
	}
}

// Dims maps the plant's layout onto the built-in partner's controllers:
// hold commands back the measured field named like the command (the
// Emio's angles: the robot stays put), the Jacobian regulates the measured
// field "markers".
func (l *LinkTable) Dims() simulink.Dims {
	return DimsOf(l.Plant.Layout())
}

// DimsOf is Dims for any layout.
func DimsOf(lay plant.Layout) simulink.Dims {
	d := simulink.Dims{MeasureLen: lay.MeasureLen(), CommandLen: lay.CommandLen()}
	if len(lay.Command) == 1 {
		if off, n, ok := lay.Find(lay.Command[0].Name); ok && n == d.CommandLen {
			d.Hold = simulink.Span{Off: off, Len: n}
		}
	}
	// What the partner's controllers regulate: the Emio's markers, or a
	// robot arm's joints.
	for _, name := range []string{"markers", "joints"} {
		if off, n, ok := lay.Find(name); ok {
			d.Feature = simulink.Span{Off: off, Len: n}
			break
		}
	}
	return d
}

// Controller builds the controller of [link.partner.controller] for the
// plant's shape.
func (l *LinkTable) Controller() (simulink.Controller, error) {
	return simulink.NewController(l.Partner.Controller, l.Dims(), l.RateHz)
}

// recorders hands every tick to two recorders.
type recorders [2]bridge.TickRecorder

// addRecorder is a recorder that hands every tick to r and to add.
func addRecorder(r, add bridge.TickRecorder) bridge.TickRecorder {
	switch {
	case add == nil:
		return r
	case r == nil:
		return add
	}
	return recorders{r, add}
}

func (r recorders) RecordTick(t *bridge.TickRecord) {
	r[0].RecordTick(t)
	r[1].RecordTick(t)
}

// loopFanout sends the loop's observations to two observers.
type loopFanout struct{ a, b bridge.LoopObserver }

func (f loopFanout) ObserveTick(lateNs, workNs int64) {
	f.a.ObserveTick(lateNs, workNs)
	f.b.ObserveTick(lateNs, workNs)
}
func (f loopFanout) ObserveOverrun(periods int) {
	f.a.ObserveOverrun(periods)
	f.b.ObserveOverrun(periods)
}

// ObserveLead passes the send gate on to whichever observer records it.
func (f loopFanout) ObserveLead(leadNs, ageNs int64, overran bool) {
	for _, o := range [2]bridge.LoopObserver{f.a, f.b} {
		if lo, ok := o.(bridge.LeadObserver); ok {
			lo.ObserveLead(leadNs, ageNs, overran)
		}
	}
}

// fanout sends the master's observations to two observers.
type fanout struct{ a, b simulink.Observer }

func (f fanout) Exchanged(s simulink.Status)   { f.a.Exchanged(s); f.b.Exchanged(s) }
func (f fanout) Reply(ns int64, late bool)     { f.a.Reply(ns, late); f.b.Reply(ns, late) }
func (f fanout) Dropped(r simulink.DropReason) { f.a.Dropped(r); f.b.Dropped(r) }

// DroppedN implements simulink.DropCounter: a flood is one call each.
func (f fanout) DroppedN(r simulink.DropReason, n uint64) {
	simulink.NotifyDropped(f.a, r, n)
	simulink.NotifyDropped(f.b, r, n)
}

// writeFile writes a file beside the configured ones whole or not at all:
// a failed write leaves the one that was there.
func writeFile(path string, write func(io.Writer) error) error {
	if err := atomicfile.Write(path, 0o644, write); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// guardOf is the spin guard of the link's loop and partner threads: env's,
// unless the link turns it off (loop.spin_guard = false).
func guardOf(l *LinkTable, env Env) *realtime.SpinGuard {
	if l.Loop.SpinGuard != nil && !*l.Loop.SpinGuard {
		return nil
	}
	return env.Guard
}
