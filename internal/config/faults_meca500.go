package config

import (
	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/meca500"
)

// mecaProbes are the Meca500's own faults (docs/faults.md §3): motion
// commands refused with 1000, which stop the arm while the link still
// runs. A latched stop is the link's stopped fault, whose detail is the
// arm's StoppedError (what is engaged, what the person must do); a robot
// that cannot be reached is device_down, whose detail says so.
func mecaProbes(arm *meca500.Arm) []fault.Probe {
	return []fault.Probe{
		{
			Name: "buffer_full", Title: "the robot refused motion commands: its motion queue is full",
			Advice: "the arm stops while its commands are refused: lower the link's rate_hz, or check that no other program queues motions on the robot",
			Events: arm.BufferFulls,
		},
	}
}
