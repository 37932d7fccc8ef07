package framelock

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// camSim is a simulated camera on synthetic time: an ideal frame grid whose
// true rate is off nominal by ppm(t) (positive: faster), each frame arriving
// late by a uniform jitter in [0, jitter] and ready after a uniform tracker
// time in [trackMin, trackMax].
type camSim struct {
	nominal            float64
	ppm                func(t float64) float64 // t: ns since start
	jitter             int64
	trackMin, trackMax int64
	rng                *rand.Rand
	start              int64   // ns, the ideal instant of frame 0
	ideal              float64 // ns since start, of frame n
	n                  uint64
	lost               func(n uint64) bool // frames the host never gets
	// late, when set, draws each frame's arrival delay instead of the
	// uniform [0, jitter].
	late func(r *rand.Rand) int64
}

// frameEv is one frame as the camera goroutine sees it, with the truth.
type frameEv struct {
	n              uint64
	arrival, ready int64
	period         float64 // the true period at that frame (ns)
}

func newCam(fps int, ppm float64, seed uint64, start int64) *camSim {
	return &camSim{
		nominal: 1e9 / float64(fps), ppm: func(float64) float64 { return ppm },
		jitter: int64(500 * time.Microsecond), trackMin: int64(2 * time.Millisecond), trackMax: int64(4 * time.Millisecond),
		rng: rand.New(rand.NewPCG(seed, 0x5eed)), start: start,
	}
}

func (c *camSim) next() frameEv {
	for {
		per := c.nominal / (1 + c.ppm(c.ideal)*1e-6)
		ev := frameEv{n: c.n, period: per}
		if c.late != nil {
			ev.arrival = c.start + int64(c.ideal) + c.late(c.rng)
		} else {
			ev.arrival = c.start + int64(c.ideal) + c.rng.Int64N(c.jitter+1)
		}
		ev.ready = ev.arrival + c.trackMin + c.rng.Int64N(c.trackMax-c.trackMin+1)
		c.ideal += per
		c.n++
		if c.lost == nil || !c.lost(ev.n) {
			return ev
		}
	}
}

// tickRec is one tick of the simulated consumer.
type tickRec struct {
	deadline int64
	read     uint64 // the newest published frame at the deadline
	have     bool
	expected uint64
	expOK    bool
	state    State
	settled  bool // Settled at the deadline: the link sends from the first such tick
}

type simResult struct {
	lockAt    time.Duration // first Locked, since the first frame's arrival
	ppmAtLock float64       // |period error| at that moment (ppm)
	maxPPMErr float64       // max |period error| (ppm) once warm and Locked
	settled   time.Duration // since the first frame, when the error last was > 1 ppm
	ticks     []tickRec
	frames    []frameEv
}

// simulate runs a consumer that ticks at l.Next and reads the newest frame
// published (at its ready time) by then, from start for d. Frames are
// observed in order of their ready times, before the ticks that follow.
func simulate(t testing.TB, l *Lock, next func() frameEv, start int64, d, warm time.Duration) simResult {
	t.Helper()
	r := simResult{lockAt: -1}
	ev := next()
	first := ev.arrival
	var pub uint64
	have := false
	deadline := l.Next(start, start)
	end := start + int64(d)
	for deadline < end {
		for ev.ready <= deadline {
			l.Observe(ev.n, ev.arrival, ev.ready)
			pub, have = ev.n, true
			r.frames = append(r.frames, ev)
			st := l.Status(ev.ready)
			perr := math.Abs(st.Period/ev.period-1) * 1e6
			if st.State == Locked && r.lockAt < 0 {
				r.lockAt, r.ppmAtLock = time.Duration(ev.ready-first), perr
			}
			if st.State == Locked && ev.arrival-first >= int64(warm) {
				r.maxPPMErr = max(r.maxPPMErr, perr)
			}
			if perr > 1 {
				r.settled = time.Duration(ev.arrival - first)
			}
			ev = next()
		}
		exp, ok := l.Expected(deadline)
		r.ticks = append(r.ticks, tickRec{deadline: deadline, read: pub, have: have, expected: exp, expOK: ok, state: l.Status(deadline).State, settled: l.Settled()})
		nx := l.Next(deadline, deadline)
		if nx <= deadline {
			t.Fatalf("Next(%d) = %d, not after", deadline, nx)
		}
		deadline = nx
	}
	return r
}

// reads counts, over ticks[from:], the ticks that read the same frame as the
// tick before (doubles), that skipped frames (skips), and that read another
// frame than Expected (mismatches).
func reads(ticks []tickRec, from int) (doubles, skips, mismatches int) {
	for i := max(from, 1); i < len(ticks); i++ {
		p, c := ticks[i-1], ticks[i]
		switch {
		case c.read == p.read:
			doubles++
		case c.read > p.read+1:
			skips++
		}
		if !c.expOK || c.expected != c.read {
			mismatches++
		}
	}
	return
}

// firstLocked returns the index of the first Locked tick at or after from.
func firstLocked(ticks []tickRec, from int) int {
	for i := from; i < len(ticks); i++ {
		if ticks[i].state == Locked {
			return i
		}
	}
	return len(ticks)
}

// intervals returns the shortest and longest tick interval over ticks[from:to].
func intervals(ticks []tickRec, from, to int) (lo, hi int64) {
	lo, hi = math.MaxInt64, 0
	for i := max(from, 1); i < to; i++ {
		d := ticks[i].deadline - ticks[i-1].deadline
		lo, hi = min(lo, d), max(hi, d)
	}
	return lo, hi
}

func mustNew(t testing.TB, cfg Config) *Lock {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

const simStart = int64(1_000_000_000_000) // a CLOCK_MONOTONIC-like origin

// warmTime: the period is checked to 1 ppm once the window (30 s) is full.
const warmTime = DefaultWindowTime + 2*time.Second

// simMinutes is the length of the long runs: 10 simulated minutes, shorter
// under the race detector, which makes them slow without adding anything
// (the simulation is single-threaded).
func simMinutes() time.Duration {
	if raceEnabled || testing.Short() {
		return 2 * time.Minute
	}
	return 10 * time.Minute
}

// A camera off nominal by +100 or −50 ppm, or drifting, with 0.5 ms of
// one-sided arrival jitter and 2–4 ms of tracking: the lock is reached
// within 2 s, the period is known to 1 ppm once the window is full, and a
// consumer ticking at Next reads every frame exactly once, the one Expected
// says, for 10 minutes.
func TestLockFollowsCamera(t *testing.T) {
	// A crystal warming up: 100 → 90 ppm in 10 minutes. The estimate, the
	// mean over the window, lags it by 15 s: 0.25 ppm.
	drift := func(t float64) float64 { return 100 - 10*t/float64(10*time.Minute) }
	for _, fps := range []int{30, 90} {
		for _, c := range []struct {
			name string
			ppm  func(float64) float64
		}{
			{"+100ppm", func(float64) float64 { return 100 }},
			{"-50ppm", func(float64) float64 { return -50 }},
			{"drift", drift},
		} {
			t.Run(c.name+"/"+itoa(fps)+"fps", func(t *testing.T) {
				nom := time.Second / time.Duration(fps)
				l := mustNew(t, Config{Nominal: nom})
				cam := newCam(fps, 0, uint64(fps)*7+uint64(len(c.name)), simStart+12_345_678)
				cam.ppm = c.ppm
				r := simulate(t, l, cam.next, simStart, simMinutes(), warmTime)
				if r.lockAt < 0 || r.lockAt > 2*time.Second {
					t.Fatalf("locked after %v, want within 2 s", r.lockAt)
				}
				if r.maxPPMErr > 1 {
					t.Errorf("period error up to %.3f ppm once the window is full, want ≤ 1", r.maxPPMErr)
				}
				from := firstLocked(r.ticks, 0) + 2
				d, s, m := reads(r.ticks, from)
				if d != 0 || s != 0 || m != 0 {
					t.Errorf("after the lock: %d frames read twice, %d skips, %d reads not the expected frame, in %d ticks",
						d, s, m, len(r.ticks)-from)
				}
				lo, hi := intervals(r.ticks, 0, len(r.ticks))
				if lo < int64(nom)/2 || hi > int64(nom)*3/2 {
					t.Errorf("tick intervals %v..%v, want within [0.5, 1.5] periods", time.Duration(lo), time.Duration(hi))
				}
				st := l.Status(r.ticks[len(r.ticks)-1].deadline)
				if st.Relocks != 0 || st.State != Locked {
					t.Errorf("status %+v", st)
				}
				t.Logf("locked after %v (%.2f ppm off then), within 1 ppm from %v on, max %.3f ppm off after %v; %d ticks, %d doubles, %d skips; %+v",
					r.lockAt, r.ppmAtLock, r.settled, r.maxPPMErr, warmTime, len(r.ticks)-from, d, s, st)
			})
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

// Lost frames (5 % at random and a burst of 20) leave gaps in the frame
// numbers: the lock holds, the period stays within 1 ppm, and every tick
// reads the frame it expects, or the newest before it when that one was lost.
func TestLostFramesKeepLock(t *testing.T) {
	const fps = 30
	nom := time.Second / fps
	l := mustNew(t, Config{Nominal: nom})
	cam := newCam(fps, 100, 3, simStart+5_000_000)
	drop := rand.New(rand.NewPCG(4, 4))
	lost := map[uint64]bool{}
	cam.lost = func(n uint64) bool {
		if (n >= 900 && n < 920) || drop.IntN(20) == 0 {
			lost[n] = true
		}
		return lost[n]
	}
	r := simulate(t, l, cam.next, simStart, 2*time.Minute, warmTime)
	if r.lockAt > 2*time.Second || r.maxPPMErr > 1 {
		t.Fatalf("locked after %v, max %.3f ppm off", r.lockAt, r.maxPPMErr)
	}
	wrong := 0
	lostSeen := false
	for _, tk := range r.ticks[firstLocked(r.ticks, 0)+2:] {
		want := tk.expected
		for lost[want] {
			want--
		}
		if !tk.expOK || tk.read != want {
			wrong++
		}
		lostSeen = lostSeen || tk.state == Lost
	}
	st := l.Status(r.ticks[len(r.ticks)-1].deadline)
	if wrong != 0 || st.Relocks != 0 || st.State != Locked {
		t.Errorf("%d ticks read another frame; status %+v", wrong, st)
	}
	if !lostSeen {
		t.Error("20 frames lost in a row did not show as Lost")
	}
	t.Logf("%d frames lost; %+v", len(lost), st)
}

// The camera is unplugged for 2 s and replugged: frame numbers restart from
// 0 at a new phase. The lock goes Lost, flywheels at the last period, starts
// a new fit (one re-lock), locks again within 2 s, and no tick interval is
// outside [0.5, 1.5] periods, the transitions included.
func TestReplug(t *testing.T) {
	for _, fps := range []int{30, 90} {
		t.Run(itoa(fps)+"fps", func(t *testing.T) {
			nom := time.Second / time.Duration(fps)
			l := mustNew(t, Config{Nominal: nom})
			a := newCam(fps, 100, 5, simStart+1_000_000)
			unplug := simStart + int64(20*time.Second)
			replug := unplug + int64(2*time.Second)
			b := newCam(fps, 100, 6, replug+int64(nom)*37/100)
			next := func() frameEv {
				if a != nil {
					if ev := a.next(); ev.arrival < unplug {
						return ev
					}
					a = nil
				}
				return b.next()
			}
			r := simulate(t, l, next, simStart, 40*time.Second, warmTime)
			if r.lockAt > 2*time.Second {
				t.Fatalf("first lock after %v", r.lockAt)
			}
			lo, hi := intervals(r.ticks, 0, len(r.ticks))
			if lo < int64(nom)/2 || hi > int64(nom)*3/2 {
				t.Errorf("tick intervals %v..%v, want within [0.5, 1.5] periods", time.Duration(lo), time.Duration(hi))
			}
			// Frames stopped: Lost after 5 periods, ticks on the last period.
			var gap []tickRec
			for _, tk := range r.ticks {
				if tk.deadline > unplug+int64(6*nom) && tk.deadline < replug {
					gap = append(gap, tk)
				}
			}
			// The flywheel: one interval, the last estimated period.
			var step int64
			for i, tk := range gap {
				if tk.state != Lost {
					t.Fatalf("at %v after the unplug: %v, want lost", time.Duration(tk.deadline-unplug), tk.state)
				}
				if i == 0 {
					continue
				}
				d := tk.deadline - gap[i-1].deadline
				if step == 0 {
					step = d
				}
				if d < step-1 || d > step+1 {
					t.Fatalf("flywheel interval %d ns, then %d ns", step, d)
				}
			}
			if e := math.Abs(float64(step)*(1+100e-6)/float64(nom)-1) * 1e6; e > 1 {
				t.Errorf("flywheel period %d ns, %.3f ppm off", step, e)
			}
			// Locked again within 2 s of the first new frame.
			relock := -1
			for i, tk := range r.ticks {
				if tk.deadline > replug && tk.state == Locked {
					relock = i
					break
				}
			}
			if relock < 0 || r.ticks[relock].deadline-replug > int64(2*time.Second) {
				t.Fatalf("not locked again within 2 s of the replug")
			}
			d, s, m := reads(r.ticks, relock+2)
			st := l.Status(r.ticks[len(r.ticks)-1].deadline)
			if d != 0 || s != 0 || m != 0 || st.Relocks != 1 || st.State != Locked {
				t.Errorf("after the re-lock: %d doubles, %d skips, %d mismatches; %+v", d, s, m, st)
			}
			t.Logf("re-locked %v after the replug; intervals %v..%v; %+v",
				time.Duration(r.ticks[relock].deadline-replug), time.Duration(lo), time.Duration(hi), st)
		})
	}
}

// Frames stop for good: Locked until LostAfter (5 periods) has passed since
// the last frame, then Lost; the ticks go on at the last estimated period
// and Expected goes on counting the frames the camera would have sent.
func TestFramesStop(t *testing.T) {
	const fps = 30
	nom := time.Second / fps
	l := mustNew(t, Config{Nominal: nom})
	cam := newCam(fps, -50, 8, simStart+2_000_000)
	var last frameEv
	for {
		ev := cam.next()
		if ev.arrival > simStart+int64(15*time.Second) {
			break
		}
		l.Observe(ev.n, ev.arrival, ev.ready)
		last = ev
	}
	st := l.Status(last.arrival + 5*int64(nom))
	if st.State != Locked {
		t.Fatalf("5 periods after the last frame: %v", st.State)
	}
	if st = l.Status(last.arrival + 5*int64(nom) + 1); st.State != Lost {
		t.Fatalf("more than 5 periods after the last frame: %v", st.State)
	}
	if st.Frames != last.n+1 || st.Relocks != 0 || st.Outliers != 0 {
		t.Errorf("status %+v", st)
	}
	step := int64(math.Round(st.Period))
	prev := l.Next(last.ready, last.ready)
	f0, _ := l.Expected(prev)
	for i := range 3000 { // 100 s
		next := l.Next(prev, prev)
		if d := next - prev; i > 0 && (d < step-1 || d > step+1) {
			t.Fatalf("tick %d: interval %d ns, want %d ± 1", i, d, step)
		}
		prev = next
	}
	f1, ok := l.Expected(prev)
	if !ok || f1-f0 != 3000 {
		t.Errorf("Expected went from %d to %d (%v) over 3000 ticks", f0, f1, ok)
	}
	if e := math.Abs(st.Period/last.period-1) * 1e6; e > 1 {
		t.Errorf("flywheel period %.3f ns, %.3f ppm off", st.Period, e)
	}
}
