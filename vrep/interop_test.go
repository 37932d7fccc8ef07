package vrep_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/go-zeromq/zmq4"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
	"github.com/labbridge/bridge/vrep/zmtp"
)

// The official Python client and the Go backend run the same scripted
// session against fresh simulated scenes: the same handles, states,
// stepping and values (docs/vrep.md §4).
func TestZMQSessionMatchesOfficialClient(t *testing.T) {
	py := testutil.Python(t, "python3 -m pip install coppeliasim-zmqremoteapi-client==2.0.4 pyzmq==27.3.0 cbor2==6.3.0",
		"coppeliasim_zmqremoteapi_client", "zmq", "cbor2")
	_, addr := startZMQ(t, vrepsim.ZMQConfig{})
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	out, err := exec.Command(py, "testdata/zmq_session.py", port).CombinedOutput()
	if err != nil {
		t.Fatalf("the official client: %v\n%s", err, out)
	}
	var want []any
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	_, addr = startZMQ(t, vrepsim.ZMQConfig{})
	got := goSession(t, addr)
	gb, _ := json.Marshal(got)
	var gotJSON []any
	json.Unmarshal(gb, &gotJSON)
	if !sameTranscript(want, gotJSON) {
		t.Errorf("transcripts differ:\npython %s\ngo     %s", out, gb)
	}
	t.Logf("python %s", strings.TrimSpace(string(out)))
}

// goSession is zmq_session.py with the Go remote API client.
func goSession(t *testing.T, addr string) []any {
	t.Helper()
	r, err := vrep.DialRemote(t.Context(), vrep.RemoteConfig{Address: addr, CallTimeout: patience, ClientTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	must := func(v float64, err error) float64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	call := func(fn string, args ...any) {
		t.Helper()
		if _, err := r.Call(fn, args...); err != nil {
			t.Fatal(err)
		}
	}
	var out []any
	call("zmqRemoteApi.require", "sim")
	left, right := must(r.Float("sim.getObject", "/MotorLeft")), must(r.Float("sim.getObject", "/MotorRight"))
	out = append(out, []any{"handles", left, right})
	out = append(out, []any{"state", must(r.Float("sim.getSimulationState"))})
	out = append(out, []any{"stepping", must(r.Float("sim.setStepping", true))})
	call("sim.startSimulation")
	out = append(out, []any{"state", must(r.Float("sim.getSimulationState"))})
	for range 10 {
		call("sim.setJointTargetVelocity", int64(left), 1.0)
		call("sim.setJointTargetVelocity", int64(right), -0.5)
		call("sim.step")
		out = append(out, []any{"step", must(r.Float("sim.getSimulationTime")),
			must(r.Float("sim.getJointPosition", int64(left))), must(r.Float("sim.getJointPosition", int64(right)))})
	}
	_, err = r.Call("sim.getObject", "/Nowhere")
	var re *vrep.RemoteError
	out = append(out, []any{"error", errors.As(err, &re) && strings.Contains(re.Msg, "does not exist")})
	call("sim.stopSimulation")
	out = append(out, []any{"state", must(r.Float("sim.getSimulationState"))})
	return out
}

func sameTranscript(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameTranscript(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) < 1e-12
	}
	return a == b
}

// A server of protocol version 1 is told apart from other failures, and
// a remote error keeps CoppeliaSim's message.
func TestRemoteReplies(t *testing.T) {
	for _, c := range []struct {
		reply map[string]any
		check func(error) bool
		want  string
	}{
		{map[string]any{"success": false, "error": "The client ZeroMQ remote API version does not match CoppeliaSim's version"},
			func(err error) bool { return errors.Is(err, vrep.ErrVersion) }, "CoppeliaSim 4.6 or newer"},
		{map[string]any{"err": "Object does not exist._=NL=_in sim.getObject"},
			func(err error) bool { var re *vrep.RemoteError; return errors.As(err, &re) }, "does not exist.\nin sim.getObject"},
		{map[string]any{"ret": map[string]any{}}, nil, ""},
		{map[string]any{"ret": "not an array"},
			func(err error) bool {
				var e *vrep.ExchangeError
				return errors.As(err, &e) && e.Reason == vrep.ReasonProtocol
			}, "not an array"},
	} {
		ln := listen(t)
		serve(t, func(ctx context.Context) error { return fakeServer(ctx, ln, c.reply) })
		r, err := vrep.DialRemote(t.Context(), vrep.RemoteConfig{Address: ln.Addr().String(), CallTimeout: patience})
		if err != nil {
			t.Fatal(err)
		}
		ret, err := r.Call("sim.getSimulationTime")
		r.Close()
		if c.check == nil {
			if err != nil || len(ret) != 0 {
				t.Errorf("%v: %v %v", c.reply, ret, err)
			}
			continue
		}
		if !c.check(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want …%s…", c.reply, err, c.want)
		}
	}
}

// fakeServer answers every request of one client with reply.
func fakeServer(ctx context.Context, ln net.Listener, reply map[string]any) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	nc, err := ln.Accept()
	if err != nil {
		return nil
	}
	defer nc.Close()
	context.AfterFunc(ctx, func() { nc.Close() })
	c, err := zmtp.Handshake(nc, zmq4.Rep, 0, time.Now().Add(patience))
	if err != nil {
		return err
	}
	b, err := cbor.Marshal(reply)
	if err != nil {
		return err
	}
	for {
		if _, err := c.Recv(); err != nil {
			return nil
		}
		if err := c.Send(b); err != nil {
			return nil
		}
	}
}
