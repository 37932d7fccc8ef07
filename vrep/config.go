package vrep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/labbridge/bridge/plant"
)

// Protocol is how the scene is reached.
type Protocol uint8

// Protocols.
const (
	// AZ is the seed's socket exchange (docs/vrep.md §1).
	AZ Protocol = iota
	// ZMQ is CoppeliaSim's ZMQ remote API, protocol version 2 (§4).
	ZMQ
)

func (p Protocol) String() string {
	if p == ZMQ {
		return "zmq"
	}
	return "az"
}

// ParseProtocol parses "az" or "zmq".
func ParseProtocol(s string) (Protocol, error) {
	switch s {
	case "az":
		return AZ, nil
	case "zmq":
		return ZMQ, nil
	}
	return 0, fmt.Errorf("%w: protocol %q: want az or zmq", ErrConfig, s)
}

// Mode is what the command sets on the joints.
type Mode uint8

// Modes.
const (
	// Velocity sets the joints' target velocities (rad/s).
	Velocity Mode = iota
	// Position sets the joints' target positions (rad); ZMQ only.
	Position
)

func (m Mode) String() string {
	if m == Position {
		return "position"
	}
	return "velocity"
}

// ParseMode parses "velocity" or "position".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "velocity":
		return Velocity, nil
	case "position":
		return Position, nil
	}
	return 0, fmt.Errorf("%w: mode %q: want velocity or position", ErrConfig, s)
}

// The elements of an AZ link's vectors, as the configuration names them.
const (
	SimTime    = "sim_time"
	LeftAngle  = "left_angle"
	RightAngle = "right_angle"
	LeftSpeed  = "left_speed"
	RightSpeed = "right_speed"
)

// AZMeasureNames and AZCommandNames are every element an AZ link can carry,
// in the default order.
var (
	AZMeasureNames = []string{SimTime, LeftAngle, RightAngle}
	AZCommandNames = []string{LeftSpeed, RightSpeed}
)

// DefaultJoints are the joints of the seed's scene, by object path.
var DefaultJoints = []string{"/MotorLeft", "/MotorRight"}

// MaxJoints bounds the joints of a ZMQ scene.
const MaxJoints = 64

// Observer sees what happens between the bridge and the scene (metrics).
// Superseded and DeadmanStop run on the loop thread and must not allocate;
// the others run on the scene's worker or the supervisor's goroutine.
type Observer interface {
	// Exchanged: one tick's exchange succeeded in rtt; the scene's clock
	// read simTime seconds.
	Exchanged(rtt time.Duration, simTime float64)
	// Failed: an exchange failed.
	Failed(r Reason)
	// Reconnected: the scene answers again after the link was degraded.
	Reconnected()
	// Restarted: the scene's simulation time went backwards.
	Restarted()
	// Superseded: a tick's command was replaced by the next before the
	// worker could send it (the scene is slower than the link's rate).
	Superseded()
	// DeadmanStop: no fresh command for VelTimeout; the wheels were
	// commanded to stop.
	DeadmanStop()
}

type nopObserver struct{}

func (nopObserver) Exchanged(time.Duration, float64) {}
func (nopObserver) Failed(Reason)                    {}
func (nopObserver) Reconnected()                     {}
func (nopObserver) Restarted()                       {}
func (nopObserver) Superseded()                      {}
func (nopObserver) DeadmanStop()                     {}

// Config configures a Scene.
type Config struct {
	Protocol Protocol
	// Address is the scene's host:port: DefaultAZAddress or
	// DefaultZMQAddress when empty.
	Address string
	// Timeout bounds one tick's exchange with the scene: the AZ
	// connection, request and reply, or the ZMQ calls of a tick.
	Timeout time.Duration
	// MaxFailures is how many exchanges in a row may fail before the link
	// is told the device is down; the ones before are counted and the last
	// measurement kept (3).
	MaxFailures int

	// Measure and Command map an AZ link's vectors: the elements of the
	// measurement (SimTime, LeftAngle, RightAngle, each at most once) and
	// of the command (LeftSpeed and RightSpeed, once each), in the order
	// Simulink sees them. Empty: the defaults.
	Measure, Command []string

	// Joints are a ZMQ scene's joints by object path (DefaultJoints).
	Joints []string
	// Mode: what a ZMQ command sets; AZ is always Velocity.
	Mode Mode
	// Stepping calls sim.step once per tick: the simulation advances in
	// lock step with the link (ZMQ only).
	Stepping bool
	// Start starts a stopped simulation (ZMQ only); false leaves the link
	// degraded until someone presses Play.
	Start bool
	// ClientTimeout is how long CoppeliaSim keeps this client's state,
	// its stepping included, once the bridge stops calling (5 s).
	ClientTimeout time.Duration
	// Name is the link's name, for the messages that tell a person what
	// to run (`bridge resume NAME`).
	Name string

	// Limits bound each command element, in command order: what the link
	// clamps to. Velocities beyond them are clamped here again.
	Limits [][2]float64
	// VelTimeout is the dead-man of a velocity command: this long without
	// a fresh command from Simulink, the joints are commanded zero.
	VelTimeout time.Duration
	// Period is the link's tick period, 0 when unknown: the defaults of
	// Timeout and VelTimeout follow it, and Validate checks the dead-man
	// against it.
	Period time.Duration

	Logger   *slog.Logger
	Observer Observer
	// Now reads the clock of the dead-man; nil: time.Now.
	Now func() time.Time
	// Dial connects (ZMQ); nil: a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultConfig is the configuration of a scene of protocol p whose
// joints are commanded in mode m, exchanged once every period (0:
// unknown): what New fills in for a zero field and what the configuration
// file's keys default to.
func DefaultConfig(p Protocol, m Mode, period time.Duration) Config {
	c := Config{Protocol: p, Mode: m, Address: DefaultAZAddress, Timeout: 50 * time.Millisecond, MaxFailures: 3,
		Stepping: true, Start: true, ClientTimeout: 5 * time.Second, VelTimeout: 150 * time.Millisecond, Period: period}
	if p == ZMQ {
		c.Address = DefaultZMQAddress
		c.Joints = slices.Clone(DefaultJoints)
	} else {
		c.Measure = slices.Clone(AZMeasureNames)
		c.Command = slices.Clone(AZCommandNames)
	}
	if period > 0 {
		// The worker has a whole period for an exchange before the next
		// tick's supersedes it.
		c.Timeout = min(max(period, time.Millisecond), 10*time.Second)
		// Three periods: the wheels do not stop between ticks.
		c.VelTimeout = min(max(3*period, 100*time.Millisecond), time.Minute)
	}
	limit := 10.0 // rad/s: a wheel at about 1.6 turns a second
	if m == Position {
		limit = math.Pi
	}
	c.Limits = make([][2]float64, c.commandLen())
	for i := range c.Limits {
		c.Limits[i] = [2]float64{-limit, limit}
	}
	return c
}

// defaults fills the zero fields from DefaultConfig; Stepping, Start and
// the Limits keep their zero (off, and no clamping beyond the link's).
func (c *Config) defaults() {
	d := DefaultConfig(c.Protocol, c.Mode, c.Period)
	if c.Address == "" {
		c.Address = d.Address
	}
	if c.Timeout == 0 {
		c.Timeout = d.Timeout
	}
	if c.MaxFailures == 0 {
		c.MaxFailures = d.MaxFailures
	}
	if c.Protocol == AZ {
		if len(c.Measure) == 0 {
			c.Measure = d.Measure
		}
		if len(c.Command) == 0 {
			c.Command = d.Command
		}
	} else if len(c.Joints) == 0 {
		c.Joints = d.Joints
	}
	if c.ClientTimeout == 0 {
		c.ClientTimeout = d.ClientTimeout
	}
	if c.VelTimeout == 0 {
		c.VelTimeout = d.VelTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate checks every field and returns one *plant.FieldError per bad value,
// joined (errors.Join), or nil. Period, when set, is the link's: the
// dead-man must outlast it.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: field, Value: v, Want: want})
	}
	if host, port, err := net.SplitHostPort(c.Address); err != nil || host == "" || port == "" {
		def := DefaultAZAddress
		if c.Protocol == ZMQ {
			def = DefaultZMQAddress
		}
		bad("address", fmt.Sprintf("%q", c.Address), fmt.Sprintf("host:port such as %q", def))
	}
	for _, d := range []struct {
		key    string
		d      time.Duration
		lo, hi time.Duration
	}{
		{"timeout", c.Timeout, 100 * time.Microsecond, 10 * time.Second},
		{"vel_timeout", c.VelTimeout, time.Millisecond, time.Minute},
	} {
		if d.d < d.lo || d.d > d.hi {
			bad(d.key, d.d, fmt.Sprintf("%v..%v", d.lo, d.hi))
		}
	}
	if c.Period > 0 && c.VelTimeout <= c.Period {
		bad("vel_timeout", c.VelTimeout, fmt.Sprintf("longer than the link's period %v, or the wheels stop between ticks (3 periods is right)", c.Period))
	}
	if c.MaxFailures < 1 || c.MaxFailures > 1000 {
		bad("max_failures", c.MaxFailures, "1..1000 exchanges in a row")
	}
	if c.Protocol == AZ {
		if c.Mode != Velocity {
			bad("mode", c.Mode, "velocity: the AZ script sets target velocities")
		}
		errs = append(errs, checkNames("measure", c.Measure, AZMeasureNames, 1)...)
		errs = append(errs, checkNames("command", c.Command, AZCommandNames, len(AZCommandNames))...)
	} else {
		if c.ClientTimeout < time.Second || c.ClientTimeout > time.Hour {
			bad("client_timeout", c.ClientTimeout, "1s..1h")
		}
		if len(c.Joints) < 1 || len(c.Joints) > MaxJoints {
			bad("joints", len(c.Joints), fmt.Sprintf("1..%d object paths", MaxJoints))
			return errors.Join(errs...) // a long list is not searched for duplicates
		}
		for i, j := range c.Joints {
			if j == "" || strings.ContainsAny(j, "\x00\n") || slices.Index(c.Joints, j) != i {
				bad(fmt.Sprintf("joints[%d]", i), fmt.Sprintf("%q", j), `an object path of the scene, once, such as "/MotorLeft"`)
			}
		}
	}
	n := c.commandLen()
	if c.Limits != nil && len(c.Limits) != n {
		bad("limits", len(c.Limits), fmt.Sprintf("%d ranges, one per command element", n))
		return errors.Join(errs...)
	}
	for i, l := range c.Limits {
		if !(l[0] <= l[1]) || math.Abs(l[0]) > math.MaxFloat32 || math.Abs(l[1]) > math.MaxFloat32 {
			bad(fmt.Sprintf("limits[%d]", i), l, "finite values with min ≤ max")
		}
	}
	return errors.Join(errs...)
}

// checkNames checks a mapping of an AZ link: names from allowed, each at
// most once, at least least of them.
func checkNames(key string, names, allowed []string, least int) []error {
	want := fmt.Sprintf("%d to %d of %s", least, len(allowed), strings.Join(allowed, ", "))
	if least == len(allowed) {
		want = fmt.Sprintf("%d of %s", least, strings.Join(allowed, ", "))
	}
	if len(names) > len(allowed) || len(names) < least {
		// A long list is not searched for duplicates.
		return []error{&plant.FieldError{Err: ErrConfig, Field: key, Value: fmt.Sprintf("%q", names), Want: want}}
	}
	var errs []error
	for i, n := range names {
		switch {
		case !slices.Contains(allowed, n):
			errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: fmt.Sprintf("%s[%d]", key, i), Value: fmt.Sprintf("%q", n),
				Want: "one of " + strings.Join(allowed, ", "), Allowed: allowed})
		case slices.Index(names, n) != i:
			errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: fmt.Sprintf("%s[%d]", key, i), Value: fmt.Sprintf("%q", n), Want: "each element once"})
		}
	}
	return errs
}

func (c *Config) commandLen() int {
	if c.Protocol == AZ {
		return len(c.Command)
	}
	return len(c.Joints)
}

// Layout is the shape of a scene link's vectors: for AZ, the mapped
// elements, consecutive angles (speeds) grouped into one field "angles"
// ("speeds"); for ZMQ, the simulation time then the joints' angles, and
// the joints' speeds or angles. It fills the defaults of an incomplete
// configuration.
func Layout(cfg Config) plant.Layout {
	cfg.defaults()
	var lay plant.Layout
	if cfg.Protocol == ZMQ {
		lay.Measure = []plant.Field{{Name: "sim_time", Unit: "s", Len: 1}, {Name: "angles", Unit: "rad", Len: len(cfg.Joints)}}
		if cfg.Mode == Position {
			lay.Command = []plant.Field{{Name: "angles", Unit: "rad", Len: len(cfg.Joints)}}
		} else {
			lay.Command = []plant.Field{{Name: "speeds", Unit: "rad/s", Len: len(cfg.Joints)}}
		}
		return lay
	}
	group := func(fs []plant.Field, name, unit string) []plant.Field {
		if k := len(fs) - 1; k >= 0 && fs[k].Name == name {
			fs[k].Len++
			return fs
		}
		return append(fs, plant.Field{Name: name, Unit: unit, Len: 1})
	}
	for _, n := range cfg.Measure {
		if n == SimTime {
			lay.Measure = group(lay.Measure, "sim_time", "s")
		} else {
			lay.Measure = group(lay.Measure, "angles", "rad")
		}
	}
	for range cfg.Command {
		lay.Command = group(lay.Command, "speeds", "rad/s")
	}
	return lay
}
