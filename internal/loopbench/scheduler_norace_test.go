//go:build !race

package loopbench

const raceEnabled = false
