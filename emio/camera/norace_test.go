//go:build !race

package camera

const raceEnabled = false
