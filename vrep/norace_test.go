//go:build !race

package vrep_test

const raceEnabled = false
