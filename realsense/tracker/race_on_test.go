//go:build race

package tracker

// raceEnabled is set under the race detector, where exhaustive tests sample.
const raceEnabled = true
