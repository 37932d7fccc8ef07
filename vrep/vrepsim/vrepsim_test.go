package vrepsim

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// One AZ exchange, byte for byte: the time before, the angles after the
// speeds were set, then a step of 50 ms.
func TestAZExchange(t *testing.T) {
	s, err := NewAZ(AZConfig{})
	if err != nil {
		t.Fatal(err)
	}
	req := [10]byte{'A', 'Z'}
	binary.LittleEndian.PutUint32(req[2:], math.Float32bits(1))
	binary.LittleEndian.PutUint32(req[6:], math.Float32bits(-0.5))
	if out := s.exchange(req); out != [14]byte{'A', 'Z'} {
		t.Errorf("first reply % x, want time and angles 0", out)
	}
	out := s.exchange(req)
	want := [14]byte{'A', 'Z', 0xcd, 0xcc, 0x4c, 0x3d, 0xcd, 0xcc, 0x4c, 0x3d, 0xcd, 0xcc, 0xcc, 0xbc}
	if out != want {
		t.Errorf("second reply % x, want % x (0.05 s, 0.05, -0.025)", out, want)
	}
	bad := req
	bad[1] = 'Y'
	binary.LittleEndian.PutUint32(bad[2:], math.Float32bits(9))
	s.exchange(bad)
	if snap := s.World().Snapshot(); snap.Speeds[0] != 1 || snap.Speeds[1] != -0.5 || s.Stats().BadData != 1 {
		t.Errorf("bad data changed the speeds: %+v %+v", snap, s.Stats())
	}
}

func FuzzAZExchange(f *testing.F) {
	f.Add([]byte("AZ\x00\x00\x80\x3f\x00\x00\x00\xbf"))
	f.Add([]byte("AZ\x00\x00\xc0\x7f\x00\x00\x80\x7f")) // NaN, +Inf
	f.Fuzz(func(t *testing.T, b []byte) {
		s, _ := NewAZ(AZConfig{})
		var in [10]byte
		copy(in[:], b)
		out := s.exchange(in)
		if out[0] != 'A' || out[1] != 'Z' {
			t.Fatalf("reply % x", out)
		}
	})
}

// call sends one request to the ZMQ scene's handler directly.
func call(t testing.TB, s *ZMQ, uuid, fn string, wait *uint64, args ...any) map[string]any {
	t.Helper()
	if args == nil {
		args = []any{}
	}
	b, err := cbor.Marshal(map[string]any{"func": fn, "args": args, "uuid": uuid, "argsL": len(args)})
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := s.handle(b, wait)
	if !ok {
		t.Fatalf("%s closed the connection", fn)
	}
	var m map[string]any
	if err := cbor.Unmarshal(rep, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// step is sim.step and the _*executed*_ answers its waits ask for.
func step(t testing.TB, s *ZMQ, uuid string) {
	t.Helper()
	var wait uint64
	m := call(t, s, uuid, "sim.step", &wait)
	for m["func"] == "_*wait*_" {
		m = call(t, s, uuid, "_*executed*_", &wait)
	}
	if _, ok := m["ret"]; !ok {
		t.Fatalf("sim.step: %v", m)
	}
}

// Two stepping clients: the simulation advances when both asked; the one
// that asked first waits. _*end*_ releases a client's stepping.
func TestZMQSteppingClients(t *testing.T) {
	s, err := NewZMQ(ZMQConfig{Running: true})
	if err != nil {
		t.Fatal(err)
	}
	var w uint64
	call(t, s, "a", "sim.setStepping", &w, true)
	call(t, s, "b", "sim.setStepping", &w, true)
	var wa uint64
	if m := call(t, s, "a", "sim.step", &wa); m["func"] != "_*wait*_" {
		t.Fatalf("step: %v", m)
	}
	if m := call(t, s, "a", "_*executed*_", &wa); m["func"] != "_*wait*_" || s.World().Snapshot().Steps != 0 {
		t.Fatalf("a alone stepped the simulation: %v, %d steps", m, s.World().Snapshot().Steps)
	}
	step(t, s, "b")
	if m := call(t, s, "a", "_*executed*_", &wa); m["ret"] == nil || s.World().Snapshot().Steps != 1 {
		t.Fatalf("after both: %v, %d steps", m, s.World().Snapshot().Steps)
	}
	call(t, s, "b", "_*end*_", &w)
	step(t, s, "a")
	if n := s.World().Snapshot().Steps; n != 2 || s.Stepping() != 1 {
		t.Errorf("%d steps, %d stepping after b left", n, s.Stepping())
	}
	if m := call(t, s, "a", "sim.stopSimulation", &w); m["ret"] == nil || s.Stepping() != 0 || s.State() != StateStopped {
		t.Errorf("stop: %v, stepping %d", m, s.Stepping())
	}
}

func TestZMQErrors(t *testing.T) {
	s, _ := NewZMQ(ZMQConfig{})
	var w uint64
	for _, c := range []struct {
		fn   string
		args []any
		want string
	}{
		{"sim.getObject", []any{"/Nope"}, "object does not exist"},
		{"sim.setJointTargetVelocity", []any{99, 1.0}, "Object does not exist"},
		{"sim.setJointTargetVelocity", []any{16, "fast"}, "Invalid argument 2"},
		{"sim.explode", nil, "No such function: sim.explode"},
	} {
		m := call(t, s, "c", c.fn, &w, c.args...)
		if e, _ := m["err"].(string); len(e) == 0 || !strings.Contains(e, c.want) {
			t.Errorf("%s%v: %v, want %q", c.fn, c.args, m, c.want)
		}
	}
	// A request without uuid is a client of protocol version 1.
	b, _ := cbor.Marshal(map[string]any{"func": "sim.getSimulationTime", "args": []any{}})
	rep, _ := s.handle(b, &w)
	var m map[string]any
	cbor.Unmarshal(rep, &m)
	if m["success"] != false {
		t.Errorf("version 1 client: %v", m)
	}
}

func FuzzZMQRequest(f *testing.F) {
	for _, m := range []map[string]any{
		{"func": "sim.getObject", "args": []any{"/MotorLeft"}, "uuid": "u"},
		{"func": "sim.setJointTargetVelocity", "args": []any{16, 1.5}, "uuid": "u"},
		{"func": "sim.step", "args": []any{}, "uuid": "u"},
		{"func": "zmqRemoteApi.info", "args": []any{"sim"}, "uuid": "u"},
	} {
		b, _ := cbor.Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, _ := NewZMQ(ZMQConfig{Running: true})
		var w uint64
		for range 2 { // a second request may meet a pending step
			rep, ok := s.handle(b, &w)
			if ok && len(rep) == 0 {
				t.Fatal("an empty reply")
			}
			w = 0
		}
	})
}

// The free-running clock: without a stepping client the simulation runs
// in real time; a served connection ends with the scene.
func TestZMQServeFreeRunning(t *testing.T) {
	s, _ := NewZMQ(ZMQConfig{Running: true, Step: time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Serve(ctx, ln); err != nil {
			t.Error(err)
		}
	})
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for s.World().Snapshot().Steps < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	if s.World().Snapshot().Steps < 5 {
		t.Error("the simulation did not run")
	}
}
