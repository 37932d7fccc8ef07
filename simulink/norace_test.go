//go:build !race

package simulink

const raceEnabled = false
