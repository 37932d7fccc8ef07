package mecasim

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The command parser and the robot behind it never panic, whatever the
// bytes; the parser's result is coherent; every message the robot sends is
// framed (§2.2), its numbers are plain decimals, and the robot stays within
// its joint limits and its state machine.
func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		"\x00-GetRobotSerial\x00-GetFwVersionFull\x00-GetRealTimeMonitoring\x00-GetMonitoringInterval\x00" +
			"-SetRtc(1776000000)\x00-SetCtrlPortMonitoring(1)\x00",
		"ActivateRobot\x00Home\x00MoveJoints(10,20,30,0,15,0)\x00SetCheckpoint(8001)\x00-SyncCmdQueue(1)\x00GetRtTargetJointPos\x00",
		"MoveJointsVel(150,-150,180,-300,300,-500)\nSetVelTimeout(1)\nMoveLinVelWrf(1000,0,-1000,300,0,0)\n",
		"MoveLinVelTrf(1,2,3,4,5,6)\x00PauseMotion\x00ResumeMotion\x00ClearMotion\x00Delay(0.5)\x00",
		"SetRealTimeMonitoring(all)\x00ForceRealTimeMonitoring\x00SetMonitoringInterval(0.001)\x00",
		"ConnectionWatchdog(0.001)\x00ConnectionWatchdog(0)\x00SetEom(1)\x00SetEob(0)\x00",
		"ResetError\x00DeactivateRobot\x00GetStatusRobot()\x00getjoints\x00GETPOSE\x00",
		"MoveJoints(0,95,0,0,0,0)\x00MoveJoints(1e308,0,0,0,0,0)\x00MoveJoints(-0,0,0,0,0,0)\x00",
		"Foo(\x00Bar)\x00(1)\x00-\x00--X\x00A((1))\x00A(1,,2)\x00\xff\xfe[]\x00",
		strings.Repeat("Z", maxFrame+10) + "\x00GetJoints\x00",
		"SetJointVel(0.001)\x00MoveJoints(175,90,70,170,115,180)\x00MoveJoints(-175,-70,-135,-170,-115,-180)\x00",
	} {
		f.Add([]byte(s))
	}
	msg := regexp.MustCompile(`^-?\[([0-9]{4})\]\[([^\x00\[\]]*)\]\x00$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
		for _, ready := range []bool{false, true} {
			r, s := fuzzRobot(t, ready)
			r.feed(s, data)
			r.feed(s, data) // twice: the first pass's state shapes the second
			r.mu.Lock()
			r.step(r.now() + 2*time.Second)
			st := r.st
			out := s.out.q
			r.mu.Unlock()
			for _, m := range out {
				sub := msg.FindStringSubmatch(string(m.b))
				if sub == nil {
					t.Fatalf("malformed message %q", m.b)
				}
				code, _ := strconv.Atoi(sub[1])
				if code == 2026 || code == 2027 || code >= 2200 && code < 2300 {
					for _, x := range strings.Split(sub[2], ",") {
						if _, err := strconv.ParseFloat(x, 64); err != nil && x != "" || strings.ContainsAny(x, "eEn") {
							t.Fatalf("number %q in %q", x, m.b)
						}
					}
				}
			}
			for i, q := range st.q {
				if lo, hi := jointRange(i); !(q >= lo && q <= hi) {
					t.Fatalf("joint %d at %v, outside %v..%v", i+1, q, lo, hi)
				}
			}
			if st.homed && !st.activated || st.homing && !st.activated || len(st.queue) > maxQueue {
				t.Fatalf("incoherent state: homed %v, homing %v, activated %v, queue %d", st.homed, st.homing, st.activated, len(st.queue))
			}
		}
	})
}

// checkParse checks parseCommand's result on one frame.
func checkParse(t *testing.T, data []byte) {
	cmd, ok, e := parseCommand(data)
	switch {
	case ok && e != nil:
		t.Fatalf("%q: both a command and an error", data)
	case ok:
		for i := range len(cmd.name) {
			if !isNameByte(cmd.name[i], i == 0) {
				t.Fatalf("%q: name %q", data, cmd.name)
			}
		}
		if cmd.name == "" {
			t.Fatalf("%q: empty name", data)
		}
		for _, a := range cmd.args {
			if strings.ContainsAny(a, "(),") || strings.TrimFunc(a, isSpace) != a {
				t.Fatalf("%q: argument %q", data, a)
			}
		}
	case e != nil:
		if e.code != codeUnknown && e.code != codeSyntax || strings.ContainsAny(e.text, "[]\x00") {
			t.Fatalf("%q: error %+v", data, e)
		}
	default:
		if strings.TrimFunc(string(data), isSpace) != "" {
			t.Fatalf("%q: ignored as empty", data)
		}
	}
}

// fuzzRobot is a robot with a control session and no socket, stepped on
// every command as if served; ready makes it activated and homed.
func fuzzRobot(t *testing.T, ready bool) (*Robot, *session) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(nil, true)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctrl = s
	r.engine.users = 1
	if ready {
		r.st.activated, r.st.homed, r.st.paused = true, true, false
	}
	return r, s
}
