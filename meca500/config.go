package meca500

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/labbridge/bridge/plant"
)

// Config configures an Arm. Zero durations take the defaults named.
type Config struct {
	// Address is the robot's control port, host:port (port 10000 if left
	// out). The factory address is 192.168.0.100.
	Address string
	// ConnectTimeout bounds one connection attempt, retried every 100 ms
	// within it as mecademicpy does (1 s).
	ConnectTimeout time.Duration
	// ReplyTimeout bounds a request of the start-up (2 s).
	ReplyTimeout time.Duration
	// StartupTimeout bounds activation and homing (30 s).
	StartupTimeout time.Duration
	// WriteTimeout bounds a command's write on the loop thread (2 ms): a
	// robot that stops reading degrades the link instead of stalling it.
	WriteTimeout time.Duration
	// Silence is how long without monitoring data means a dead link (1 s).
	Silence time.Duration

	Mode Mode
	// Pose adds the tool pose to the measurement.
	Pose bool
	// Measured reads the drives' measured joints and pose (2210, 2211)
	// instead of the controller's targets (2200, 2201).
	Measured bool
	// SpeedFraction scales the admissible speeds (JointSpeeds,
	// CartesianSpeeds): 0 < f ≤ 1.
	SpeedFraction float64
	// Kp is the gain of the joint_position controller (1/s).
	Kp float64

	// Policies of the start-up (docs/meca500.md §5.2): reset an error
	// (ResetError + ResumeMotion), activate, home, resume a paused robot.
	// A step the policy forbids leaves the robot as it is and the link
	// degraded, with a message saying what to do.
	ResetErrors, Activate, Home, Resume bool
	// RestartAfterStop lets a latched stop end without a person: once an
	// emergency or protective stop is reset, or a robot error found, the
	// arm restarts by itself as the policies above allow. Off by default
	// (docs/meca500.md §15): a reset must not start motion.
	RestartAfterStop bool
	// Link is the link's name, for the resume command that messages name
	// ("meca500").
	Link string

	// VelTimeout is SetVelTimeout: the robot stops by itself this long
	// after the last velocity command (0.001–1 s).
	VelTimeout time.Duration
	// Watchdog is ConnectionWatchdog, refreshed by every streaming tick;
	// 0 leaves it off.
	Watchdog time.Duration
	// MonitoringInterval is SetMonitoringInterval (1 ms–1 s), at most
	// the link's period.
	MonitoringInterval time.Duration
	// Period is the link's tick period, 0 when not streamed: the
	// defaults of Watchdog and MonitoringInterval follow it, and
	// Validate checks the timeouts against it.
	Period time.Duration

	Logger   *slog.Logger
	Observer Observer
	// Dial connects; nil uses a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultConfig is the configuration of an arm streamed once every period
// (0: not streamed), what New fills in for a zero field and what the
// configuration file's keys default to.
func DefaultConfig(period time.Duration) Config {
	c := Config{
		ConnectTimeout: time.Second,
		ReplyTimeout:   2 * time.Second,
		StartupTimeout: 30 * time.Second,
		WriteTimeout:   2 * time.Millisecond,
		Silence:        time.Second,
		Mode:           JointVelocity,
		Pose:           true,
		SpeedFraction:  0.25,
		Kp:             2,
		Activate:       true, Home: true, Resume: true,
		VelTimeout:         50 * time.Millisecond,
		MonitoringInterval: 16666 * time.Microsecond,
		Period:             period,
	}
	if period > 0 {
		// mecademicpy's rule (docs/meca500.md §9): 4 periods, at least 0.25 s.
		c.Watchdog = max(4*period, 250*time.Millisecond)
		// A fresh sample for every tick.
		c.MonitoringInterval = min(max(period, time.Millisecond), time.Second)
	}
	return c
}

// defaults fills the zero fields that have no meaning at zero from
// DefaultConfig; the policies and the watchdog keep their zero (off).
func (c *Config) defaults() {
	d := DefaultConfig(c.Period)
	for _, f := range []struct{ v, d *time.Duration }{
		{&c.ConnectTimeout, &d.ConnectTimeout}, {&c.ReplyTimeout, &d.ReplyTimeout},
		{&c.StartupTimeout, &d.StartupTimeout}, {&c.WriteTimeout, &d.WriteTimeout},
		{&c.Silence, &d.Silence}, {&c.VelTimeout, &d.VelTimeout},
		{&c.MonitoringInterval, &d.MonitoringInterval},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if c.SpeedFraction == 0 {
		c.SpeedFraction = d.SpeedFraction
	}
	if c.Kp == 0 {
		c.Kp = d.Kp
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Link == "" {
		c.Link = "LINK"
	}
	if c.Dial == nil {
		var d net.Dialer
		c.Dial = d.DialContext
	}
}

// Validate checks every field and returns one *plant.FieldError per bad value,
// joined (errors.Join), or nil. Period, when set, is the link's: the
// dead-man timeouts must outlast it and the monitoring must sample within it.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, &plant.FieldError{Err: ErrConfig, Field: field, Value: v, Want: want})
	}
	if c.Address == "" {
		bad("address", `""`, "host or host:port, such as 192.168.0.100")
	} else if _, _, err := net.SplitHostPort(withPort(c.Address)); err != nil {
		bad("address", fmt.Sprintf("%q", c.Address), "host or host:port, such as 192.168.0.100")
	}
	if c.Mode > JointPosition {
		bad("mode", c.Mode, "joint_velocity, cartesian_velocity or joint_position")
	}
	if !(c.SpeedFraction > 0 && c.SpeedFraction <= 1) {
		bad("speed_fraction", c.SpeedFraction, "0 < f ≤ 1 (a fraction of the R3's admissible speeds)")
	}
	if !(c.Kp > 0 && c.Kp <= 100) {
		bad("kp", c.Kp, "0 < kp ≤ 100 (1/s)")
	}
	period := c.Period
	if d := c.VelTimeout; d < time.Millisecond || d > time.Second {
		bad("vel_timeout", d, "1ms..1s (SetVelTimeout)")
	} else if d <= period {
		bad("vel_timeout", d, fmt.Sprintf("longer than the link's period %v, or the robot stops between ticks (3 to 5 periods is right)", period))
	}
	if d := c.Watchdog; d != 0 && (d < time.Millisecond || d > time.Hour) {
		bad("watchdog", d, "0 (off) or 1ms..1h (ConnectionWatchdog)")
	} else if d != 0 && d <= 2*period {
		bad("watchdog", d, fmt.Sprintf("0 (off) or more than two periods (%v): it is refreshed once a tick", 2*period))
	}
	if d := c.MonitoringInterval; d < time.Millisecond || d > time.Second {
		bad("monitoring_interval", d, "1ms..1s (SetMonitoringInterval)")
	} else if period > 0 && d > period {
		bad("monitoring_interval", d, fmt.Sprintf("at most the link's period %v, so that every tick has a fresh sample", period))
	}
	for _, d := range []struct {
		key    string
		d      time.Duration
		lo, hi time.Duration
	}{
		{"connect_timeout", c.ConnectTimeout, 10 * time.Millisecond, time.Minute},
		{"reply_timeout", c.ReplyTimeout, 10 * time.Millisecond, time.Minute},
		{"startup_timeout", c.StartupTimeout, time.Second, 10 * time.Minute},
		{"write_timeout", c.WriteTimeout, 100 * time.Microsecond, time.Second},
		{"silence", c.Silence, 10 * time.Millisecond, time.Minute},
	} {
		if d.d < d.lo || d.d > d.hi {
			bad(d.key, d.d, fmt.Sprintf("%v..%v", d.lo, d.hi))
		}
	}
	return errors.Join(errs...)
}

// withPort adds the control port to an address without one.
func withPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, "10000")
}

// Layout is the shape of a Meca500 link's vectors (README "Meca500"): the
// measurement is the joints (°), optionally the pose (mm, °), the 2007
// flags, the last error code and the age of the robot's sample (s); the
// command is six velocities, or six joint angles in joint_position mode.
func Layout(mode Mode, pose bool) plant.Layout {
	m := []plant.Field{{Name: "joints", Unit: "deg", Len: Joints}}
	if pose {
		m = append(m, plant.Field{Name: "pose", Unit: "mm,deg", Len: Joints})
	}
	m = append(m,
		plant.Field{Name: "status", Unit: "as,hs,sm,es,pm,eob,eom", Len: 7},
		plant.Field{Name: "error", Unit: "code", Len: 1},
		plant.Field{Name: "age", Unit: "s", Len: 1})
	var c plant.Field
	switch mode {
	case CartesianVelocity:
		c = plant.Field{Name: "cartesian_velocity", Unit: "mm/s,deg/s", Len: Joints}
	case JointPosition:
		c = plant.Field{Name: "joints", Unit: "deg", Len: Joints}
	default:
		c = plant.Field{Name: "joint_velocity", Unit: "deg/s", Len: Joints}
	}
	return plant.Layout{Measure: m, Command: []plant.Field{c}}
}

// Limits are the command ranges of a mode at a speed fraction: what the
// link clamps to, and the arm again before it writes.
func Limits(mode Mode, fraction float64) [Joints][2]float64 {
	var out [Joints][2]float64
	switch mode {
	case JointPosition:
		return JointLimits()
	case CartesianVelocity:
		for i, v := range CartesianSpeeds() {
			out[i] = [2]float64{-v * fraction, v * fraction}
		}
	default:
		for i, v := range JointSpeeds() {
			out[i] = [2]float64{-v * fraction, v * fraction}
		}
	}
	return out
}
