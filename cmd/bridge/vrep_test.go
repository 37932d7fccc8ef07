package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/vrep"
)

// bridge sim vrep serves a simulated scene, AZ or ZMQ, that the bridge's
// own relay drives; on exit it says what the robot did.
func TestSimVREP(t *testing.T) {
	for _, proto := range []vrep.Protocol{vrep.AZ, vrep.ZMQ} {
		t.Run(proto.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first, rest, done := startCommand(ctx, t, "sim", "vrep", "-protocol", proto.String(), "-listen", "127.0.0.1:0")
			m := regexp.MustCompile(` on (127\.0\.0\.1:\d+): `).FindStringSubmatch(first)
			if m == nil || !strings.HasPrefix(first, "simulated ") {
				t.Fatalf("first line %q", first)
			}
			s, err := vrep.New(vrep.Config{Protocol: proto, Address: m[1], Timeout: 10 * time.Second, Stepping: true, Start: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Open(ctx); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := s.Exchange([]float64{1, 1}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("exit %d", code)
			}
			if out := <-rest; !regexp.MustCompile(`wheel angles \[0\.[01]\d0 0\.[01]\d0\] rad`).MatchString(out) {
				t.Errorf("output %q", out)
			}
		})
	}
}

func TestSimVREPFlags(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "vrep", "-protocol", "udp"},
		{"sim", "vrep", "-fault", "explode"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "bridge sim vrep: -") {
			t.Errorf("%v: %d %q", args, code, stderr)
		}
	}
}
