//go:build race

package loopbench

// raceEnabled: the race detector allocates for the operations it
// instruments, so allocation tests assert in the plain test run only.
const raceEnabled = true
