// Package config is the schema of bridge.toml (docs/architecture.md
// "Configuration"): the process-wide [service] table and one [[link]] table
// per link, with its loop, its Simulink endpoint, its built-in partner and a
// [link.plant] table whose keys belong to the plant's kind.
//
// Each plant kind lives in a file of its own (kind_*.go) with its table,
// defaults, validation and build function, and is listed once in the static
// kinds table. Unknown keys are errors that name the key, say which kind a
// key of another kind belongs to, and say where a key of an older layout
// went. Every value is validated with a message naming the key and the
// allowed range.
//
// This package may import device packages; the loop, link and supervisor
// (package bridge) never import it.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/simulink"
	"github.com/labbridge/bridge/tap"
)

// ErrConfig is the sentinel of every configuration error.
var ErrConfig = errors.New("config: invalid configuration")

// Duration is a TOML string such as "100ms".
type Duration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: want a number with a unit, like \"100ms\"", b)
	}
	d.Duration = v
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// AutoDuration is a duration or "auto": a value the loop learns.
type AutoDuration struct {
	time.Duration
	Auto bool
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *AutoDuration) UnmarshalText(b []byte) error {
	if string(b) == "auto" {
		*d = AutoDuration{Auto: true}
		return nil
	}
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: want \"auto\" or a number with a unit, like \"200us\"", b)
	}
	*d = AutoDuration{Duration: v}
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d AutoDuration) MarshalText() ([]byte, error) {
	if d.Auto {
		return []byte("auto"), nil
	}
	return []byte(d.String()), nil
}

func (d AutoDuration) String() string {
	if d.Auto {
		return "auto"
	}
	return d.Duration.String()
}

// Config is a bridge.toml file.
type Config struct {
	Service Service
	Links   []LinkTable
}

// Service holds process-wide settings: [service].
type Service struct {
	// Metrics is the listen address of /metrics and /healthz; "" disables it.
	Metrics   string `toml:"metrics"`
	LogLevel  string `toml:"log_level"`
	LogFormat string `toml:"log_format"`
	// GOMAXPROCS: 0 is automatic, the CPUs plus one per locked thread (Procs).
	GOMAXPROCS int `toml:"gomaxprocs"`
	// Nice is the nice value of the process's ordinary threads (the Go
	// runtime's, HTTP), set at the start (realtime.Renice); 0 leaves it,
	// unset is DefaultNice.
	Nice *int `toml:"nice"`
}

// DefaultNice is [service] nice when the file sets none. A loop thread that
// wakes to find its P handed to other work waits for one of the runtime's
// ordinary threads to give it one back; under 500 HTTP clients on the same
// machine, at nice -10 those threads did so sooner: TIMEOUTs 365–620 against
// 870–1 913 a minute, scheduler waits over 1 ms 126–250 against 927–2 084,
// and no loop spun for 0.95 s (docs/realtime.md §17).
const DefaultNice = -10

// threadsLocker is a plant whose devices run locked threads of their own
// (the Emio's real-time camera thread).
type threadsLocker interface{ lockedThreads() int }

// Procs returns the GOMAXPROCS to run cfg's links with, on a machine of
// cpus CPUs whose runtime chose current, with built-in partners when
// partners: [service] gomaxprocs, or with 0 the CPUs plus one per locked
// thread (each link's loop, each real-time partner's receive thread, each
// real-time camera thread), at least current. A locked thread blocked in a system call keeps its P, so
// fewer Ps than the CPUs plus those threads starve the other goroutines:
// 16 links at 1 kHz on 2 CPUs timed out on a third of their ticks with 2 Ps
// and kept their lateness with 18 (README "Many links in one process"), and
// a thread that comes back from its system call to find its P taken must
// wait for another thread to hand one over. A value set below that comes
// back with a warning saying so.
func (c *Config) Procs(cpus, current int, partners bool) (n int, warning string) {
	locked := 0
	for i := range c.Links {
		locked++
		if partners && partnerPriority(c.Links[i].Loop.Priority) > 0 {
			locked++
		}
		if tl, ok := c.Links[i].Plant.(threadsLocker); ok {
			locked += tl.lockedThreads()
		}
	}
	need := cpus + locked
	if c.Service.GOMAXPROCS == 0 {
		return max(need, current), ""
	}
	if c.Service.GOMAXPROCS < need {
		warning = fmt.Sprintf("service.gomaxprocs = %d is fewer than the %d CPUs plus one per loop and real-time partner thread (%d): a thread waiting in a system call keeps its P, so the other goroutines may starve; set gomaxprocs = 0 (automatic) or at least %d",
			c.Service.GOMAXPROCS, cpus, locked, need)
	}
	return c.Service.GOMAXPROCS, warning
}

// LinkTable is one [[link]] table: a loop, a Simulink UDP endpoint, a built-in
// partner for `bridge sim`, and a plant.
type LinkTable struct {
	Name   string
	RateHz float64
	Apply  string
	Halt   string
	Margin Duration
	// Clock is what paces the loop: "timer" (its own absolute deadlines) or
	// a clock the plant offers (Plant.Clocks: on an Emio with a camera,
	// "camera", a grid locked to the camera's frames, or "frame", a tick on
	// each frame as emioapi does).
	Clock   string
	Loop    LoopTable
	UDP     UDPTable
	Partner PartnerTable
	// Tap is [link.tap]: every tick mirrored as an RTP packet.
	Tap TapTable
	// Shadow is [link.shadow]: the plant's simulator beside it.
	Shadow ShadowTable
	// Plant is the [link.plant] table of the plant's kind.
	Plant Plant

	// priorityUnset: the file wrote no loop.priority, so the loop runs at
	// SCHED_OTHER; Warnings says so (a default of 80 would put every test's
	// loop at SCHED_FIFO when run as root).
	priorityUnset bool
	// budget is the loop's SCHED_DEADLINE budget: loop.budget, or what
	// AssignBudgets gave "auto" (0 until then: SCHED_FIFO).
	budget time.Duration
}

// LoopTable is [link.loop].
type LoopTable struct {
	Priority   int           `toml:"priority"`
	CPU        *int          `toml:"cpu"`
	Spin       AutoDuration  `toml:"spin"`
	Lead       *AutoDuration `toml:"lead"`
	LockMemory bool          `toml:"lock_memory"`
	DMALatency *bool         `toml:"dma_latency"`
	// Budget runs a real-time, unpinned loop (and its built-in partner)
	// under SCHED_DEADLINE: "auto" shares the machine's real-time bandwidth
	// among such loops (AssignBudgets), a duration is the CPU time the
	// loop's thread may use each period, "0s" (the default) keeps
	// SCHED_FIFO (bridge.LoopConfig.Budget). Opt-in: on the 2-vCPU test
	// machine deadline loops waited for a CPU more often than FIFO ones
	// (docs/realtime.md §18).
	Budget *AutoDuration `toml:"budget"`
	// SpinGuard lets the process's spin guard demote a SCHED_FIFO loop
	// (and its built-in partner) that runs outside its own code for longer
	// than realtime.GuardThreshold: a loop spinning in the Go runtime for an
	// ordinary thread it keeps off its CPU (bridge.LoopConfig.Guard,
	// docs/realtime.md §19). Default true.
	SpinGuard *bool `toml:"spin_guard"`
}

// UDPTable is [link.udp]: emioapi's endpoints and thresholds.
type UDPTable struct {
	Remote            string   `toml:"remote"`
	Bind              string   `toml:"bind"`
	Listen            string   `toml:"listen"`
	RecvTimeout       Duration `toml:"recv_timeout"`
	HandshakeInterval Duration `toml:"handshake_interval"`
	MaxTimeouts       int      `toml:"max_timeouts"`
	MaxDesyncs        int      `toml:"max_desyncs"`
	RecvBuffer        int      `toml:"recv_buffer"`
	// PinPartner accepts replies, after a handshake, only from the source
	// port that completed it (simulink.MasterConfig.PinPartner); false is
	// emioapi's rule.
	PinPartner *bool `toml:"pin_partner"`
}

// PartnerTable is [link.partner]: the built-in Simulink stand-in of `bridge
// sim`.
type PartnerTable struct {
	Delay      bool                    `toml:"delay"`
	Controller simulink.ControllerSpec `toml:"controller"`
}

// fileConfig and fileLink are what the TOML decoder fills; the plant table
// is kept raw until its kind is known.
type fileConfig struct {
	Service Service    `toml:"service"`
	Links   []fileLink `toml:"link"`
}

type fileLink struct {
	Name    string         `toml:"name"`
	RateHz  *float64       `toml:"rate_hz"`
	Apply   string         `toml:"apply"`
	Halt    string         `toml:"halt"`
	Margin  Duration       `toml:"window_margin"`
	Clock   string         `toml:"clock"`
	Loop    LoopTable      `toml:"loop"`
	UDP     UDPTable       `toml:"udp"`
	Partner PartnerTable   `toml:"partner"`
	Tap     TapTable       `toml:"tap"`
	Shadow  ShadowTable    `toml:"shadow"`
	Plant   toml.Primitive `toml:"plant"`
}

// Parse decodes and validates a TOML document.
func Parse(data []byte) (*Config, error) {
	if len(data) > MaxFileSize {
		return nil, tooLarge(int64(len(data)))
	}
	if err := notText(data); err != nil {
		return nil, err
	}
	if err := checkBounds(data); err != nil {
		return nil, err
	}
	// The file as plain tables first: it says which keys were written (a
	// written 0 is refused, an absent key takes its default) and what value
	// a type error is about.
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, decodeError(err)
	}
	if err := checkLinks(raw); err != nil {
		return nil, err
	}
	if errs, stop := rawChecks(raw); stop {
		return nil, capErrors(errs)
	} else if len(errs) > 0 {
		return nil, capErrors(errs)
	}
	var f fileConfig
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		return nil, typedDecodeError(err, data, raw)
	}
	c := &Config{Service: f.Service}
	var errs []error
	for i := range f.Links {
		fl := &f.Links[i]
		l := LinkTable{
			Name: fl.Name, RateHz: 30, Apply: fl.Apply, Halt: fl.Halt, Margin: fl.Margin, Clock: fl.Clock,
			Loop: fl.Loop, UDP: fl.UDP, Partner: fl.Partner, Tap: fl.Tap, Shadow: fl.Shadow,
		}
		if fl.RateHz != nil { // absent: 30 Hz, emioapi's; 0 written is refused
			l.RateHz = *fl.RateHz
		}
		p, perrs := decodePlant(md, fl.Plant, linkKey(i, fl.Name), hasPlant(raw, i))
		l.priorityUnset = !hasKey(raw, i, "loop", "priority")
		errs = append(errs, perrs...)
		l.Plant = p
		c.Links = append(c.Links, l)
	}
	errs = append(errs, undecodedErrors(md.Undecoded())...)
	if len(errs) > 0 {
		return nil, capErrors(errs)
	}
	c.fillDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// hasPlant reports whether link i of the decoded file has a [link.plant]
// table.
func hasPlant(raw map[string]any, i int) bool {
	links, _ := raw["link"].([]map[string]any)
	if i >= len(links) {
		return false
	}
	_, ok := links[i]["plant"]
	return ok
}

// hasKey reports whether link i of the decoded file has table.key.
func hasKey(raw map[string]any, i int, table, key string) bool {
	links, _ := raw["link"].([]map[string]any)
	if i >= len(links) {
		return false
	}
	t, _ := links[i][table].(map[string]any)
	_, ok := t[key]
	return ok
}

// decodeError is the TOML library's error, with the offending line shown,
// its bytes escaped and its lines shortened: the line may be binary or
// megabytes long.
func decodeError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: %s", ErrConfig, shortLines(parseErrorText(pe)))
	}
	return fmt.Errorf("%w: %s", ErrConfig, shortLines(err.Error()))
}

// typedDecodeError is a decode error into the typed tables: a type
// mismatch in the user's words, else the library's.
func typedDecodeError(err error, data []byte, raw map[string]any) error {
	if line, key, _, ok := typeError(err); ok && strings.HasPrefix(key, "link.") {
		links, _ := raw["link"].([]map[string]any)
		if i := linkAtLine(data, line); i >= 0 && i < len(links) {
			name, _ := links[i]["name"].(string)
			if e, ok := mismatch(err, linkKey(i, name)+".", "link.", links[i]); ok {
				return e
			}
		}
	} else if e, ok := mismatch(err, "", "", raw); ok {
		return e
	}
	return decodeError(err)
}

// shortLines escapes what is not printable in each line of s and cuts
// each line to a readable length.
func shortLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = shorten(l, 200)
	}
	return strings.Join(lines, "\n")
}

// parseErrorText is the TOML error with the offending line shown.
// toml v1.6.0's ErrorWithPosition indexes out of range on some inputs (a
// quote before CR LF, found by FuzzParseConfig; upstream BurntSushi/toml
// issue 517, open); the plain message, with its line, is the fallback.
func parseErrorText(pe toml.ParseError) (s string) {
	defer func() {
		if recover() != nil {
			s = pe.Error()
		}
	}()
	return pe.ErrorWithPosition()
}

// LoadFile reads and parses the configuration file at path.
func LoadFile(path string) (*Config, error) {
	b, err := readBounded(path)
	if errors.Is(err, ErrConfig) {
		return nil, fmt.Errorf("%s: %w", path, err)
	} else if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(b)
	if err == nil {
		err = c.CheckPorts()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// linkKey names a link in messages: by name, else by position.
func linkKey(i int, name string) string {
	if name != "" {
		return "link " + show(quote(name))
	}
	return fmt.Sprintf("link[%d]", i)
}

func (c *Config) fillDefaults() {
	if c.Service.LogLevel == "" {
		c.Service.LogLevel = "info"
	}
	if c.Service.LogFormat == "" {
		c.Service.LogFormat = "auto"
	}
	if c.Service.Nice == nil {
		c.Service.Nice = new(DefaultNice)
	}
	for i := range c.Links {
		c.Links[i].fillDefaults()
	}
}

func (l *LinkTable) fillDefaults() {
	if l.Apply == "" {
		l.Apply = "previous"
	}
	if l.Halt == "" {
		l.Halt = "hold"
	}
	if l.Clock == "" {
		l.Clock = "timer"
	}
	if l.Loop.CPU == nil {
		l.Loop.CPU = new(-1)
	}
	if l.Loop.Budget == nil {
		l.Loop.Budget = &AutoDuration{}
	}
	if !l.Loop.Budget.Auto {
		l.budget = l.Loop.Budget.Duration
	}
	if l.Loop.Lead == nil {
		if l.Clock == "frame" {
			// Woken by each frame: no deadline to send on.
			l.Loop.Lead = &AutoDuration{}
		} else {
			l.Loop.Lead = &AutoDuration{Auto: true}
		}
	}
	if l.UDP.PinPartner == nil {
		l.UDP.PinPartner = new(true)
	}
	if l.Loop.DMALatency == nil {
		l.Loop.DMALatency = new(true)
	}
	if l.Loop.SpinGuard == nil {
		l.Loop.SpinGuard = new(true)
	}
	u := &l.UDP
	def := simulink.DefaultMasterConfig(0, 0)
	if u.Remote == "" {
		u.Remote = def.Remote.String()
	}
	if u.Bind == "" {
		u.Bind = def.Bind.String()
	}
	if u.Listen == "" {
		u.Listen = def.Listen.String()
	}
	if u.RecvTimeout.Duration == 0 {
		u.RecvTimeout.Duration = def.RecvTimeout
	}
	if u.HandshakeInterval.Duration == 0 {
		u.HandshakeInterval.Duration = def.HandshakeInterval
	}
	if u.MaxTimeouts == 0 {
		u.MaxTimeouts = def.MaxTimeouts
	}
	if u.MaxDesyncs == 0 {
		u.MaxDesyncs = def.MaxDesyncs
	}
	if u.RecvBuffer == 0 {
		u.RecvBuffer = def.RecvBuffer
	}
	if l.Tap.PayloadType == 0 {
		l.Tap.PayloadType = tap.DefaultPayloadType
	}
	l.Plant.defaults(l)
	l.shadowDefaults()
}

// validator collects one error per bad value.
type validator struct {
	prefix string // `link "emio".`
	errs   []error
}

func (v *validator) bad(key string, val any, want string) {
	v.errs = append(v.errs, fmt.Errorf("%w: %s%s = %s: want %s", ErrConfig, v.prefix, key, show(val), want))
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// Validate checks every value and names the key and the allowed range.
func (c *Config) Validate() error {
	v := &validator{}
	switch c.Service.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		v.bad("service.log_level", quote(c.Service.LogLevel), "debug, info, warn or error")
	}
	switch c.Service.LogFormat {
	case "auto", "text", "json":
	default:
		v.bad("service.log_format", quote(c.Service.LogFormat), "auto, text or json")
	}
	if c.Service.Metrics != "" {
		if _, err := netip.ParseAddrPort(c.Service.Metrics); err != nil {
			v.bad("service.metrics", quote(c.Service.Metrics), `"" or host:port with a numeric host, like "127.0.0.1:9310"`)
		}
	}
	if c.Service.GOMAXPROCS < 0 || c.Service.GOMAXPROCS > 256 {
		v.bad("service.gomaxprocs", c.Service.GOMAXPROCS, "0..256 (0 = the runtime's choice)")
	}
	if n := c.Service.Nice; n != nil && (*n < -20 || *n > 19) {
		v.bad("service.nice", *n, "-20..19 (0 = leave it)")
	}
	if len(c.Links) == 0 {
		v.errs = append(v.errs, fmt.Errorf("%w: no [[link]] table: want at least one link", ErrConfig))
	}
	names := map[string]bool{}
	for i := range c.Links {
		l := &c.Links[i]
		lv := &validator{prefix: linkKey(i, l.Name) + "."}
		switch {
		case l.Name == "":
			lv.bad("name", `""`, "a non-empty name")
		case names[l.Name]:
			lv.bad("name", quote(l.Name), "a name used by no other link")
		default:
			checkName(lv, l.Name)
		}
		names[l.Name] = true
		l.validate(lv)
		v.errs = append(v.errs, lv.errs...)
	}
	return capErrors(v.errs)
}

func (l *LinkTable) validate(v *validator) {
	if !(l.RateHz >= 1 && l.RateHz <= 10000) {
		v.bad("rate_hz", l.RateHz, "1..10000 ticks per second, like 30 (emioapi's camera rate)")
		return // the period, and every check against it, derives from the rate
	}
	if _, err := bridge.ParseApplyMode(l.Apply); err != nil {
		v.bad("apply", quote(l.Apply), "previous or immediate")
	}
	if _, err := plant.ParseHaltPolicy(l.Halt); err != nil {
		v.bad("halt", quote(l.Halt), "hold or torque_off")
	}
	clocks := append([]string{"timer"}, l.Plant.Clocks()...)
	if !slices.Contains(clocks, l.Clock) {
		want := strings.Join(clocks, " or ")
		if len(clocks) == 1 {
			want = fmt.Sprintf(`"timer" (plant kind %q offers no other clock here)`, l.Plant.Kind())
		}
		v.bad("clock", quote(l.Clock), want)
	}
	if l.Clock == "frame" && (l.Loop.Spin.Duration != 0 || l.Loop.Spin.Auto) {
		v.bad("loop.spin", l.Loop.Spin, `"0s" with clock = "frame" (the loop ticks on each frame event, on no deadline of its own)`)
	}
	if l.Clock == "frame" && (l.Loop.Lead.Duration != 0 || l.Loop.Lead.Auto) {
		v.bad("loop.lead", *l.Loop.Lead, `"0s" with clock = "frame" (the loop ticks on each frame event, on no deadline of its own)`)
	}
	if a := l.Tap.Address; a != "" {
		if ap, err := netip.ParseAddrPort(a); err != nil || ap.Port() == 0 {
			v.bad("tap.address", quote(a), `an IP address and port, like "239.0.0.1:5004" (multicast) or "192.168.0.10:5004"; "" = off`)
		}
	}
	if pt := l.Tap.PayloadType; pt < 96 || pt > 127 {
		v.bad("tap.payload_type", pt, "a dynamic RTP payload type, 96..127")
	}
	l.validateShadow(v)
	period := time.Duration(float64(time.Second) / max(l.RateHz, 1))
	if m := l.Margin.Duration; m < 0 || m >= period {
		v.bad("window_margin", m, fmt.Sprintf("0 ≤ margin < the period (%v); 0 = automatic", period))
	}
	if p := l.Loop.Priority; p < 0 || p > 99 {
		v.bad("loop.priority", p, "0..99 (0 = SCHED_OTHER, 80 matches cyclictest -p 80)")
	}
	if cpu := *l.Loop.CPU; cpu < -1 || cpu > 1023 {
		v.bad("loop.cpu", cpu, "-1 (no pinning) or a CPU number")
	}
	if s := l.Loop.Spin.Duration; s < 0 || s >= period {
		v.bad("loop.spin", s, fmt.Sprintf(`"auto", or 0 ≤ spin < the period (%v)`, period))
	}
	switch b := l.Loop.Budget.Duration; {
	case b < 0 || b > period || (b > 0 && b < time.Microsecond):
		v.bad("loop.budget", b, fmt.Sprintf(`"auto", "0s" (SCHED_FIFO), or a CPU time per period from 1µs up to the period (%v)`, period))
	case b > 0 && *l.Loop.CPU >= 0:
		v.bad("loop.budget", b, `"auto" or "0s" on a pinned loop (a SCHED_DEADLINE thread cannot be pinned; set loop.cpu = -1 for a budget)`)
	case b > 0 && l.Loop.Priority == 0:
		v.bad("loop.budget", b, `"auto" or "0s" with loop.priority = 0 (a budget is for a real-time loop: set loop.priority too)`)
	}
	if d := l.Loop.Lead.Duration; d < 0 || d > period/2 {
		v.bad("loop.lead", d, fmt.Sprintf(`"auto", or 0 ≤ lead ≤ half the period (%v); 0 sends as soon as measured`, period/2))
	}
	u := &l.UDP
	if ap, err := netip.ParseAddrPort(u.Remote); err != nil || ap.Port() == 0 || ap.Addr().IsUnspecified() {
		v.bad("udp.remote", quote(u.Remote), `a host address and port, like "127.0.0.1:25000"`)
	}
	if _, err := netip.ParseAddrPort(u.Bind); err != nil {
		v.bad("udp.bind", quote(u.Bind), `address:port, like "0.0.0.0:9090" (the shipped models accept only source port 9090)`)
	}
	if _, err := netip.ParseAddrPort(u.Listen); err != nil {
		v.bad("udp.listen", quote(u.Listen), `address:port, like "0.0.0.0:25001"`)
	}
	if d := u.RecvTimeout.Duration; d <= 0 || d > 10*time.Second {
		v.bad("udp.recv_timeout", d, "0 < t ≤ 10s")
	}
	if d := u.HandshakeInterval.Duration; d < time.Millisecond || d > 10*time.Second {
		v.bad("udp.handshake_interval", d, "1ms..10s")
	}
	if u.MaxTimeouts < 1 || u.MaxTimeouts > 1000000 {
		v.bad("udp.max_timeouts", u.MaxTimeouts, "1..1000000")
	}
	if u.MaxDesyncs < 1 || u.MaxDesyncs > 1000000 {
		v.bad("udp.max_desyncs", u.MaxDesyncs, "1..1000000")
	}
	if u.RecvBuffer < 0 || u.RecvBuffer > 64<<20 {
		v.bad("udp.recv_buffer", u.RecvBuffer, "0..67108864 bytes")
	}
	before := len(v.errs)
	l.Plant.validate(l, v)
	if len(v.errs) > before {
		return // the shape is unknown: the partner cannot be checked against it
	}
	lay := l.Plant.Layout()
	if n := lay.CommandLen(); n < 1 || n > maxLen || lay.MeasureLen() > maxLen {
		v.bad("plant", fmt.Sprintf("%d measured and %d command values", lay.MeasureLen(), n), fmt.Sprintf("1..%d values each", maxLen))
		return
	}
	if _, err := l.Controller(); err != nil {
		v.bad("partner.controller", err, "a controller for this plant")
	}
}

// maxLen bounds a vector so that its datagram fits one UDP payload with room.
const maxLen = 1000

// Period returns the link's loop period.
func (l *LinkTable) Period() time.Duration {
	return time.Duration(math.Round(float64(time.Second) / l.RateHz))
}

// Simulated reports whether every device of every link is simulated.
func (c *Config) Simulated() bool {
	for i := range c.Links {
		if !c.Links[i].Plant.Simulated() {
			return false
		}
	}
	return true
}

// TapTable is [link.tap]: the link's telemetry tap (docs/tap.md).
type TapTable struct {
	// Address is a unicast or multicast IP address and port; "" = off.
	Address     string `toml:"address"`
	PayloadType int    `toml:"payload_type"`
}

// SetTap turns every link's tap on to addr (`-tap ADDR`), or leaves the
// configuration's when addr is "".
func (c *Config) SetTap(addr string) error {
	if addr == "" {
		return nil
	}
	if ap, err := netip.ParseAddrPort(addr); err != nil || ap.Port() == 0 {
		return fmt.Errorf("%w: -tap %q: want an IP address and port, like 239.0.0.1:5004 (multicast) or 127.0.0.1:5004", ErrConfig, addr)
	}
	for i := range c.Links {
		c.Links[i].Tap.Address = addr
	}
	return nil
}
