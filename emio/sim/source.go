package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/emio/camera"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

// LabCameraConfig describes the virtual lab's camera source.
type LabCameraConfig struct {
	Width, Height, FPS int
	// ClockErrorPPM is how far the camera's crystal is from nominal, in ppm
	// (−1000..1000): its true frame period is 1/(FPS·(1 + ClockErrorPPM·10⁻⁶)),
	// so +100 means frames 100 ppm faster than FPS, as a framelock.Status's
	// PPM counts them.
	ClockErrorPPM float64
	// Jitter is the delivery jitter (USB): each frame reaches the host a
	// uniform random delay in [0, Jitter] after its ideal instant, without
	// accumulating (the ideal grid goes on). 0 ≤ Jitter < half the period.
	Jitter time.Duration
	// Seed seeds the jitter (math/rand/v2 PCG): the same seed, the same
	// delays.
	Seed uint64
	// Kinematics maps the robot's motor angles to its markers.
	Kinematics *Kinematics
	// Angles fills q with the robot's present motor angles (rad): the
	// simulated servos' (dxlsim.Bus.PresentAngles). nil: the rest pose.
	Angles func(q []float64)
	Clock  *realtime.Clock
}

// LabCamera is the virtual lab's camera as a camera.Source: at each frame it
// reads the simulated robot's present angles, maps them through the lab's
// kinematics to marker positions and renders them for the real tracker, at
// the camera's rate on its own clock (frameClock): a grid off nominal by the
// crystal's error, each frame delivered with a random delay.
type LabCamera struct {
	cfg LabCameraConfig
	cam *Camera
	st  camera.Stream

	unplugged atomic.Bool
	// hidden: a bit per marker that something stands in front of.
	hidden atomic.Uint64

	mu     sync.Mutex
	clk    frameClock
	render int64 // ns a frame takes to render, slowly forgotten
	q, m   []float64
	shown  []float64 // the markers in view, as rendered
}

// maxClockErrorPPM bounds LabCameraConfig.ClockErrorPPM: a crystal is off by
// tens of ppm; 1000 is already a broken one.
const maxClockErrorPPM = 1000

// NewLabCamera checks cfg and builds the camera (a D435 depth stream of the
// configured size, DefaultCamera).
func NewLabCamera(cfg LabCameraConfig) (*LabCamera, error) {
	switch {
	case cfg.Kinematics == nil:
		return nil, fmt.Errorf("%w: lab camera without kinematics", ErrConfig)
	case cfg.Clock == nil:
		return nil, fmt.Errorf("%w: lab camera without a clock", ErrConfig)
	case cfg.FPS < 1 || cfg.FPS > 1000:
		return nil, fmt.Errorf("%w: lab camera fps = %d, want 1..1000", ErrConfig, cfg.FPS)
	case !(math.Abs(cfg.ClockErrorPPM) <= maxClockErrorPPM):
		return nil, fmt.Errorf("%w: lab camera clock error = %v ppm, want -%d..%d", ErrConfig, cfg.ClockErrorPPM, maxClockErrorPPM, maxClockErrorPPM)
	}
	period := float64(time.Second) / float64(cfg.FPS) / (1 + cfg.ClockErrorPPM*1e-6)
	if cfg.Jitter < 0 || float64(cfg.Jitter) >= period/2 {
		return nil, fmt.Errorf("%w: lab camera jitter = %v, want [0, %v) (under half the frame period)",
			ErrConfig, cfg.Jitter, time.Duration(period/2))
	}
	cc := DefaultCamera(cfg.Width, cfg.Height)
	cam, err := NewCamera(cc)
	if err != nil {
		return nil, err
	}
	return &LabCamera{
		cfg: cfg, cam: cam, clk: newFrameClock(period, int64(cfg.Jitter), cfg.Seed),
		st: camera.Stream{Width: cfg.Width, Height: cfg.Height, FPS: cfg.FPS, Intrinsics: tracker.Intrinsics{
			Width: cfg.Width, Height: cfg.Height, PPX: cc.PPX, PPY: cc.PPY, FX: cc.FX, FY: cc.FY,
		}},
		q: make([]float64, cfg.Kinematics.Motors()), m: make([]float64, cfg.Kinematics.Len()), shown: make([]float64, cfg.Kinematics.Len()),
	}, nil
}

// Calibration is the virtual camera's calibration, written as emioapi's
// calibration writes camera_2d_points.csv and read back through the same
// parser as a lab's file.
func (s *LabCamera) Calibration() (tracker.Calibration, error) {
	var buf bytes.Buffer
	if err := s.cam.CalibrationCSV(&buf); err != nil {
		return tracker.Calibration{}, err
	}
	c, err := tracker.ParseCalibration(&buf)
	if err != nil {
		return tracker.Calibration{}, fmt.Errorf("sim: the virtual camera's calibration: %w", err)
	}
	return c, nil
}

// CalibrationCSV writes the virtual camera's camera_2d_points.csv.
func (s *LabCamera) CalibrationCSV(w io.Writer) error { return s.cam.CalibrationCSV(w) }

// Open implements camera.Source. The camera's clock starts at the first
// Open and runs on while the source is closed, as a powered camera's does: a
// reopen loses the frames in between (a gap in the numbers), not the phase.
func (s *LabCamera) Open(context.Context) (camera.Stream, error) {
	if s.unplugged.Load() {
		return camera.Stream{}, fmt.Errorf("%w: the virtual camera", ErrUnplugged)
	}
	s.mu.Lock()
	s.clk.open(s.cfg.Clock.Now())
	s.mu.Unlock()
	return s.st, nil
}

// Read implements camera.Source: it waits for the next frame's delivery and
// renders it. A reader that fell behind gets the newest frame delivered, not
// a burst of old ones. Frame.Time is the delivery instant. It does not
// allocate.
func (s *LabCamera) Read(ctx context.Context, f *camera.Frame) error {
	s.mu.Lock()
	at := s.clk.at
	// A real camera exposes and reads out a frame before delivering it:
	// render ahead of the delivery instant, so that the frame is complete
	// when it is delivered and the rendering is not counted as the
	// tracker's time or the markers' age.
	ahead := min(2*s.render+int64(200*time.Microsecond), int64(s.clk.period)/4)
	s.mu.Unlock()
	if err := realtime.SleepUntil(at - ahead); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.unplugged.Load() {
		return fmt.Errorf("%w: %w: the virtual camera", camera.ErrDisconnected, ErrUnplugged)
	}
	s.mu.Lock()
	start := s.cfg.Clock.Now()
	n, at := s.clk.take(start)
	if s.cfg.Angles != nil {
		s.cfg.Angles(s.q)
	}
	s.cfg.Kinematics.Markers(s.q, s.m)
	shown, hidden := s.shown[:0], s.hidden.Load()
	for k := 0; 3*k < len(s.m); k++ {
		if hidden&(1<<k) == 0 { // else not drawn: a marker behind something
			shown = append(shown, s.m[3*k:3*k+3]...)
		}
	}
	err := s.cam.Render(f.Color, f.Depth, shown)
	// The render time to plan the next one by: a slow one counts at once,
	// a fast one slowly, so that one quick frame does not make the next late.
	if d := s.cfg.Clock.Now() - start; d > s.render {
		s.render = d
	} else {
		s.render -= (s.render - d) / 16
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := realtime.SleepUntil(at); err != nil {
		return err
	}
	// The delivery instant; the clock's reading if it is behind the kernel's
	// by the Clock's sub-microsecond error.
	f.Number, f.Time = n, min(at, s.cfg.Clock.Now())
	return nil
}

// Close implements camera.Source.
func (s *LabCamera) Close() error { return nil }

// Unplug makes the virtual camera fail as an unplugged one does: the next
// Read says it is disconnected, and Open fails until Plug.
func (s *LabCamera) Unplug() { s.unplugged.Store(true) }

// Plug undoes Unplug: the next Open streams again.
func (s *LabCamera) Plug() { s.unplugged.Store(false) }

// Occlude hides marker k (1-based) from the camera, as a hand or a cable in
// front of it would, or, with on false, shows it again.
func (s *LabCamera) Occlude(k int, on bool) error {
	if k < 1 || 3*k > len(s.m) {
		return fmt.Errorf("%w: marker %d of %d", ErrConfig, k, len(s.m)/3)
	}
	for {
		old := s.hidden.Load()
		nu := old &^ (1 << (k - 1))
		if on {
			nu = old | 1<<(k-1)
		}
		if s.hidden.CompareAndSwap(old, nu) {
			return nil
		}
	}
}

// Unplugged reports whether the camera is unplugged.
func (s *LabCamera) Unplugged() bool { return s.unplugged.Load() }

// frameClock is the virtual camera's own clock. Frame n's ideal instant is
// start + n·period, computed from n so that no rounding accumulates; frame n
// is delivered at its ideal instant plus a uniform random delay in
// [0, jitter], which does not move the frames after it. Jitter below half a
// period keeps deliveries in order.
type frameClock struct {
	period float64 // ns
	jitter int64
	rng    *rand.Rand
	opened bool
	start  int64  // ns, the instant of frame 0
	n      uint64 // the next frame to deliver
	at     int64  // its delivery instant
}

func newFrameClock(period float64, jitter int64, seed uint64) frameClock {
	return frameClock{period: period, jitter: jitter, rng: rand.New(rand.NewPCG(seed, 0x6c6162))}
}

// open starts the clock at now (frame 1 one period later), or, once
// started, skips to the first frame after now.
func (c *frameClock) open(now int64) {
	if !c.opened {
		c.opened, c.start, c.n = true, now, 1
	} else {
		c.n = max(c.n, c.index(now)+1)
	}
	c.at = c.delivery(c.n)
}

// ideal returns frame n's ideal instant.
func (c *frameClock) ideal(n uint64) int64 {
	return c.start + int64(math.Round(float64(n)*c.period))
}

// delivery draws frame n's delivery instant.
func (c *frameClock) delivery(n uint64) int64 {
	d := int64(0)
	if c.jitter > 0 {
		d = c.rng.Int64N(c.jitter + 1)
	}
	return c.ideal(n) + d
}

// index returns the newest frame whose ideal instant is at or before t (0
// before the start).
func (c *frameClock) index(t int64) uint64 {
	if t <= c.start {
		return 0
	}
	k := uint64(float64(t-c.start) / c.period)
	// The division and ideal's rounding may disagree by one at a boundary.
	for c.ideal(k+1) <= t {
		k++
	}
	for k > 0 && c.ideal(k) > t {
		k--
	}
	return k
}

// take returns the newest frame delivered by now (at least the one due next,
// even to a reader a little early) and moves on to the frame after it.
func (c *frameClock) take(now int64) (n uint64, at int64) {
	// After a long stall, go straight to the frame before the newest rather
	// than draw the delay of every missed frame; it is delivered by now,
	// since its ideal instant is a period before now and jitter is under
	// half a period.
	if k := c.index(now); k > c.n+1 {
		c.n = k - 1
		c.at = c.delivery(c.n)
	}
	for {
		next := c.delivery(c.n + 1)
		if next > now {
			n, at = c.n, c.at
			c.n, c.at = c.n+1, next
			return n, at
		}
		c.n, c.at = c.n+1, next
	}
}
