package framelock

import (
	"testing"
	"time"
)

// warmLock returns a Lock at fps that has observed a full window of frames,
// and the camera that fed it.
func warmLock(b *testing.B, fps int) (*Lock, *camSim) {
	l := mustNew(b, Config{Nominal: time.Second / time.Duration(fps)})
	cam := newCam(fps, 100, 1, simStart)
	for range len(l.ring) + 10 {
		ev := cam.next()
		l.Observe(ev.n, ev.arrival, ev.ready)
	}
	return l, cam
}

// Observe refits the whole window (30 s of frames) on every frame, on the
// camera goroutine.
func BenchmarkObserve(b *testing.B) {
	for _, fps := range []int{30, 90} {
		b.Run(itoa(fps)+"fps", func(b *testing.B) {
			l, cam := warmLock(b, fps)
			evs := make([]frameEv, 4096)
			for i := range evs {
				evs[i] = cam.next()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if i == len(evs) {
					b.StopTimer()
					for j := range evs {
						evs[j] = cam.next()
					}
					i = 0
					b.StartTimer()
				}
				ev := evs[i]
				l.Observe(ev.n, ev.arrival, ev.ready)
			}
		})
	}
}

// Next is what the loop thread pays per tick: a copy under the mutex and
// a few float operations.
func BenchmarkNext(b *testing.B) {
	l, _ := warmLock(b, 90)
	prev := l.Next(simStart+int64(40*time.Second), 0)
	b.ReportAllocs()
	for b.Loop() {
		prev = l.Next(prev, prev)
	}
}
