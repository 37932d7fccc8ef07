//go:build race

package realsense

// raceEnabled: the race detector slows librealsense's playback thread and
// instruments allocations, so allocation and pacing tests run in the plain
// test run only.
const raceEnabled = true
