// Package vrepsim simulates the V-REP / CoppeliaSim scenes a bridge link
// talks to (docs/vrep.md), so that the vrep client, the bridge and the
// seed's own Python client run without a simulator:
//
//   - AZ serves the seed's socket exchange (§1, §1.2): one exchange per
//     connection, served one at a time as the seed's threaded script does;
//     10 bytes in, 14 out, then the connection is closed. A request whose
//     magic is not 'A','Z' is logged as "bad data" and leaves the
//     velocities as they were; the reply is sent all the same.
//   - ZMQ serves CoppeliaSim's ZMQ remote API, protocol version 2 (§4), for
//     the calls a relay and the official Python client make, with stepping
//     per client and the _*wait*_ / _*executed*_ dialogue of sim.step.
//
// Both simulate the seed's two-wheel robot: joints MotorLeft and MotorRight
// (object paths /MotorLeft, /MotorRight) whose angles integrate their target
// velocities (or move toward a target position at MaxSpeed). Faults are
// injected with Inject, safe from any goroutine: refuse, close early, short
// reply, wrong magic, delay, and a scene restart.
package vrepsim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrConfig is an invalid configuration; the message names the value.
var ErrConfig = errors.New("vrepsim: invalid configuration")

// Fault is a misbehaviour of the scene, applied to one exchange (AZ) or one
// call (ZMQ).
type Fault uint8

// Faults.
const (
	None Fault = iota
	// Refuse resets the connection as soon as it is accepted.
	Refuse
	// CloseEarly closes the connection without a reply.
	CloseEarly
	// Short sends part of the reply, then closes.
	Short
	// BadMagic replies with 'A','Y' instead of 'A','Z' (ZMQ: bytes that
	// are not CBOR).
	BadMagic
	// Delay holds the reply for the configured delay.
	Delay
	// Restart starts the simulation again from time 0 before replying, as
	// a user pressing Stop then Play.
	Restart
	numFaults
)

var faultNames = [numFaults]string{"none", "refuse", "close", "short", "magic", "delay", "restart"}

func (f Fault) String() string {
	if f < numFaults {
		return faultNames[f]
	}
	return "unknown"
}

// ParseFault parses a fault's name: refuse, close, short, magic, delay,
// restart (or none).
func ParseFault(s string) (Fault, error) {
	for i, n := range faultNames {
		if s == n {
			return Fault(i), nil
		}
	}
	return 0, fmt.Errorf("%w: fault %q: want refuse, close, short, magic, delay or restart", ErrConfig, s)
}

// faults is a scene's fault schedule: injected ones first, then every
// Every-th exchange gets Periodic.
type faults struct {
	mu       sync.Mutex
	queue    []Fault
	delay    time.Duration
	every    int
	periodic Fault
	n        int
	counts   [numFaults]uint64
}

// next returns the fault of the next exchange.
func (f *faults) next() Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	out := None
	switch {
	case len(f.queue) > 0:
		out = f.queue[0]
		f.queue = f.queue[1:]
	case f.every > 0 && f.n%f.every == 0:
		out = f.periodic
	}
	f.counts[out]++
	return out
}

func (f *faults) inject(k Fault, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.queue = append(f.queue, k)
	}
}

func (f *faults) setDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

func (f *faults) setEvery(n int, k Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.every, f.periodic, f.n = n, k, 0
}

func fmtFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func (f *faults) currentDelay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delay
}

// World is the simulated robot: its clock and its joints. Safe from any
// goroutine.
type World struct {
	mu       sync.Mutex
	dt       float64
	maxSpeed float64
	names    []string
	t        float64
	steps    uint64
	q, v, p  []float64
	position []bool // joint under position control
	// gain is the part of its target speed each joint makes: 1, or less
	// while its drive slips (Slip).
	gain     []float64
	restarts uint64
}

func newWorld(names []string, step time.Duration, maxSpeed float64) *World {
	n := len(names)
	return &World{dt: step.Seconds(), maxSpeed: maxSpeed, names: names,
		q: make([]float64, n), v: make([]float64, n), p: make([]float64, n), position: make([]bool, n), gain: ones(n)}
}

func ones(n int) []float64 {
	g := make([]float64, n)
	for i := range g {
		g[i] = 1
	}
	return g
}

// Slip makes joint j's drive (1-based) slip: it turns at pct % of its
// target speed (100: no slip), a fault the scene does not report.
func (w *World) Slip(j int, pct float64) error {
	if j < 1 || j > len(w.q) {
		return fmt.Errorf("%w: slip: joint %d of %d", ErrCommand, j, len(w.q))
	}
	if !(pct >= 0 && pct <= 100) {
		return fmt.Errorf("%w: slip: %v %%: want the speed the joint keeps, 0..100", ErrCommand, pct)
	}
	w.mu.Lock()
	w.gain[j-1] = pct / 100
	w.mu.Unlock()
	return nil
}

// advance runs one step of dt; mu is held.
func (w *World) advance() {
	for j := range w.q {
		if w.position[j] {
			d := w.p[j] - w.q[j]
			lim := w.maxSpeed * w.dt
			w.q[j] += math.Max(-lim, math.Min(lim, d)) * w.gain[j]
		} else {
			w.q[j] += w.v[j] * w.dt * w.gain[j]
		}
	}
	w.t += w.dt
	w.steps++
}

// reset puts the world back at time 0, joints at rest; mu is held.
func (w *World) reset() {
	w.t, w.steps = 0, 0
	clear(w.q)
	clear(w.v)
	clear(w.p)
	clear(w.position)
	w.restarts++
}

// Snapshot is the world as a test or a person sees it.
type Snapshot struct {
	Time     float64   // simulation time (s)
	Steps    uint64    // steps since the simulation started
	Angles   []float64 // joint angles (rad)
	Speeds   []float64 // target velocities (rad/s)
	Restarts uint64
}

// Snapshot returns a copy of the world.
func (w *World) Snapshot() Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Snapshot{Time: w.t, Steps: w.steps, Angles: append([]float64(nil), w.q...),
		Speeds: append([]float64(nil), w.v...), Restarts: w.restarts}
}

// AZConfig configures an AZ scene.
type AZConfig struct {
	// Step is the simulation time one exchange advances (50 ms, the seed
	// client's period, so that a 20 Hz client sees real time).
	Step time.Duration
	// ClientTimeout bounds one connection's request (1 s, as the harness
	// of docs/vrep.md §3).
	ClientTimeout time.Duration
	// Delay is how long a Delay fault holds the reply (100 ms).
	Delay time.Duration
	// Every and Periodic inject Periodic into every Every-th exchange.
	Every    int
	Periodic Fault
	// CloseLast makes the scene wait for the client to close first (the
	// seed's script closes right after its reply): the client then holds
	// each connection in TIME_WAIT (docs/vrep.md §2).
	CloseLast bool
	Logger    *slog.Logger
}

// AZ is the seed's scene behind its AZ socket.
type AZ struct {
	cfg    AZConfig
	log    *slog.Logger
	world  *World
	faults faults
	mu     sync.Mutex
	stats  AZStats
	// stopped: a person pressed Stop; the scene's script does not run, so
	// nothing listens (connections are refused) until Play.
	stopped bool
}

// AZStats counts what the scene served.
type AZStats struct {
	Exchanges uint64 // replies sent in full
	BadData   uint64 // requests with a wrong magic
	NoData    uint64 // connections closed before a whole request
	Faults    [numFaults]uint64
}

// NewAZ checks cfg and returns a scene at time 0, wheels at rest.
func NewAZ(cfg AZConfig) (*AZ, error) {
	if cfg.Step == 0 {
		cfg.Step = 50 * time.Millisecond
	}
	if cfg.ClientTimeout == 0 {
		cfg.ClientTimeout = time.Second
	}
	if cfg.Delay == 0 {
		cfg.Delay = 100 * time.Millisecond
	}
	if cfg.Step < time.Microsecond || cfg.Step > time.Second {
		return nil, fmt.Errorf("%w: step %v, want 1µs..1s", ErrConfig, cfg.Step)
	}
	if cfg.ClientTimeout <= 0 || cfg.Delay < 0 || cfg.Every < 0 || cfg.Periodic >= numFaults {
		return nil, fmt.Errorf("%w: client timeout %v, delay %v, every %d, fault %v", ErrConfig, cfg.ClientTimeout, cfg.Delay, cfg.Every, cfg.Periodic)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &AZ{cfg: cfg, log: cfg.Logger, world: newWorld([]string{"MotorLeft", "MotorRight"}, cfg.Step, 0)}
	s.faults.delay, s.faults.every, s.faults.periodic = cfg.Delay, cfg.Every, cfg.Periodic
	return s, nil
}

// World is the scene's robot.
func (s *AZ) World() *World { return s.world }

// Inject makes the next n exchanges misbehave as f.
func (s *AZ) Inject(f Fault, n int) { s.faults.inject(f, n) }

// Restart starts the simulation again from time 0, as Stop then Play.
func (s *AZ) Restart() {
	s.world.mu.Lock()
	s.world.reset()
	s.world.mu.Unlock()
}

// Stop is a person pressing Stop: the scene goes back to its initial
// state and its script stops, so connections are refused until Play.
func (s *AZ) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.Restart()
}

// Play is a person pressing Play: the script listens again.
func (s *AZ) Play() {
	s.mu.Lock()
	s.stopped = false
	s.mu.Unlock()
}

// SetDelay sets how long a Delay fault holds a reply.
func (s *AZ) SetDelay(d time.Duration) { s.faults.setDelay(d) }

// Every makes every n-th exchange misbehave as f (n = 0: none).
func (s *AZ) Every(n int, f Fault) { s.faults.setEvery(n, f) }

// Status is the scene as a person wants it.
func (s *AZ) Status() string {
	st := s.Stats()
	s.mu.Lock()
	state := "running"
	if s.stopped {
		state = "stopped"
	}
	s.mu.Unlock()
	snap := s.world.Snapshot()
	return fmt.Sprintf("simulation %s, time %.3f s, %d exchange(s); targets %s rad/s, angles %s rad",
		state, snap.Time, st.Exchanges, fmtFloats(snap.Speeds), fmtFloats(snap.Angles))
}

// Stats returns the scene's counters.
func (s *AZ) Stats() AZStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	s.faults.mu.Lock()
	st.Faults = s.faults.counts
	s.faults.mu.Unlock()
	return st
}

// Serve accepts connections on ln, one exchange each, one at a time, until
// ctx is done; it closes ln.
func (s *AZ) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("vrepsim: accepting on %v: %w", ln.Addr(), err)
		}
		s.serve(ctx, conn)
	}
}

// exchange applies one request to the world and returns the reply: the
// time before the exchange (the seed reads it before accept), the angles
// after the velocities were set; then the world advances one step.
func (s *AZ) exchange(in [10]byte) [14]byte {
	w := s.world
	w.mu.Lock()
	t := w.t
	if in[0] == 'A' && in[1] == 'Z' {
		w.v[0] = float64(math.Float32frombits(binary.LittleEndian.Uint32(in[2:])))
		w.v[1] = float64(math.Float32frombits(binary.LittleEndian.Uint32(in[6:])))
		w.position[0], w.position[1] = false, false
	} else {
		s.mu.Lock()
		s.stats.BadData++
		s.mu.Unlock()
		s.log.Warn("bad data", "magic", fmt.Sprintf("%q", in[:2]))
	}
	left, right := w.q[0], w.q[1]
	w.advance()
	w.mu.Unlock()
	var out [14]byte
	out[0], out[1] = 'A', 'Z'
	binary.LittleEndian.PutUint32(out[2:], math.Float32bits(float32(t)))
	binary.LittleEndian.PutUint32(out[6:], math.Float32bits(float32(left)))
	binary.LittleEndian.PutUint32(out[10:], math.Float32bits(float32(right)))
	return out
}

// serve makes one exchange, as the seed's script: read exactly 10 bytes,
// set the velocities if the magic is right, reply 14 bytes, close.
func (s *AZ) serve(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	fault := None
	if !stopped {
		fault = s.faults.next()
	}
	if stopped || fault == Refuse {
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not an orderly close
		}
		return
	}
	if fault == Restart {
		s.Restart()
	}
	conn.SetDeadline(time.Now().Add(s.cfg.ClientTimeout))
	var in [10]byte
	if n, err := io.ReadFull(conn, in[:]); err != nil {
		s.mu.Lock()
		s.stats.NoData++
		s.mu.Unlock()
		s.log.Debug("no data", "partial", n, "err", err)
		return
	}
	out := s.exchange(in)
	switch fault {
	case CloseEarly:
		return
	case Short:
		conn.Write(out[:7])
		return
	case BadMagic:
		out[1] = 'Y'
	case Delay:
		select {
		case <-time.After(s.faults.currentDelay()):
		case <-ctx.Done():
			return
		}
	}
	if _, err := conn.Write(out[:]); err != nil {
		s.log.Debug("reply not sent", "err", err)
		return
	}
	s.mu.Lock()
	s.stats.Exchanges++
	s.mu.Unlock()
	if s.cfg.CloseLast {
		io.Copy(io.Discard, conn) // until the client's FIN, or the deadline
	}
}
