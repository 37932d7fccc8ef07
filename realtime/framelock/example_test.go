package framelock_test

import (
	"fmt"
	"time"

	"github.com/labbridge/bridge/realtime/framelock"
)

// A 30 fps camera whose crystal runs 100 ppm fast, frames delivered up to
// 0.5 ms late, each tracked in 3 ms. After a minute of frames the lock knows
// the true rate, and the ticks are placed 4.5 ms after each predicted frame
// instant: the p99 of when the frame's markers are ready (0.5 ms of delivery
// and 3 ms of tracking) plus the 1 ms margin.
func Example() {
	l, err := framelock.New(framelock.Config{Nominal: time.Second / 30})
	if err != nil {
		panic(err)
	}
	period := float64(time.Second/30) / (1 + 100e-6) // 100 ppm faster frames
	start := int64(1_000_000_000_000)
	var arrival int64
	for n := range 30 * 60 {
		ideal := start + int64(float64(n)*period)
		arrival = ideal + int64(n*7919%500)*int64(time.Microsecond) // late by 0..499 µs
		l.Observe(uint64(n), arrival, arrival+int64(3*time.Millisecond))
	}
	st := l.Status(arrival)
	fmt.Println(st.State)
	fmt.Printf("%.4f Hz, %+.1f ppm\n", st.RateHz, st.PPM)
	fmt.Println("offset", st.Offset.Round(10*time.Microsecond))
	tick := l.Next(arrival, arrival)
	frame, _ := l.Expected(tick)
	fmt.Println("the next tick reads frame", frame)
	fmt.Println("the one after", time.Duration(l.Next(tick, tick)-tick), "later")
	// Output:
	// locked
	// 30.0030 Hz, +100.0 ppm
	// offset 4.49ms
	// the next tick reads frame 1800
	// the one after 33.33ms later
}
