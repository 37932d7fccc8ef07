package vrepsim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Controlled is a simulated scene that a person or a script drives while it
// runs (docs/vrep.md §4.2): AZ and ZMQ.
type Controlled interface {
	Inject(f Fault, n int)
	SetDelay(d time.Duration)
	Every(n int, f Fault)
	Restart()
	Stop()
	Play()
	Status() string
}

// dropper and pauser are what only the ZMQ scene does.
type (
	dropper interface{ Drop() int }
	pauser  interface{ Pause() }
)

// ErrCommand is a control command that is not understood; the message says
// what is.
var ErrCommand = errors.New("vrepsim: unknown control command")

// command is one control command: its words after the name, and what it
// does.
type command struct {
	name, args, help string
	run              func(s Controlled, args []string) (string, error)
}

// commands is the table of control commands; a function, not a variable,
// since "help" lists the table it is in.
func commands() []command {
	return []command{
		{"delay", "SECONDS|DURATION [N]", "hold the next N replies (1) that long", cmdDelay},
		{"drop", "", "close every client connection (zmq); reset the next connection (az)", cmdDrop},
		{"stop", "", "press Stop: the simulation stops and forgets every client's stepping (az: the script stops listening)", func(s Controlled, _ []string) (string, error) {
			s.Stop()
			return "stopped", nil
		}},
		{"play", "", "press Play: the simulation runs", func(s Controlled, _ []string) (string, error) {
			s.Play()
			return "running", nil
		}},
		{"pause", "", "press Pause (zmq)", func(s Controlled, _ []string) (string, error) {
			p, ok := s.(pauser)
			if !ok {
				return "", fmt.Errorf("%w: pause: the az scene has no pause; stop or play", ErrCommand)
			}
			p.Pause()
			return "paused", nil
		}},
		{"restart", "", "press Stop then Play", func(s Controlled, _ []string) (string, error) {
			s.Restart()
			return "restarted", nil
		}},
		{"fault", "KIND [N]", "the next N calls (1) misbehave: refuse, close, short, magic, delay, restart", cmdFault},
		{"every", "N [KIND]", "every N-th call misbehaves as KIND (0: none)", cmdEvery},
		{"slip", "JOINT PCT", "joint JOINT's drive slips: it turns at PCT % of its target (100: no slip)", cmdSlip},
		{"status", "", "the simulation's state, time, clients, targets and angles", func(s Controlled, _ []string) (string, error) {
			return s.Status(), nil
		}},
		{"help", "", "this list", func(Controlled, []string) (string, error) { return Help(), nil }},
	}
}

// Help lists the control commands, one a line.
func Help() string {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "%-28s %s\n", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Control applies one command, given as words ("delay 1", "drop", "stop",
// "play", "status"), to the scene and returns what to tell the person.
func Control(s Controlled, words []string) (string, error) {
	if len(words) == 0 {
		return "", nil
	}
	name := strings.ToLower(words[0])
	table := commands()
	i := slices.IndexFunc(table, func(c command) bool { return c.name == name })
	if i < 0 {
		names := make([]string, len(table))
		for j, c := range table {
			names[j] = c.name
		}
		return "", fmt.Errorf("%w %q: want one of %s", ErrCommand, words[0], strings.Join(names, ", "))
	}
	return table[i].run(s, words[1:])
}

// count parses an optional count (default 1).
func count(args []string, i int) (int, error) {
	if len(args) <= i {
		return 1, nil
	}
	n, err := strconv.Atoi(args[i])
	if err != nil || n < 0 || n > 1_000_000 {
		return 0, fmt.Errorf("%w: count %q: want 0..1000000", ErrCommand, args[i])
	}
	return n, nil
}

// duration parses seconds ("1", "0.25") or a Go duration ("200ms").
func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, fmt.Errorf("%w: delay %q: want seconds (1, 0.25) or a duration (200ms)", ErrCommand, s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < 0 || d > time.Hour {
		return 0, fmt.Errorf("%w: delay %q: want 0..1h", ErrCommand, s)
	}
	return d, nil
}

func cmdDelay(s Controlled, args []string) (string, error) {
	if len(args) == 0 || len(args) > 2 {
		return "", fmt.Errorf("%w: delay SECONDS [N]", ErrCommand)
	}
	d, err := duration(args[0])
	if err != nil {
		return "", err
	}
	n, err := count(args, 1)
	if err != nil {
		return "", err
	}
	s.SetDelay(d)
	s.Inject(Delay, n)
	return fmt.Sprintf("the next %d repl(ies) held %v", n, d), nil
}

func cmdDrop(s Controlled, _ []string) (string, error) {
	if d, ok := s.(dropper); ok {
		return fmt.Sprintf("dropped %d connection(s)", d.Drop()), nil
	}
	s.Inject(Refuse, 1)
	return "the next connection is reset", nil
}

func cmdFault(s Controlled, args []string) (string, error) {
	if len(args) == 0 || len(args) > 2 {
		return "", fmt.Errorf("%w: fault KIND [N]", ErrCommand)
	}
	f, err := ParseFault(args[0])
	if err != nil {
		return "", err
	}
	n, err := count(args, 1)
	if err != nil {
		return "", err
	}
	s.Inject(f, n)
	return fmt.Sprintf("the next %d call(s): %s", n, f), nil
}

func cmdSlip(s Controlled, args []string) (string, error) {
	w, ok := s.(interface{ World() *World })
	if len(args) != 2 || !ok {
		return "", fmt.Errorf("%w: slip JOINT PCT, like slip 1 50", ErrCommand)
	}
	j, err := strconv.Atoi(args[0])
	if err != nil {
		return "", fmt.Errorf("%w: slip: joint %q: want its number, 1 for the first", ErrCommand, args[0])
	}
	pct, err := strconv.ParseFloat(args[1], 64)
	if err != nil {
		return "", fmt.Errorf("%w: slip: %q: want the %% of its target speed the joint keeps", ErrCommand, args[1])
	}
	if err := w.World().Slip(j, pct); err != nil {
		return "", err
	}
	return fmt.Sprintf("joint %d turns at %g %% of its target", j, pct), nil
}

func cmdEvery(s Controlled, args []string) (string, error) {
	if len(args) == 0 || len(args) > 2 {
		return "", fmt.Errorf("%w: every N [KIND]", ErrCommand)
	}
	n, err := count(args, 0)
	if err != nil {
		return "", err
	}
	f := Delay
	if len(args) == 2 {
		if f, err = ParseFault(args[1]); err != nil {
			return "", err
		}
	}
	if n == 0 || f == None {
		s.Every(0, None)
		return "no periodic fault", nil
	}
	s.Every(n, f)
	return fmt.Sprintf("every %d-th call: %s", n, f), nil
}
