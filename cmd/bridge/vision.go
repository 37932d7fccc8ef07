package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/camera"
	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/metrics"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/sim"
)

// emioapiDir is where emioapi keeps a lab's camera files (docs/realsense.md
// §8.4): ~/.config/emioapi.
func emioapiDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "emioapi")
}

// visionFiles are a link's tracker settings and where they came from.
type visionFiles struct {
	params     tracker.Params
	paramsFrom string
	calib      *tracker.Calibration // nil: the camera frame (identity pose)
	calibFrom  string
}

// loadVisionFiles reads cameraparameter.json and camera_2d_points.csv: the
// configured paths, else emioapi's own files when the lab has them, else
// emioapi's defaults. An explicit path that cannot be read is an error.
func loadVisionFiles(paramsPath, calibPath string) (visionFiles, error) {
	v := visionFiles{params: tracker.DefaultParams(), paramsFrom: "emioapi's defaults", calibFrom: "none (camera frame)"}
	dir := emioapiDir()
	if paramsPath == "" && dir != "" {
		if p := filepath.Join(dir, "cameraparameter.json"); fileExists(p) {
			paramsPath = p
		}
	}
	if paramsPath != "" {
		p, err := tracker.LoadParams(paramsPath)
		if err != nil {
			return v, err
		}
		v.params, v.paramsFrom = p, paramsPath
	}
	if calibPath == "" && dir != "" {
		if p := filepath.Join(dir, "camera_2d_points.csv"); fileExists(p) {
			calibPath = p
		}
	}
	if calibPath != "" {
		c, err := tracker.LoadCalibration(calibPath)
		if err != nil {
			return v, err
		}
		v.calib, v.calibFrom = &c, calibPath
	}
	return v, nil
}

func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	return write(f)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// trackerFor returns the constructor of a link's tracker for an open stream:
// the pose is fitted from the calibration with the stream's own intrinsics,
// as emioapi does at each open.
func trackerFor(v visionFiles, side tracker.Side, sort tracker.Sort, nbMarkers int, depthMin, depthMax int) func(camera.Stream) (*tracker.Tracker, error) {
	return func(st camera.Stream) (*tracker.Tracker, error) {
		pose := tracker.IdentityPose()
		if v.calib != nil {
			p, err := v.calib.Pose(st.Intrinsics)
			if err != nil {
				return nil, err
			}
			pose = p
		}
		return tracker.New(tracker.Config{
			Width: st.Width, Height: st.Height, Params: v.params,
			DepthMin: uint16(depthMin), DepthMax: uint16(depthMax),
			Intrinsics: st.Intrinsics, Pose: pose, Side: side, Sort: sort, NbMarkers: nbMarkers,
		})
	}
}

// linkCamera is a link's camera as wired.
type linkCamera struct {
	cam     *camera.Camera
	event   *realtime.Event // signalled per frame when clock = "camera"
	sim     *simSource      // the virtual camera, for kind "sim"
	files   visionFiles
	metrics *metrics.Camera
}

// newCamera builds the camera of a link (nil for kind "none"). The virtual
// camera still needs its servo angles: see simSource.angles.
func (a *app) newCamera(lf *bridge.LinkFile, set *metrics.Set, clock *realtime.Clock, logger *slog.Logger) (*linkCamera, error) {
	cf := &lf.Camera
	if cf.Kind == "none" {
		return nil, nil
	}
	side, err := tracker.ParseSide(lf.Side)
	if err != nil {
		return nil, err
	}
	sort, err := tracker.ParseSort(lf.Sort)
	if err != nil {
		return nil, err
	}
	lc := &linkCamera{}
	var src camera.Source
	switch cf.Kind {
	case "sim":
		s, err := newSimSource(lf, clock)
		if err != nil {
			return nil, err
		}
		lc.sim, src = s, s
		// The virtual lab has its own calibration, written as emioapi's
		// calibration would write it and read back through the same parser,
		// unless the configuration names files.
		lc.files = visionFiles{params: tracker.DefaultParams(), paramsFrom: "emioapi's defaults"}
		if cf.Params != "" {
			if lc.files.params, err = tracker.LoadParams(cf.Params); err != nil {
				return nil, err
			}
			lc.files.paramsFrom = cf.Params
		}
		if cf.Calibration != "" {
			c, err := tracker.LoadCalibration(cf.Calibration)
			if err != nil {
				return nil, err
			}
			lc.files.calib, lc.files.calibFrom = &c, cf.Calibration
		} else {
			var buf bytes.Buffer
			if err := s.cam.CalibrationCSV(&buf); err != nil {
				return nil, err
			}
			c, err := tracker.ParseCalibration(&buf)
			if err != nil {
				return nil, fmt.Errorf("virtual camera calibration: %w", err)
			}
			lc.files.calib, lc.files.calibFrom = &c, "the virtual camera's"
		}
	case "realsense":
		rs := &rsSource{clock: clock, cfg: realsense.Config{
			Serial: cf.Serial, Width: cf.Width, Height: cf.Height, FPS: cf.FPS,
			Color: true, Depth: true, Timeout: time.Second,
		}}
		if cf.Playback != "" {
			// The recording dictates the mode.
			rs.cfg = realsense.Config{PlaybackFile: cf.Playback, Loop: true, Color: true, Depth: true, Timeout: time.Second}
			rs.pace = int64(time.Second) / int64(cf.FPS)
		}
		a.closers = append(a.closers, closerFunc(rs.closeLib))
		src = rs
		if lc.files, err = loadVisionFiles(cf.Params, cf.Calibration); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("camera kind %q is not available in this build", cf.Kind)
	}
	if lc.metrics, err = set.Camera(lf.Name, time.Second/time.Duration(cf.FPS)); err != nil {
		return nil, err
	}
	ccfg := camera.Config{
		Name: lf.Name, Source: src, NbMarkers: *lf.UDP.NbMarkers, Clock: clock, Observer: lc.metrics,
		Tracker: trackerFor(lc.files, side, sort, *lf.UDP.NbMarkers, *cf.DepthMin, *cf.DepthMax),
		Logger:  logger.With("link", lf.Name),
	}
	if lf.Clock == "camera" {
		ev, err := realtime.NewEvent(clock)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, closerFunc(ev.Close))
		lc.event, ccfg.Signal = ev, ev
	}
	if cf.SaveFrames != "" {
		if err := os.MkdirAll(cf.SaveFrames, 0o755); err != nil {
			return nil, fmt.Errorf("camera.save_frames: %w", err)
		}
		fs := newFrameSaver(cf.SaveFrames, cf.SaveEvery, cf.Width, cf.Height, logger)
		ccfg.OnFrame = fs.offer
		a.bg.Go(fs.run)
		a.closers = append(a.closers, closerFunc(fs.close))
		if lc.sim != nil && cf.Calibration == "" {
			// `bridge track` needs the virtual camera's calibration to
			// reproduce the positions: save it beside the frames.
			if err := writeFile(filepath.Join(cf.SaveFrames, "camera_2d_points.csv"), lc.sim.cam.CalibrationCSV); err != nil {
				return nil, err
			}
		}
	}
	if lc.cam, err = camera.New(ccfg); err != nil {
		return nil, err
	}
	logger.Info("camera", "link", lf.Name, "kind", cf.Kind, "side", lf.Side, "sort", lf.Sort, "clock", lf.Clock,
		"params", lc.files.paramsFrom, "calibration", lc.files.calibFrom)
	return lc, nil
}

// frameSaver writes every n-th frame as PNGs (colour and depth) so that
// `bridge track` can show offline what the tracker saw. Encoding a PNG takes
// tens of milliseconds, about a frame period: the camera goroutine only
// copies the frame into the saver's buffer, and the saver's own goroutine
// encodes it. A frame that comes while the previous one is still being
// written is not saved.
type frameSaver struct {
	dir   string
	every uint64
	w, h  int
	log   *slog.Logger
	seen  uint64 // camera goroutine only

	buf     camera.Frame // owned by run while busy is set
	busy    atomic.Bool
	pending chan struct{} // capacity 1; closed by close
	once    sync.Once
}

func newFrameSaver(dir string, every, w, h int, log *slog.Logger) *frameSaver {
	return &frameSaver{
		dir: dir, every: uint64(every), w: w, h: h, log: log,
		buf:     camera.Frame{Color: make([]byte, 3*w*h), Depth: make([]uint16, w*h)},
		pending: make(chan struct{}, 1),
	}
}

// offer is the camera's OnFrame hook: a copy, never I/O.
func (s *frameSaver) offer(f *camera.Frame, _ *tracker.Result) {
	s.seen++
	if (s.seen-1)%s.every != 0 || len(f.Color) != len(s.buf.Color) || !s.busy.CompareAndSwap(false, true) {
		return
	}
	copy(s.buf.Color, f.Color)
	copy(s.buf.Depth, f.Depth)
	s.buf.Number, s.buf.Time = f.Number, f.Time
	s.pending <- struct{}{}
}

// run writes the offered frames until close.
func (s *frameSaver) run() {
	for range s.pending {
		base := filepath.Join(s.dir, fmt.Sprintf("frame-%06d", s.buf.Number))
		err := errors.Join(writeColorPNG(base+"-color.png", s.buf.Color, s.w, s.h), writeDepthPNG(base+"-depth.png", s.buf.Depth, s.w, s.h))
		if err != nil {
			s.log.Warn("camera: saving a frame", "err", err)
		}
		s.busy.Store(false)
	}
}

// close ends run once the camera has stopped (the app closes its parts
// after the supervisor has returned).
func (s *frameSaver) close() error {
	s.once.Do(func() { close(s.pending) })
	return nil
}

// simSource is the virtual lab's camera: at each frame it reads the
// simulated servos' present positions, maps them through the lab's
// kinematics to marker positions and renders them for the real tracker.
type simSource struct {
	cam    *sim.Camera
	kin    *sim.Kinematics
	clock  *realtime.Clock
	period int64
	st     camera.Stream

	mu     sync.Mutex
	angles func(q []float64) // the servos' present angles; set once the plant exists
	next   int64
	n      uint64
	q, m   []float64
}

func newSimSource(lf *bridge.LinkFile, clock *realtime.Clock) (*simSource, error) {
	cf, p := &lf.Camera, &lf.Plant
	nm := *lf.UDP.NbMarkers
	if len(p.Y0) != 3*nm || len(p.J) != 3*nm*p.Motors {
		return nil, fmt.Errorf(`camera.kind = "sim" needs plant.y0 (%d values) and plant.j (%d values): the virtual lab's kinematics`, 3*nm, 3*nm*p.Motors)
	}
	kin, err := sim.NewKinematics(p.Y0, p.J, p.Motors)
	if err != nil {
		return nil, err
	}
	cc := sim.DefaultCamera(cf.Width, cf.Height)
	cam, err := sim.NewCamera(cc)
	if err != nil {
		return nil, err
	}
	return &simSource{
		cam: cam, kin: kin, clock: clock, period: int64(time.Second) / int64(cf.FPS),
		st: camera.Stream{Width: cf.Width, Height: cf.Height, FPS: cf.FPS, Intrinsics: tracker.Intrinsics{
			Width: cf.Width, Height: cf.Height, PPX: cc.PPX, PPY: cc.PPY, FX: cc.FX, FY: cc.FY,
		}},
		q: make([]float64, p.Motors), m: make([]float64, 3*nm),
	}, nil
}

// servoAngles reads present positions straight from simulated servos.
func servoAngles(bus *dxlsim.Bus, ids []byte) func(q []float64) {
	servos := make([]*dxlsim.Servo, len(ids))
	for i, id := range ids {
		servos[i] = bus.Servo(id)
	}
	return func(q []float64) {
		for i, s := range servos {
			if s != nil && i < len(q) {
				q[i] = dynamixel.PulseToRad(int32(s.Value(dynamixel.ItemPresentPosition)))
			}
		}
	}
}

func (s *simSource) setAngles(f func(q []float64)) { s.mu.Lock(); s.angles = f; s.mu.Unlock() }

func (s *simSource) Open(context.Context) (camera.Stream, error) {
	s.mu.Lock()
	s.next = s.clock.Now() + s.period
	s.mu.Unlock()
	return s.st, nil
}

// Read paces frames at the camera's rate on absolute deadlines, as a
// camera's own clock does.
func (s *simSource) Read(ctx context.Context, f *camera.Frame) error {
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
	now := s.clock.Now()
	s.next += s.period
	if s.next <= now {
		s.next = now + s.period // a stall does not turn into a burst
	}
	if s.angles != nil {
		s.angles(s.q)
	}
	s.kin.Markers(s.q, s.m)
	if err := s.cam.Render(f.Color, f.Depth, s.m); err != nil {
		return err
	}
	s.n++
	f.Number, f.Time = s.n, now
	return nil
}

func (s *simSource) Close() error { return nil }
