package config

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// VREPPlant is [link.plant] of kind "vrep": a robot in a V-REP or
// CoppeliaSim scene, through the seed's AZ socket or CoppeliaSim's ZMQ
// remote API (docs/vrep.md), or a simulated scene in this process with
// address = "sim".
type VREPPlant struct {
	KindName string `toml:"kind"`
	// Protocol: "az" (the seed's Lua script) or "zmq" (the remote API).
	Protocol string `toml:"protocol"`
	// Address is the scene's host:port, or "sim".
	Address string `toml:"address"`
	// Timeout bounds one tick's exchange (default: the link's period).
	Timeout     Duration `toml:"timeout"`
	MaxFailures *int     `toml:"max_failures"`
	VelTimeout  Duration `toml:"vel_timeout"`
	// Measure and Command map an AZ link's vectors.
	Measure []string `toml:"measure"`
	Command []string `toml:"command"`
	// Joints, Mode, Stepping, Start and ClientTimeout are the ZMQ's.
	Joints        []string `toml:"joints"`
	Mode          string   `toml:"mode"`
	Stepping      *bool    `toml:"stepping"`
	Start         *bool    `toml:"start"`
	ClientTimeout Duration `toml:"client_timeout"`
	// Min and Max bound each command element (rad/s, or rad in position
	// mode); the link clamps to them.
	Min []float64 `toml:"min"`
	Max []float64 `toml:"max"`
	// Sim is the simulated scene of address = "sim".
	Sim VREPSim `toml:"sim"`

	protocol vrep.Protocol
	mode     vrep.Mode
	zmqKeys  []string // the keys of protocol "zmq" the file set
}

// VREPSim is [link.plant.sim]: the simulated scene.
type VREPSim struct {
	// Step is the simulation time step (50 ms).
	Step Duration `toml:"step"`
}

// Kind implements Plant.
func (p *VREPPlant) Kind() string { return "vrep" }

func (p *VREPPlant) defaults(l *Link) {
	p.zmqKeys = p.zmqKeys[:0]
	for _, k := range []struct {
		key string
		set bool
	}{{"joints", p.Joints != nil}, {"mode", p.Mode != ""}, {"stepping", p.Stepping != nil}, {"start", p.Start != nil},
		{"client_timeout", p.ClientTimeout.Duration != 0}} {
		if k.set {
			p.zmqKeys = append(p.zmqKeys, k.key)
		}
	}
	if p.Protocol == "" {
		p.Protocol = "az"
	}
	p.protocol, _ = vrep.ParseProtocol(p.Protocol)
	if p.Address == "" {
		p.Address = vrep.DefaultAZAddress
		if p.protocol == vrep.ZMQ {
			p.Address = vrep.DefaultZMQAddress
		}
	}
	if p.Mode == "" {
		p.Mode = "velocity"
	}
	p.mode, _ = vrep.ParseMode(p.Mode)
	period := time.Second
	if l.RateHz > 0 && !math.IsInf(l.RateHz, 0) {
		period = l.Period()
	}
	// The worker has a whole period for an exchange before the next
	// tick's supersedes it.
	defaultDuration(&p.Timeout, min(max(period, time.Millisecond), 10*time.Second))
	if p.MaxFailures == nil {
		p.MaxFailures = new(3)
	}
	defaultDuration(&p.VelTimeout, min(max(3*period, 100*time.Millisecond), time.Minute))
	if p.protocol == vrep.AZ {
		if p.Measure == nil {
			p.Measure = slices.Clone(vrep.AZMeasureNames)
		}
		if p.Command == nil {
			p.Command = slices.Clone(vrep.AZCommandNames)
		}
	} else if p.Joints == nil {
		p.Joints = slices.Clone(vrep.DefaultJoints)
	}
	setDefault(&p.Stepping, true)
	setDefault(&p.Start, true)
	defaultDuration(&p.ClientTimeout, 5*time.Second)
	n := p.commandLen()
	if n > vrep.MaxJoints {
		return // validate refuses the length before anything is made from it
	}
	limit := 10.0 // rad/s: a wheel at about 1.6 turns a second
	if p.mode == vrep.Position {
		limit = math.Pi
	}
	if p.Min == nil {
		p.Min = repeat(-limit, n)
	}
	if p.Max == nil {
		p.Max = repeat(limit, n)
	}
	defaultDuration(&p.Sim.Step, 50*time.Millisecond)
}

func (p *VREPPlant) commandLen() int {
	if p.protocol == vrep.ZMQ {
		return len(p.Joints)
	}
	return len(p.Command)
}

func (p *VREPPlant) validate(l *Link, v *validator) {
	if _, err := vrep.ParseProtocol(p.Protocol); err != nil {
		v.bad("plant.protocol", quote(p.Protocol), `"az" (the seed's Lua script) or "zmq" (CoppeliaSim's ZMQ remote API)`)
		return
	}
	if _, err := vrep.ParseMode(p.Mode); err != nil {
		v.bad("plant.mode", quote(p.Mode), `"velocity" or "position"`)
		return
	}
	if p.Address != "sim" {
		if host, port, err := net.SplitHostPort(p.Address); err != nil || host == "" || port == "" {
			v.bad("plant.address", quote(p.Address), fmt.Sprintf(`"sim", or host:port such as %q`, p.defaultAddress()))
		}
	}
	for _, d := range []struct {
		key    string
		d      Duration
		lo, hi time.Duration
	}{
		{"timeout", p.Timeout, 100 * time.Microsecond, 10 * time.Second},
		{"vel_timeout", p.VelTimeout, time.Millisecond, time.Minute},
		{"client_timeout", p.ClientTimeout, time.Second, time.Hour},
		{"sim.step", p.Sim.Step, time.Millisecond, time.Second},
	} {
		if d.d.Duration < d.lo || d.d.Duration > d.hi {
			v.bad("plant."+d.key, d.d.Duration, fmt.Sprintf("%v..%v", d.lo, d.hi))
		}
	}
	if n := *p.MaxFailures; n < 1 || n > 1000 {
		v.bad("plant.max_failures", n, "1..1000 exchanges in a row")
	}
	if l.RateHz > 0 && !math.IsInf(l.RateHz, 0) && p.VelTimeout.Duration <= l.Period() {
		v.bad("plant.vel_timeout", p.VelTimeout.Duration, fmt.Sprintf("longer than the link's period %v, or the wheels stop between ticks (3 periods is right)", l.Period()))
	}
	if p.protocol == vrep.AZ {
		for _, k := range p.zmqKeys {
			v.bad("plant."+k, "set", `nothing with protocol = "az" (it belongs to protocol = "zmq"); remove it`)
		}
	}
	if p.protocol == vrep.ZMQ && (p.Measure != nil || p.Command != nil) {
		v.bad("plant.measure/command", "set", `nothing with protocol = "zmq": its vectors follow joints`)
	}
	if p.protocol == vrep.AZ {
		validateNames(v, "plant.measure", p.Measure, vrep.AZMeasureNames, 1)
		validateNames(v, "plant.command", p.Command, vrep.AZCommandNames, len(vrep.AZCommandNames))
	} else {
		if len(p.Joints) < 1 || len(p.Joints) > vrep.MaxJoints {
			v.bad("plant.joints", len(p.Joints), fmt.Sprintf("1..%d object paths", vrep.MaxJoints))
			return // a long list is not searched for duplicates
		}
		for i, j := range p.Joints {
			if j == "" || strings.ContainsAny(j, "\x00\n") || slices.Index(p.Joints, j) != i {
				v.bad(fmt.Sprintf("plant.joints[%d]", i), quote(j), `an object path of the scene, once, such as "/MotorLeft"`)
			}
		}
	}
	n := p.commandLen()
	if len(p.Min) != n || len(p.Max) != n {
		v.bad("plant.min/max", fmt.Sprint(p.Min, p.Max), fmt.Sprintf("%d values each, one per command element", n))
		return
	}
	for j := range p.Min {
		if !(p.Min[j] <= p.Max[j]) || math.Abs(p.Min[j]) > math.MaxFloat32 || math.Abs(p.Max[j]) > math.MaxFloat32 {
			v.bad(fmt.Sprintf("plant.min[%d]/max[%d]", j, j), fmt.Sprint(p.Min[j], " ", p.Max[j]), "finite values with min ≤ max")
		}
	}
}

func (p *VREPPlant) defaultAddress() string {
	if p.protocol == vrep.ZMQ {
		return vrep.DefaultZMQAddress
	}
	return vrep.DefaultAZAddress
}

// validateNames checks a mapping of an AZ link: names of allowed, each at
// most once, at least least of them.
func validateNames(v *validator, key string, names, allowed []string, least int) {
	if len(names) > len(allowed) {
		v.bad(key, fmt.Sprintf("%q", names), fmt.Sprintf("%d to %d of %s", least, len(allowed), strings.Join(allowed, ", ")))
		return // a long list is not searched for duplicates
	}
	for i, n := range names {
		if !slices.Contains(allowed, n) {
			want := "one of " + strings.Join(allowed, ", ")
			if c := Closest(n, allowed); c != "" {
				want += fmt.Sprintf(" (did you mean %q?)", c)
			}
			v.bad(fmt.Sprintf("%s[%d]", key, i), quote(n), want)
		} else if slices.Index(names, n) != i {
			v.bad(fmt.Sprintf("%s[%d]", key, i), quote(n), "each element once")
		}
	}
	if len(names) < least {
		v.bad(key, fmt.Sprintf("%q", names), fmt.Sprintf("%d to %d of %s", least, len(allowed), strings.Join(allowed, ", ")))
	}
}

// sceneConfig is the vrep.Config of the table, without the address of a
// simulated scene and without observer.
func (p *VREPPlant) sceneConfig() vrep.Config {
	lim := make([][2]float64, min(len(p.Min), len(p.Max)))
	for i := range lim {
		lim[i] = [2]float64{p.Min[i], p.Max[i]}
	}
	return vrep.Config{
		Protocol: p.protocol, Address: p.Address, Timeout: p.Timeout.Duration, MaxFailures: *p.MaxFailures,
		Measure: p.Measure, Command: p.Command, Joints: p.Joints, Mode: p.mode,
		Stepping: *p.Stepping, Start: *p.Start, ClientTimeout: p.ClientTimeout.Duration,
		Limits: lim, VelTimeout: p.VelTimeout.Duration,
	}
}

// Layout implements Plant.
func (p *VREPPlant) Layout() plant.Layout { return vrep.Layout(p.sceneConfig()) }

// Limits implements Plant.
func (p *VREPPlant) Limits() []bridge.Limit { return limits(p.Min, p.Max) }

// Clocks implements Plant: a timer only.
func (p *VREPPlant) Clocks() []string { return nil }

// Simulated implements Plant.
func (p *VREPPlant) Simulated() bool { return p.Address == "sim" }

// Summary implements Plant.
func (p *VREPPlant) Summary() string {
	where := "a simulated scene"
	if p.Address != "sim" {
		where = "the scene at " + p.Address
	}
	if p.protocol == vrep.ZMQ {
		step := "free-running"
		if *p.Stepping {
			step = "in lock step"
		}
		return fmt.Sprintf("vrep plant: %s over the ZMQ remote API, %d joint(s) by %s, %s", where, len(p.Joints), p.Mode, step)
	}
	return fmt.Sprintf("vrep plant: %s over the AZ socket, measure %v, command %v, velocity timeout %v",
		where, p.Measure, p.Command, p.VelTimeout.Duration)
}

func (p *VREPPlant) build(b *builder) (*parts, error) {
	log := b.env.Logger.With("link", b.link.Name)
	cfg := p.sceneConfig()
	cfg.Logger = log
	cfg.Name = b.link.Name
	if p.Address == "sim" {
		addr, err := p.simulatedScene(b)
		if err != nil {
			return nil, err
		}
		cfg.Address = addr
	}
	if b.env.Metrics != nil {
		var names []string
		for _, r := range vrep.Reasons() {
			names = append(names, r.String())
		}
		m, err := b.env.Metrics.Scene(b.link.Name, b.link.Period(), names)
		if err != nil {
			return nil, err
		}
		cfg.Observer = sceneObserver{m}
	}
	scene, err := vrep.New(cfg)
	if err != nil {
		return nil, err
	}
	ps := &parts{plant: scene}
	ps.probes = append(ps.probes, sceneProbes(scene, p.protocol == vrep.ZMQ && *p.Stepping)...)
	ps.closers = append(ps.closers, scene.Close)
	ps.deps = append(ps.deps, bridge.Part{Name: "scene exchange", Service: scene})
	// Connect now; a scene not started yet leaves the link degraded and
	// the supervisor polls it.
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout.Duration+time.Second)
	defer cancel()
	ps.openErr = scene.Open(ctx)
	return ps, nil
}

// simulatedScene serves a simulated scene on a free loopback port until the
// built link is closed, and returns its address.
func (p *VREPPlant) simulatedScene(b *builder) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("config: a port for the simulated scene: %w", err)
	}
	slog := b.env.Logger.With("link", b.link.Name, "device", "simulated scene")
	if p.protocol == vrep.ZMQ {
		scene, err := vrepsim.NewZMQ(vrepsim.ZMQConfig{Joints: p.Joints, Step: p.Sim.Step.Duration, Logger: slog})
		if err != nil {
			ln.Close()
			return "", err
		}
		b.built.VREP = &SimScene{ZMQ: scene, addr: ln.Addr().String()}
		b.world("simulated scene", func(ctx context.Context) error { return scene.Serve(ctx, ln) })
	} else {
		scene, err := vrepsim.NewAZ(vrepsim.AZConfig{Step: p.Sim.Step.Duration, Logger: slog})
		if err != nil {
			ln.Close()
			return "", err
		}
		b.built.VREP = &SimScene{AZ: scene, addr: ln.Addr().String()}
		b.world("simulated scene", func(ctx context.Context) error { return scene.Serve(ctx, ln) })
	}
	return ln.Addr().String(), nil
}

// SimScene is the simulated scene of a V-REP link with address = "sim":
// one of AZ and ZMQ is set.
type SimScene struct {
	AZ   *vrepsim.AZ
	ZMQ  *vrepsim.ZMQ
	addr string
}

// Addr is the simulated scene's port.
func (s *SimScene) Addr() string { return s.addr }

// World is the simulated robot.
func (s *SimScene) World() *vrepsim.World {
	if s.ZMQ != nil {
		return s.ZMQ.World()
	}
	return s.AZ.World()
}

// Inject makes the scene misbehave (tests).
func (s *SimScene) Inject(f vrepsim.Fault, n int) {
	if s.ZMQ != nil {
		s.ZMQ.Inject(f, n)
		return
	}
	s.AZ.Inject(f, n)
}

// sceneObserver hands the scene's observations to its metrics.
type sceneObserver struct{ m *metrics.Scene }

func (o sceneObserver) Exchanged(rtt time.Duration, t float64) { o.m.Exchanged(rtt, t) }
func (o sceneObserver) Failed(r vrep.Reason)                   { o.m.Failed(int(r)) }
func (o sceneObserver) Reconnected()                           { o.m.Reconnected() }
func (o sceneObserver) Restarted()                             { o.m.Restarted() }
func (o sceneObserver) Superseded()                            { o.m.Superseded() }
func (o sceneObserver) DeadmanStop()                           { o.m.DeadmanStop() }

// unwritten: over the AZ protocol, the ZMQ keys the defaults filled stay out
// of a written file, which would be refused with them.
func (p *VREPPlant) unwritten() []string {
	if p.protocol == vrep.AZ {
		return []string{"joints", "mode", "stepping", "start", "client_timeout"}
	}
	return nil
}
