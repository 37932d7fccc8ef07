package metrics_test

import (
	"fmt"
	"time"

	"github.com/labbridge/bridge/metrics"
)

func ExampleBuckets() {
	fmt.Println(metrics.Buckets(time.Millisecond))
	// Output: [1e-05 2e-05 4e-05 8e-05 0.00016 0.00032 0.00064 0.001 0.002 0.004]
}

func ExampleSet_Link() {
	reg := metrics.NewRegistry()
	set, err := metrics.New(reg, metrics.BuildInfo{Version: "dev"})
	if err != nil {
		fmt.Println(err)
		return
	}
	servo, err := set.Link("servo", time.Millisecond)
	if err != nil {
		fmt.Println(err)
		return
	}
	servo.ObserveTick(12_000, 250_000) // woke 12 µs late, worked 250 µs
	fmt.Println(servo.SetState("running"))
	_, err = set.Link("servo", time.Millisecond)
	fmt.Println(err)
	// Output:
	// <nil>
	// metrics: duplicate link "servo"
}
