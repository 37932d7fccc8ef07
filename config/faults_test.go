package config

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/fault"
	"github.com/labbridge/bridge/simulink"
)

// syncBuffer is a log destination several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A Simulink host whose every reply has the wrong size: the link never
// completes its handshake, and that is said once in the log (not once per
// reply), in /healthz and in the faults, naming the size a reply must have.
func TestWrongSizeRepliesAreAFault(t *testing.T) {
	c := parseDefault(t, func(l *Link, p *EmioPlant) {
		p.Camera.Kind, l.Clock = "none", "timer"
	})
	var logs syncBuffer
	env := testEnv(t)
	env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	env.Faults = &simulink.Faults{WrongSize: 1, Seed: 1}
	b, err := c.Links[0].Build(env)
	if err != nil {
		t.Fatal(err)
	}
	sup := serveBuilt(t, b)
	// Both, whatever else a busy machine adds (an overrun).
	active := func() map[string]bool {
		m := map[string]bool{}
		for _, a := range b.Faults.Active() {
			m[a.Name] = true
		}
		return m
	}
	waitFor(t, "both faults", func() bool { a := active(); return a["no_partner"] && a["wrong_size"] })
	if s := b.Link.State(); s != bridge.Handshaking {
		t.Errorf("state %v, want handshaking", s)
	}
	err = sup.Health()
	if !errors.Is(err, fault.ErrFault) || !strings.Contains(err.Error(), "replies of the wrong size from the Simulink host were ignored (want 40 bytes)") {
		t.Errorf("health %v", err)
	}
	if n := strings.Count(logs.String(), `msg="replies of the wrong size from the Simulink host were ignored"`); n != 1 {
		t.Errorf("%d start lines for the wrong-size fault, want 1:\n%s", n, logs.String())
	}
}
