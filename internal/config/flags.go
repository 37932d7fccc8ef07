package config

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// The checks of the command line's values, named by their flag, each
// saying what the flag accepts.

// CheckDuration refuses a negative -name of `bridge cmd`, and 0 unless
// zeroOK (where 0 means "until SIGINT/SIGTERM").
func CheckDuration(cmd, name string, d time.Duration, zeroOK bool) error {
	switch {
	case zeroOK && d < 0:
		return fmt.Errorf("bridge %s: -%s %v: want 0 (run until Ctrl-C or SIGTERM) or a positive duration, like 10s", cmd, name, d)
	case !zeroOK && d <= 0:
		return fmt.Errorf("bridge %s: -%s %v: want a positive duration, like 10s", cmd, name, d)
	}
	return nil
}

// CheckRange refuses NaN, ±Inf and a value outside [lo, hi]; want says the
// range in words for the message.
func CheckRange(cmd, name string, v, lo, hi float64, want string) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return fmt.Errorf("bridge %s: -%s %s: want %s", cmd, name, strconv.FormatFloat(v, 'g', -1, 64), want)
	}
	return nil
}

// CheckRate refuses a tick rate that is not above 0 Hz.
func CheckRate(cmd, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("bridge %s: -%s %s: want a rate above 0 Hz, like 30", cmd, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

// PartnerControllers are the values of bridge partner's -controller.
var PartnerControllers = [...]string{"hold", "constant", "sine", "jacobian"}

// PartnerFlags are the flags of `bridge partner` run without a
// configuration file: its shape, its controller, its rate and its faults.
type PartnerFlags struct {
	Controller string  // hold, constant, sine (jacobian needs a file)
	U          string  // constant: the command, comma-separated (rad)
	Amplitude  float64 // sine: rad, every motor
	Frequency  float64 // sine: Hz, every motor

	NbMarkers, Motors int     // the Emio's shape: markers per measurement, commands per reply
	Rate              float64 // Hz, for the sine and the rate limiter
	Duration          time.Duration
	// The faults: probabilities of a reply dropped, duplicated, swapped
	// with the next, one value short or long; and a delay of every reply.
	Drop, Duplicate, Reorder, WrongSize float64
	ReplyDelay                          time.Duration
	Seed                                uint64 // of the faults' randomness

	Delay bool // the one-tick-delay model: answer seq-1
	// Config and Link take the shape and the controller of a link's
	// [link.partner] from a file instead.
	Config, Link string
	// Priority of the receive thread: 0 = none, -1 = as bridge sim gives a
	// link's built-in partner; CPU pins it (-1 = no pinning).
	Priority, CPU int
}

// DefaultPartnerFlags are bridge partner's defaults: the Emio's shape (one
// marker, four motors) at 30 Hz, holding.
func DefaultPartnerFlags() PartnerFlags {
	return PartnerFlags{NbMarkers: 1, Motors: 4, Rate: 30, Controller: "hold", Amplitude: 0.2, Frequency: 0.5, Seed: 1, Priority: -1, CPU: -1}
}

// Declare declares f's flags on fs, with f's values as their defaults.
func (f *PartnerFlags) Declare(fs *flag.FlagSet) {
	fs.IntVar(&f.NbMarkers, "nb_markers", f.NbMarkers, "markers per measurement")
	fs.IntVar(&f.Motors, "motors", f.Motors, "commands per reply")
	fs.Float64Var(&f.Rate, "rate", f.Rate, "tick rate of the bridge (Hz), for the sine and the rate limiter")
	fs.StringVar(&f.Controller, "controller", f.Controller, "hold, constant, sine or jacobian (jacobian and parameters: use -config)")
	fs.StringVar(&f.U, "u", f.U, "constant: comma-separated command (rad)")
	fs.Float64Var(&f.Amplitude, "amplitude", f.Amplitude, "sine: amplitude (rad)")
	fs.Float64Var(&f.Frequency, "frequency", f.Frequency, "sine: frequency (Hz)")
	fs.Float64Var(&f.Drop, "drop", f.Drop, "fault: probability of dropping a reply")
	fs.Float64Var(&f.Duplicate, "duplicate", f.Duplicate, "fault: probability of duplicating a reply")
	fs.Float64Var(&f.Reorder, "reorder", f.Reorder, "fault: probability of swapping a reply with the next")
	fs.Float64Var(&f.WrongSize, "wrong-size", f.WrongSize, "fault: probability of a reply one value short or long")
	fs.DurationVar(&f.ReplyDelay, "reply-delay", f.ReplyDelay, "fault: delay every reply by this much")
	fs.DurationVar(&f.Duration, "duration", f.Duration, "stop after this long (0 = until SIGINT/SIGTERM)")
	fs.BoolVar(&f.Delay, "delay", f.Delay, "one-tick-delay model: answer seq-1 instead of echoing seq")
	fs.StringVar(&f.Config, "config", f.Config, "take the shape and the controller of a link's [link.partner] from this file")
	fs.StringVar(&f.Link, "link", f.Link, "with -config: the link (default the first)")
	fs.Uint64Var(&f.Seed, "seed", f.Seed, "fault: random seed (SIGUSR1 pauses/resumes replies, SIGUSR2 restarts the model)")
	fs.IntVar(&f.Priority, "priority", f.Priority, "SCHED_FIFO priority of the receive thread, 1..99; 0 = none (the netpoller); -1 = as bridge sim gives a link's built-in partner: its loop's with -config, else 0")
	fs.IntVar(&f.CPU, "cpu", f.CPU, "with a priority: pin the receive thread to this CPU (-1 = no pinning)")
}

// Partner builds the partner the flags describe, listening on listen,
// accepting measurements from accept and replying to replyTo: the Emio's
// shape of -nb_markers and -motors, or a link's of -config. Its faults are
// always present, so that SIGUSR1 can pause it like a stopped Simulink
// model; the last value is the controller's name.
func (f PartnerFlags) Partner(listen, accept, replyTo netip.AddrPort, logger *slog.Logger) (*simulink.Partner, *simulink.Faults, string, error) {
	if f.Priority < -1 || f.Priority > realtime.MaxPriority || f.CPU < -1 || f.CPU >= realtime.MaxCPUs {
		return nil, nil, "", fmt.Errorf("bridge partner: -priority %d -cpu %d: want a priority of 1..%d, 0 for none or -1 for the link's, and a CPU of 0..%d or -1 for none", f.Priority, f.CPU, realtime.MaxPriority, realtime.MaxCPUs-1)
	}
	if err := f.Check(); err != nil {
		return nil, nil, "", err
	}
	dims := DimsOf(emio.Layout(f.NbMarkers, f.Motors))
	var spec simulink.ControllerSpec
	var err error
	if f.Config != "" {
		c, err := LoadFile(f.Config)
		if err != nil {
			return nil, nil, "", err
		}
		l, err := c.Link(f.Link)
		if err != nil {
			return nil, nil, "", err
		}
		spec, dims, f.Rate, f.Delay = l.Partner.Controller, l.Dims(), l.RateHz, l.Partner.Delay
		if f.Priority < 0 {
			f.Priority = l.PartnerPriority()
		}
	} else if spec, err = f.Spec(dims.CommandLen); err != nil {
		return nil, nil, "", err
	}
	ctl, err := simulink.NewController(spec, dims, f.Rate)
	if err != nil {
		return nil, nil, "", err
	}
	faults := &simulink.Faults{Drop: f.Drop, Duplicate: f.Duplicate, Reorder: f.Reorder, WrongSize: f.WrongSize, Delay: f.ReplyDelay, Seed: f.Seed}
	p, err := simulink.NewPartner(simulink.PartnerConfig{
		Listen: listen, Accept: accept, ReplyTo: replyTo, MeasureLen: dims.MeasureLen, CommandLen: dims.CommandLen,
		Delay: f.Delay, Controller: ctl, Faults: faults, Logger: logger, Priority: max(f.Priority, 0), Pin: f.CPU >= 0, CPU: f.CPU,
	})
	if err != nil {
		return nil, nil, "", err
	}
	return p, faults, cmp.Or(spec.Kind, "hold"), nil
}

// Check refuses values that cannot work, naming the flag and what it
// accepts.
func (f *PartnerFlags) Check() error {
	if !slices.Contains(PartnerControllers[:], f.Controller) {
		return fmt.Errorf("bridge partner: -controller %q: want hold, constant, sine or jacobian (jacobian with -config)", f.Controller)
	}
	if f.NbMarkers < 0 {
		return fmt.Errorf("bridge partner: -nb_markers %d: want 0 or more markers, like the model's mask value", f.NbMarkers)
	}
	if f.Motors < 1 {
		return fmt.Errorf("bridge partner: -motors %d: want 1 or more commands per reply (the Emio has 4)", f.Motors)
	}
	if err := CheckRate("partner", "rate", f.Rate); err != nil {
		return err
	}
	if err := CheckDuration("partner", "duration", f.Duration, true); err != nil {
		return err
	}
	if f.ReplyDelay < 0 {
		return fmt.Errorf("bridge partner: -reply-delay %v: want 0 (no delay) or a positive duration, like 20ms", f.ReplyDelay)
	}
	if err := CheckRange("partner", "amplitude", f.Amplitude, -math.MaxFloat64, math.MaxFloat64, "a finite amplitude in rad, like 0.2"); err != nil {
		return err
	}
	if err := CheckRange("partner", "frequency", f.Frequency, 0, math.MaxFloat64, "a frequency of 0 Hz or more, like 0.5"); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"drop", f.Drop}, {"duplicate", f.Duplicate}, {"reorder", f.Reorder}, {"wrong-size", f.WrongSize}} {
		if err := CheckRange("partner", p.name, p.v, 0, 1, "a probability from 0 to 1, like 0.05"); err != nil {
			return err
		}
	}
	return nil
}

// Spec turns the flags into a controller spec for commands of n values.
func (f PartnerFlags) Spec(n int) (simulink.ControllerSpec, error) {
	spec := simulink.ControllerSpec{Kind: f.Controller}
	switch f.Controller {
	case "constant":
		for _, s := range strings.Split(f.U, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return spec, fmt.Errorf("bridge partner: -u %q: want %d finite numbers separated by commas (rad)", f.U, n)
			}
			spec.U = append(spec.U, v)
		}
	case "sine":
		spec.Amplitude, spec.Frequency = repeat(f.Amplitude, n), repeat(f.Frequency, n)
	case "jacobian":
		return spec, errors.New("bridge partner: -controller jacobian needs its parameters: use -config with a [link.partner.controller] table")
	}
	return spec, nil
}

// LoopFlags declares on fs the [link.loop] keys that `bridge bench link`
// and `bench links` take from their command line: -priority, -cpu,
// -dma-latency and -budget, and with gate -lead and -spin. The returned
// function reads them into a LoopTable, refusing a value that is neither
// "auto" nor a duration.
func LoopFlags(fs *flag.FlagSet, cmd string, gate bool) func() (LoopTable, error) {
	priority := fs.Int("priority", 80, "SCHED_FIFO priority of the loop threads (the scheduler model's one thread); 0 = normal")
	cpu := fs.Int("cpu", -1, "pin every loop and its partner to this CPU and keep the process's other threads on the other CPUs (-1: no pinning)")
	dma := fs.Bool("dma-latency", true, "hold /dev/cpu_dma_latency at 0 during the runs, as cyclictest does")
	guard := fs.Bool("spin-guard", true, "demote a SCHED_FIFO loop (and its partner) that runs outside its own code past its threshold, as loop.spin_guard does")
	budget := fs.String("budget", "0s", `unpinned loops and their partners: SCHED_DEADLINE CPU time per period, "auto" (shared, as loop.budget = "auto" does) or a duration; "0s" = SCHED_FIFO at -priority`)
	var lead, spin *string
	if gate {
		lead = fs.String("lead", "auto", `how long before each deadline the loop wakes to measure: "auto" (learned) or a duration; "0s" sends as soon as measured`)
		spin = fs.String("spin", "0s", `spin before each send: "auto" (learned), a duration, or "0s" (sleep only)`)
	}
	return func() (LoopTable, error) {
		loop := LoopTable{Priority: *priority, CPU: cpu, DMALatency: dma, Budget: new(AutoDuration), SpinGuard: guard}
		read := func(name string, text *string, into *AutoDuration) error {
			if err := into.UnmarshalText([]byte(*text)); err != nil {
				return fmt.Errorf("bridge %s: -%s %q: want auto or a duration such as 100us", cmd, name, *text)
			}
			return nil
		}
		if err := read("budget", budget, loop.Budget); err != nil {
			return LoopTable{}, err
		}
		if gate {
			loop.Lead = new(AutoDuration)
			if err := errors.Join(read("lead", lead, loop.Lead), read("spin", spin, &loop.Spin)); err != nil {
				return LoopTable{}, err
			}
		}
		return loop, nil
	}
}
