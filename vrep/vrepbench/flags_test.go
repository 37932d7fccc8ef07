package vrepbench

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/vrep"
)

// The flags fill a Config; a combination that cannot run is refused naming
// the flags.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" = valid
	}{
		{[]string{"-protocol", "zmq", "-rate", "50", "-duration", "2s", "-step-only"}, ""},
		{[]string{"-protocol", "udp"}, `-protocol "udp"`},
		{[]string{"-rate", "-1"}, "a rate ≥ 0"},
		{[]string{"-duration", "0s"}, "a duration > 0"},
		{[]string{"-step-only"}, "-step-only times sim.step: -protocol zmq"},
		{[]string{"-protocol", "zmq", "-seed", "x.md"}, "-seed runs the seed's AZ client"},
		{[]string{"-seed", "/nonexistent/seed.md"}, "-seed: stat /nonexistent/seed.md"},
	} {
		fs := flag.NewFlagSet("bench vrep", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		read := Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := read()
		if tc.want == "" {
			if err != nil || cfg.Protocol != vrep.ZMQ || cfg.Rate != 50 || cfg.Duration != 2*time.Second || !cfg.StepOnly || cfg.Timeout != time.Second {
				t.Errorf("%v: %+v, %v", tc.args, cfg, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), "bridge bench vrep: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
