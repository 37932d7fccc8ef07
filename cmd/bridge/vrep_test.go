package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
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

// A person types fault commands on standard input and a script posts them
// over HTTP while bridge sim vrep serves: the scene obeys both.
func TestSimVREPControl(t *testing.T) {
	pr, pw := io.Pipe()
	old := simStdin
	simStdin = pr
	defer func() { simStdin = old }()
	// The scene and the control endpoint bind port 0 and say which ports
	// they hold, so that no other program can take one in between.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testutil.SyncBuffer
	var code int
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		code = run(ctx, []string{"sim", "vrep", "-protocol", "zmq", "-listen", "127.0.0.1:0", "-running", "-control", "127.0.0.1:0"}, &out, &errb)
	}()
	t.Cleanup(func() { cancel(); <-finished }) // a test that fails early
	find := func(what string, re *regexp.Regexp) string {
		t.Helper()
		var m []string
		testutil.WaitFor(t, what, func() bool { m = re.FindStringSubmatch(out.String()); return m != nil })
		return m[1]
	}
	scene := find("the scene's address", regexp.MustCompile(`simulated CoppeliaSim scene .* on (127\.0\.0\.1:\d+): `))
	control := find("the control's address", regexp.MustCompile(`fault control on http://(127\.0\.0\.1:\d+)`))
	r, err := vrep.DialRemote(ctx, vrep.RemoteConfig{Address: scene, CallTimeout: 10 * time.Second, ClientTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	state := func() float64 {
		v, err := r.Float("sim.getSimulationState")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	waitState := func(what string, want float64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for state() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the simulation's state is not %v", what, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	io.WriteString(pw, "stop\n")
	waitState("typed stop", 0)
	io.WriteString(pw, "play\n")
	waitState("typed play", 17)
	resp, err := http.Post("http://"+control+"/fault/stop", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || state() != 0 {
		t.Errorf("POST /fault/stop: %d, state %v", resp.StatusCode, state())
	}
	io.WriteString(pw, "explode\n")
	io.WriteString(pw, "status\n")
	// The line is read before it is answered: wait for the answer.
	testutil.WaitFor(t, "the answer to status", func() bool { return out.Contains("simulation stopped, time 0.000 s") })
	if !out.Contains(`unknown control command "explode"`) {
		t.Errorf("no word on the unknown command: %q", out.String())
	}
	r.Close()
	cancel()
	<-finished
	if code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}
