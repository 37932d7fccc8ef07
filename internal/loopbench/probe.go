package loopbench

import (
	"fmt"
	"slices"
	"time"

	"github.com/labbridge/bridge/plant"
)

// Capacity is what a plant's measurement costs the loop, probed before a
// benchmark so that a rate the plant cannot carry is said at the start
// rather than found in the overruns.
type Capacity struct {
	Reads  int           // measurements taken
	Median time.Duration // the median time of one Measure
	Max    time.Duration
}

// MaxRateHz is the highest rate at which the measurement fits the loop's
// lead, half a period (bridge.LoopConfig.Lead): 1 / (2·Median).
func (c Capacity) MaxRateHz() float64 {
	if c.Median <= 0 {
		return 0
	}
	return 1 / (2 * c.Median.Seconds())
}

// Exceeded says, in a person's words, whether rateHz asks more of the plant
// than it can carry, and "" when it does not.
func (c Capacity) Exceeded(kind string, rateHz float64) string {
	max := c.MaxRateHz()
	if max == 0 || rateHz <= max {
		return ""
	}
	return fmt.Sprintf("the %s plant takes %v to measure (median of %d reads): at %g Hz the period is %v and a tick measures in at most half of it, so this plant carries about %.0f Hz; expect late sends and overruns (choose the plant with -plant, or a lower -rate)",
		kind, c.Median.Round(time.Microsecond), c.Reads, rateHz, time.Duration(float64(time.Second)/rateHz), max)
}

// ProbePlant times n measurements of p, one after the other, before the
// plant's link runs (nothing else may use p meanwhile). A failed Measure
// ends the probe with its error.
func ProbePlant(p plant.Plant, n int) (Capacity, error) {
	if n < 1 {
		return Capacity{}, fmt.Errorf("loopbench: probe of %d reads (want ≥ 1)", n)
	}
	dst := make([]float64, p.MeasureLen())
	ds := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := p.Measure(dst); err != nil {
			return Capacity{}, fmt.Errorf("loopbench: probe the plant: %w", err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return Capacity{Reads: n, Median: ds[n/2], Max: ds[n-1]}, nil
}
