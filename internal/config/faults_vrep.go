package config

import (
	"fmt"

	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/vrep"
)

// sceneProbes are a V-REP scene's own faults (docs/faults.md §3), read from
// Scene.Stats off the tick. A motion StopMotion could not stop and a
// simulation a person stopped are every link's faults (motion_not_stopped,
// stopped), whose details are the scene's own messages.
func sceneProbes(s *vrep.Scene, stepping bool) []fault.Probe {
	if !stepping {
		return nil
	}
	return []fault.Probe{{
		Name: "scene_out_of_step", Title: "the simulation ran free of the link (not in lock step); it was put in lock step again",
		Advice: "the simulation was restarted, or another program changed its stepping: check that nothing else calls sim.setStepping",
		Events: func() uint64 { return s.Stats().OutOfStep },
		Detail: func() string { return fmt.Sprintf("scene at %s", s.Addr()) },
	}}
}
