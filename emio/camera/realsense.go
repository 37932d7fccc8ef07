package camera

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

// RealSense is a RealSense camera (or a .bag recording of one) as a Source:
// colour BGR8 and depth Z16 in the configured mode, the depth intrinsics for
// the tracker (emioapi deprojects with them, docs/realsense.md §8.1).
type RealSense struct {
	cfg   realsense.Config
	clock Clock // CLOCK_MONOTONIC, as realtime.SleepUntil sleeps on
	// pace, for a recording (which plays as fast as it is read), is the
	// frame period of the camera it stands for; next is the next frame's time.
	pace, next int64

	mu  sync.Mutex
	lib *realsense.Lib
	cam *realsense.Camera
	rf  realsense.Frame
}

// NewRealSense returns a source for cfg. A recording (cfg.PlaybackFile) is
// played at fps frames per second, as the camera that made it would deliver
// them; fps is ignored for a camera. The library is loaded at the first Open.
func NewRealSense(cfg realsense.Config, fps int, clock Clock) *RealSense {
	s := &RealSense{cfg: cfg, clock: clock}
	if cfg.PlaybackFile != "" && fps > 0 {
		s.pace = int64(time.Second) / int64(fps)
	}
	return s
}

// Open implements Source: it loads librealsense2 the first time (a build
// without cgo is a permanent failure) and starts the streams.
func (s *RealSense) Open(ctx context.Context) (Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lib == nil {
		lib, err := realsense.LoadAny(ctx)
		if errors.Is(err, realsense.ErrNoCgo) {
			err = fmt.Errorf("%w: %w", plant.ErrPermanent, err)
		}
		if err != nil {
			return Stream{}, err
		}
		s.lib = lib
	}
	cam, err := s.lib.OpenCamera(s.cfg)
	if err != nil {
		if errors.Is(err, realsense.ErrDisconnected) {
			err = errors.Join(ErrDisconnected, err)
		}
		return Stream{}, err
	}
	s.cam = cam
	_, d := cam.Intrinsics()
	st := Stream{Width: cam.Width(), Height: cam.Height(), FPS: s.cfg.FPS, Intrinsics: DepthIntrinsics(d)}
	if s.pace > 0 {
		st.FPS = int(int64(time.Second) / s.pace)
	}
	return st, nil
}

// DepthIntrinsics widens the camera's float32 intrinsics to float64, as
// pyrealsense2 hands them to emioapi.
func DepthIntrinsics(d realsense.Intrinsics) tracker.Intrinsics {
	return tracker.Intrinsics{
		Width: d.Width, Height: d.Height,
		PPX: float64(d.PPX), PPY: float64(d.PPY), FX: float64(d.FX), FY: float64(d.FY),
	}
}

// Read implements Source.
func (s *RealSense) Read(ctx context.Context, f *Frame) error {
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
			return errors.Join(ErrDisconnected, err)
		}
		return err
	}
	f.Number = s.rf.FrameNumber
	f.Time = s.clock.Now()
	return nil
}

// Close implements Source: it stops the streams; the library stays loaded
// for the next Open.
func (s *RealSense) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cam == nil {
		return nil
	}
	err := s.cam.Close()
	s.cam = nil
	return err
}

// Unload releases the library, once the camera is stopped for good.
func (s *RealSense) Unload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lib == nil {
		return nil
	}
	err := s.lib.Close()
	s.lib = nil
	return err
}

// WriteCameras says on w which librealsense2 was loaded and the RealSense
// cameras connected, by serial, and how a link selects one (`bridge
// cameras`).
func WriteCameras(ctx context.Context, w io.Writer) error {
	lib, err := realsense.LoadAny(ctx)
	if err != nil {
		return err
	}
	defer lib.Close()
	devs, err := lib.ListDevices()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "librealsense2 %v (%s)\n", lib.Version(), lib.Path())
	if len(devs) == 0 {
		_, err := fmt.Fprintln(w, "no RealSense camera connected (check the USB 3 cable, and the udev rules or root for USB access)")
		return err
	}
	for _, d := range devs {
		fmt.Fprintf(w, "serial %s  %s  firmware %s\n", d.Serial, d.Name, d.Firmware)
	}
	_, err = fmt.Fprintln(w, `select one with [link.plant.camera] serial = "…"`)
	return err
}
