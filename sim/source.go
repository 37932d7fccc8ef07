package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/labbridge/bridge/camera"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

// LabCameraConfig describes the virtual lab's camera source.
type LabCameraConfig struct {
	Width, Height, FPS int
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
// the camera's rate on absolute deadlines, as a camera's own clock does.
type LabCamera struct {
	cfg    LabCameraConfig
	cam    *Camera
	period int64
	st     camera.Stream

	mu   sync.Mutex
	next int64
	n    uint64
	q, m []float64
}

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
	}
	cc := DefaultCamera(cfg.Width, cfg.Height)
	cam, err := NewCamera(cc)
	if err != nil {
		return nil, err
	}
	return &LabCamera{
		cfg: cfg, cam: cam, period: int64(time.Second) / int64(cfg.FPS),
		st: camera.Stream{Width: cfg.Width, Height: cfg.Height, FPS: cfg.FPS, Intrinsics: tracker.Intrinsics{
			Width: cfg.Width, Height: cfg.Height, PPX: cc.PPX, PPY: cc.PPY, FX: cc.FX, FY: cc.FY,
		}},
		q: make([]float64, cfg.Kinematics.Motors()), m: make([]float64, cfg.Kinematics.Len()),
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

// Open implements camera.Source.
func (s *LabCamera) Open(context.Context) (camera.Stream, error) {
	s.mu.Lock()
	s.next = s.cfg.Clock.Now() + s.period
	s.mu.Unlock()
	return s.st, nil
}

// Read implements camera.Source. It does not allocate.
func (s *LabCamera) Read(ctx context.Context, f *camera.Frame) error {
	s.mu.Lock()
	next := s.next
	s.mu.Unlock()
	if err := realtime.SleepUntil(next); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now()
	s.next += s.period
	if s.next <= now {
		s.next = now + s.period // a stall does not turn into a burst
	}
	if s.cfg.Angles != nil {
		s.cfg.Angles(s.q)
	}
	s.cfg.Kinematics.Markers(s.q, s.m)
	if err := s.cam.Render(f.Color, f.Depth, s.m); err != nil {
		return err
	}
	s.n++
	f.Number, f.Time = s.n, now
	return nil
}

// Close implements camera.Source.
func (s *LabCamera) Close() error { return nil }
