package framelock

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	const nom = 10 * time.Millisecond
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "nominal period 0s, want 100µs..10s"},
		{Config{Nominal: 11 * time.Second}, "nominal period 11s"},
		{Config{Nominal: nom, Margin: -1}, "margin -1ns, want 0..5ms"},
		{Config{Nominal: nom, Margin: 6 * time.Millisecond}, "margin 6ms"},
		{Config{Nominal: nom, Window: 8}, "window 8 frames, want 16..65536"},
		{Config{Nominal: nom, Window: 1 << 17}, "window 131072 frames"},
		{Config{Nominal: nom, Window: 16, LockAfter: time.Second}, "lock after 1s (100 frames), want 0..160ms"},
		{Config{Nominal: nom, LockAfter: -time.Second}, "lock after -1s"},
		{Config{Nominal: nom, LostAfter: nom}, "lost after 10ms, want 20ms..1h0m0s"},
		{Config{Nominal: nom, MaxPPM: -1}, "max ppm -1, want (0, 10000]"},
		{Config{Nominal: nom, MaxPPM: math.NaN()}, "max ppm NaN"},
	} {
		_, err := New(c.cfg)
		if !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "framelock: "+c.want) {
			t.Errorf("New(%+v) = %v, want framelock: %s…", c.cfg, err, c.want)
		}
	}
	l := mustNew(t, Config{Nominal: time.Second / 30})
	if len(l.ring) != 1200 || l.lockFrames != 30 || l.lostAfter != 5*int64(time.Second/30) || l.margin != int64(time.Millisecond) {
		t.Errorf("defaults at 30 fps: window %d, lock frames %d, lost after %d, margin %d", len(l.ring), l.lockFrames, l.lostAfter, l.margin)
	}
	l = mustNew(t, Config{Nominal: time.Millisecond})
	if len(l.ring) != maxDefaultWindow || l.margin != int64(time.Millisecond/4) {
		t.Errorf("defaults at 1000 fps: window %d, margin %d", len(l.ring), l.margin)
	}
	for s, want := range map[State]string{Locking: "locking", Locked: "locked", Lost: "lost", 7: "State(7)"} {
		if s.String() != want {
			t.Errorf("%d: %q", int(s), s.String())
		}
	}
}

func TestSelectKth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 2000 {
		a := make([]int64, 1+rng.IntN(300))
		for i := range a {
			a[i] = rng.Int64N(int64(1 + rng.IntN(50))) // many duplicates too
		}
		k := rng.IntN(len(a))
		s := slices.Clone(a)
		slices.Sort(s)
		if got := selectKth(a, k); got != s[k] {
			t.Fatalf("selectKth(%v, %d) = %d, want %d", s, k, got, s[k])
		}
	}
	if q := quantileOf([]int64{5, 1, 4, 2, 3}, 0.99); q != 5 {
		t.Errorf("p99 of 5 values = %d, want the largest", q)
	}
}

// The lower line is below every point, exact on noise-free points, and
// touches the envelope of one-sided noise.
func TestLowerLine(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 10 + 3*x
	}
	hull := make([]int32, 0, len(xs))
	if a, b := lowerLine(xs, ys, 3.5, hull); a != 10 || b != 3 {
		t.Errorf("exact line: %v + %v·x", a, b)
	}
	late := []float64{0, 5, 1, 7, 0, 2, 9, 0}
	for i := range ys {
		ys[i] += late[i]
	}
	a, b := lowerLine(xs, ys, 3.5, hull)
	if math.Abs(a-10) > 1e-12 || math.Abs(b-3) > 1e-12 {
		t.Errorf("late points: %v + %v·x, want 10 + 3·x", a, b)
	}
	if a, b := lowerLine(xs[:1], ys[:1], 0, hull); a != ys[0] || b != 0 {
		t.Errorf("one point: %v + %v·x", a, b)
	}
}

// feed observes frames of cam until the simulated time passes until.
func feed(l *Lock, cam *camSim, until int64) frameEv {
	var last frameEv
	for {
		ev := cam.next()
		if ev.arrival > until {
			cam.n--
			cam.ideal -= ev.period
			return last
		}
		l.Observe(ev.n, ev.arrival, ev.ready)
		last = ev
	}
}

// A frame late beyond the jitter band by more than a third of a period is
// left out of the fit (a USB hiccup); when late frames persist for 250 ms
// the phase is new and the fit starts over. An early frame, which jitter
// cannot explain, starts it over at once, as does a frame number that goes
// back or jumps by more than the window.
func TestOutliers(t *testing.T) {
	const fps = 30
	nom := int64(time.Second / fps)
	newLocked := func() (*Lock, *camSim, frameEv) {
		l := mustNew(t, Config{Nominal: time.Duration(nom)})
		cam := newCam(fps, 100, 9, simStart)
		last := feed(l, cam, simStart+int64(5*time.Second))
		if st := l.Status(last.arrival); st.State != Locked {
			t.Fatalf("not locked: %+v", st)
		}
		return l, cam, last
	}

	l, cam, _ := newLocked()
	ev := cam.next()
	l.Observe(ev.n, ev.arrival+nom/2, ev.ready+nom/2)
	last := feed(l, cam, simStart+int64(6*time.Second))
	if st := l.Status(last.arrival); st.State != Locked || st.Outliers != 1 || st.Relocks != 0 {
		t.Errorf("after one late frame: %+v", st)
	}

	l, cam, _ = newLocked()
	for range l.relockAfter {
		ev := cam.next()
		l.Observe(ev.n, ev.arrival+nom/2, ev.ready+nom/2)
	}
	if st := l.Status(ev.arrival); st.State != Locking || st.Outliers != uint64(l.relockAfter) || st.Relocks != 1 || st.Window != 1 {
		t.Errorf("after %d late frames: %+v", l.relockAfter, st)
	}

	for _, c := range []struct {
		name  string
		frame func(n uint64) uint64
		shift int64
	}{
		{"early", func(n uint64) uint64 { return n }, -nom / 2},
		{"backwards", func(n uint64) uint64 { return n - 2 }, 0},
		{"jump", func(n uint64) uint64 { return n + 1<<20 }, 0},
	} {
		l, cam, _ := newLocked()
		ev := cam.next()
		l.Observe(c.frame(ev.n), ev.arrival+c.shift, ev.ready+c.shift)
		if st := l.Status(ev.arrival); st.State != Locking || st.Relocks != 1 || st.Outliers != 0 {
			t.Errorf("%s: %+v", c.name, st)
		}
		prev := ev.ready
		if next := l.Next(prev, prev); next != prev+int64(math.Round(l.Status(prev).Period)) {
			t.Errorf("%s: while locking again, Next(%d) = %d, want the last period after", c.name, prev, next)
		}
	}
}

// A camera far from its nominal rate (a 30 fps camera configured as 25 fps)
// is never locked on: the ticks stay on the nominal period.
func TestWrongRate(t *testing.T) {
	l := mustNew(t, Config{Nominal: time.Second / 25})
	cam := newCam(30, 0, 10, simStart)
	last := feed(l, cam, simStart+int64(20*time.Second))
	st := l.Status(last.arrival)
	if st.State != Locking {
		t.Errorf("locked on a 30 fps camera as 25 fps: %+v", st)
	}
	if next := l.Next(last.ready, last.ready); next != last.ready+int64(time.Second/25) {
		t.Errorf("Next = prev + %v", time.Duration(next-last.ready))
	}
	if _, ok := l.Expected(last.ready); ok {
		t.Error("Expected answers while locking")
	}
}

// Neither Observe (the fit included) nor the loop's side allocates.
func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates in sync operations")
	}
	l := mustNew(t, Config{Nominal: time.Second / 90})
	cam := newCam(90, 100, 11, simStart)
	feed(l, cam, simStart+int64(5*time.Second))
	if n := testing.AllocsPerRun(500, func() {
		ev := cam.next()
		l.Observe(ev.n, ev.arrival, ev.ready)
	}); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
	prev := simStart + int64(10*time.Second)
	if n := testing.AllocsPerRun(500, func() {
		prev = l.Next(prev, prev)
		l.Expected(prev)
		_ = l.Status(prev)
	}); n != 0 {
		t.Errorf("Next, Expected, Status allocate %v times", n)
	}
}

// Arbitrary sequences of frames (numbers back and forth, times anywhere,
// ready before arrival) never panic, and Next is always after prev.
func FuzzObserve(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 2, 3, 4})
	seq := make([]byte, 0, 400)
	for i := range 100 {
		seq = append(seq, 0, byte(i*37), byte(i*11), byte(i*7))
	}
	f.Add(seq)
	f.Add(append(slices.Clone(seq), 5, 0, 0, 0, 6, 255, 255, 255, 7, 1, 2, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		const nom = int64(10 * time.Millisecond)
		l, err := New(Config{Nominal: time.Duration(nom), Window: 32, LockAfter: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		frame, at := uint64(0), int64(1e12)
		prev := at
		for ; len(data) >= 4; data = data[4:] {
			op, a, b, c := data[0], int64(data[1]), int64(data[2]), int64(data[3])
			ready := at + c*int64(20*time.Microsecond)
			switch op % 8 {
			case 5: // a frame number anywhere, time back or forth
				frame = uint64(a)
				at += (b - 128) * int64(time.Millisecond)
			case 6: // extremes
				frame = math.MaxUint64 - uint64(a)
				at = math.MaxInt64 - b
				if a&1 == 0 {
					at = math.MinInt64 + b
				}
				ready = at + (c-128)<<56
			case 7: // a long gap
				frame += uint64(a) << 8
				at += b * int64(time.Second)
			default: // frames at about the nominal rate, late by up to 0.5 ms
				k := 1 + a%3
				frame += uint64(k)
				at += k*nom + (b%2)*int64(time.Microsecond) - 3*int64(time.Microsecond)
				ready = at + (b+c)*int64(2*time.Microsecond)
			}
			l.Observe(frame, at, ready)
			now := min(max(prev, at), 1<<62)
			next := l.Next(prev, now)
			if next <= prev {
				t.Fatalf("Next(%d) = %d", prev, next)
			}
			if prev = next; prev > 1<<62 {
				prev = 1e12
			}
			l.Expected(prev)
			if st := l.Status(now); st.State != Locking && !(st.Period > 0 && math.Abs(st.PPM) <= DefaultMaxPPM) {
				t.Fatalf("%v with period %v", st.State, st.Period)
			}
		}
	})
}

// With prev = 0 the first tick is placed after now.
func TestNextFirst(t *testing.T) {
	nom := time.Second / 30
	l := mustNew(t, Config{Nominal: nom})
	if got := l.Next(0, simStart); got != simStart+int64(nom) {
		t.Errorf("locking: Next(0, now) = now + %v", time.Duration(got-simStart))
	}
	last := feed(l, newCam(30, 100, 12, simStart), simStart+int64(5*time.Second))
	now := last.ready
	got := l.Next(0, now)
	if d := got - now; d < int64(nom)/2 || d > int64(nom)*3/2 {
		t.Errorf("locked: Next(0, now) = now + %v", time.Duration(d))
	}
	if got != l.Next(now, now) {
		t.Errorf("Next(0, now) = %d, Next(now, now) = %d", got, l.Next(now, now))
	}
}

// Observe on one goroutine, the loop's calls on another (run with -race).
func TestConcurrent(t *testing.T) {
	l := mustNew(t, Config{Nominal: time.Second / 90})
	cam := newCam(90, 100, 13, simStart)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 2000 {
			ev := cam.next()
			l.Observe(ev.n, ev.arrival, ev.ready)
		}
	}()
	prev := simStart
	for i := 0; ; i++ {
		select {
		case <-done:
			if st := l.Status(prev); st.Frames != 2000 {
				t.Errorf("status %+v", st)
			}
			return
		default:
		}
		next := l.Next(prev, prev)
		if next <= prev {
			t.Fatalf("Next(%d) = %d", prev, next)
		}
		l.Expected(next)
		_ = l.Status(next)
		if prev = next; i%1000 == 999 {
			prev = simStart // keep the ticks near the frames
		}
	}
}

// A lock settles a second after it first locks (the offset has stopped
// jumping), and a camera it cannot lock on is given three lock times before
// the link stops waiting for it.
func TestSettled(t *testing.T) {
	l := mustNew(t, Config{Nominal: time.Second / 30})
	if l.Settled() {
		t.Fatal("settled before any frame")
	}
	cam := newCam(30, 100, 3, simStart)
	feed(l, cam, simStart+int64(500*time.Millisecond))
	if l.Settled() {
		t.Fatal("settled after half a second, before the lock")
	}
	last := feed(l, cam, simStart+int64(1500*time.Millisecond))
	if st := l.Status(last.arrival); st.State != Locked || l.Settled() {
		t.Fatalf("%v after 1.5 s, settled %v; want locked, not settled yet", st.State, l.Settled())
	}
	last = feed(l, cam, simStart+int64(3*time.Second))
	if st := l.Status(last.arrival); st.State != Locked || !l.Settled() {
		t.Fatalf("%v after 3 s, settled %v; want locked and settled", st.State, l.Settled())
	}

	wrong := mustNew(t, Config{Nominal: time.Second / 25}) // a 30 fps camera said to be 25
	cam = newCam(30, 0, 4, simStart)
	feed(wrong, cam, simStart+int64(2*time.Second))
	if wrong.Settled() {
		t.Fatal("a camera that does not lock settled after 2 s")
	}
	feed(wrong, cam, simStart+int64(4*time.Second))
	if !wrong.Settled() {
		t.Fatal("a camera that does not lock is waited for after 3 lock times (75 frames)")
	}
}
