package vrepsim

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The control commands, on both scenes: what each does to the scene.
func TestControl(t *testing.T) {
	z, _ := NewZMQ(ZMQConfig{Running: true})
	a, _ := NewAZ(AZConfig{})
	for _, c := range []struct {
		scene Controlled
		words string
		want  string // in the answer
		err   bool
		check func() bool
	}{
		{z, "delay 1", "held 1s", false, func() bool { return z.faults.currentDelay() == time.Second && len(z.faults.queue) == 1 }},
		{z, "delay 200ms 3", "next 3", false, func() bool { return z.faults.currentDelay() == 200*time.Millisecond && len(z.faults.queue) == 4 }},
		{z, "delay", "", true, nil},
		{z, "delay soon", "", true, nil},
		{z, "fault close 2", "close", false, func() bool { return len(z.faults.queue) == 6 }},
		{z, "fault explode", "", true, nil},
		{z, "every 200", "every 200-th call: delay", false, func() bool { return z.faults.every == 200 && z.faults.periodic == Delay }},
		{z, "every 0", "no periodic", false, func() bool { return z.faults.every == 0 }},
		{z, "stop", "stopped", false, func() bool { return z.State() == StateStopped }},
		{z, "play", "running", false, func() bool { return z.State() == StateRunning }},
		{z, "pause", "paused", false, func() bool { return z.State() == StatePaused }},
		{z, "PLAY", "running", false, func() bool { return z.State() == StateRunning }},
		{z, "drop", "dropped 0", false, nil},
		{z, "status", "simulation running, time 0.000 s (0 steps), 0 client(s), 0 stepping; targets [0.000 0.000]", false, nil},
		{z, "help", "delay SECONDS|DURATION [N]", false, nil},
		{z, "explode", "", true, nil},
		{a, "drop", "next connection is reset", false, func() bool { return a.faults.queue[0] == Refuse }},
		{a, "stop", "stopped", false, func() bool { return a.stopped }},
		{a, "status", "simulation stopped", false, nil},
		{a, "play", "running", false, func() bool { return !a.stopped }},
		{a, "pause", "", true, nil},
	} {
		out, err := Control(c.scene, strings.Fields(c.words))
		if c.err {
			if !errors.Is(err, ErrCommand) && !errors.Is(err, ErrConfig) {
				t.Errorf("%q: %q %v, want an error", c.words, out, err)
			}
			continue
		}
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%q: %q %v, want %q", c.words, out, err, c.want)
		}
		if c.check != nil && !c.check() {
			t.Errorf("%q: the scene did not change", c.words)
		}
	}
}
