package config

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/shadow"
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
	Sim VREPSimTable `toml:"sim"`

	protocol vrep.Protocol
	mode     vrep.Mode
	zmqKeys  []string // the keys of protocol "zmq" the file set
}

// VREPSimTable is [link.plant.sim]: the simulated scene.
type VREPSimTable struct {
	// Step is the simulation time step (50 ms).
	Step Duration `toml:"step"`
}

// Kind implements Plant.
func (p *VREPPlant) Kind() string { return "vrep" }

func (p *VREPPlant) defaults(l *LinkTable) {
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
		p.Mode = vrep.Velocity.String()
	}
	p.mode, _ = vrep.ParseMode(p.Mode)
	d := vrep.DefaultConfig(p.protocol, p.mode, linkPeriod(l))
	if p.Address == "" {
		p.Address = d.Address
	}
	defaultDuration(&p.Timeout, d.Timeout)
	if p.MaxFailures == nil {
		p.MaxFailures = new(d.MaxFailures)
	}
	defaultDuration(&p.VelTimeout, d.VelTimeout)
	if p.protocol == vrep.AZ {
		if p.Measure == nil {
			p.Measure = d.Measure
		}
		if p.Command == nil {
			p.Command = d.Command
		}
	} else if p.Joints == nil {
		p.Joints = d.Joints
	}
	setDefault(&p.Stepping, d.Stepping)
	setDefault(&p.Start, d.Start)
	defaultDuration(&p.ClientTimeout, d.ClientTimeout)
	n := p.commandLen()
	if n > vrep.MaxJoints {
		return // validate refuses the length before anything is made from it
	}
	// The driver's range of one element, for as many as the file's vectors have.
	if p.Min == nil {
		p.Min = repeat(d.Limits[0][0], n)
	}
	if p.Max == nil {
		p.Max = repeat(d.Limits[0][1], n)
	}
	defaultDuration(&p.Sim.Step, 50*time.Millisecond)
}

func (p *VREPPlant) commandLen() int {
	if p.protocol == vrep.ZMQ {
		return len(p.Joints)
	}
	return len(p.Command)
}

func (p *VREPPlant) validate(l *LinkTable, v *validator) {
	if _, err := vrep.ParseProtocol(p.Protocol); err != nil {
		v.bad("plant.protocol", quote(p.Protocol), `"az" (the seed's Lua script) or "zmq" (CoppeliaSim's ZMQ remote API)`)
		return
	}
	if _, err := vrep.ParseMode(p.Mode); err != nil {
		v.bad("plant.mode", quote(p.Mode), `"velocity" or "position"`)
		return
	}
	for _, d := range []struct {
		key    string
		d      Duration
		lo, hi time.Duration
	}{
		{"sim.step", p.Sim.Step, time.Millisecond, time.Second},
	} {
		if d.d.Duration < d.lo || d.d.Duration > d.hi {
			v.bad("plant."+d.key, d.d.Duration, fmt.Sprintf("%v..%v", d.lo, d.hi))
		}
	}
	if p.protocol == vrep.AZ {
		for _, k := range p.zmqKeys {
			v.bad("plant."+k, "set", `nothing with protocol = "az" (it belongs to protocol = "zmq"); remove it`)
		}
	}
	if p.protocol == vrep.ZMQ && (p.Measure != nil || p.Command != nil) {
		v.bad("plant.measure/command", "set", `nothing with protocol = "zmq": its vectors follow joints`)
	}
	cfg := p.sceneConfig()
	cfg.Period = linkPeriod(l)
	if p.Address == "sim" {
		cfg.Address = p.defaultAddress() // served on a free port at build
	}
	n := p.commandLen()
	if len(p.Min) != n || len(p.Max) != n {
		v.bad("plant.min/max", fmt.Sprint(p.Min, p.Max), fmt.Sprintf("%d values each, one per command element", n))
		cfg.Limits = nil
	}
	for _, fe := range plant.FieldErrors(cfg.Validate()) {
		key, val, want := "plant."+fe.Field, fe.Value, fe.Want
		switch {
		case fe.Field == "address":
			want = fmt.Sprintf(`"sim", or %s`, fe.Want)
		case fe.Field == "limits":
			continue // told above, in the file's keys
		case strings.HasPrefix(fe.Field, "limits["):
			j := fe.Field[len("limits[") : len(fe.Field)-1]
			key, val = "plant.min["+j+"]/max["+j+"]", strings.Trim(fmt.Sprint(fe.Value), "[]")
		case fe.Field == "mode" && p.protocol == vrep.AZ:
			val = quote(p.Mode)
		}
		if len(fe.Allowed) > 0 {
			if s, ok := fe.Value.(string); ok {
				if c := Closest(strings.Trim(s, `"`), fe.Allowed); c != "" {
					want += fmt.Sprintf(" (did you mean %q?)", c)
				}
			}
		}
		v.bad(key, val, want)
	}
}

func (p *VREPPlant) defaultAddress() string {
	if p.protocol == vrep.ZMQ {
		return vrep.DefaultZMQAddress
	}
	return vrep.DefaultAZAddress
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

// twinThresholds implements twinned: vrep's, for the seed's AZ scene and a
// ZMQ scene's joints alike.
func (p *VREPPlant) twinThresholds() map[string]float64 { return vrep.TwinThresholds() }

// twin implements twinned: the AZ scene without its socket, stepping
// [link.plant.sim] step per exchange (V-REP's 50 ms by default), or the
// ZMQ scene's world (zmqTwin).
func (p *VREPPlant) twin(*builder) (twinSpec, error) {
	if p.protocol == vrep.ZMQ {
		return p.zmqTwin()
	}
	cfg := vrepsim.AZModelConfig{Step: p.Sim.Step.Duration, VelTimeout: p.VelTimeout.Duration}
	var angles []string
	for _, n := range p.Measure {
		cfg.Measure = append(cfg.Measure, slices.Index(vrep.AZMeasureNames, n))
		if n != vrep.SimTime {
			angles = append(angles, n)
		}
	}
	for _, n := range p.Command {
		cfg.Command = append(cfg.Command, slices.Index(vrep.AZCommandNames, n))
	}
	m, err := vrepsim.NewAZModel(cfg)
	if err != nil {
		return twinSpec{}, err
	}
	// The scene's clock counts exchanges, not the robot: a superseded or
	// failed exchange moves it, and nothing is wrong with the robot.
	var skip []string
	if slices.Contains(p.Measure, vrep.SimTime) {
		skip = []string{"sim_time"}
	}
	// The angles integrate the speeds: what a slip cost stays.
	return twinSpec{model: m, skip: skip, integrating: []string{"angles"}, words: func(f shadow.Fault) string {
		name := fmt.Sprintf("%s %d", f.Field, f.Index)
		if f.Field == "angles" && f.Index >= 1 && f.Index <= len(angles) {
			name = angles[f.Index-1]
		}
		d := f.Last
		if f.Ended {
			d = f.Size
		}
		return vrep.DescribeDivergence(name, d, f.Size, f.For)
	}}, nil
}

// zmqTwin is the twin of a ZMQ scene: the simulated scene's world, driven
// as the link drives the scene (vrepsim.ZMQModel), with [link.plant.sim]
// step (CoppeliaSim's 50 ms by default) and the simulated joints' speed
// bound. Its joints are named by their paths.
func (p *VREPPlant) zmqTwin() (twinSpec, error) {
	cfg := vrepsim.ZMQModelConfig{Step: p.Sim.Step.Duration, MaxSpeed: vrepsim.DefaultMaxSpeed, Joints: len(p.Joints),
		Position: p.mode == vrep.Position, Stepping: *p.Stepping, VelTimeout: p.VelTimeout.Duration}
	cfg.Measure = append(cfg.Measure, 0) // sim_time, then the angles (vrep.Layout)
	for j := range p.Joints {
		cfg.Measure = append(cfg.Measure, j+1)
		cfg.Command = append(cfg.Command, j)
	}
	m, err := vrepsim.NewZMQModel(cfg)
	if err != nil {
		return twinSpec{}, err
	}
	spec := twinSpec{model: m, skip: []string{"sim_time"}, words: func(f shadow.Fault) string {
		name := fmt.Sprintf("%s %d", f.Field, f.Index)
		if f.Field == "angles" && f.Index >= 1 && f.Index <= len(p.Joints) {
			name = "joint " + p.Joints[f.Index-1]
		}
		d := f.Last
		if f.Ended {
			d = f.Size
		}
		return vrep.DescribeDivergence(name, d, f.Size, f.For)
	}}
	if p.mode == vrep.Velocity {
		spec.integrating = []string{"angles"} // what a slip cost stays
	}
	return spec, nil
}
