package vrepsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/go-zeromq/zmq4"

	"github.com/labbridge/bridge/vrep/zmtp"
)

// Simulation states as sim.getSimulationState reports them.
const (
	StateStopped = 0
	StatePaused  = 8
	StateRunning = 17 // sim.simulation_advancing_running
)

// DefaultMaxSpeed bounds a joint under position control in a ZMQ scene
// and its model (rad/s).
const DefaultMaxSpeed = 2.0

// ZMQConfig configures a ZMQ scene.
type ZMQConfig struct {
	// Joints are the joints' object paths (/MotorLeft, /MotorRight).
	Joints []string
	// Step is the simulation time step (50 ms, CoppeliaSim's default).
	Step time.Duration
	// Running starts the simulation at once; otherwise it waits for
	// sim.startSimulation, as a scene loaded in CoppeliaSim does.
	Running bool
	// MaxSpeed bounds a joint under position control (rad/s, 2).
	MaxSpeed float64
	// Delay is how long a Delay fault holds a reply (100 ms).
	Delay time.Duration
	// Every and Periodic inject Periodic into every Every-th call (a
	// connection counts as one call for Refuse).
	Every    int
	Periodic Fault
	Logger   *slog.Logger
}

// client is one remote API client, by its uuid.
type client struct {
	stepping int
	desired  uint64 // the step it waits for
	timeout  time.Duration
	seen     time.Time
}

// ZMQ is a scene behind CoppeliaSim's ZMQ remote API. Without a stepping
// client the simulation runs in real time; with one, it advances a step
// only when every stepping client has asked for it (sim.step).
type ZMQ struct {
	cfg     ZMQConfig
	log     *slog.Logger
	world   *World
	faults  faults
	handles map[string]int64

	mu      sync.Mutex // guards what follows and world.mu's fields of state
	cond    *sync.Cond
	state   int
	clients map[string]*client
	calls   map[string]uint64
	conns   sync.WaitGroup
	open    map[net.Conn]struct{} // the connections being served (Drop)
}

// NewZMQ checks cfg and returns a scene, stopped unless cfg.Running.
func NewZMQ(cfg ZMQConfig) (*ZMQ, error) {
	if len(cfg.Joints) == 0 {
		cfg.Joints = []string{"/MotorLeft", "/MotorRight"}
	}
	if cfg.Step == 0 {
		cfg.Step = 50 * time.Millisecond
	}
	if cfg.MaxSpeed == 0 {
		cfg.MaxSpeed = DefaultMaxSpeed
	}
	if cfg.Delay == 0 {
		cfg.Delay = 100 * time.Millisecond
	}
	if cfg.Step < time.Microsecond || cfg.Step > time.Second || !(cfg.MaxSpeed > 0) || cfg.Delay < 0 || cfg.Every < 0 || cfg.Periodic >= numFaults {
		return nil, fmt.Errorf("%w: step %v, max speed %v, delay %v, every %d, fault %v", ErrConfig, cfg.Step, cfg.MaxSpeed, cfg.Delay, cfg.Every, cfg.Periodic)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &ZMQ{cfg: cfg, log: cfg.Logger, world: newWorld(cfg.Joints, cfg.Step, cfg.MaxSpeed),
		handles: map[string]int64{}, clients: map[string]*client{}, calls: map[string]uint64{}, open: map[net.Conn]struct{}{}}
	s.cond = sync.NewCond(&s.mu)
	s.faults.delay, s.faults.every, s.faults.periodic = cfg.Delay, cfg.Every, cfg.Periodic
	for i, j := range cfg.Joints {
		// Object paths as CoppeliaSim resolves them; the seed's script
		// names them without the slash.
		s.handles[j] = int64(16 + i)
		s.handles[strings.TrimPrefix(j, "/")] = int64(16 + i)
	}
	if cfg.Running {
		s.state = StateRunning
	}
	return s, nil
}

// World is the scene's robot.
func (s *ZMQ) World() *World { return s.world }

// Inject makes the next n calls misbehave as f.
func (s *ZMQ) Inject(f Fault, n int) { s.faults.inject(f, n) }

// State is the simulation state (StateStopped, StatePaused, StateRunning).
func (s *ZMQ) State() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Stepping reports how many clients hold the simulation in lock step.
func (s *ZMQ) Stepping() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.clients {
		if c.stepping > 0 {
			n++
		}
	}
	return n
}

// Clients reports how many clients the scene knows (stepping or not): a
// client stays known until it sends _*end*_ or its timeout passes.
func (s *ZMQ) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// Forget forgets every client, as their timeouts passing would: their
// stepping ends and the simulation runs free.
func (s *ZMQ) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.clients)
	s.cond.Broadcast()
}

// Stop is a person pressing Stop: the simulation stops, back to its
// initial state, and every client's stepping ends.
func (s *ZMQ) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

// Play is a person pressing Play: a stopped or paused simulation runs.
func (s *ZMQ) Play() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = StateRunning
	s.cond.Broadcast()
}

// Pause is a person pressing Pause.
func (s *ZMQ) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateRunning {
		s.state = StatePaused
	}
}

// Drop closes every client connection at once, as a network that fails:
// the clients stay known (their stepping with them) until their timeout.
// It returns how many were closed.
func (s *ZMQ) Drop() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for nc := range s.open {
		nc.Close()
	}
	return len(s.open)
}

// SetDelay sets how long a Delay fault holds a reply.
func (s *ZMQ) SetDelay(d time.Duration) { s.faults.setDelay(d) }

// Every makes every n-th call misbehave as f (n = 0: none).
func (s *ZMQ) Every(n int, f Fault) { s.faults.setEvery(n, f) }

// Status is the scene as a person wants it: state, clients, time, joints.
func (s *ZMQ) Status() string {
	s.mu.Lock()
	state, clients := s.state, len(s.clients)
	stepping := 0
	for _, c := range s.clients {
		if c.stepping > 0 {
			stepping++
		}
	}
	s.mu.Unlock()
	snap := s.world.Snapshot()
	name := map[int]string{StateStopped: "stopped", StatePaused: "paused", StateRunning: "running"}[state]
	return fmt.Sprintf("simulation %s, time %.3f s (%d steps), %d client(s), %d stepping; targets %s rad/s, angles %s rad",
		name, snap.Time, snap.Steps, clients, stepping, fmtFloats(snap.Speeds), fmtFloats(snap.Angles))
}

// Calls returns how many times each function was called.
func (s *ZMQ) Calls() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]uint64, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Restart stops and starts the simulation again, from time 0.
func (s *ZMQ) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	s.state = StateRunning
}

// stopLocked stops the simulation: time and joints back to the scene's
// initial state, stepping of every client ended as sim.stopSimulation does.
func (s *ZMQ) stopLocked() {
	s.world.mu.Lock()
	s.world.reset()
	s.world.mu.Unlock()
	for _, c := range s.clients {
		c.stepping = 0
	}
	s.state = StateStopped
	s.cond.Broadcast()
}

// Serve accepts remote API clients on ln until ctx is done, each
// connection on a goroutine of its own, and runs the free-running clock;
// it closes ln and waits for the connections.
func (s *ZMQ) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	var clock sync.WaitGroup
	clock.Go(func() { s.run(ctx) })
	defer clock.Wait()
	defer s.conns.Wait()
	defer cancel()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("vrepsim: accepting on %v: %w", ln.Addr(), err)
		}
		s.conns.Go(func() { s.serveConn(ctx, nc) })
	}
}

// run advances the simulation in real time while it runs and no client
// steps it, and forgets clients idle past their timeout.
func (s *ZMQ) run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Step)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			for id, c := range s.clients {
				if now.Sub(c.seen) > c.timeout {
					delete(s.clients, id)
				}
			}
			if s.state == StateRunning && !s.lockStepped() {
				s.world.mu.Lock()
				s.world.advance()
				s.world.mu.Unlock()
				s.cond.Broadcast()
			}
			s.mu.Unlock()
		}
	}
}

// lockStepped reports whether a client steps the simulation; mu is held.
func (s *ZMQ) lockStepped() bool {
	for _, c := range s.clients {
		if c.stepping > 0 {
			return true
		}
	}
	return false
}

// tryStep advances one step if every stepping client asked for it; mu is
// held.
func (s *ZMQ) tryStep() {
	if s.state != StateRunning || !s.lockStepped() {
		return
	}
	s.world.mu.Lock()
	cur := s.world.steps
	s.world.mu.Unlock()
	for _, c := range s.clients {
		if c.stepping > 0 && c.desired <= cur {
			return
		}
	}
	s.world.mu.Lock()
	s.world.advance()
	s.world.mu.Unlock()
	s.cond.Broadcast()
}

// serveConn answers one REQ peer until it leaves or ctx is done.
func (s *ZMQ) serveConn(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	s.mu.Lock()
	s.open[nc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.open, nc)
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if s.faults.next() == Refuse {
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		return
	}
	zc, err := zmtp.Handshake(nc, zmq4.Rep, zmtp.DefaultLimit, time.Now().Add(5*time.Second))
	if err != nil {
		s.log.Debug("handshake failed", "peer", nc.RemoteAddr(), "err", err)
		return
	}
	var waitStep uint64 // the step a sim.step of this peer waits for; 0: none
	for {
		body, err := zc.Recv()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Debug("peer left", "peer", nc.RemoteAddr(), "err", err)
			}
			return
		}
		reply, ok := s.handle(body, &waitStep)
		if !ok {
			return
		}
		switch s.faults.next() {
		case CloseEarly:
			return
		case Short:
			nc.Write([]byte{0x01, 0x00, 0x00, 0x40})
			return
		case BadMagic:
			reply = []byte{0xff, 0xfe}
		case Delay:
			select {
			case <-time.After(s.faults.currentDelay()):
			case <-ctx.Done():
				return
			}
		case Restart:
			s.Restart()
		}
		if err := zc.Send(reply); err != nil {
			return
		}
	}
}

// request is what a client sends; Args stay raw until the function is known.
type request struct {
	Func    string            `cbor:"func"`
	Args    []cbor.RawMessage `cbor:"args"`
	UUID    *string           `cbor:"uuid"`
	Ver     int               `cbor:"ver"`
	Lang    string            `cbor:"lang"`
	Timeout float64           `cbor:"timeout"`
}

var decMode, _ = cbor.DecOptions{MaxArrayElements: 1024, MaxMapPairs: 1024, MaxNestedLevels: 16}.DecMode()

func encode(v any) []byte {
	b, err := cbor.Marshal(v)
	if err != nil { // only values built here are encoded
		b, _ = cbor.Marshal(map[string]any{"err": "vrepsim: " + err.Error()})
	}
	return b
}

func ret(vals ...any) []byte {
	if vals == nil {
		vals = []any{}
	}
	return encode(map[string]any{"ret": vals})
}

func errReply(format string, args ...any) []byte {
	return encode(map[string]any{"err": fmt.Sprintf(format, args...)})
}

// handle answers one request; false closes the connection.
func (s *ZMQ) handle(body []byte, waitStep *uint64) ([]byte, bool) {
	var req request
	if err := decMode.Unmarshal(body, &req); err != nil {
		s.log.Debug("not a request", "err", err)
		return nil, false
	}
	if req.UUID == nil {
		// What a server answers a client of protocol version 1.
		return encode(map[string]any{"success": false, "error": "The client ZeroMQ remote API version does not match CoppeliaSim's version"}), true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[req.Func]++
	id := *req.UUID
	c := s.clients[id]
	if req.Func == "_*end*_" {
		delete(s.clients, id)
		s.cond.Broadcast()
		return encode(map[string]any{}), true
	}
	if c == nil {
		c = &client{timeout: 10 * time.Minute}
		if req.Timeout > 0 {
			c.timeout = time.Duration(req.Timeout * float64(time.Second))
		}
		s.clients[id] = c
	}
	c.seen = time.Now()
	if *waitStep != 0 {
		if req.Func != "_*executed*_" {
			return errReply("vrepsim: %s while sim.step waits for _*executed*_", req.Func), true
		}
		return s.stepWait(c, waitStep), true
	}
	return s.call(c, req, waitStep), true
}

// stepWait answers an _*executed*_ while a sim.step waits: the step is done
// (or the simulation does not run), or wait a little longer.
func (s *ZMQ) stepWait(c *client, waitStep *uint64) []byte {
	deadline := time.Now().Add(50 * time.Millisecond)
	for {
		s.world.mu.Lock()
		done := s.world.steps >= *waitStep
		s.world.mu.Unlock()
		if done || s.state != StateRunning {
			*waitStep = 0
			return ret()
		}
		if time.Now().After(deadline) {
			return encode(map[string]any{"func": "_*wait*_", "args": []any{}})
		}
		// The clock or another client's step broadcasts; a timer bounds
		// the wait.
		t := time.AfterFunc(time.Until(deadline), func() {
			s.mu.Lock()
			s.cond.Broadcast()
			s.mu.Unlock()
		})
		s.cond.Wait()
		t.Stop()
	}
}

// funcs are the functions this scene answers, for zmqRemoteApi.info.
var funcs = []string{
	"getObject", "getObjectHandle", "getJointPosition", "setJointTargetVelocity", "getJointTargetVelocity",
	"setJointTargetPosition", "getJointTargetPosition", "getJointVelocity", "getSimulationTime",
	"getSimulationTimeStep", "getSimulationState", "startSimulation", "stopSimulation", "pauseSimulation",
	"setStepping", "step",
}

var consts = map[string]any{
	"simulation_stopped": StateStopped, "simulation_paused": StatePaused, "simulation_advancing": 16,
	"simulation_advancing_firstafterstop": 16, "simulation_advancing_running": StateRunning,
}

// call runs a function; mu is held.
func (s *ZMQ) call(c *client, req request, waitStep *uint64) []byte {
	w := s.world
	args := req.Args
	num := func(i int) (float64, bool) {
		if i >= len(args) {
			return 0, false
		}
		var v any
		if decMode.Unmarshal(args[i], &v) != nil {
			return 0, false
		}
		switch x := v.(type) {
		case uint64:
			return float64(x), true
		case int64:
			return float64(x), true
		case float64:
			return x, !math.IsNaN(x) && !math.IsInf(x, 0)
		}
		return 0, false
	}
	joint := func() (int, []byte) {
		h, ok := num(0)
		j := int(h) - 16
		if !ok || j < 0 || j >= len(w.q) || float64(int(h)) != h {
			return 0, errReply("Object does not exist. (in function '%s')", req.Func)
		}
		return j, nil
	}
	switch req.Func {
	case "zmqRemoteApi.require":
		return ret()
	case "zmqRemoteApi.info":
		var name string
		if len(args) > 0 {
			decMode.Unmarshal(args[0], &name)
		}
		if name != "sim" {
			return ret(map[string]any{})
		}
		info := map[string]any{}
		for _, f := range funcs {
			info[f] = map[string]any{"func": map[string]any{}}
		}
		for k, v := range consts {
			info[k] = map[string]any{"const": v}
		}
		return ret(info)
	case "sim.getObject", "sim.getObjectHandle":
		var path string
		if len(args) > 0 {
			decMode.Unmarshal(args[0], &path)
		}
		h, ok := s.handles[path]
		if !ok {
			return errReply("object does not exist: %q. (in function '%s')", path, req.Func)
		}
		return ret(h)
	case "sim.getJointPosition", "sim.getJointTargetVelocity", "sim.getJointTargetPosition", "sim.getJointVelocity":
		j, bad := joint()
		if bad != nil {
			return bad
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		switch req.Func {
		case "sim.getJointPosition":
			return ret(w.q[j])
		case "sim.getJointTargetPosition":
			return ret(w.p[j])
		}
		return ret(w.v[j])
	case "sim.setJointTargetVelocity", "sim.setJointTargetPosition":
		j, bad := joint()
		if bad != nil {
			return bad
		}
		v, ok := num(1)
		if !ok {
			return errReply("Invalid argument 2: want a number. (in function '%s')", req.Func)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if req.Func == "sim.setJointTargetVelocity" {
			w.v[j], w.position[j] = v, false
		} else {
			w.p[j], w.position[j] = v, true
		}
		return ret()
	case "sim.getSimulationTime":
		w.mu.Lock()
		defer w.mu.Unlock()
		return ret(w.t)
	case "sim.getSimulationTimeStep":
		return ret(w.dt)
	case "sim.getSimulationState":
		return ret(s.state)
	case "sim.startSimulation":
		if s.state != StateRunning {
			s.state = StateRunning
			s.cond.Broadcast()
		}
		return ret(1)
	case "sim.stopSimulation":
		s.stopLocked()
		return ret(1)
	case "sim.pauseSimulation":
		if s.state == StateRunning {
			s.state = StatePaused
		}
		return ret(1)
	case "sim.setStepping":
		var on bool
		if len(args) > 0 {
			decMode.Unmarshal(args[0], &on)
		}
		prev := c.stepping
		w.mu.Lock()
		cur := w.steps
		w.mu.Unlock()
		if on {
			if c.stepping == 0 {
				c.desired = cur
			}
			c.stepping++
		} else if c.stepping > 0 {
			c.stepping--
			s.tryStep() // the others may be waiting for this one
		}
		return ret(prev)
	case "sim.step":
		w.mu.Lock()
		cur := w.steps
		w.mu.Unlock()
		*waitStep = cur + 1
		if s.state == StateRunning && c.stepping > 0 {
			c.desired = cur + 1
			s.tryStep()
		}
		// As CoppeliaSim: the client waits and says _*executed*_.
		return encode(map[string]any{"func": "_*wait*_", "args": []any{}})
	}
	if slices.Contains(funcs, strings.TrimPrefix(req.Func, "sim.")) {
		return errReply("vrepsim: %s is listed but not simulated", req.Func)
	}
	return errReply("No such function: %s", req.Func)
}
