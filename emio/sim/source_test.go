package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio/camera"
	"github.com/labbridge/bridge/realtime"
)

// The virtual lab's camera renders a frame from the simulated servos'
// present positions without allocating, at its own pace, and its
// calibration reads back through emioapi's file format.
func TestLabCameraAllocs(t *testing.T) {
	kin, err := NewKinematics([]float64{-5, -150, 30}, []float64{0, 0, 0, 0, 30, 30, -30, -30, 40, -40, 40, -40}, 4)
	if err != nil {
		t.Fatal(err)
	}
	bc := dxlsim.DefaultBusConfig()
	bus, err := dxlsim.NewBus(bc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewLabCamera(LabCameraConfig{Width: 640, Height: 480, FPS: 90, Kinematics: kin, Clock: realtime.NewClock(),
		Angles: func(q []float64) { bus.PresentAngles(bc.IDs, q) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Calibration(); err != nil {
		t.Fatal(err)
	}
	st, err := s.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := &camera.Frame{Color: make([]byte, 3*st.Width*st.Height), Depth: make([]uint16, st.Width*st.Height)}
	if err := s.Read(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10, func() {
		if err := s.Read(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a virtual frame allocates %v times", n)
	}
	if f.Number < 11 || f.Time == 0 {
		t.Fatalf("frame number %d time %d", f.Number, f.Time)
	}
	if _, err := NewLabCamera(LabCameraConfig{Width: 640, Height: 480, FPS: 30, Clock: realtime.NewClock()}); err == nil {
		t.Error("a lab camera without kinematics was accepted")
	}
}

// The virtual camera's clock, on synthetic time: frame n is on an ideal
// grid off nominal by the crystal's error (+100 ppm: faster frames), each
// delivered a uniform delay in [0, jitter] after its ideal instant, and the
// delays do not accumulate.
func TestFrameClockGrid(t *testing.T) {
	const (
		fps    = 30
		ppm    = 100.0
		jitter = int64(500 * time.Microsecond)
		start  = int64(1_000_000_000_000)
		hour   = 3600 * fps // frames in an hour at the nominal rate
	)
	period := float64(time.Second) / fps / (1 + ppm*1e-6)
	c := newFrameClock(period, jitter, 1)
	c.open(start)
	var sum, lo, hi int64 = 0, jitter, 0
	for want := uint64(1); want <= hour; want++ {
		n, at := c.take(c.at) // a reader on time
		if n != want {
			t.Fatalf("frame %d, want %d", n, want)
		}
		ideal := start + int64(math.Round(float64(n)*period))
		if c.ideal(n) != ideal || c.index(ideal) != n || c.index(ideal-1) != n-1 {
			t.Fatalf("frame %d ideal at %d, want %d; index there %d, 1 ns before %d", n, c.ideal(n), ideal, c.index(ideal), c.index(ideal-1))
		}
		d := at - ideal
		if d < 0 || d > jitter {
			t.Fatalf("frame %d delivered %d ns after its ideal instant, want 0..%d", n, d, jitter)
		}
		sum, lo, hi = sum+d, min(lo, d), max(hi, d)
	}
	if mean := float64(sum) / hour; math.Abs(mean/float64(jitter)-0.5) > 0.01 || lo > jitter/1000 || hi < jitter-jitter/1000 {
		t.Errorf("delays: mean %.0f, min %d, max %d ns; want uniform in [0, %d]", mean, lo, hi, jitter)
	}
	// An hour of frames at +100 ppm takes 360 ms less than an hour …
	if got, want := c.ideal(hour)-start, float64(time.Hour)/(1+ppm*1e-6); math.Abs(float64(got)-want) > 1 {
		t.Errorf("%d frames span %d ns, want %.0f", hour, got, want)
	}
	// … and an hour holds 10.8 frames more than nominal.
	if got := c.index(start + int64(time.Hour)); got != hour+10 {
		t.Errorf("frames in an hour: %d, want %d", got, hour+10)
	}
}

// A reader that falls behind gets the newest frame delivered, its number
// showing the frames it missed; a reopen keeps the camera's phase.
func TestFrameClockStall(t *testing.T) {
	const start = int64(1_000_000_000_000)
	period := float64(time.Second) / 90
	jitter := int64(2 * time.Millisecond)
	c := newFrameClock(period, jitter, 2)
	c.open(start)
	for range 5 {
		c.take(c.at)
	}
	now := start + int64(10*time.Second) + int64(7*time.Millisecond)
	n, at := c.take(now)
	if at > now || c.at <= now || n+1 != c.n {
		t.Fatalf("after a stall: frame %d delivered at %d, next at %d, now %d", n, at, c.at, now)
	}
	if want := c.index(now); n != want && n != want-1 {
		t.Errorf("after a stall: frame %d, want %d or %d", n, want-1, want)
	}
	if next, _ := c.take(c.at); next != n+1 {
		t.Errorf("after the stall: frame %d, want %d", next, n+1)
	}
	reopen := start + int64(20*time.Second)
	c.open(reopen)
	if c.n != c.index(reopen)+1 || c.ideal(c.n) <= reopen || c.ideal(c.n) != start+int64(math.Round(float64(c.n)*period)) {
		t.Errorf("reopened at %d: next frame %d at %d (ideal %d)", reopen, c.n, c.at, c.ideal(c.n))
	}
}

// The same seed gives the same delays; another seed, others.
func TestFrameClockSeed(t *testing.T) {
	a, b, o := newFrameClock(1e7, 1e6, 7), newFrameClock(1e7, 1e6, 7), newFrameClock(1e7, 1e6, 8)
	a.open(0)
	b.open(0)
	o.open(0)
	same := true
	for range 100 {
		_, x := a.take(a.at)
		_, y := b.take(b.at)
		_, z := o.take(o.at)
		if x != y {
			t.Fatalf("same seed: %d and %d", x, y)
		}
		same = same && x == z
	}
	if same {
		t.Error("another seed gave the same delays")
	}
}

func TestLabCameraClockConfig(t *testing.T) {
	kin, err := NewKinematics([]float64{-5, -150, 30}, []float64{0, 0, 0, 0, 30, 30, -30, -30, 40, -40, 40, -40}, 4)
	if err != nil {
		t.Fatal(err)
	}
	base := LabCameraConfig{Width: 64, Height: 48, FPS: 90, Kinematics: kin, Clock: realtime.NewClock()}
	for _, c := range []struct {
		ppm    float64
		jitter time.Duration
		want   string
	}{
		{1001, 0, "clock error = 1001 ppm, want -1000..1000"},
		{-1001, 0, "clock error = -1001 ppm"},
		{math.NaN(), 0, "clock error = NaN ppm"},
		{0, -1, "jitter = -1ns, want [0, 5.555555ms)"},
		{0, 5555556 * time.Nanosecond, "jitter = 5.555556ms"},
		{-1000, 5562 * time.Microsecond, "jitter = 5.562ms, want [0, 5.561116ms)"},
	} {
		cfg := base
		cfg.ClockErrorPPM, cfg.Jitter = c.ppm, c.jitter
		_, err := NewLabCamera(cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "lab camera "+c.want) {
			t.Errorf("ppm %v jitter %v: %v, want …%s", c.ppm, c.jitter, err, c.want)
		}
	}
	cfg := base
	cfg.ClockErrorPPM, cfg.Jitter = -1000, 5561*time.Microsecond
	if _, err := NewLabCamera(cfg); err != nil {
		t.Errorf("the extremes were refused: %v", err)
	}
}

// Frames read on the real clock carry their numbers and delivery instants:
// each Time is on the ppm'd grid plus at most the jitter, whatever the
// machine's speed (a slow reader only sees gaps in the numbers).
func TestLabCameraFrameTimes(t *testing.T) {
	kin, err := NewKinematics([]float64{-5, -150, 30}, []float64{0, 0, 0, 0, 30, 30, -30, -30, 40, -40, 40, -40}, 4)
	if err != nil {
		t.Fatal(err)
	}
	const jitter = 2 * time.Millisecond
	s, err := NewLabCamera(LabCameraConfig{Width: 64, Height: 48, FPS: 200, Kinematics: kin, Clock: realtime.NewClock(),
		ClockErrorPPM: 500, Jitter: jitter, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := &camera.Frame{Color: make([]byte, 3*st.Width*st.Height), Depth: make([]uint16, st.Width*st.Height)}
	var last camera.Frame
	for range 20 {
		if err := s.Read(context.Background(), f); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		ideal := s.clk.ideal(f.Number)
		s.mu.Unlock()
		// Time is the delivery instant, or the Clock's reading when it is
		// behind the kernel's by its (sub-µs) error.
		if f.Time < ideal-int64(50*time.Microsecond) || f.Time > ideal+int64(jitter) {
			t.Fatalf("frame %d at %d, %d ns from its ideal instant, want 0..%d", f.Number, f.Time, f.Time-ideal, jitter)
		}
		if f.Number <= last.Number || f.Time <= last.Time {
			t.Fatalf("frame %d at %d after frame %d at %d", f.Number, f.Time, last.Number, last.Time)
		}
		last = *f
	}
}
