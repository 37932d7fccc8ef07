// Package camera runs the Emio's marker camera beside the loop, as emioapi's
// camera process does (docs/simulink-udp.md §8.3, docs/realsense.md §8): a
// goroutine reads colour and depth frames from a Source (a RealSense camera or
// the virtual lab's camera), runs the marker tracker on each, and publishes
// the newest marker vector with its frame number and time. The loop never
// waits for vision: its plant copies the newest vector at each tick (Markers),
// and with clock = "camera" the loop is woken by the Event signalled after
// each frame.
//
// A camera that fails (unplugged, no frames) makes Serve return an error; the
// supervisor restarts it with backoff, which reopens the source. Meanwhile the
// last vector stays published (emioapi holds it too) and its age, a metric,
// tells how stale it is.
package camera

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/internal/latency"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

// Frame is one colour + depth frameset in caller-owned buffers.
type Frame struct {
	Color []byte   // BGR8, Width·Height·3 bytes
	Depth []uint16 // Z16, Width·Height values, in mm
	// Number is the source's frame number; Time is CLOCK_MONOTONIC (ns) when
	// the frame was read.
	Number uint64
	Time   int64
}

// Stream describes an open source.
type Stream struct {
	Width, Height, FPS int
	// Intrinsics are those of the depth stream: emioapi deprojects colour
	// pixels with them (docs/realsense.md §8.1).
	Intrinsics tracker.Intrinsics
}

// Source is where frames come from.
type Source interface {
	// Open starts the stream.
	Open(ctx context.Context) (Stream, error)
	// Read blocks until the next frame and fills f (buffers sized by the
	// caller for the Stream). It fails with an error wrapping
	// ErrDisconnected when the device is gone.
	Read(ctx context.Context, f *Frame) error
	// Close stops the stream; Open may be called again after it.
	Close() error
}

// Clock gives CLOCK_MONOTONIC nanoseconds.
type Clock interface{ Now() int64 }

// Signaller is woken after each published frame (a *realtime.Event, for a
// loop with clock = "camera").
type Signaller interface{ Signal(at int64) error }

// Observer records the camera's work. Its methods must not block or
// allocate; ObserveAge runs on the loop thread.
type Observer interface {
	// ObserveFrame: one frame tracked in trackNs; found markers were
	// accepted; held says the vector was kept (count ≠ nb_markers).
	ObserveFrame(trackNs int64, found int, held bool)
	// ObserveAge: the age of the vector the loop just took.
	ObserveAge(ageNs int64)
	// ObserveRead: the loop took, at its send instant, the frame it took
	// at its last tick again (stale: no new frame was ready), or skipped
	// frames that were published in between and never sent.
	ObserveRead(stale bool, skipped uint64)
	// ObserveUp: the source opened (true) or failed (false).
	ObserveUp(up bool)
}

// Errors.
var (
	// ErrConfig is an invalid Config.
	ErrConfig = errors.New("camera: invalid configuration")
	// ErrDisconnected is a source whose device is gone.
	ErrDisconnected = errors.New("camera: device disconnected")
	// ErrStalled is a source that delivered no frame for too long.
	ErrStalled = errors.New("camera: no frames")
)

// Config configures a Feed.
type Config struct {
	Name   string // for logs
	Source Source
	// Tracker builds the tracker for an open stream; it is built again only
	// when the stream changes, so the held vector survives a reopen.
	Tracker   func(Stream) (*tracker.Tracker, error)
	NbMarkers int
	Clock     Clock
	Signal    Signaller // may be nil
	Observer  Observer  // may be nil
	Logger    *slog.Logger
	// StallAfter is how long without a frame counts as a failure (the
	// supervisor then reopens the source); 0 means 1 s.
	StallAfter time.Duration
	// Frames, if set, is told of every published frame on the camera
	// goroutine: its number, when it arrived and when its vector was
	// published (a framelock.Lock, for a loop with clock = "camera").
	Frames FrameObserver
	// Priority, 1..99, reads and tracks frames on a thread of its own at
	// that SCHED_FIFO priority (below the loop's); 0 = a goroutine at the
	// normal priority. Not permitted: a warning, and the normal priority.
	Priority int
	// Pin, with Priority, pins that thread to CPU (its loop's, so that the
	// link's real-time threads share the CPUs the process's others are
	// kept off).
	Pin bool
	CPU int
	// OnFrame, if set, sees every tracked frame on the camera goroutine
	// (saving frames for offline analysis). It must not keep f or r.
	OnFrame func(f *Frame, r *tracker.Result)
}

// FrameObserver is told of each published frame. It must not block or
// allocate.
type FrameObserver interface {
	Observe(frame uint64, arrival, ready int64)
}

// Sample is the newest published vector's provenance.
type Sample struct {
	Seq   uint64 // how many frames were published before it, from 1
	Frame uint64 // the source's frame number
	Time  int64  // when it was read (CLOCK_MONOTONIC ns)
	Held  bool   // the vector was held: the count of markers was not nb_markers
	Found int    // markers accepted in that frame
	Valid bool   // false until the first frame
}

// Feed is the camera goroutine: it reads a Stream's frames, tracks the
// markers in each and publishes the newest vector into its slot.
type Feed struct {
	cfg Config
	log *slog.Logger

	tr     *tracker.Tracker
	stream Stream
	frame  Frame
	res    tracker.Result // the last frame's, kept here so OnFrame's pointer does not escape per frame

	mu     sync.Mutex // guards vec and sample: held for a copy of ≤ 48 floats
	vec    []float64
	sample Sample

	settler interface{ Settled() bool } // cfg.Frames, when it settles
	frames  atomic.Uint64
	lastSeq uint64 // the loop thread's: Seq of the vector LatchMarkers took last
	stale   atomic.Uint64
	skipped atomic.Uint64

	// The run's exact distributions for Summary: the tracker's time (camera
	// goroutine) and the marker vector's age at the send (loop thread).
	hmu       sync.Mutex
	trackHist latency.Histogram
	ageHist   latency.Histogram
	valid     atomic.Bool
	serving   atomic.Bool
	streaming atomic.Bool           // between a successful open and the next failure or stop
	lastErr   atomic.Pointer[error] // why the last Serve failed; nil once streaming
	lack      atomic.Pointer[error] // what the link lacks since the last Serve failed
	// The lacks known in advance, made once so that Lack never allocates.
	errFirst, errLocking error
	warned               bool // the thread set-up warning was logged (Serve's goroutines, one at a time)

	// The frame rate as a person reads it: a running mean of the frame
	// intervals, kept by the camera goroutine.
	lastFrameTime int64 // camera goroutine only; 0 after an open
	intervalNs    atomic.Int64
	tap           frameTap // the status page's thumbnail (thumbnail.go)
}

// New checks cfg.
func New(cfg Config) (*Feed, error) {
	switch {
	case cfg.Source == nil:
		return nil, fmt.Errorf("%w: no source", ErrConfig)
	case cfg.Tracker == nil:
		return nil, fmt.Errorf("%w: no tracker constructor", ErrConfig)
	case cfg.NbMarkers < 1 || cfg.NbMarkers > 16:
		return nil, fmt.Errorf("%w: nb_markers %d (want 1..16)", ErrConfig, cfg.NbMarkers)
	case cfg.Clock == nil:
		return nil, fmt.Errorf("%w: no clock", ErrConfig)
	case cfg.Priority < 0 || cfg.Priority > realtime.MaxPriority:
		return nil, fmt.Errorf("%w: priority %d (want 0 for the normal one or 1..%d)", ErrConfig, cfg.Priority, realtime.MaxPriority)
	case cfg.Pin && (cfg.CPU < 0 || cfg.CPU >= realtime.MaxCPUs):
		return nil, fmt.Errorf("%w: CPU %d (want 0..%d)", ErrConfig, cfg.CPU, realtime.MaxCPUs-1)
	case cfg.StallAfter < 0:
		return nil, fmt.Errorf("%w: stall_after %v (want ≥ 0)", ErrConfig, cfg.StallAfter)
	}
	if cfg.StallAfter == 0 {
		cfg.StallAfter = time.Second
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Feed{cfg: cfg, log: cfg.Logger, vec: make([]float64, 3*cfg.NbMarkers)}
	c.errFirst = fmt.Errorf("camera %s: %w", cfg.Name, ErrNoFrameYet)
	c.errLocking = fmt.Errorf("camera %s: %w", cfg.Name, ErrLocking)
	c.settler, _ = cfg.Frames.(interface{ Settled() bool })
	return c, nil
}

type nopObserver struct{}

func (nopObserver) ObserveFrame(int64, int, bool) {}
func (nopObserver) ObserveAge(int64)              {}
func (nopObserver) ObserveUp(bool)                {}
func (nopObserver) ObserveRead(bool, uint64)      {}

// Serve opens the source and tracks frames until ctx is done (nil) or the
// source fails (an error; the supervisor restarts Serve, which reopens it).
func (c *Feed) Serve(ctx context.Context) error {
	if !c.serving.CompareAndSwap(false, true) {
		return fmt.Errorf("camera %s: already serving", c.cfg.Name)
	}
	defer c.serving.Store(false)
	err := c.serve(ctx)
	if err != nil {
		// Health says why the camera is down, not only that it is.
		c.lastErr.Store(&err)
		lack := c.lackOf(err)
		c.lack.Store(&lack)
	}
	return err
}

// pinned is the CPU of the camera's thread for realtime.ThreadConfig, -1
// for none.
func (c *Feed) pinned() int {
	if c.cfg.Pin {
		return c.cfg.CPU
	}
	return -1
}

// Lacks of the marker vector (Lack).
var (
	// ErrNoFrameYet: the camera has not delivered its first frame.
	ErrNoFrameYet = errors.New("waiting for the camera's first frame")
	// ErrLocking: frames come, but the loop's ticks are not yet on their
	// grid (clock = "camera").
	ErrLocking = errors.New("waiting for the ticks to lock onto the camera's frames")
	// ErrNoFrames: the camera delivered frames, then stopped.
	ErrNoFrames = errors.New("no frames from the camera; the markers are held")
)

// lackOf says, for a person, what a failed Serve leaves the link without
// and what to do: a library to install is not a cable to check.
func (c *Feed) lackOf(err error) error {
	what := ErrNoFrameYet
	if c.valid.Load() {
		what = ErrNoFrames
	}
	// Serve's errors name the camera already; say it once.
	msg := fmt.Sprintf("camera %s: %v: %s", c.cfg.Name, what, strings.TrimPrefix(err.Error(), "camera "+c.cfg.Name+": "))
	if a := advice(err); a != "" {
		msg += "; " + a
	}
	return &lackError{what: what, cause: err, msg: msg}
}

// lackError is a lack (ErrNoFrameYet, ErrNoFrames) and its cause.
type lackError struct {
	what, cause error
	msg         string
}

func (e *lackError) Error() string   { return e.msg }
func (e *lackError) Unwrap() []error { return []error{e.what, e.cause} }

// advice is what to do about a source's failure; "" when the error says it
// already (a library to install).
func advice(err error) string {
	switch {
	case errors.Is(err, plant.ErrPermanent), errors.Is(err, realsense.ErrLibraryNotFound),
		errors.Is(err, realsense.ErrMissingSymbol), errors.Is(err, realsense.ErrNoCgo):
		return ""
	case errors.Is(err, realsense.ErrNoDevice):
		return "plug the camera into a USB 3 port and run `bridge cameras`; the bridge opens it by itself"
	}
	return "check the camera's USB 3 cable and run `bridge cameras`; the bridge reopens it by itself"
}

// Lack implements plant.Lacker for the marker vector: nil while frames come
// and the ticks are on their grid; otherwise what is missing, with why and
// what to do. It never allocates.
func (c *Feed) Lack() error {
	if !c.Streaming() {
		if p := c.lack.Load(); p != nil {
			return *p
		}
		if !c.valid.Load() {
			return c.errFirst
		}
	}
	switch {
	case !c.valid.Load():
		return c.errFirst
	case c.settler != nil && !c.settler.Settled():
		return c.errLocking
	}
	return nil
}

func (c *Feed) serve(ctx context.Context) error {
	st, err := c.cfg.Source.Open(ctx)
	if err != nil {
		c.cfg.Observer.ObserveUp(false)
		return fmt.Errorf("camera %s: open: %w", c.cfg.Name, err)
	}
	defer func() {
		if err := c.cfg.Source.Close(); err != nil {
			c.log.Warn("camera: close", "camera", c.cfg.Name, "err", err)
		}
	}()
	if err := c.prepare(st); err != nil {
		c.cfg.Observer.ObserveUp(false)
		return err
	}
	c.cfg.Observer.ObserveUp(true)
	c.lastErr.Store(nil)
	c.lastFrameTime = 0 // the gap of a reopen is no frame interval
	c.streaming.Store(true)
	defer c.streaming.Store(false)
	c.log.Info("camera: streaming", "camera", c.cfg.Name, "width", st.Width, "height", st.Height, "fps", st.FPS)
	if c.cfg.Priority == 0 {
		return c.run(ctx)
	}
	// A thread of its own at a real-time priority (below the loop's): the
	// ticks sit a tracker's p99 after each frame, so a tracker preempted by
	// ordinary work makes stale ticks. The thread dies with its goroutine,
	// which never unlocks it.
	return realtime.RunLocked(ctx, nil, func() error {
		th, warns := realtime.SetupThread(realtime.ThreadConfig{Priority: c.cfg.Priority, CPU: c.pinned()})
		if len(warns) > 0 && !c.warned {
			c.warned = true
			for _, w := range warns {
				c.log.Warn("camera: thread set-up incomplete, tracking at the normal priority", "camera", c.cfg.Name, "err", w)
			}
		}
		defer th.Close()
		return c.run(ctx)
	})
}

// run reads and tracks frames until ctx is done (nil) or the source
// fails.
func (c *Feed) run(ctx context.Context) error {
	last := c.cfg.Clock.Now()
	for ctx.Err() == nil {
		err := c.cfg.Source.Read(ctx, &c.frame)
		if ctx.Err() != nil {
			return nil
		}
		now := c.cfg.Clock.Now()
		if err != nil {
			// One late frame is not a failure; a dead device or a stream
			// silent for StallAfter is.
			if errors.Is(err, ErrDisconnected) || now-last >= int64(c.cfg.StallAfter) {
				c.cfg.Observer.ObserveUp(false)
				return fmt.Errorf("camera %s: %w", c.cfg.Name, err)
			}
			continue
		}
		last = now
		if err := c.track(); err != nil {
			c.cfg.Observer.ObserveUp(false)
			return err
		}
	}
	return nil
}

// prepare sizes the frame buffers and builds the tracker for st, keeping the
// old ones when the stream is unchanged.
func (c *Feed) prepare(st Stream) error {
	if c.tr != nil && st == c.stream {
		return nil
	}
	if st.Width <= 0 || st.Height <= 0 {
		return fmt.Errorf("camera %s: stream size %dx%d", c.cfg.Name, st.Width, st.Height)
	}
	tr, err := c.cfg.Tracker(st)
	if err != nil {
		return fmt.Errorf("camera %s: tracker: %w", c.cfg.Name, err)
	}
	if got := 3 * tr.Config().NbMarkers; got != len(c.vec) {
		return fmt.Errorf("camera %s: tracker gives %d marker values, want %d for nb_markers %d", c.cfg.Name, got, len(c.vec), c.cfg.NbMarkers)
	}
	c.tr, c.stream = tr, st
	n := st.Width * st.Height
	c.frame = Frame{Color: make([]byte, 3*n), Depth: make([]uint16, n)}
	c.tap.resize(st.Width, st.Height)
	return nil
}

// track runs the tracker on the frame just read and publishes the result.
func (c *Feed) track() error {
	start := c.cfg.Clock.Now()
	var err error
	c.res, err = c.tr.Process(c.frame.Color, c.frame.Depth)
	if err != nil {
		return fmt.Errorf("camera %s: frame %d: %w", c.cfg.Name, c.frame.Number, err)
	}
	r := &c.res
	end := c.cfg.Clock.Now()
	c.cfg.Observer.ObserveFrame(end-start, len(r.Markers), r.Held)
	c.hmu.Lock()
	c.trackHist.Record(end - start)
	c.hmu.Unlock()
	seq := c.frames.Load() + 1
	c.mu.Lock()
	copy(c.vec, r.Vector)
	c.sample = Sample{Seq: seq, Frame: c.frame.Number, Time: c.frame.Time, Held: r.Held, Found: len(r.Markers), Valid: true}
	c.mu.Unlock()
	c.valid.Store(true)
	c.frames.Store(seq)
	if c.cfg.Frames != nil {
		c.cfg.Frames.Observe(c.frame.Number, c.frame.Time, end)
	}
	if c.cfg.Signal != nil {
		if err := c.cfg.Signal.Signal(end); err != nil {
			return err
		}
	}
	if c.cfg.OnFrame != nil {
		c.cfg.OnFrame(&c.frame, r)
	}
	if prev := c.lastFrameTime; prev != 0 && c.frame.Time > prev {
		dt, mean := c.frame.Time-prev, c.intervalNs.Load()
		if mean == 0 {
			mean = dt
		}
		c.intervalNs.Store(mean + (dt-mean)/8)
	}
	c.lastFrameTime = c.frame.Time
	// Last: the vector is out and the loop told, so a viewer's copy
	// delays neither.
	c.tap.offer(end, &c.frame, c.tr.Mask(), r.Markers)
	return nil
}

// Markers copies the newest marker vector into dst (3·nb_markers values; it
// implements the Emio plant's marker source). Before the first frame it
// gives zeros, as emioapi does. q is unused: a camera measures.
func (c *Feed) Markers(_, dst []float64) {
	c.mu.Lock()
	copy(dst, c.vec)
	c.mu.Unlock()
}

// LatchMarkers is Markers at the send instant of a tick, on the loop
// thread: it also records the vector's age and whether the tick took a frame
// it had taken already (stale) or passed over frames (skipped), the
// measures of a loop locked to the camera (docs/framelock.md).
func (c *Feed) LatchMarkers(_, dst []float64) {
	c.mu.Lock()
	copy(dst, c.vec)
	s := c.sample
	c.mu.Unlock()
	if !s.Valid || (c.settler != nil && !c.settler.Settled()) {
		return // nothing is sent yet (Ready)
	}
	age := c.cfg.Clock.Now() - s.Time
	c.cfg.Observer.ObserveAge(age)
	c.hmu.Lock()
	c.ageHist.Record(age)
	c.hmu.Unlock()
	var skipped uint64
	stale := s.Seq == c.lastSeq
	if !stale && c.lastSeq != 0 && s.Seq > c.lastSeq+1 {
		skipped = s.Seq - c.lastSeq - 1
	}
	c.lastSeq = s.Seq
	if stale {
		c.stale.Add(1)
	}
	c.skipped.Add(skipped)
	c.cfg.Observer.ObserveRead(stale, skipped)
}

// Reads returns how many ticks took a frame already taken (stale) and how
// many published frames no tick took (skipped).
func (c *Feed) Reads() (stale, skipped uint64) { return c.stale.Load(), c.skipped.Load() }

// Timing returns the distributions of the run so far: the tracker's time
// per frame, and the marker vector's age when a tick sent it.
func (c *Feed) Timing() (track, age latency.Summary) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	return c.trackHist.Summary(), c.ageHist.Summary()
}

// Summary is the camera's account of the run, for a person at the end of
// it: frames, the tracker's time, the markers' age at the send, stale ticks
// and skipped frames.
func (c *Feed) Summary() string {
	track, age := c.Timing()
	stale, skipped := c.Reads()
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return fmt.Sprintf("camera %s: %d frames, tracker ms p50 %.2f p99 %.2f max %.2f; marker age at the send ms p50 %.2f p99 %.2f max %.2f over %d ticks; %d stale ticks, %d skipped frames",
		c.cfg.Name, c.Frames(), ms(track.P50), ms(track.P99), ms(track.Max), ms(age.P50), ms(age.P99), ms(age.Max), age.Count, stale, skipped)
}

// Streaming reports whether the source is open and delivering frames (false
// while the supervisor reopens it).
func (c *Feed) Streaming() bool { return c.streaming.Load() }

// Ready reports whether a frame has been tracked: before it, the vector is
// emioapi's initial zeros, not a measurement. With a Frames observer that
// settles (a framelock.Lock), also whether the loop's ticks are on the
// camera's grid: until then the ticks move against the frames, and the link
// sends nothing (docs/framelock.md "Ticks").
func (c *Feed) Ready() bool {
	return c.valid.Load() && (c.settler == nil || c.settler.Settled())
}

// Latest copies the newest vector into dst and says where it came from.
func (c *Feed) Latest(dst []float64) Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	copy(dst, c.vec)
	return c.sample
}

// Info is the camera's state for a person watching (the status page).
type Info struct {
	Streaming bool
	// Frames is how many frames were tracked; Sample is the newest.
	Frames uint64
	Sample Sample
	// Age is how old the newest frame is now; 0 before the first.
	Age time.Duration
	// FPS is the measured frame rate (a running mean over about the last
	// 8 frames); 0 until two frames came.
	FPS float64
	// Why is the last failure while not streaming ("" otherwise).
	Why string
}

// Info reads the camera's state, on any goroutine.
func (c *Feed) Info() Info {
	c.mu.Lock()
	s := c.sample
	c.mu.Unlock()
	in := Info{Streaming: c.Streaming(), Frames: c.Frames(), Sample: s, Why: c.Why()}
	if s.Valid {
		in.Age = time.Duration(max(c.cfg.Clock.Now()-s.Time, 0))
	}
	if iv := c.intervalNs.Load(); iv > 0 {
		in.FPS = 1e9 / float64(iv)
	}
	return in
}

// Frames returns how many frames were tracked.
func (c *Feed) Frames() uint64 { return c.frames.Load() }

// ErrNotStreaming is the health of a camera whose source is not delivering
// frames (not yet opened, or being reopened by the supervisor).
var ErrNotStreaming = errors.New("camera is not streaming: the markers are held")

// Health is nil while the source delivers frames (it makes /healthz fail
// otherwise, naming the camera).
func (c *Feed) Health() error {
	if c.Streaming() {
		return nil
	}
	if why := c.Why(); why != "" {
		return fmt.Errorf("camera %s: %w (%s)", c.cfg.Name, ErrNotStreaming, why)
	}
	return fmt.Errorf("camera %s: %w", c.cfg.Name, ErrNotStreaming)
}

// Why says why the camera does not stream: the last failure, without the
// camera's name ("open: realsense: no such device: …"); "" while it
// streams or before anything failed.
func (c *Feed) Why() string {
	if c.Streaming() {
		return ""
	}
	if p := c.lastErr.Load(); p != nil {
		return strings.TrimPrefix((*p).Error(), "camera "+c.cfg.Name+": ")
	}
	return ""
}

// Status is one short line for a person watching the link: the newest
// frame, the markers found in it, and whether the vector is held.
func (c *Feed) Status() string {
	c.mu.Lock()
	s := c.sample
	c.mu.Unlock()
	if !s.Valid {
		return "camera: no frame yet"
	}
	st := fmt.Sprintf("frame %d found %d", s.Frame, s.Found)
	if s.Held {
		st += " (held)"
	}
	if !c.Streaming() {
		st += " (not streaming)"
	}
	return st
}

// TrackerSettings are what a link's tracker needs besides its stream.
type TrackerSettings struct {
	Files              tracker.LabFiles
	Side               tracker.Side
	Sort               tracker.Sort
	NbMarkers          int
	DepthMin, DepthMax uint16 // mm; emioapi's bridge uses 0 and 1000
}

// TrackerFor returns the Config.Tracker constructor of s: the pose is
// fitted from the calibration with the open stream's own intrinsics, as
// emioapi does at each open.
func TrackerFor(s TrackerSettings) func(Stream) (*tracker.Tracker, error) {
	return func(st Stream) (*tracker.Tracker, error) {
		pose := tracker.IdentityPose()
		if s.Files.Calibration != nil {
			p, err := s.Files.Calibration.Pose(st.Intrinsics)
			if err != nil {
				return nil, err
			}
			pose = p
		}
		return tracker.New(tracker.Config{
			Width: st.Width, Height: st.Height, Params: s.Files.Params,
			DepthMin: s.DepthMin, DepthMax: s.DepthMax,
			Intrinsics: st.Intrinsics, Pose: pose, Side: s.Side, Sort: s.Sort, NbMarkers: s.NbMarkers,
		})
	}
}
