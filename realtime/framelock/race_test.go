//go:build race

package framelock

// raceEnabled: the race detector instruments allocations (sync operations
// allocate under it) and slows the long simulations, so allocation tests run
// in the plain test run only and the simulations are shorter.
const raceEnabled = true
