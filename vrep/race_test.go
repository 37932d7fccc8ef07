//go:build race

package vrep_test

// raceEnabled: the race detector instruments system calls and allocates
// for them, so the client's allocation test asserts in the plain run only.
const raceEnabled = true
