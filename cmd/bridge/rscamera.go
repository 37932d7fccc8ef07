package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/labbridge/bridge/camera"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

// rsSource is a RealSense camera as a camera.Source: colour BGR8 and depth
// Z16 at the configured mode, depth intrinsics for the tracker.
type rsSource struct {
	cfg   realsense.Config
	clock *realtime.Clock
	// pace, for a recording (which plays as fast as it is read), is the
	// frame period of the camera it stands for; next is the next frame's time.
	pace, next int64

	mu  sync.Mutex
	lib *realsense.Lib
	cam *realsense.Camera
	rf  realsense.Frame
}

// loadRealsense loads librealsense2: from the system, REALSENSE_LIB, or the
// pyrealsense2 package's extension module (which carries the library).
func loadRealsense(ctx context.Context) (*realsense.Lib, error) {
	lib, err := realsense.Load(realsense.Options{})
	if err == nil || errors.Is(err, realsense.ErrNoCgo) {
		return lib, err
	}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	dir, libpython, pyErr := realsense.FindPyrealsense2(pctx, "")
	if pyErr != nil {
		return nil, fmt.Errorf("%w (install Intel's librealsense2 package, or `pip install pyrealsense2`, or set %s)", err, realsense.EnvLibrary)
	}
	opts := realsense.Options{SearchDirs: []string{dir}}
	if libpython != "" {
		opts.Preload = []string{libpython}
	}
	return realsense.Load(opts)
}

func (s *rsSource) Open(ctx context.Context) (camera.Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lib == nil {
		lib, err := loadRealsense(ctx)
		if err != nil {
			return camera.Stream{}, err
		}
		s.lib = lib
	}
	cam, err := s.lib.OpenCamera(s.cfg)
	if err != nil {
		if errors.Is(err, realsense.ErrDisconnected) {
			err = errors.Join(camera.ErrDisconnected, err)
		}
		return camera.Stream{}, err
	}
	s.cam = cam
	_, d := cam.Intrinsics()
	st := camera.Stream{Width: cam.Width(), Height: cam.Height(), FPS: s.cfg.FPS, Intrinsics: depthIntrinsics(d)}
	if s.pace > 0 {
		st.FPS = int(int64(time.Second) / s.pace)
	}
	return st, nil
}

// depthIntrinsics widens the camera's float32 intrinsics to float64, as
// pyrealsense2 hands them to emioapi.
func depthIntrinsics(d realsense.Intrinsics) tracker.Intrinsics {
	return tracker.Intrinsics{
		Width: d.Width, Height: d.Height,
		PPX: float64(d.PPX), PPY: float64(d.PPY), FX: float64(d.FX), FY: float64(d.FY),
	}
}

func (s *rsSource) Read(ctx context.Context, f *camera.Frame) error {
	if s.pace > 0 {
		now := s.clock.Now()
		if s.next < now-s.pace {
			s.next = now
		}
		if err := realtime.SleepUntil(s.next); err != nil {
			return err
		}
		s.next += s.pace
	}
	s.rf.Color, s.rf.Depth = f.Color, f.Depth
	if err := s.cam.Read(ctx, &s.rf); err != nil {
		if errors.Is(err, realsense.ErrDisconnected) {
			return errors.Join(camera.ErrDisconnected, err)
		}
		return err
	}
	f.Number = s.rf.FrameNumber
	f.Time = s.clock.Now()
	return nil
}

func (s *rsSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cam == nil {
		return nil
	}
	err := s.cam.Close()
	s.cam = nil
	return err
}

// closeLib unloads the library at exit.
func (s *rsSource) closeLib() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lib == nil {
		return nil
	}
	err := s.lib.Close()
	s.lib = nil
	return err
}

// cmdCameras is `bridge cameras`: the connected RealSense cameras.
func cmdCameras(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cameras", "cameras", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	lib, err := loadRealsense(ctx)
	if err != nil {
		return fmt.Errorf("bridge cameras: %w", err)
	}
	defer lib.Close()
	devs, err := lib.ListDevices()
	if err != nil {
		return fmt.Errorf("bridge cameras: %w", err)
	}
	fmt.Fprintf(stdout, "librealsense2 %v (%s)\n", lib.Version(), lib.Path())
	if len(devs) == 0 {
		fmt.Fprintln(stdout, "no RealSense camera connected (check the USB 3 cable, and the udev rules or root for USB access)")
		return nil
	}
	for _, d := range devs {
		fmt.Fprintf(stdout, "serial %s  %s  firmware %s\n", d.Serial, d.Name, d.Firmware)
	}
	fmt.Fprintln(stdout, `select one with [link.camera] serial = "…"`)
	return nil
}
