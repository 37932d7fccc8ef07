package bridge

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/labbridge/bridge/simulink"
)

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

// Config is a bridge.toml file.
type Config struct {
	Service ServiceConfig `toml:"service"`
	Links   []LinkFile    `toml:"link"`
}

// ServiceConfig holds process-wide settings.
type ServiceConfig struct {
	// Metrics is the listen address of /metrics and /healthz; "" disables it.
	Metrics   string `toml:"metrics"`
	LogLevel  string `toml:"log_level"`
	LogFormat string `toml:"log_format"`
	// GOMAXPROCS: 0 keeps the runtime's choice (docs/realtime.md §3 advises
	// more Ps than busy goroutines).
	GOMAXPROCS int `toml:"gomaxprocs"`
}

// LinkFile is one [[link]] table: a loop, a Simulink UDP endpoint and a plant.
type LinkFile struct {
	Name   string   `toml:"name"`
	RateHz float64  `toml:"rate_hz"`
	Apply  string   `toml:"apply"`
	Halt   string   `toml:"halt"`
	Margin Duration `toml:"window_margin"`
	// Side and Sort are emioapi's marker frame (top, front, plan) and order
	// (y, z), used by the camera tracker.
	Side string `toml:"side"`
	Sort string `toml:"sort"`
	// Clock is what paces the loop: "timer" (its own absolute deadlines) or
	// "camera" (each camera frame, as emioapi does).
	Clock   string      `toml:"clock"`
	Loop    LoopFile    `toml:"loop"`
	UDP     UDPFile     `toml:"udp"`
	Plant   PlantFile   `toml:"plant"`
	Camera  CameraFile  `toml:"camera"`
	Partner PartnerFile `toml:"partner"`
}

// CameraFile is [link.camera]: where the markers of the measurement come
// from. Kind "none" takes them from the plant's own marker model (or zeros);
// "sim" is the virtual lab's camera rendering the simulated robot for the
// real tracker; "realsense" is a RealSense camera.
type CameraFile struct {
	Kind string `toml:"kind"`
	// Serial selects a RealSense camera; "" = the first one.
	Serial string `toml:"serial"`
	// Playback plays a RealSense .bag recording in a loop instead of a
	// camera (kind = "realsense"): a recorded session replayed offline.
	Playback string `toml:"playback"`
	Width    int    `toml:"width"`
	Height   int    `toml:"height"`
	FPS      int    `toml:"fps"`
	// DepthMin and DepthMax are the depth range in mm; emioapi's bridge uses
	// 0 and 1000.
	DepthMin *int `toml:"depth_min"`
	DepthMax *int `toml:"depth_max"`
	// Params and Calibration are emioapi's cameraparameter.json and
	// camera_2d_points.csv; "" = ~/.config/emioapi/<file> when present, else
	// emioapi's defaults (sim: the virtual camera's own calibration).
	Params      string `toml:"params"`
	Calibration string `toml:"calibration"`
	// SaveFrames is a directory where frames are saved as PNG every
	// SaveEvery frames, for `bridge track`; "" = off.
	SaveFrames string `toml:"save_frames"`
	SaveEvery  int    `toml:"save_every"`
}

// LoopFile is [link.loop].
type LoopFile struct {
	Priority   int      `toml:"priority"`
	CPU        *int     `toml:"cpu"`
	Spin       Duration `toml:"spin"`
	LockMemory bool     `toml:"lock_memory"`
	DMALatency *bool    `toml:"dma_latency"`
}

// UDPFile is [link.udp], emioapi's endpoints and thresholds.
type UDPFile struct {
	Remote            string   `toml:"remote"`
	Bind              string   `toml:"bind"`
	Listen            string   `toml:"listen"`
	NbMarkers         *int     `toml:"nb_markers"`
	RecvTimeout       Duration `toml:"recv_timeout"`
	HandshakeInterval Duration `toml:"handshake_interval"`
	MaxTimeouts       int      `toml:"max_timeouts"`
	MaxDesyncs        int      `toml:"max_desyncs"`
	RecvBuffer        int      `toml:"recv_buffer"`
}

// PlantFile is [link.plant]. Kind "sim" is the in-memory Emio plant; kind
// "dynamixel" is the Emio's servos on a serial port, or simulated servos on a
// pseudo-terminal when port = "sim".
type PlantFile struct {
	Kind string `toml:"kind"`
	// Port: "sim", a device path, a /dev/serial/by-id name,
	// "usb:VID:PID[:SERIAL]" or "auto" (the only U2D2).
	Port            string    `toml:"port"`
	Baud            int       `toml:"baud"`
	IDs             []int     `toml:"ids"`
	Mode            string    `toml:"mode"`
	ProfileVelocity *int      `toml:"profile_velocity"`
	FastSyncRead    *bool     `toml:"fast_sync_read"`
	LatencyTimer    Duration  `toml:"latency_timer"`
	Motors          int       `toml:"motors"`
	TimeConstant    Duration  `toml:"time_constant"`
	Initial         []float64 `toml:"initial"`
	Min             []float64 `toml:"min"`
	Max             []float64 `toml:"max"`
	Y0              []float64 `toml:"y0"`
	J               []float64 `toml:"j"`
}

// PartnerFile is [link.partner]: the built-in Simulink stand-in of `bridge sim`.
type PartnerFile struct {
	Delay      bool               `toml:"delay"`
	Controller simulink.ControllerSpec `toml:"controller"`
}

// PlantKinds lists the plant kinds this build knows.
var plantKinds = []string{"sim", "dynamixel"}

// ParseConfig decodes and validates a TOML document. Unknown keys are errors.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: %s", ErrConfig, parseErrorText(pe))
		}
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("%w: unknown key %s", ErrConfig, strings.Join(keys, ", "))
	}
	c.fillDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
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

// LoadConfig reads and parses a file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bridge: config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

func (c *Config) fillDefaults() {
	if c.Service.LogLevel == "" {
		c.Service.LogLevel = "info"
	}
	if c.Service.LogFormat == "" {
		c.Service.LogFormat = "auto"
	}
	for i := range c.Links {
		l := &c.Links[i]
		if l.RateHz == 0 {
			l.RateHz = 30
		}
		if l.Apply == "" {
			l.Apply = "previous"
		}
		if l.Halt == "" {
			l.Halt = "hold"
		}
		if l.Side == "" {
			l.Side = "plan"
		}
		if l.Sort == "" {
			l.Sort = "y"
		}
		if l.Clock == "" {
			l.Clock = "timer"
		}
		cf := &l.Camera
		if cf.Kind == "" {
			cf.Kind = "none"
		}
		if cf.Width == 0 && cf.Height == 0 {
			cf.Width, cf.Height = 640, 480
		}
		if cf.FPS == 0 {
			cf.FPS = int(math.Round(l.RateHz))
		}
		if cf.DepthMin == nil {
			cf.DepthMin = new(0)
		}
		if cf.DepthMax == nil {
			cf.DepthMax = new(1000)
		}
		if cf.SaveEvery == 0 {
			cf.SaveEvery = 30
		}
		if l.Loop.CPU == nil {
			l.Loop.CPU = new(-1)
		}
		if l.Loop.DMALatency == nil {
			l.Loop.DMALatency = new(true)
		}
		u := &l.UDP
		def := simulink.DefaultMasterConfig(1)
		if u.Remote == "" {
			u.Remote = def.Remote.String()
		}
		if u.Bind == "" {
			u.Bind = def.Bind.String()
		}
		if u.Listen == "" {
			u.Listen = def.Listen.String()
		}
		if u.NbMarkers == nil {
			u.NbMarkers = new(1)
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
		p := &l.Plant
		if p.Kind == "" {
			p.Kind = "sim"
		}
		if p.Motors == 0 {
			p.Motors = 4
			if len(p.IDs) > 0 {
				p.Motors = len(p.IDs)
			}
		}
		if p.Kind == "dynamixel" {
			if p.Port == "" {
				p.Port = "auto"
			}
			if p.Baud == 0 {
				p.Baud = 1000000
			}
			if p.IDs == nil {
				for i := range p.Motors {
					p.IDs = append(p.IDs, i)
				}
			}
			if p.Mode == "" {
				p.Mode = "position"
			}
			if p.ProfileVelocity == nil {
				p.ProfileVelocity = new(1000)
			}
			if p.FastSyncRead == nil {
				p.FastSyncRead = new(true)
			}
		}
		if p.TimeConstant.Duration == 0 {
			p.TimeConstant.Duration = 60 * time.Millisecond
		}
		if p.Min == nil {
			p.Min = repeat(-math.Pi/2, p.Motors)
		}
		if p.Max == nil {
			p.Max = repeat(math.Pi/2, p.Motors)
		}
	}
}

func repeat(v float64, n int) []float64 {
	s := make([]float64, max(n, 0))
	for i := range s {
		s[i] = v
	}
	return s
}

// Validate checks every value and names the key and the allowed range.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, v any, want string) {
		errs = append(errs, fmt.Errorf("%w: %s = %v: want %s", ErrConfig, key, v, want))
	}
	switch c.Service.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("service.log_level", quote(c.Service.LogLevel), "debug, info, warn or error")
	}
	switch c.Service.LogFormat {
	case "auto", "text", "json":
	default:
		bad("service.log_format", quote(c.Service.LogFormat), "auto, text or json")
	}
	if c.Service.Metrics != "" {
		if _, err := netip.ParseAddrPort(c.Service.Metrics); err != nil {
			bad("service.metrics", quote(c.Service.Metrics), `"" or host:port with a numeric host, like "127.0.0.1:9310"`)
		}
	}
	if c.Service.GOMAXPROCS < 0 || c.Service.GOMAXPROCS > 256 {
		bad("service.gomaxprocs", c.Service.GOMAXPROCS, "0..256 (0 = the runtime's choice)")
	}
	if len(c.Links) == 0 {
		errs = append(errs, fmt.Errorf("%w: no [[link]] table: want at least one link", ErrConfig))
	}
	names := map[string]bool{}
	for i := range c.Links {
		l := &c.Links[i]
		k := fmt.Sprintf("link[%d]", i)
		if l.Name != "" {
			k = fmt.Sprintf("link %q", l.Name)
		}
		switch {
		case l.Name == "":
			bad(k+".name", `""`, "a non-empty name")
		case names[l.Name]:
			bad(k+".name", quote(l.Name), "a name used by no other link")
		}
		names[l.Name] = true
		if !(l.RateHz >= 1 && l.RateHz <= 10000) {
			bad(k+".rate_hz", l.RateHz, "1..10000")
		}
		if _, err := ParseApplyMode(l.Apply); err != nil {
			bad(k+".apply", quote(l.Apply), "previous or immediate")
		}
		if _, err := ParseHaltPolicy(l.Halt); err != nil {
			bad(k+".halt", quote(l.Halt), "hold or torque_off")
		}
		if !contains([]string{"top", "front", "plan"}, l.Side) {
			bad(k+".side", quote(l.Side), "top, front or plan")
		}
		if l.Sort != "y" && l.Sort != "z" {
			bad(k+".sort", quote(l.Sort), "y or z")
		}
		if l.Clock != "timer" && l.Clock != "camera" {
			bad(k+".clock", quote(l.Clock), "timer or camera")
		}
		cf := &l.Camera
		switch cf.Kind {
		case "none", "sim", "realsense":
		default:
			bad(k+".camera.kind", quote(cf.Kind), "none, sim or realsense")
		}
		if l.Clock == "camera" && cf.Kind == "none" {
			bad(k+".clock", quote(l.Clock), `"timer" when camera.kind = "none" (no frames to tick on)`)
		}
		if l.Clock == "camera" && l.Loop.Spin.Duration != 0 {
			bad(k+".loop.spin", l.Loop.Spin.Duration, `0 with clock = "camera"`)
		}
		if cf.Kind != "none" {
			if !(cf.Width == 640 && cf.Height == 480) && !(cf.Width == 848 && cf.Height == 480) {
				bad(k+".camera.width/height", fmt.Sprintf("%dx%d", cf.Width, cf.Height), "640x480 or 848x480")
			}
			if cf.FPS != 30 && cf.FPS != 60 && cf.FPS != 90 {
				bad(k+".camera.fps", cf.FPS, "30, 60 or 90 (the D4xx colour modes)")
			}
			if l.Clock == "camera" && math.Abs(l.RateHz-float64(cf.FPS)) > 0.5 {
				bad(k+".rate_hz", l.RateHz, fmt.Sprintf("the camera fps (%d) with clock = \"camera\"", cf.FPS))
			}
			if *l.UDP.NbMarkers < 1 {
				bad(k+".udp.nb_markers", *l.UDP.NbMarkers, "1..16 with a camera")
			}
			if lo, hi := *cf.DepthMin, *cf.DepthMax; lo < 0 || hi > 65535 || lo > hi {
				bad(k+".camera.depth_min/depth_max", fmt.Sprint(lo, " ", hi), "0 ≤ min ≤ max ≤ 65535 (mm)")
			}
			if cf.SaveEvery < 1 {
				bad(k+".camera.save_every", cf.SaveEvery, "≥ 1 frame")
			}
		}
		if cf.Kind != "none" && l.Plant.Kind != "dynamixel" {
			bad(k+".camera.kind", quote(cf.Kind), `"none" unless plant.kind = "dynamixel" (the camera joins the Emio's servos)`)
		}
		if cf.Kind != "realsense" && cf.Serial != "" {
			bad(k+".camera.serial", quote(cf.Serial), `kind = "realsense" for a serial`)
		}
		if cf.Kind != "realsense" && cf.Playback != "" {
			bad(k+".camera.playback", quote(cf.Playback), `kind = "realsense" for a recording`)
		}
		period := time.Duration(float64(time.Second) / max(l.RateHz, 1))
		if m := l.Margin.Duration; m < 0 || m >= period {
			bad(k+".window_margin", m, fmt.Sprintf("0 ≤ margin < the period (%v); 0 = automatic", period))
		}
		if p := l.Loop.Priority; p < 0 || p > 99 {
			bad(k+".loop.priority", p, "0..99 (0 = SCHED_OTHER, 80 matches cyclictest -p 80)")
		}
		if cpu := *l.Loop.CPU; cpu < -1 || cpu > 1023 {
			bad(k+".loop.cpu", cpu, "-1 (no pinning) or a CPU number")
		}
		if s := l.Loop.Spin.Duration; s < 0 || s >= period {
			bad(k+".loop.spin", s, fmt.Sprintf("0 ≤ spin < the period (%v)", period))
		}
		u := &l.UDP
		if ap, err := netip.ParseAddrPort(u.Remote); err != nil || ap.Port() == 0 || ap.Addr().IsUnspecified() {
			bad(k+".udp.remote", quote(u.Remote), `a host address and port, like "127.0.0.1:25000"`)
		}
		if _, err := netip.ParseAddrPort(u.Bind); err != nil {
			bad(k+".udp.bind", quote(u.Bind), `address:port, like "0.0.0.0:9090" (the shipped models accept only source port 9090)`)
		}
		if _, err := netip.ParseAddrPort(u.Listen); err != nil {
			bad(k+".udp.listen", quote(u.Listen), `address:port, like "0.0.0.0:25001"`)
		}
		if n := *u.NbMarkers; n < 0 || n > 16 {
			bad(k+".udp.nb_markers", n, "0..16 (the shipped models use 1 or 2)")
		}
		if d := u.RecvTimeout.Duration; d <= 0 || d > 10*time.Second {
			bad(k+".udp.recv_timeout", d, "0 < t ≤ 10s")
		}
		if d := u.HandshakeInterval.Duration; d < time.Millisecond || d > 10*time.Second {
			bad(k+".udp.handshake_interval", d, "1ms..10s")
		}
		if u.MaxTimeouts < 1 || u.MaxTimeouts > 1000000 {
			bad(k+".udp.max_timeouts", u.MaxTimeouts, "1..1000000")
		}
		if u.MaxDesyncs < 1 || u.MaxDesyncs > 1000000 {
			bad(k+".udp.max_desyncs", u.MaxDesyncs, "1..1000000")
		}
		if u.RecvBuffer < 0 || u.RecvBuffer > 64<<20 {
			bad(k+".udp.recv_buffer", u.RecvBuffer, "0..67108864 bytes")
		}
		p := &l.Plant
		if !contains(plantKinds, p.Kind) {
			bad(k+".plant.kind", quote(p.Kind), strings.Join(plantKinds, " or "))
		}
		if p.Motors < 1 || p.Motors > 16 {
			bad(k+".plant.motors", p.Motors, "1..16")
		}
		if p.Kind == "dynamixel" {
			switch p.Baud {
			case 9600, 57600, 115200, 1000000, 2000000, 3000000, 4000000, 4500000:
			default:
				bad(k+".plant.baud", p.Baud, "9600, 57600, 115200, 1000000, 2000000, 3000000, 4000000 or 4500000")
			}
			if len(p.IDs) != p.Motors {
				bad(k+".plant.ids", p.IDs, fmt.Sprintf("%d IDs, one per motor", p.Motors))
			}
			seen := map[int]bool{}
			for _, id := range p.IDs {
				if id < 0 || id > 252 || seen[id] {
					bad(k+".plant.ids", p.IDs, "distinct IDs in 0..252")
					break
				}
				seen[id] = true
			}
			if p.Mode != "position" && p.Mode != "extended" {
				bad(k+".plant.mode", quote(p.Mode), "position or extended")
			}
			if v := *p.ProfileVelocity; v < 0 || v > 32767 {
				bad(k+".plant.profile_velocity", v, "0..32767 (× 0.229 rpm; 0 = unlimited)")
			}
			if d := p.LatencyTimer.Duration; d < 0 || d > 255*time.Millisecond {
				bad(k+".plant.latency_timer", d, "0..255ms (0 = read it from sysfs, else 16ms)")
			}
		} else if p.Port != "" || p.Baud != 0 || p.IDs != nil || p.Mode != "" || p.ProfileVelocity != nil || p.FastSyncRead != nil || p.LatencyTimer.Duration != 0 {
			bad(k+".plant", quote(p.Kind), `kind = "dynamixel" for port, baud, ids, mode, profile_velocity, fast_sync_read and latency_timer`)
		}
		if d := p.TimeConstant.Duration; d < 0 || d > time.Minute {
			bad(k+".plant.time_constant", d, "0..1m")
		}
		if p.Initial != nil && len(p.Initial) != p.Motors {
			bad(k+".plant.initial", p.Initial, fmt.Sprintf("%d values, one per motor", p.Motors))
		}
		if len(p.Min) != p.Motors || len(p.Max) != p.Motors {
			bad(k+".plant.min/max", fmt.Sprint(p.Min, p.Max), fmt.Sprintf("%d values each, one per motor", p.Motors))
		} else {
			for j := range p.Min {
				if !(p.Min[j] <= p.Max[j]) || math.IsInf(p.Min[j], 0) || math.IsInf(p.Max[j], 0) {
					bad(fmt.Sprintf("%s.plant.min[%d]/max[%d]", k, j, j), fmt.Sprint(p.Min[j], p.Max[j]), "finite values with min ≤ max (rad)")
				}
			}
		}
		nm := *u.NbMarkers
		if p.Y0 != nil && len(p.Y0) != 3*nm {
			bad(k+".plant.y0", p.Y0, fmt.Sprintf("%d values (3 per marker)", 3*nm))
		}
		if p.J != nil && len(p.J) != 3*nm*p.Motors {
			bad(k+".plant.j", fmt.Sprintf("%d values", len(p.J)), fmt.Sprintf("%d values (3·nb_markers rows × motors columns)", 3*nm*p.Motors))
		}
		for _, vs := range [][]float64{p.Initial, p.Y0, p.J} {
			for _, v := range vs {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					bad(k+".plant", v, "finite numbers only")
				}
			}
		}
		if _, err := simulink.NewController(l.Partner.Controller, nm, p.Motors, l.RateHz); err != nil {
			bad(k+".partner.controller", err, "a valid controller")
		}
	}
	return errors.Join(errs...)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Period returns the link's loop period.
func (l *LinkFile) Period() time.Duration {
	return time.Duration(math.Round(float64(time.Second) / l.RateHz))
}

// MasterConfig returns the link's simulink.MasterConfig.
func (l *LinkFile) MasterConfig(motors int) simulink.MasterConfig {
	nm := *l.UDP.NbMarkers
	return simulink.MasterConfig{
		Remote:            netip.MustParseAddrPort(l.UDP.Remote),
		Bind:              netip.MustParseAddrPort(l.UDP.Bind),
		Listen:            netip.MustParseAddrPort(l.UDP.Listen),
		MeasureLen:        3*nm + motors,
		CommandLen:        motors,
		RecvTimeout:       l.UDP.RecvTimeout.Duration,
		HandshakeInterval: l.UDP.HandshakeInterval.Duration,
		MaxTimeouts:       l.UDP.MaxTimeouts,
		MaxDesyncs:        l.UDP.MaxDesyncs,
		RecvBuffer:        l.UDP.RecvBuffer,
	}
}

// LinkConfig returns the bridge.LinkConfig of a validated link file.
func (l *LinkFile) LinkConfig() LinkConfig {
	apply, _ := ParseApplyMode(l.Apply)
	halt, _ := ParseHaltPolicy(l.Halt)
	lim := make([]Limit, l.Plant.Motors)
	for i := range lim {
		lim[i] = Limit{Min: l.Plant.Min[i], Max: l.Plant.Max[i]}
	}
	return LinkConfig{
		Name: l.Name,
		Loop: LoopConfig{
			Period:     l.Period(),
			Priority:   l.Loop.Priority,
			CPU:        *l.Loop.CPU,
			Spin:       l.Loop.Spin.Duration,
			LockMemory: l.Loop.LockMemory,
			DMALatency: *l.Loop.DMALatency,
		},
		Apply:  apply,
		Halt:   halt,
		Limits: lim,
		Margin: l.Margin.Duration,
	}
}
