//go:build !race

package realsense

const raceEnabled = false
