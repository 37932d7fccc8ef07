package config

import (
	"context"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/shadow"
	"github.com/labbridge/bridge/meca500"
	"github.com/labbridge/bridge/meca500/mecasim"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/plant"
)

// Meca500Plant is [link.plant] of kind "meca500": a Mecademic Meca500 arm
// on its TCP control port, streaming velocities (docs/meca500.md §13), or a
// simulated one in this process with address = "sim".
type Meca500Plant struct {
	KindName string `toml:"kind"`
	// Address is the robot's host or host:port (port 10000), or "sim".
	Address string `toml:"address"`
	// Mode: joint_velocity (°/s), cartesian_velocity (mm/s, °/s) or
	// joint_position (°, through the bridge's clamped P controller).
	Mode string `toml:"mode"`
	// Pose adds the tool pose to the measurement; Measured reads the
	// drives' measured joints (2210) instead of the targets (2200).
	Pose     *bool `toml:"pose"`
	Measured bool  `toml:"measured"`
	// SpeedFraction scales the R3's admissible speeds: what commands are
	// clamped to. Kp is the joint_position gain (1/s).
	SpeedFraction float64 `toml:"speed_fraction"`
	Kp            float64 `toml:"kp"`
	// Start-up policies.
	ResetErrors *bool `toml:"reset_errors"`
	Activate    *bool `toml:"activate"`
	Home        *bool `toml:"home"`
	Resume      *bool `toml:"resume"`
	// RestartAfterStop lets the arm start again by itself once an
	// emergency or protective stop is reset or an error found (default
	// false: a person resumes it, docs/meca500.md §15).
	RestartAfterStop bool `toml:"restart_after_stop"`
	// The robot's dead-man switches and its monitoring period.
	VelTimeout         Duration  `toml:"vel_timeout"`
	Watchdog           *Duration `toml:"watchdog"`
	MonitoringInterval Duration  `toml:"monitoring_interval"`
	// Timeouts of the connection.
	ConnectTimeout Duration `toml:"connect_timeout"`
	ReplyTimeout   Duration `toml:"reply_timeout"`
	StartupTimeout Duration `toml:"startup_timeout"`
	WriteTimeout   Duration `toml:"write_timeout"`
	Silence        Duration `toml:"silence"`
	// Sim is the simulated robot of address = "sim".
	Sim Meca500SimTable `toml:"sim"`

	mode meca500.Mode
}

// Meca500SimTable is [link.plant.sim]: the simulated Meca500.
type Meca500SimTable struct {
	Firmware string    `toml:"firmware"`
	Initial  []float64 `toml:"initial"`
}

// Kind implements Plant.
func (p *Meca500Plant) Kind() string { return "meca500" }

// defaults fills the keys the file left out with the driver's defaults
// (meca500.DefaultConfig) for the link's period.
func (p *Meca500Plant) defaults(l *LinkTable) {
	d := meca500.DefaultConfig(linkPeriod(l))
	if p.Address == "" {
		p.Address = "sim"
	}
	if p.Mode == "" {
		p.Mode = d.Mode.String()
	}
	p.mode, _ = meca500.ParseMode(p.Mode)
	setDefault(&p.Pose, d.Pose)
	if p.SpeedFraction == 0 {
		p.SpeedFraction = d.SpeedFraction
	}
	if p.Kp == 0 {
		p.Kp = d.Kp
	}
	setDefault(&p.ResetErrors, d.ResetErrors)
	setDefault(&p.Activate, d.Activate)
	setDefault(&p.Home, d.Home)
	setDefault(&p.Resume, d.Resume)
	if p.Watchdog == nil {
		p.Watchdog = &Duration{d.Watchdog}
	}
	defaultDuration(&p.VelTimeout, d.VelTimeout)
	defaultDuration(&p.MonitoringInterval, d.MonitoringInterval)
	defaultDuration(&p.ConnectTimeout, d.ConnectTimeout)
	defaultDuration(&p.ReplyTimeout, d.ReplyTimeout)
	defaultDuration(&p.StartupTimeout, d.StartupTimeout)
	defaultDuration(&p.WriteTimeout, d.WriteTimeout)
	defaultDuration(&p.Silence, d.Silence)
	if p.Sim.Firmware == "" {
		p.Sim.Firmware = "9.3.0"
	}
	if p.Sim.Initial == nil {
		p.Sim.Initial = make([]float64, meca500.Joints)
	}
}

// linkPeriod is the link's period, or 0 for a rate that has none.
func linkPeriod(l *LinkTable) time.Duration {
	if l.RateHz > 0 && !math.IsInf(l.RateHz, 0) {
		return l.Period()
	}
	return 0
}

func setDefault(b **bool, v bool) {
	if *b == nil {
		*b = &v
	}
}

func defaultDuration(d *Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}

// validate reports the driver's field errors under their keys, and what
// only the file can get wrong: a mode's name, "sim", the simulated robot.
func (p *Meca500Plant) validate(l *LinkTable, v *validator) {
	if _, err := meca500.ParseMode(p.Mode); err != nil {
		v.bad("plant.mode", quote(p.Mode), "joint_velocity, cartesian_velocity or joint_position")
	}
	if p.Address != "sim" {
		if _, _, err := net.SplitHostPort(p.Address); err != nil && net.ParseIP(p.Address) == nil && !validHostname(p.Address) {
			v.bad("plant.address", quote(p.Address), `"sim", a host such as "192.168.0.100", or host:port`)
		}
	}
	cfg := p.driverConfig(l)
	if p.Address == "sim" {
		cfg.Address = "127.0.0.1" // served on a free port at build
	}
	for _, fe := range plant.FieldErrors(cfg.Validate()) {
		if fe.Field != "address" && fe.Field != "mode" {
			v.bad("plant."+fe.Field, fe.Value, fe.Want)
		}
	}
	if _, err := meca500.ParseVersion(p.Sim.Firmware); err != nil {
		v.bad("plant.sim.firmware", quote(p.Sim.Firmware), `a version such as "9.3.0" or "10.2.1"`)
	}
	if len(p.Sim.Initial) != meca500.Joints {
		v.bad("plant.sim.initial", p.Sim.Initial, "6 joint angles (°)")
	} else {
		lim := meca500.JointLimits()
		for i, q := range p.Sim.Initial {
			if !(q >= lim[i][0] && q <= lim[i][1]) {
				v.bad(fmt.Sprintf("plant.sim.initial[%d]", i), q, fmt.Sprintf("%v..%v° (joint %d's range)", lim[i][0], lim[i][1], i+1))
			}
		}
	}
}

// driverConfig maps the keys onto the driver's Config.
func (p *Meca500Plant) driverConfig(l *LinkTable) meca500.Config {
	return meca500.Config{
		Address: p.Address, Mode: p.mode, Pose: *p.Pose, Measured: p.Measured,
		SpeedFraction: p.SpeedFraction, Kp: p.Kp,
		ResetErrors: *p.ResetErrors, Activate: *p.Activate, Home: *p.Home, Resume: *p.Resume,
		RestartAfterStop: p.RestartAfterStop, Link: l.Name, Period: linkPeriod(l),
		VelTimeout: p.VelTimeout.Duration, Watchdog: p.Watchdog.Duration, MonitoringInterval: p.MonitoringInterval.Duration,
		ConnectTimeout: p.ConnectTimeout.Duration, ReplyTimeout: p.ReplyTimeout.Duration,
		StartupTimeout: p.StartupTimeout.Duration, WriteTimeout: p.WriteTimeout.Duration, Silence: p.Silence.Duration,
	}
}

// validHostname accepts a DNS name: letters, digits, dots and dashes.
func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Layout implements Plant.
func (p *Meca500Plant) Layout() plant.Layout { return meca500.Layout(p.mode, *p.Pose) }

// Limits implements Plant: the R3's ranges at speed_fraction.
func (p *Meca500Plant) Limits() []bridge.Limit {
	lim := meca500.Limits(p.mode, p.SpeedFraction)
	out := make([]bridge.Limit, len(lim))
	for i, l := range lim {
		out[i] = bridge.Limit{Min: l[0], Max: l[1]}
	}
	return out
}

// Clocks implements Plant: a timer only.
func (p *Meca500Plant) Clocks() []string { return nil }

// Simulated implements Plant.
func (p *Meca500Plant) Simulated() bool { return p.Address == "sim" }

// Summary implements Plant.
func (p *Meca500Plant) Summary() string {
	where := "a simulated Meca500 (firmware " + p.Sim.Firmware + ")"
	if p.Address != "sim" {
		where = "the Meca500 at " + p.Address
	}
	wd := "off"
	if p.Watchdog.Duration > 0 {
		wd = p.Watchdog.Duration.String()
	}
	restart := "a stop waits for a person"
	if p.RestartAfterStop {
		restart = "restarts by itself after a stop's reset"
	}
	return fmt.Sprintf("meca500 plant: %s, %s at %g %% of the R3's speeds, velocity timeout %v, watchdog %s, %s",
		where, p.Mode, 100*p.SpeedFraction, p.VelTimeout.Duration, wd, restart)
}

func (p *Meca500Plant) build(b *builder) (*parts, error) {
	ps := &parts{}
	log := b.env.Logger.With("link", b.link.Name)
	cfg := p.driverConfig(b.link)
	cfg.Logger = log
	if p.Address == "sim" {
		robot, err := p.simulatedRobot(b)
		if err != nil {
			return nil, err
		}
		b.built.Meca500 = robot
		cfg.Address = robot.addr
	}
	// The metrics' sample age reads the arm, which exists from here on,
	// before any scrape can run.
	var arm *meca500.Arm
	if b.env.Metrics != nil {
		relay, err := b.env.Metrics.Relay(b.link.Name, func() float64 { return arm.SampleAge() })
		if err != nil {
			return nil, err
		}
		cfg.Observer = relayObserver{relay}
	}
	arm, err := meca500.New(cfg)
	if err != nil {
		return nil, err
	}
	ps.plant = arm
	ps.closers = append(ps.closers, arm.Close)
	ps.probes = append(ps.probes, mecaProbes(arm)...)
	// Connect now, as the Emio's servos are opened now; a robot that is
	// not there yet leaves the link degraded and the supervisor retries.
	ctx, cancel := context.WithTimeout(context.Background(), p.ConnectTimeout.Duration+p.StartupTimeout.Duration)
	defer cancel()
	ps.openErr = arm.Open(ctx)
	return ps, nil
}

// SimMeca500 is a simulated Meca500 served for the life of a built link.
type SimMeca500 struct {
	*mecasim.Robot
	addr string
}

// Addr is the simulated robot's control port.
func (s *SimMeca500) Addr() string { return s.addr }

// simulatedRobot serves a simulated Meca500 on a free loopback port until
// the built link is closed.
func (p *Meca500Plant) simulatedRobot(b *builder) (*SimMeca500, error) {
	var initial [meca500.Joints]float64
	copy(initial[:], p.Sim.Initial)
	robot, err := mecasim.New(mecasim.Config{
		Firmware: p.Sim.Firmware, Initial: initial,
		Logger: b.env.Logger.With("link", b.link.Name, "device", "simulated meca500"),
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("config: a port for the simulated Meca500: %w", err)
	}
	b.world("simulated meca500", func(ctx context.Context) error {
		defer ln.Close()
		return robot.Serve(ctx, ln)
	})
	return &SimMeca500{Robot: robot, addr: ln.Addr().String()}, nil
}

// relayObserver hands the arm's observations to the relay metrics.
type relayObserver struct{ r *metrics.Relay }

func (o relayObserver) State(s meca500.Status) {
	o.r.RobotState(s.Activated, s.Homed, s.Error, s.Paused)
}
func (o relayObserver) Error(code int)             { o.r.RobotError(code) }
func (o relayObserver) SafetyStop(code, state int) { o.r.SafetyStop(code, state) }
func (o relayObserver) BufferFull()                { o.r.BufferFull() }
func (o relayObserver) Connected()                 { o.r.Connected() }
func (o relayObserver) WatchdogRefreshed()         { o.r.WatchdogRefreshed() }

// twinThresholds implements twinned: meca500's.
func (p *Meca500Plant) twinThresholds() map[string]float64 {
	return meca500.TwinThresholds(*p.Pose)
}

// twin implements twinned: the arm's motion without its wire; in
// joint_position, under the driver's own controller (positionTwin).
func (p *Meca500Plant) twin(b *builder) (twinSpec, error) {
	lay := p.Layout()
	var init [6]float64
	copy(init[:], p.Sim.Initial)
	m, err := mecasim.NewModel(mecasim.ModelConfig{Cartesian: p.mode == meca500.CartesianVelocity, Pose: *p.Pose,
		VelTimeout: p.VelTimeout.Duration, MeasureLen: lay.MeasureLen(), Initial: init})
	if err != nil {
		return twinSpec{}, err
	}
	words := func(f shadow.Fault) string {
		d := f.Last
		if f.Ended {
			d = f.Size
		}
		return meca500.DescribeDivergence(f.Field, f.Index, d, f.Size, f.For)
	}
	skip := []string{"status", "error", "age"}
	if p.mode == meca500.JointPosition {
		// The goals are held, not integrated: a slow arm lags the model
		// while it moves and meets it at rest.
		return twinSpec{model: &positionTwin{Model: m, law: meca500.NewPositionLaw(p.driverConfig(b.link))},
			skip: skip, words: words}, nil
	}
	// The joints integrate the velocities: what a payload cost stays.
	return twinSpec{model: m, skip: skip, integrating: []string{"joints", "pose"}, words: words}, nil
}

// positionTwin is a joint_position arm's model: each goal turned into
// joint velocities by the driver's law (meca500.PositionLaw) from the
// model's own joints, as the arm does from the robot's.
type positionTwin struct {
	*mecasim.Model
	law meca500.PositionLaw
	v   [6]float64
}

// Command implements plant.Plant: six goal angles (°).
func (t *positionTwin) Command(goal []float64) error {
	if len(goal) != len(t.v) {
		return fmt.Errorf("config: a Meca500 twin given %d goal angles, want %d", len(goal), len(t.v))
	}
	q := t.Model.Joints()
	for i, g := range goal {
		t.v[i] = t.law.Velocity(i, g, q[i])
	}
	return t.Model.Command(t.v[:])
}
