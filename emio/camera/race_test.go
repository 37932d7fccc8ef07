//go:build race

package camera

// raceEnabled: the race detector instruments allocations (sync and
// channel operations allocate under it), so allocation tests run in the
// plain test run only.
const raceEnabled = true
