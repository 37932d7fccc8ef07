//go:build race

package simulink

// raceEnabled: the race detector instruments system calls and sync
// operations and allocates for them, so allocation tests assert in the plain
// test run only.
const raceEnabled = true
