package main

import (
	"context"
	"io"
	"net"
	"net/http"
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

// A person types fault commands on standard input and a script posts them
// over HTTP while bridge sim vrep serves: the scene obeys both.
func TestSimVREPControl(t *testing.T) {
	pr, pw := io.Pipe()
	old := simStdin
	simStdin = pr
	defer func() { simStdin = old }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	control := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, rest, done := startCommand(ctx, t, "sim", "vrep", "-protocol", "zmq", "-listen", "127.0.0.1:0", "-running", "-control", control)
	m := regexp.MustCompile(` on (127\.0\.0\.1:\d+): `).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q", first)
	}
	r, err := vrep.DialRemote(ctx, vrep.RemoteConfig{Address: m[1], CallTimeout: 10 * time.Second, ClientTimeout: 5 * time.Second})
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
	var resp *http.Response
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err = http.Post("http://"+control+"/fault/stop", "text/plain", nil)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || state() != 0 {
		t.Errorf("POST /fault/stop: %d, state %v", resp.StatusCode, state())
	}
	io.WriteString(pw, "explode\n")
	io.WriteString(pw, "status\n")
	r.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	if out := <-rest; !strings.Contains(out, "simulation stopped, time 0.000 s") || !strings.Contains(out, "fault control on http://") {
		t.Errorf("output %q", out)
	}
}
