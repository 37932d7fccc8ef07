package config

import (
	"context"

	"github.com/labbridge/bridge/fault"
	"github.com/labbridge/bridge/meca500"
)

// mecaProbes are the Meca500's faults (docs/faults.md §3): refused motion
// commands, which stop the arm while the link still runs, and a stop that
// waits for a person.
func mecaProbes(arm *meca500.Arm, link string) []fault.Probe {
	return []fault.Probe{
		{
			Name: "buffer_full", Title: "the robot refused motion commands: its motion queue is full",
			Advice: "the arm stops while its commands are refused: lower the link's rate_hz, or check that no other program queues motions on the robot",
			Events: arm.BufferFulls,
		},
		{
			Name: "robot_stopped", Title: "the robot is stopped and waits for a person",
			Advice: "make the cell safe and clear what stopped the arm (an emergency or protective stop is released, then reset at the power supply), then run `bridge resume " + link + "`",
			Level:  arm.Stopped,
		},
	}
}

// armHealth reports the arm's health to the supervisor beside its link, so
// that /healthz says whether a degraded robot is unreachable or reachable
// and stopped (and what stops it). It holds nothing: its Serve only waits.
type armHealth struct{ arm *meca500.Arm }

func (h armHealth) Serve(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func (h armHealth) Health() error { return h.arm.Health() }
