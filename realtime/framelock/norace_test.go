//go:build !race

package framelock

const raceEnabled = false
