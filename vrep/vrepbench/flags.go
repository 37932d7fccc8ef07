package vrepbench

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/labbridge/bridge/vrep"
)

// Flags declares `bridge bench vrep`'s flags on fs. The returned function
// reads them into a Config, refusing values that cannot run with an error
// that names the flags and says what they accept.
func Flags(fs *flag.FlagSet) func() (Config, error) {
	protocol := fs.String("protocol", "az", `"az" or "zmq"`)
	address := fs.String("address", "", "the scene to measure; empty: a simulated scene in this process")
	rate := fs.Float64("rate", 0, "exchanges per second (0 = back to back)")
	duration := fs.Duration("duration", 10*time.Second, "how long to run")
	count := fs.Uint64("count", 0, "stop after this many exchanges (0 = -duration decides)")
	timeout := fs.Duration("timeout", time.Second, "one exchange's timeout")
	untilExhausted := fs.Bool("until-exhausted", false, "az: stop at the first connect that fails for want of a local port (TIME_WAIT exhaustion)")
	seed := fs.String("seed", "", "az: the seed document; also run its Python client against the same scene, as many exchanges")
	stepOnly := fs.Bool("step-only", false, "zmq: time sim.step alone, in lock step, instead of a whole tick")
	return func() (Config, error) {
		proto, err := vrep.ParseProtocol(*protocol)
		switch {
		case err != nil || *rate < 0 || *duration <= 0:
			return Config{}, fmt.Errorf("bridge bench vrep: -protocol %q -rate %v -duration %v: want az or zmq, a rate ≥ 0 and a duration > 0", *protocol, *rate, *duration)
		case *stepOnly && proto != vrep.ZMQ:
			return Config{}, fmt.Errorf("bridge bench vrep: -step-only times sim.step: -protocol zmq")
		case *seed != "" && proto != vrep.AZ:
			return Config{}, fmt.Errorf("bridge bench vrep: -seed runs the seed's AZ client: -protocol az")
		}
		if *seed != "" {
			if _, err := os.Stat(*seed); err != nil {
				return Config{}, fmt.Errorf("bridge bench vrep: -seed: %w", err)
			}
		}
		return Config{Protocol: proto, Address: *address, Rate: *rate, Duration: *duration, Count: *count,
			Timeout: *timeout, UntilExhausted: *untilExhausted, StepOnly: *stepOnly, Seed: *seed}, nil
	}
}
