package config

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/emio/camera"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/realtime/framelock"
)

// EmioPlant is [link.plant] of kind "emio": the Emio's XM430-W210 servos on
// a Dynamixel bus (real ones on a serial port, or simulated ones on a
// pseudo-terminal with port = "sim", so the real serial path runs either
// way) and the markers its camera tracks ([link.plant.camera]).
type EmioPlant struct {
	KindName string `toml:"kind"`
	// NbMarkers is emioapi's nb_markers: it must equal the Simulink model's
	// mask value (jacobian 1, state space 2).
	NbMarkers *int `toml:"nb_markers"`
	// Port: "sim", a device path, a /dev/serial/by-id name,
	// "usb:VID:PID[:SERIAL]" or "auto" (the only U2D2).
	Port            string `toml:"port"`
	Baud            int    `toml:"baud"`
	IDs             []int  `toml:"ids"`
	Mode            string `toml:"mode"`
	ProfileVelocity *int   `toml:"profile_velocity"`
	// RejoinSpeed (rad/s) is how fast the goals go to the command after a
	// set-up that held the servos where they stood (emio.Config).
	RejoinSpeed  *float64 `toml:"rejoin_speed"`
	FastSyncRead *bool    `toml:"fast_sync_read"`
	LatencyTimer Duration `toml:"latency_timer"`
	// Min and Max bound each command (rad); the link clamps to them.
	Min []float64 `toml:"min"`
	Max []float64 `toml:"max"`
	// Y0 and J are the virtual lab's kinematics (simulated servos and
	// camera only): marker = y0 + j·sin(q), mm.
	Y0     []float64   `toml:"y0"`
	J      []float64   `toml:"j"`
	Camera CameraTable `toml:"camera"`
}

// CameraTable is [link.plant.camera]: where the markers come from. Kind
// "none" takes them from the virtual lab's linear model (simulated servos)
// or zeros; "sim" is the virtual lab's camera rendering the simulated robot
// for the real tracker; "realsense" is a RealSense camera.
type CameraTable struct {
	Kind string `toml:"kind"`
	// Side and Sort are emioapi's marker frame (top, front, plan) and
	// order (y, z).
	Side string `toml:"side"`
	Sort string `toml:"sort"`
	// Serial selects a RealSense camera; "" = the first one.
	Serial string `toml:"serial"`
	// Playback plays a RealSense .bag recording in a loop instead of a
	// camera: a recorded session replayed offline.
	Playback string `toml:"playback"`
	Width    int    `toml:"width"`
	Height   int    `toml:"height"`
	FPS      int    `toml:"fps"`
	// DepthMin and DepthMax are the depth range in mm; emioapi's bridge
	// uses 0 and 1000.
	DepthMin *int `toml:"depth_min"`
	DepthMax *int `toml:"depth_max"`
	// Params and Calibration are emioapi's cameraparameter.json and
	// camera_2d_points.csv; "" = ~/.config/emioapi/<file> when present, else
	// emioapi's defaults (sim: the virtual camera's own calibration).
	Params      string `toml:"params"`
	Calibration string `toml:"calibration"`
	// SaveFrames is a directory where every SaveEvery-th frame is saved as
	// PNG, for `bridge track`; "" = off.
	SaveFrames string `toml:"save_frames"`
	SaveEvery  int    `toml:"save_every"`
	// ClockErrorPPM and Jitter make the virtual camera a real one's clock:
	// its crystal runs this many ppm fast (negative: slow) against the
	// PC's, and each frame is delivered up to Jitter late, so that a loop
	// locked to the camera has something to lock onto (sim only).
	ClockErrorPPM float64  `toml:"clock_error_ppm"`
	Jitter        Duration `toml:"jitter"`
	// LockMargin is the time left after the p99 of a frame's readiness
	// (arrival and tracking) before the tick of clock = "camera" sends;
	// 0 = 300µs.
	LockMargin Duration `toml:"lock_margin"`
	// Priority runs the camera's reading and tracking on a thread of its
	// own at this SCHED_FIFO priority (below the loop's), so that the
	// tracker keeps its time when the machine is busy; 0 = normal.
	Priority int `toml:"priority"`
}

// Kind implements Plant.
func (p *EmioPlant) Kind() string { return "emio" }

// cameraPriority is the SCHED_FIFO priority of a camera's thread: the
// configured one, raised to its loop's when the loop is pinned to a CPU (the
// thread is then pinned with it). Below the loop's on one CPU, a loop that
// spins in the Go runtime waiting for the camera's thread, which it
// preempted there, would spin until the kernel's real-time throttling
// stopped it, as a loop did with a partner one priority below
// (partnerPriority, docs/realtime.md §17); unpinned, the kernel moves a
// preempted real-time thread to another CPU instead. The camera's thread
// then delays a tick that falls while it tracks; with clock = "camera" the
// ticks follow the tracking anyway.
func cameraPriority(camera int, loop LoopTable) int {
	if camera > 0 && loop.CPU != nil && *loop.CPU >= 0 {
		return max(camera, loop.Priority)
	}
	return camera
}

// lockedThreads implements threadsLocker: a camera tracking at a real-time
// priority runs on a locked thread of its own, which keeps its P while it
// waits for a frame.
func (p *EmioPlant) lockedThreads() int {
	if p.Camera.Kind != "" && p.Camera.Kind != "none" && p.Camera.Priority > 0 {
		return 1
	}
	return 0
}

// emioModes are plant.mode's names of the servos' operating modes.
var emioModes = map[dynamixel.OperatingMode]string{dynamixel.ModePosition: "position", dynamixel.ModeExtendedPosition: "extended"}

// emioMode is the operating mode a plant.mode names.
func emioMode(name string) (dynamixel.OperatingMode, bool) {
	for m, n := range emioModes {
		if n == name {
			return m, true
		}
	}
	return 0, false
}

func (p *EmioPlant) defaults(l *LinkTable) {
	if p.KindName == "" {
		p.KindName = "emio"
	}
	d := emio.DefaultConfig()
	if p.NbMarkers == nil {
		p.NbMarkers = new(d.Markers)
	}
	if p.Port == "" {
		p.Port = d.Port
	}
	if p.Baud == 0 {
		p.Baud = d.Bus.Baud
	}
	if p.IDs == nil {
		for _, id := range d.IDs {
			p.IDs = append(p.IDs, int(id))
		}
	}
	if p.Mode == "" {
		p.Mode = emioModes[d.Mode]
	}
	if p.ProfileVelocity == nil {
		p.ProfileVelocity = new(int(d.ProfileVelocity))
	}
	if p.RejoinSpeed == nil {
		p.RejoinSpeed = new(d.RejoinSpeed)
	}
	if p.FastSyncRead == nil {
		p.FastSyncRead = new(d.Fast)
	}
	// Too many IDs allocate nothing here: validate refuses them first.
	if n := len(p.IDs); n >= 1 && n <= emio.MaxServos {
		if p.Min == nil {
			p.Min = repeat(emio.DefaultMin, n)
		}
		if p.Max == nil {
			p.Max = repeat(emio.DefaultMax, n)
		}
	}
	c := &p.Camera
	if c.Kind == "" {
		c.Kind = "none"
	}
	if c.Side == "" {
		c.Side = "plan"
	}
	if c.Sort == "" {
		c.Sort = "y"
	}
	if c.Width == 0 && c.Height == 0 {
		c.Width, c.Height = 640, 480
	}
	if c.FPS == 0 {
		c.FPS = int(math.Round(l.RateHz))
	}
	if c.DepthMin == nil {
		c.DepthMin = new(0)
	}
	if c.DepthMax == nil {
		c.DepthMax = new(1000)
	}
	if c.SaveEvery == 0 {
		c.SaveEvery = 30
	}
	if c.LockMargin.Duration == 0 {
		c.LockMargin.Duration = 300 * time.Microsecond
	}
}

func (p *EmioPlant) validate(l *LinkTable, v *validator) {
	if _, ok := emioMode(p.Mode); !ok {
		v.bad("plant.mode", quote(p.Mode), "position or extended")
	}
	servos := p.servoConfig(l)
	idsBad := false
	for _, fe := range plant.FieldErrors(servos.Validate()) {
		switch fe.Field {
		case "mode", "period":
			continue // the file's mode is checked above; the period is the link's
		case "ids":
			idsBad = true
			v.bad("plant.ids", p.IDs, fe.Want)
			continue
		}
		v.bad("plant."+fe.Field, fe.Value, fe.Want)
	}
	if idsBad {
		return
	}
	validateLimits(v, p.Min, p.Max, len(p.IDs))
	c := &p.Camera
	nm := *p.NbMarkers
	switch {
	case nm < 0 || nm > emio.MaxMarkers:
		return // the driver's error, above
	case nm < 1 && c.Kind != "none":
		v.bad("plant.nb_markers", nm, fmt.Sprintf("1..%d with a camera", emio.MaxMarkers))
		return
	case nm < 1 && (p.Y0 != nil || p.J != nil):
		// One error for the one mistake: y0 and j model markers.
		v.bad("plant.nb_markers", nm, fmt.Sprintf("1..%d with y0 and j (they model the markers); or remove y0 and j", emio.MaxMarkers))
		return
	}
	validateMarkerModel(v, p.Y0, p.J, nm, len(p.IDs))
	switch c.Kind {
	case "none", "sim", "realsense":
	default:
		v.bad("plant.camera.kind", quote(c.Kind), "none, sim or realsense")
		return
	}
	if !slices.Contains([]string{"top", "front", "plan"}, c.Side) {
		v.bad("plant.camera.side", quote(c.Side), "top, front or plan")
	}
	if c.Sort != "y" && c.Sort != "z" {
		v.bad("plant.camera.sort", quote(c.Sort), "y or z")
	}
	if c.Kind != "realsense" && c.Serial != "" {
		v.bad("plant.camera.serial", quote(c.Serial), `kind = "realsense" for a serial`)
	}
	if c.Kind != "realsense" && c.Playback != "" {
		v.bad("plant.camera.playback", quote(c.Playback), `kind = "realsense" for a recording`)
	}
	if c.Kind == "none" {
		return
	}
	if !(c.Width == 640 && c.Height == 480) && !(c.Width == 848 && c.Height == 480) {
		v.bad("plant.camera.width/height", fmt.Sprintf("%dx%d", c.Width, c.Height), "640x480 or 848x480")
	}
	if c.FPS != 30 && c.FPS != 60 && c.FPS != 90 {
		v.bad("plant.camera.fps", c.FPS, "30, 60 or 90 (the D4xx colour modes)")
	}
	if (l.Clock == "camera" || l.Clock == "frame") && math.Abs(l.RateHz-float64(c.FPS)) > 0.5 {
		v.bad("rate_hz", l.RateHz, fmt.Sprintf("the camera fps (%d) with clock = %q", c.FPS, l.Clock))
	}
	if c.Kind != "sim" && (c.ClockErrorPPM != 0 || c.Jitter.Duration != 0) {
		v.bad("plant.camera.clock_error_ppm/jitter", fmt.Sprint(c.ClockErrorPPM, " ", c.Jitter.Duration), `0 (a real camera has its own clock; these make the virtual camera's, kind = "sim")`)
	}
	if ppm := c.ClockErrorPPM; !(ppm >= -1000 && ppm <= 1000) {
		v.bad("plant.camera.clock_error_ppm", ppm, "-1000..1000 ppm (a camera crystal is off by tens)")
	}
	framePeriod := time.Second / time.Duration(max(c.FPS, 1))
	if j := c.Jitter.Duration; j < 0 || j >= framePeriod/2 {
		v.bad("plant.camera.jitter", j, fmt.Sprintf("0 ≤ jitter < half a frame period (%v)", framePeriod/2))
	}
	if pr := c.Priority; pr < 0 || pr > 99 {
		v.bad("plant.camera.priority", pr, "0..99 (0 = normal; below the loop's priority, e.g. 70 with 80)")
	}
	if m := c.LockMargin.Duration; m < 0 || m >= framePeriod/2 {
		v.bad("plant.camera.lock_margin", m, fmt.Sprintf("0 < margin < half a frame period (%v)", framePeriod/2))
	}
	if lo, hi := *c.DepthMin, *c.DepthMax; lo < 0 || hi > 65535 || lo > hi {
		v.bad("plant.camera.depth_min/depth_max", fmt.Sprint(lo, " ", hi), "0 ≤ min ≤ max ≤ 65535 (mm)")
	}
	if c.SaveEvery < 1 {
		v.bad("plant.camera.save_every", c.SaveEvery, "≥ 1 frame")
	}
	if c.Kind == "sim" && (p.Y0 == nil || p.J == nil) {
		v.bad("plant.camera.kind", quote(c.Kind), "y0 and j in [link.plant] (the virtual lab's kinematics the virtual camera renders)")
	}
}

// servoConfig maps the keys onto the servos' emio.Config. An ID outside a
// byte becomes 255, which Validate refuses as it would the file's value.
func (p *EmioPlant) servoConfig(l *LinkTable) emio.Config {
	ids := make([]byte, len(p.IDs))
	for i, id := range p.IDs {
		ids[i] = byte(min(max(id, 0), 255))
		if id < 0 {
			ids[i] = 255
		}
	}
	mode, _ := emioMode(p.Mode)
	bus := dynamixel.DefaultBusConfig()
	bus.Baud, bus.LatencyTimer = p.Baud, p.LatencyTimer.Duration
	return emio.Config{
		IDs: ids, Mode: mode, ProfileVelocity: int64(*p.ProfileVelocity), Markers: *p.NbMarkers, Fast: *p.FastSyncRead,
		Link: l.Name, Port: p.Port, Bus: bus,
		// The rejoin after a power cycle moves each goal at most
		// rejoin_speed per second of ticks.
		Period: linkPeriod(l), RejoinSpeed: *p.RejoinSpeed,
		// Each servo's temperature about once a second, whatever the rate.
		StatusEvery: max(1, int(l.RateHz)/max(len(ids), 1)),
	}
}

// Layout implements Plant: emio.Layout.
func (p *EmioPlant) Layout() plant.Layout { return emio.Layout(*p.NbMarkers, len(p.IDs)) }

// Limits implements Plant.
func (p *EmioPlant) Limits() []bridge.Limit { return limits(p.Min, p.Max) }

// Clocks implements Plant: with a camera, the loop may tick on its frames.
func (p *EmioPlant) Clocks() []string {
	if p.Camera.Kind == "none" {
		return nil
	}
	return []string{"camera", "frame"}
}

// Simulated implements Plant.
func (p *EmioPlant) Simulated() bool { return p.Port == "sim" && p.Camera.Kind != "realsense" }

// Summary implements Plant.
func (p *EmioPlant) Summary() string {
	c := p.Camera
	s := fmt.Sprintf("emio plant: servos %v on %s at %d baud (%s mode), %d marker(s), camera %s", p.IDs, p.Port, p.Baud, p.Mode, *p.NbMarkers, c.Kind)
	if c.Kind != "none" {
		s += fmt.Sprintf(" %dx%d at %d fps (side %s, sort %s)", c.Width, c.Height, c.FPS, c.Side, c.Sort)
	}
	return s
}

func (p *EmioPlant) build(b *builder) (*parts, error) {
	ps := &parts{}
	cfg := p.servoConfig(b.link)
	ids := cfg.IDs
	cfg.Logger = b.env.Logger.With("link", b.link.Name)
	latency, margin := p.LatencyTimer.Duration, cfg.Bus.Margin
	var servos *dxlsim.Bus
	if p.Port == "sim" {
		var err error
		if servos, err = p.simulatedServos(b, ids, &cfg); err != nil {
			return nil, err
		}
		if latency == 0 {
			latency = time.Millisecond // a U2D2 set up as deploy/ advises
		}
		margin = simServoMargin
	} else {
		cfg.Port = p.Port
	}
	cfg.Bus.LatencyTimer, cfg.Bus.Margin = latency, margin
	if p.Camera.Kind != "none" {
		cam, err := p.camera(b, ps, servos, ids)
		if err != nil {
			return nil, err
		}
		cfg.Source = cam // the camera measures the markers
	}
	m, err := emio.New(cfg)
	if err != nil {
		return nil, err
	}
	ps.plant = m
	ps.closers = append(ps.closers, m.Close)
	sw := &servoWatch{m: m, link: b.link.Name}
	ps.probes = append(ps.probes, sw.probes()...)
	if b.env.Metrics != nil {
		if err := b.env.Metrics.Servos(b.link.Name, sw.metrics); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps.openErr = m.Open(ctx)
	return ps, nil
}

// simServoMargin is the reply margin on the simulated servos' line. They
// are a goroutine behind a pseudo-terminal, not hardware: the kernel and
// the scheduler stand between request and reply, and on a loaded 2-core
// machine a reply took up to 0.75 s (p99 0.15 s, against 1.2 ms unloaded).
// At 20 ms, three late replies in a row flapped the link between running
// and degraded. A real line keeps its 3 ms, so that a dead servo is found
// within a tick; here a silent simulated servo only makes its ticks long.
const simServoMargin = 250 * time.Millisecond

// simulatedServos serves the Emio's servos on a pseudo-terminal for the
// life of the built link, and points the plant at it.
func (p *EmioPlant) simulatedServos(b *builder, ids []byte, cfg *emio.Config) (*dxlsim.Bus, error) {
	bc := dxlsim.DefaultBusConfig()
	bc.IDs = ids
	// The wire's byte time and a U2D2 with its latency timer at 1 ms.
	bc.Timing = dxlsim.Timing{Baud: p.Baud, Latency: time.Millisecond}
	bus, err := dxlsim.NewBus(bc)
	if err != nil {
		return nil, err
	}
	pt, err := dxlsim.NewPTY(bus, "")
	if err != nil {
		return nil, err
	}
	b.world("simulated servos", pt.Serve)
	cfg.Open = func() (dynamixel.Port, error) { return dynamixel.OpenSerial(pt.Path(), p.Baud) }
	if p.Camera.Kind == "none" && p.Y0 != nil && p.J != nil && *p.NbMarkers > 0 {
		lm, err := sim.NewLinearMarkers(p.Y0, p.J, len(ids))
		if err != nil {
			return nil, err
		}
		cfg.Source = lm
	}
	b.sim = bus
	return bus, nil
}

// camera builds the link's camera goroutine and what it needs.
func (p *EmioPlant) camera(b *builder, ps *parts, servos *dxlsim.Bus, ids []byte) (*camera.Feed, error) {
	c := &p.Camera
	side, err := tracker.ParseSide(c.Side)
	if err != nil {
		return nil, err
	}
	sortBy, err := tracker.ParseSort(c.Sort)
	if err != nil {
		return nil, err
	}
	clock := b.env.Clock
	var src camera.Source
	var files tracker.LabFiles
	var lab *sim.LabCamera
	switch c.Kind {
	case "sim":
		kin, err := sim.NewKinematics(p.Y0, p.J, len(ids))
		if err != nil {
			return nil, err
		}
		lc := sim.LabCameraConfig{Width: c.Width, Height: c.Height, FPS: c.FPS, Kinematics: kin, Clock: clock,
			ClockErrorPPM: c.ClockErrorPPM, Jitter: c.Jitter.Duration, Seed: 1}
		if servos != nil {
			lc.Angles = func(q []float64) { servos.PresentAngles(ids, q) }
		}
		if lab, err = sim.NewLabCamera(lc); err != nil {
			return nil, err
		}
		b.lab = lab
		src = lab
		// The virtual lab brings its own calibration unless files are named.
		if files, err = tracker.LoadLabFiles(c.Params, c.Calibration, ""); err != nil {
			return nil, err
		}
		if c.Calibration == "" {
			cal, err := lab.Calibration()
			if err != nil {
				return nil, err
			}
			files.Calibration, files.CalibrationFrom = &cal, "the virtual camera's"
		}
	case "realsense":
		rc := realsense.Config{Serial: c.Serial, Width: c.Width, Height: c.Height, FPS: c.FPS, Color: true, Depth: true, Timeout: time.Second}
		if c.Playback != "" {
			// The recording dictates the mode.
			rc = realsense.Config{PlaybackFile: c.Playback, Loop: true, Color: true, Depth: true, Timeout: time.Second}
		}
		rs := camera.NewRealSense(rc, c.FPS, clock)
		ps.closers = append(ps.closers, rs.Unload)
		src = rs
		if files, err = tracker.LoadLabFiles(c.Params, c.Calibration, tracker.EmioapiDir(b.env.Home)); err != nil {
			return nil, err
		}
	}
	ccfg := camera.Config{
		Name: b.link.Name, Source: src, NbMarkers: *p.NbMarkers, Clock: clock,
		Priority: cameraPriority(c.Priority, b.link.Loop), Pin: *b.link.Loop.CPU >= 0, CPU: *b.link.Loop.CPU,
		Tracker: camera.TrackerFor(camera.TrackerSettings{
			Files: files, Side: side, Sort: sortBy, NbMarkers: *p.NbMarkers,
			DepthMin: uint16(*c.DepthMin), DepthMax: uint16(*c.DepthMax),
		}),
		Logger: b.env.Logger.With("link", b.link.Name),
	}
	if b.env.Metrics != nil {
		if ccfg.Observer, err = b.env.Metrics.Camera(b.link.Name, time.Second/time.Duration(c.FPS)); err != nil {
			return nil, err
		}
	}
	if b.link.Clock == "camera" {
		lk, err := framelock.New(framelock.Config{Nominal: time.Second / time.Duration(c.FPS), Margin: c.LockMargin.Duration})
		if err != nil {
			return nil, fmt.Errorf("config: plant.camera: %w", err)
		}
		ccfg.Frames, ps.pacer = lk, lk
		lv := lockView{lock: lk, clock: clock, fps: c.FPS}
		ps.views = append(ps.views, lv)
		if b.env.Metrics != nil {
			if err := b.env.Metrics.FrameLock(b.link.Name, lv.reading); err != nil {
				return nil, err
			}
		}
	}
	if b.link.Clock == "frame" {
		ev, err := realtime.NewEvent(clock)
		if err != nil {
			return nil, err
		}
		ps.closers = append(ps.closers, ev.Close)
		ccfg.Signal, ps.trigger = ev, ev
	}
	if c.SaveFrames != "" {
		if err := os.MkdirAll(c.SaveFrames, 0o755); err != nil {
			return nil, fmt.Errorf("config: plant.camera.save_frames: %w", err)
		}
		sv, err := camera.NewSaver(c.SaveFrames, c.SaveEvery, c.Width, c.Height, b.env.Logger)
		if err != nil {
			return nil, err
		}
		ccfg.OnFrame = sv.Offer
		ps.deps = append(ps.deps, bridge.Part{Name: "frame saver", Service: sv})
		if lab != nil && c.Calibration == "" {
			// `bridge track` needs the virtual camera's calibration to
			// reproduce the positions: save it beside the frames.
			if err := writeFile(filepath.Join(c.SaveFrames, "camera_2d_points.csv"), lab.CalibrationCSV); err != nil {
				return nil, err
			}
		}
	}
	cam, err := camera.New(ccfg)
	if err != nil {
		return nil, err
	}
	ps.deps = append(ps.deps, bridge.Part{Name: "camera", Service: watchedCamera{cam}})
	b.env.Logger.Info("camera", "link", b.link.Name, "kind", c.Kind, "side", c.Side, "sort", c.Sort, "clock", b.link.Clock,
		"params", files.ParamsFrom, "calibration", files.CalibrationFrom)
	return cam, nil
}

// watchedCamera is the camera as a link's part whose health the link's
// no_measurement fault reports (with a start and an end in the log), so
// that /healthz names it once.
type watchedCamera struct{ *camera.Feed }

// Health is nil: the link's "no_measurement" fault says it.
func (watchedCamera) Health() error { return nil }

// lockView reports a camera lock (clock = "camera") in the status line, the
// run's summary and the metrics.
type lockView struct {
	lock  *framelock.Lock
	clock *realtime.Clock
	fps   int
}

func (v lockView) Status() string {
	st := v.lock.Status(v.clock.Now())
	if st.State == framelock.Locking {
		return fmt.Sprintf("lock %s (%d frames)", st.State, st.Frames)
	}
	return fmt.Sprintf("lock %s %.4f Hz %+.0f ppm phase %.2f ms", st.State, st.RateHz, st.PPM, float64(st.Phase)/1e6)
}

func (v lockView) Summary() string {
	st := v.lock.Status(v.clock.Now())
	return fmt.Sprintf("camera lock: %s at %.5f Hz (%+.1f ppm against %d fps), arrival jitter p99 %.2f ms, ticks %.2f ms after each frame, %d frames, %d re-locks",
		st.State, st.RateHz, st.PPM, v.fps, float64(st.Jitter)/1e6, float64(st.Offset)/1e6, st.Frames, st.Relocks)
}

func (v lockView) reading() metrics.LockReading {
	st := v.lock.Status(v.clock.Now())
	return metrics.LockReading{
		State: st.State.String(), States: []string{framelock.Locking.String(), framelock.Locked.String(), framelock.Lost.String()},
		RateHz: st.RateHz, PPM: st.PPM, Phase: st.Phase.Seconds(), Jitter: st.Jitter.Seconds(), Offset: st.Offset.Seconds(),
		Relocks: st.Relocks,
	}
}

// markerModel is the model of the markers that the twin can run: the
// virtual lab's kinematics under a simulated camera, the linear model of
// a link with no camera on simulated servos; nil when the markers come
// from a real camera, of whose robot there is no model.
func (p *EmioPlant) markerModel() (emio.MarkerSource, error) {
	if *p.NbMarkers == 0 || p.Y0 == nil || p.J == nil {
		return nil, nil
	}
	switch {
	case p.Camera.Kind == "sim":
		return sim.NewKinematics(p.Y0, p.J, len(p.IDs))
	case p.Camera.Kind == "none" && p.Port == "sim":
		return sim.NewLinearMarkers(p.Y0, p.J, len(p.IDs))
	}
	return nil, nil
}

// twinThresholds implements twinned: emio's.
func (p *EmioPlant) twinThresholds() map[string]float64 {
	m, _ := p.markerModel()
	return emio.TwinThresholds(m != nil)
}

// twin implements twinned: the servos follow their goals at the profile
// velocity, the markers the lab's model.
func (p *EmioPlant) twin(b *builder) (twinSpec, error) {
	src, err := p.markerModel()
	if err != nil {
		return twinSpec{}, err
	}
	cfg := sim.MotorsConfig{Motors: len(p.IDs), MaxSpeed: emio.SpeedOf(int64(*p.ProfileVelocity)), Markers: *p.NbMarkers, Source: src}
	var skip []string
	if src == nil {
		cfg.Source = sim.NoMarkers{}
		if *p.NbMarkers > 0 {
			skip = []string{"markers"}
		}
	}
	m, err := sim.NewMotors(cfg, b.env.Clock)
	if err != nil {
		return twinSpec{}, err
	}
	ids := p.servoConfig(b.link).IDs
	spec := twinSpec{model: m, skip: skip, words: emioWords(ids)}
	// After a set-up the driver takes the goals to the command at
	// rejoin_speed, which the model does not: those ticks are not compared.
	if r, ok := b.built.Plant.(interface{ Rejoining() bool }); ok {
		spec.settling = r.Rejoining
	}
	return spec, nil
}
