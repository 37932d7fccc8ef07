package vrepbench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepbench"
)

// A run against the simulated scene of each protocol makes the exchanges it
// is asked for, and says which client measured what.
func TestRunSimulatedScene(t *testing.T) {
	for _, c := range []struct {
		cfg  vrepbench.Config
		name string
	}{
		{vrepbench.Config{Protocol: vrep.AZ}, "go az client"},
		{vrepbench.Config{Protocol: vrep.ZMQ}, "go zmq client"},
		{vrepbench.Config{Protocol: vrep.ZMQ, StepOnly: true}, "go zmq client, sim.step alone"},
	} {
		c.cfg.Duration, c.cfg.Count, c.cfg.Timeout = time.Minute, 20, 10*time.Second
		res, err := vrepbench.Run(context.Background(), c.cfg)
		if err != nil {
			t.Fatalf("%+v: %v", c.cfg, err)
		}
		if res.Name != c.name || res.Report.Exchanges != 20 || res.Report.Failures != 0 || res.Address == "" {
			t.Errorf("%+v: %+v", c.cfg, res)
		}
		if (c.cfg.Protocol == vrep.AZ) != (res.TimeWait >= 0) {
			t.Errorf("%+v: TIME_WAIT count %d: known for AZ only", c.cfg, res.TimeWait)
		}
	}
}

func TestRunRefusesWhatCannotRun(t *testing.T) {
	for _, cfg := range []vrepbench.Config{
		{Protocol: vrep.AZ, Duration: time.Second, StepOnly: true},
		{Protocol: vrep.AZ, Duration: 0},
		{Protocol: vrep.AZ, Duration: time.Second, Rate: -1},
	} {
		if _, err := vrepbench.Run(context.Background(), cfg); !errors.Is(err, vrepbench.ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
}
