package camera

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
	"golang.org/x/sys/unix"
)

const testW, testH = 640, 480

var testIntr = tracker.Intrinsics{Width: testW, Height: testH, PPX: 320, PPY: 240, FX: 400, FY: 400}

// fakeSource draws one green square per frame, moving right by a pixel each
// frame, at 300 mm on a grey background at 600 mm. It can be unplugged.
type fakeSource struct {
	clock   *realtime.Clock
	period  time.Duration
	mu      sync.Mutex
	opens   int
	open    bool
	gone    bool // unplugged: Open and Read fail
	n       uint64
	readErr error // returned once by the next Read
}

func (s *fakeSource) Open(context.Context) (Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opens++
	if s.gone {
		return Stream{}, fmt.Errorf("fake: no device: %w", ErrDisconnected)
	}
	s.open = true
	return Stream{Width: testW, Height: testH, FPS: 30, Intrinsics: testIntr}, nil
}

func (s *fakeSource) Read(ctx context.Context, f *Frame) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.period):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return fmt.Errorf("fake: read: %w", ErrDisconnected)
	}
	if err := s.readErr; err != nil {
		s.readErr = nil
		return err
	}
	s.n++
	draw(f, int(200+s.n%100), 240)
	f.Number, f.Time = s.n, s.clock.Now()
	return nil
}

func (s *fakeSource) Close() error {
	s.mu.Lock()
	s.open = false
	s.mu.Unlock()
	return nil
}

func (s *fakeSource) setGone(g bool) { s.mu.Lock(); s.gone = g; s.mu.Unlock() }

func draw(f *Frame, cx, cy int) {
	for i := range testW * testH {
		f.Color[3*i], f.Color[3*i+1], f.Color[3*i+2] = 110, 110, 110
		f.Depth[i] = 600
	}
	for y := cy - 10; y <= cy+10; y++ {
		for x := cx - 10; x <= cx+10; x++ {
			i := y*testW + x
			f.Color[3*i], f.Color[3*i+1], f.Color[3*i+2] = 40, 200, 40
			f.Depth[i] = 300
		}
	}
}

func newTracker(st Stream) (*tracker.Tracker, error) {
	return tracker.New(tracker.Config{
		Width: st.Width, Height: st.Height, Params: tracker.DefaultParams(),
		DepthMin: 0, DepthMax: 1000, Intrinsics: st.Intrinsics, Pose: tracker.IdentityPose(),
		Side: tracker.Top, Sort: tracker.SortY, NbMarkers: 1,
	})
}

type countObserver struct {
	frames, ages, ups, downs atomic.Int64
	lastAge                  atomic.Int64
	stale, skipped           atomic.Int64
}

func (o *countObserver) ObserveRead(stale bool, skipped uint64) {
	if stale {
		o.stale.Add(1)
	}
	o.skipped.Add(int64(skipped))
}

func (o *countObserver) ObserveFrame(int64, int, bool) { o.frames.Add(1) }
func (o *countObserver) ObserveAge(a int64)            { o.ages.Add(1); o.lastAge.Store(a) }
func (o *countObserver) ObserveUp(up bool) {
	if up {
		o.ups.Add(1)
	} else {
		o.downs.Add(1)
	}
}

func TestCameraPublishesAndSignals(t *testing.T) {
	clock := realtime.NewClock()
	ev, err := realtime.NewEvent(clock)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	src := &fakeSource{clock: clock, period: 2 * time.Millisecond}
	obs := &countObserver{}
	c, err := New(Config{Name: "t", Source: src, Tracker: newTracker, NbMarkers: 1, Clock: clock, Signal: ev, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	vec := make([]float64, 3)
	// Before any frame: zeros, as emioapi starts.
	c.Markers(nil, vec)
	if vec[0] != 0 || vec[1] != 0 || vec[2] != 0 {
		t.Fatalf("before the first frame: %v", vec)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	for range 5 {
		// Generous: on a loaded machine under the race detector the first
		// frame can take seconds; the test checks that it comes.
		n, _, err := ev.WaitUntil(clock.Now() + int64(30*time.Second))
		if err != nil || n == 0 {
			t.Fatalf("no frame event: n=%d err=%v", n, err)
		}
	}
	s := c.Latest(vec)
	if !s.Valid || s.Held || s.Found != 1 || s.Frame < 5 {
		t.Fatalf("sample %+v", s)
	}
	// The square's centroid, deprojected at 300 mm with the identity pose.
	cx := 200 + int(s.Frame%100)
	want := [3]float64{(float64(cx) - 320) / 400 * 300, 0, 300}
	if vec[0] != want[0] || vec[1] != want[1] || vec[2] != want[2] {
		t.Fatalf("vector %v, want %v (frame %d)", vec, want, s.Frame)
	}
	c.Markers(nil, vec)
	if obs.ages.Load() != 0 {
		t.Fatalf("Markers observed an age: only the send's latch does")
	}
	c.LatchMarkers(nil, vec)
	if obs.ages.Load() == 0 || obs.lastAge.Load() < 0 {
		t.Fatalf("age not observed: %d", obs.lastAge.Load())
	}
	if n := testing.AllocsPerRun(100, func() { c.Markers(nil, vec); c.LatchMarkers(nil, vec) }); n != 0 && !raceEnabled {
		t.Fatalf("Markers and LatchMarkers allocate %v times", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if src.open {
		t.Fatal("source left open after Serve")
	}
}

// A camera unplugged under a running link fails its Serve; the supervisor
// restarts it with backoff, each restart reopening the source, until the
// camera is back; the vector is held meanwhile, never zeroed.
func TestCameraUnplugReopened(t *testing.T) {
	clock := realtime.NewClock()
	src := &fakeSource{clock: clock, period: 2 * time.Millisecond}
	obs := &countObserver{}
	c, err := New(Config{Name: "t", Source: src, Tracker: newTracker, NbMarkers: 1, Clock: clock, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Backoff: bridge.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Factor: 2}, Seed: 1})
	if err := sup.Add("camera", c); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Serve(ctx) }()
	testutil.WaitFor(t, "first frames", func() bool { return c.Frames() >= 3 })

	if !c.Streaming() {
		t.Fatal("not streaming while frames come")
	}
	src.setGone(true)
	testutil.WaitFor(t, "failure seen", func() bool { return obs.downs.Load() >= 2 }) // the read, then a failed reopen
	if c.Streaming() {
		t.Fatal("streaming while unplugged")
	}
	vec := make([]float64, 3)
	held := c.Latest(vec)
	if !held.Valid || vec[2] != 300 {
		t.Fatalf("while unplugged the vector is %v (%+v), want the last one held", vec, held)
	}
	before := c.Frames()
	src.setGone(false)
	testutil.WaitFor(t, "frames after replug", func() bool { return c.Frames() > before+3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	src.mu.Lock()
	opens := src.opens
	src.mu.Unlock()
	if opens < 3 || obs.ups.Load() < 2 {
		t.Fatalf("opens %d ups %d: want the source reopened", opens, obs.ups.Load())
	}
}

// One read error is not a failure; a stream silent for StallAfter is.
func TestCameraStall(t *testing.T) {
	clock := realtime.NewClock()
	src := &fakeSource{clock: clock, period: time.Millisecond, readErr: errors.New("fake: late frame")}
	c, err := New(Config{Name: "t", Source: src, Tracker: newTracker, NbMarkers: 1, Clock: clock, StallAfter: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	testutil.WaitFor(t, "frames after one bad read", func() bool { return c.Frames() >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("one bad read ended Serve: %v", err)
	}

	// A source that keeps failing without ErrDisconnected: stalled after 50 ms.
	stall := &stallSource{fakeSource: &fakeSource{clock: clock}}
	c2, err := New(Config{Name: "t2", Source: stall, Tracker: newTracker, NbMarkers: 1, Clock: clock, StallAfter: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c2.Serve(context.Background())
	if err == nil || !errors.Is(err, errFake) || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("stalled source: %v after %v", err, time.Since(start))
	}
}

var errFake = errors.New("fake: no frame")

type stallSource struct{ *fakeSource }

func (s *stallSource) Read(ctx context.Context, f *Frame) error {
	time.Sleep(5 * time.Millisecond)
	return errFake
}

func TestNewErrors(t *testing.T) {
	clock := realtime.NewClock()
	src := &fakeSource{clock: clock}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no source", Config{Tracker: newTracker, NbMarkers: 1, Clock: clock}},
		{"no tracker", Config{Source: src, NbMarkers: 1, Clock: clock}},
		{"markers", Config{Source: src, Tracker: newTracker, NbMarkers: 0, Clock: clock}},
		{"clock", Config{Source: src, Tracker: newTracker, NbMarkers: 1}},
		{"stall", Config{Source: src, Tracker: newTracker, NbMarkers: 1, Clock: clock, StallAfter: -1}},
	} {
		if _, err := New(tc.cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", tc.name, err)
		}
	}
	// A tracker for another marker count is refused at open.
	c, err := New(Config{Source: src, Tracker: newTracker, NbMarkers: 2, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Serve(context.Background()); err == nil {
		t.Fatal("tracker with 1 marker accepted for nb_markers 2")
	}
}

// Tracking and publishing a frame allocates nothing.
func TestTrackAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	clock := realtime.NewClock()
	ev, err := realtime.NewEvent(clock)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	c, err := New(Config{Name: "t", Source: &fakeSource{clock: clock}, Tracker: newTracker, NbMarkers: 1, Clock: clock, Signal: ev, Observer: &countObserver{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.prepare(Stream{Width: testW, Height: testH, FPS: 30, Intrinsics: testIntr}); err != nil {
		t.Fatal(err)
	}
	draw(&c.frame, 300, 200)
	if n := testing.AllocsPerRun(20, func() {
		if err := c.track(); err != nil {
			t.Fatal(err)
		}
		_, _, _ = ev.WaitUntil(0)
	}); n != 0 {
		t.Fatalf("tracking a frame allocates %v times", n)
	}
	if s := c.Latest(make([]float64, 3)); s.Found != 1 || s.Held {
		t.Fatalf("sample %+v", s)
	}
}

// A tick that takes the frame it took before is stale; frames published
// between two ticks and never taken are skipped. The counts follow from the
// publish sequence alone.
func TestLatchMarkersCountsStaleAndSkipped(t *testing.T) {
	obs := &countObserver{}
	c, err := New(Config{Name: "t", Source: &fakeSource{}, Tracker: newTracker, NbMarkers: 1, Clock: realtime.NewClock(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	vec := make([]float64, 3)
	c.LatchMarkers(nil, vec) // no frame yet: nothing to count
	for _, tc := range []struct {
		seq            uint64 // the newest published frame at the tick
		stale, skipped int64  // totals after the tick
	}{
		{1, 0, 0}, {2, 0, 0}, {2, 1, 0}, {3, 1, 0}, {6, 1, 2}, {6, 2, 2}, {7, 2, 2},
	} {
		c.mu.Lock()
		c.sample = Sample{Seq: tc.seq, Frame: tc.seq + 100, Valid: true}
		c.mu.Unlock()
		c.LatchMarkers(nil, vec)
		if obs.stale.Load() != tc.stale || obs.skipped.Load() != tc.skipped {
			t.Fatalf("after frame %d: stale %d skipped %d, want %d and %d", tc.seq, obs.stale.Load(), obs.skipped.Load(), tc.stale, tc.skipped)
		}
		if st, sk := c.Reads(); int64(st) != tc.stale || int64(sk) != tc.skipped {
			t.Fatalf("Reads() = %d, %d, want %d and %d", st, sk, tc.stale, tc.skipped)
		}
	}
}

// A camera given a priority tracks on a thread of its own (at SCHED_FIFO
// when permitted, else with a warning at the normal priority); a priority
// outside 0..99 is refused.
func TestCameraPriority(t *testing.T) {
	clock := realtime.NewClock()
	if _, err := New(Config{Name: "t", Source: &fakeSource{clock: clock, period: time.Millisecond}, Tracker: newTracker,
		NbMarkers: 1, Clock: clock, Priority: 120}); !errors.Is(err, ErrConfig) {
		t.Fatalf("priority 120: %v, want ErrConfig", err)
	}
	if _, err := New(Config{Name: "t", Source: &fakeSource{clock: clock, period: time.Millisecond}, Tracker: newTracker,
		NbMarkers: 1, Clock: clock, Priority: 10, Pin: true, CPU: -1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("pinned to CPU -1: %v, want ErrConfig", err)
	}
	// Pinned with its loop: every frame is tracked on that CPU alone.
	allowed, err := realtime.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed[len(allowed)-1]
	var mu sync.Mutex
	var sets []unix.CPUSet
	c, err := New(Config{Name: "t", Source: &fakeSource{clock: clock, period: 2 * time.Millisecond}, Tracker: newTracker,
		NbMarkers: 1, Clock: clock, Priority: 10, Pin: true, CPU: cpu,
		OnFrame: func(*Frame, *tracker.Result) {
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(0, &set); err != nil {
				t.Error(err)
			}
			mu.Lock()
			sets = append(sets, set)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	testutil.WaitFor(t, "frames tracked on the camera's thread", func() bool { return c.Frames() >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sets) == 0 {
		t.Fatal("no frame reached OnFrame")
	}
	for i, set := range sets {
		if set.Count() != 1 || !set.IsSet(cpu) {
			t.Fatalf("frame %d tracked on a thread allowed %d CPUs (CPU %d: %v), want CPU %d alone", i, set.Count(), cpu, set.IsSet(cpu), cpu)
		}
	}
}
