package config

import (
	"fmt"

	"github.com/labbridge/bridge/fault"
	"github.com/labbridge/bridge/vrep"
)

// sceneProbes are a V-REP scene's faults (docs/faults.md §3): read from
// Scene.Stats, off the tick.
func sceneProbes(s *vrep.Scene, link string, stepping bool) []fault.Probe {
	probes := []fault.Probe{
		{
			Name: "scene_not_stopped", Title: "the scene could not be told to stop; the robot may still move",
			Advice: "check that CoppeliaSim still runs and answers at " + s.Addr() + "; press Stop there if the robot moves",
			Level: func() (bool, string) {
				if err := s.Stats().StopErr; err != nil {
					return true, err.Error()
				}
				return false, ""
			},
		},
		{
			Name: "scene_stopped", Title: "the simulation was stopped in CoppeliaSim; the link waits for a person",
			Advice: "press Play in CoppeliaSim (or, with start = true, run `bridge resume " + link + "` to have the bridge start it)",
			Level:  func() (bool, string) { return s.Stats().Stopped, "" },
		},
	}
	if stepping {
		probes = append(probes, fault.Probe{
			Name: "scene_out_of_step", Title: "the simulation ran free of the link (not in lock step); it was put in lock step again",
			Advice: "someone restarted the simulation or another program changed its stepping; check that nothing else calls sim.setStepping",
			Events: func() uint64 { return s.Stats().OutOfStep },
			Detail: func() string { return fmt.Sprintf("scene at %s", s.Addr()) },
		})
	}
	return probes
}
