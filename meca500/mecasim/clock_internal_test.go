package mecasim

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// simRobot drives a robot without a socket on a clock the test sets, so that
// timing is exact: commands run at sim.now, and at(d) steps the simulation to
// d. Monitoring is off; the messages are collected as they are sent.
type simRobot struct {
	t   *testing.T
	r   *Robot
	s   *session
	now time.Duration
}

func newSim(t *testing.T, cfg Config, ready bool) *simRobot {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &simRobot{t: t, r: r, s: newSession(nil, true)}
	r.ctrl = m.s
	if ready {
		m.do("ActivateRobot")
		m.r.st.homed = true
		m.drain()
	}
	return m
}

// do runs frames at m.now and returns what the robot sent.
func (m *simRobot) do(frames ...string) []string {
	m.t.Helper()
	r := m.r
	r.mu.Lock()
	for _, f := range frames {
		cmd, ok, cerr := parseCommand([]byte(f))
		if !ok || cerr != nil {
			m.t.Fatalf("frame %q: %v", f, cerr)
		}
		r.step(m.now)
		r.execute(request{s: m.s}, cmd, m.now)
		r.advance(m.now)
		r.publish()
	}
	r.mu.Unlock()
	return m.drain()
}

// at steps the simulation to d and returns what the robot sent.
func (m *simRobot) at(d time.Duration) []string {
	m.now = d
	m.r.mu.Lock()
	m.r.step(d)
	m.r.mu.Unlock()
	return m.drain()
}

func (m *simRobot) drain() []string {
	m.s.out.mu.Lock()
	defer m.s.out.mu.Unlock()
	var out []string
	for _, msg := range m.s.out.q {
		out = append(out, strings.TrimSuffix(string(msg.b), "\x00"))
	}
	m.s.out.q = nil
	return out
}

func (m *simRobot) expect(got []string, want ...string) {
	m.t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		m.t.Fatalf("at %v: got %q, want %q", m.now, got, want)
	}
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// Home takes 200 ms, during which moves are refused with [1006] (§5.2).
func TestHomingTakesTime(t *testing.T) {
	m := newSim(t, Config{}, false)
	m.expect(m.do("ActivateRobot", "Home"), "[2000][Motors activated.]")
	m.now = ms(100)
	m.expect(m.do("MoveJoints(1,2,3,4,5,6)", "GetStatusRobot", "Home"),
		"[1006][Homing has not been performed.]", "[2007][1,0,0,0,0,1,1]")
	m.expect(m.at(ms(199)))
	m.expect(m.at(ms(200)), "[2002][Homing done.]")
	m.expect(m.do("GetStatusRobot"), "[2007][1,1,0,0,0,1,1]")
}

// A velocity command runs for exactly the velocity timeout of the robot's
// clock; the next one replaces it (§6).
func TestVelocityTimeout(t *testing.T) {
	m := newSim(t, Config{}, true)
	m.expect(m.do("SetVelTimeout(0.25)", "MoveJointsVel(10,0,0,0,0,-20)"))
	m.expect(m.at(ms(249)))
	m.expect(m.at(ms(1000)), "[3012][End of block.]")
	if q := m.r.st.q; math.Abs(q[0]-2.5) > 1e-9 || math.Abs(q[5]+5) > 1e-9 {
		t.Fatalf("joints after 0.25 s: %v", q)
	}
	m.expect(m.do("MoveJointsVel(10,0,0,0,0,0)"))
	m.now = ms(1100)
	m.expect(m.do("MoveJointsVel(-10,0,0,0,0,0)"))
	m.expect(m.at(ms(1500)), "[3012][End of block.]")
	if q := m.r.st.q; math.Abs(q[0]-(2.5+1-2.5)) > 1e-9 {
		t.Fatalf("joint 1 after +10 °/s for 0.1 s then −10 °/s for 0.25 s: %v", q[0])
	}
}

// The queue runs in order: a velocity command waits for the MoveJoints
// before it, a checkpoint for the velocity command's end (§5.3, §6).
func TestQueueOrder(t *testing.T) {
	m := newSim(t, Config{}, true)
	// 10° on J1 at 25 % of 150 °/s, cycloidal: 2 × 10 / 37.5 s.
	moveEnd := m.r.st.plan([6]float64{10}).dur
	m.expect(m.do("MoveJoints(10,0,0,0,0,0)", "MoveJointsVel(10,0,0,0,0,0)", "SetCheckpoint(3)", "GetCmdPendingCount"),
		"[2080][2]")
	m.expect(m.at(moveEnd - ms(1)))
	if q := m.r.st.q[0]; !(q > 9.99 && q < 10) {
		t.Fatalf("joint 1 just before the move's end: %v", q)
	}
	m.expect(m.at(moveEnd + ms(49)))
	m.expect(m.at(moveEnd+ms(50)), "[3030][3]", "[3012][End of block.]")
	if q := m.r.st.q[0]; math.Abs(q-10.5) > 1e-9 {
		t.Fatalf("joint 1: %v, want 10.5", q)
	}
}

// PauseMotion freezes a move, with [3004] as it was moving; ResumeMotion
// continues it where it was (§6).
func TestPauseResume(t *testing.T) {
	m := newSim(t, Config{}, true)
	moveEnd := m.r.st.plan([6]float64{10}).dur
	m.expect(m.do("MoveJoints(10,0,0,0,0,0)", "SetCheckpoint(1)"))
	m.now = ms(200)
	m.expect(m.do("PauseMotion"), "[2042][Motion paused.]", "[3004][End of movement.]")
	frozen := m.r.st.q
	m.expect(m.at(ms(5000)))
	if m.r.st.q != frozen {
		t.Fatalf("moved while paused: %v, then %v", frozen, m.r.st.q)
	}
	m.expect(m.do("GetStatusRobot", "ResumeMotion"), "[2007][1,1,0,0,1,0,1]", "[2043][Motion resumed.]")
	m.expect(m.at(ms(5000)+moveEnd-ms(200)), "[3030][1]", "[3012][End of block.]")
	if q := m.r.st.q; q != [6]float64{10, 0, 0, 0, 0, 0} {
		t.Fatalf("joints: %v", q)
	}
}

// ClearMotion empties the queue and pauses; the robot, at rest with an empty
// queue, reports the end of block; the discarded checkpoints are reported
// from firmware 10.2.1 (§6, §8).
func TestClearMotion(t *testing.T) {
	for _, c := range []struct {
		fw   string
		want []string
	}{
		{"10.2.0", []string{"[2044][The motion was cleared.]", "[3012][End of block.]"}},
		{"10.2.1", []string{"[3040][3]", "[2044][The motion was cleared.]", "[3012][End of block.]"}},
	} {
		m := newSim(t, Config{Firmware: c.fw}, true)
		m.expect(m.do("MoveJoints(10,0,0,0,0,0)", "SetCheckpoint(3)"))
		m.now = ms(100)
		m.expect(m.do("ClearMotion"), c.want...)
		m.expect(m.do("MoveJoints(0,0,0,0,0,0)", "SetCheckpoint(4)"))
		m.expect(m.at(ms(10000)))
		m.expect(m.do("ResumeMotion"), "[2043][Motion resumed.]")
		m.expect(m.at(ms(11000)), "[3030][4]", "[3012][End of block.]")
	}
}

// Delay holds the queue for its time (§6).
func TestDelay(t *testing.T) {
	m := newSim(t, Config{}, true)
	m.expect(m.do("Delay(0.5)", "SetCheckpoint(9)"))
	m.expect(m.at(ms(499)))
	m.expect(m.at(ms(500)), "[3030][9]", "[3012][End of block.]")
}

// Activation restores the defaults of the velocity timeout and the
// monitoring interval (§6).
func TestActivationDefaults(t *testing.T) {
	m := newSim(t, Config{}, false)
	m.expect(m.do("SetMonitoringInterval(0.005)", "GetMonitoringInterval"), "[2116][0.005]")
	m.expect(m.do("ActivateRobot", "GetMonitoringInterval", "GetVelTimeout"),
		"[2000][Motors activated.]", "[2116][0.016666]", "[2151][0.05]")
	m.r.st.homed = true
	m.expect(m.do("SetVelTimeout(0.5)", "GetVelTimeout", "DeactivateRobot", "ActivateRobot", "GetVelTimeout"),
		"[2151][0.5]", "[2004][Motors deactivated.]", "[2000][Motors activated.]", "[2151][0.05]")
}
