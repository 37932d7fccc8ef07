package mecasim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/meca500/mecasim"
)

// The bytes on the wire, over a real loopback socket (docs/meca500.md §2,
// §3, §4, §12): what the client writes, chunk by chunk, and every message the
// robot answers, in order. The monitoring cycles (2200–2230) are left out
// where monitoring is on; a fence at the end proves nothing else came.
func TestTranscripts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cfg    mecasim.Config
		chunks []string
		want   []string
	}{
		{"mecademicpy 3.0.3's connect dialogue, firmware 9.3", mecasim.Config{}, []string{
			"\x00", "-GetRobotSerial\x00", "-GetFwVersionFull\x00", "-GetRealTimeMonitoring\x00",
			"-GetMonitoringInterval\x00", "-SetRtc(1776000000)\x00", "-SetCtrlPortMonitoring(1)\x00",
		}, []string{
			"[2083][M500-0000]", "[2082][9.3.0.0]", "[2117][]", "[2116][0.016666]",
			"[2096][Monitoring on control port enabled.]", "[2007][0,0,0,0,1,1,1]",
		}},
		{"serial, interval and firmware from the config", mecasim.Config{
			Firmware: "10.2.1", Serial: "M500-1234", MonitoringInterval: 4 * time.Millisecond,
		}, []string{"GetRobotSerial\x00GetFwVersionFull\x00GetFwVersion\x00GetMonitoringInterval\x00"}, []string{
			"[2083][M500-1234]", "[2082][10.2.1.0]", "[2081][v10.2.1]", "[2116][0.004]",
		}},
		{"a frame split across writes", mecasim.Config{}, []string{"GetSt", "atusRob", "ot\x00"},
			[]string{"[2007][0,0,0,0,1,1,1]"}},
		{"several frames in one write", mecasim.Config{}, []string{"GetRobotSerial\x00GetJoints\x00GetPose\x00"},
			[]string{"[2083][M500-0000]", "[2026][0,0,0,0,0,0]", "[2027][190,0,308,0,90,0]"}},
		{"newline framing, CR tolerated", mecasim.Config{}, []string{"GetRobotSerial\nGetVelTimeout\r\n"},
			[]string{"[2083][M500-0000]", "[2151][0.05]"}},
		{"empty frames are ignored", mecasim.Config{}, []string{"\x00", "\x00\x00\n", "  \x00"}, nil},
		{"names are case-insensitive, () optional, spaces allowed", mecasim.Config{},
			[]string{"getrobotserial()\x00", "GETJOINTS\x00", " GetPose ( ) \x00", "SetJointVel( 50 )\x00GetJointVel\x00"},
			[]string{"[2083][M500-0000]", "[2026][0,0,0,0,0,0]", "[2027][190,0,308,0,90,0]", "[2152][50]"}},
		{"a silent request, replied without prefix", mecasim.Config{}, []string{"-GetRobotSerial\x00"},
			[]string{"[2083][M500-0000]"}},
		{"a silent request, replied with prefix", mecasim.Config{PrefixReplies: true},
			[]string{"-GetRobotSerial\x00GetRobotSerial\x00-Foo\x00"},
			[]string{"-[2083][M500-0000]", "[2083][M500-0000]", "-[1001][Empty command or command unrecognized - Command: 'Foo']"}},
		{"unknown command", mecasim.Config{}, []string{"Foo(1,2)\x00", "MovePose(1,2,3,4,5,6)\x00"}, []string{
			"[1001][Empty command or command unrecognized - Command: 'Foo']",
			"[1001][Empty command or command unrecognized - Command: 'MovePose']",
		}},
		{"empty command", mecasim.Config{}, []string{"-\x00"}, []string{"[1001][Empty command.]"}},
		{"syntax errors", mecasim.Config{}, []string{"GetJoints(\x00", "Get Joints\x00", "SetJointVel(1)(2)\x00", "9Lives\x00"},
			[]string{
				"[1002][Syntax error, expected '(arguments)' after 'GetJoints': '('.]",
				"[1002][Syntax error, expected '(arguments)' after 'Get': 'Joints'.]",
				"[1002][Syntax error, unbalanced parentheses: '(1)(2)'.]",
				"[1002][Syntax error, invalid command name: '9Lives'.]",
			}},
		{"bad arguments", mecasim.Config{}, []string{
			"SetJointVel(abc)\x00", "SetJointVel(1,2)\x00", "SetJointVel(nan)\x00", "SetJointVel(101)\x00",
			"MoveJoints(1,2,3)\x00", "SetEom(2)\x00", "GetJoints(1)\x00", "SetCheckpoint(1.5)\x00",
			"SetMonitoringInterval(0.0001)\x00", "SetRealTimeMonitoring(2210,x)\x00", "SetJointVel(1e400)\x00",
		}, []string{
			"[1003][Argument error: SetJointVel argument 1 'abc' is not a finite number.]",
			"[1003][Argument error: SetJointVel takes 1 arguments, got 2.]",
			"[1003][Argument error: SetJointVel argument 1 'nan' is not a finite number.]",
			"[1003][Argument error: SetJointVel percentage 101, want 0.001 to 100.]",
			"[1003][Argument error: MoveJoints takes 6 arguments, got 3.]",
			"[1003][Argument error: SetEom value 2, want 0 or 1.]",
			"[1003][Argument error: GetJoints takes 0 arguments, got 1.]",
			"[1003][Argument error: SetCheckpoint id 1.5, want an integer from 1 to 8191.]",
			"[1003][Argument error: SetMonitoringInterval interval 0.0001, want 0.001 to 1.]",
			"[1003][Argument error: SetRealTimeMonitoring code 'x' is not an event code or 'all'.]",
			"[1003][Argument error: SetJointVel argument 1 '1e400' is not a finite number.]",
		}},
		{"an overlong frame, then the stream goes on", mecasim.Config{},
			[]string{strings.Repeat("A", 3000), strings.Repeat("B", 3000), "C\x00GetRobotSerial\x00"},
			[]string{"[3003][Command too long or missing NUL terminator.]", "[2083][M500-0000]"}},
		{"motion refused while not activated", mecasim.Config{},
			[]string{"MoveJoints(1,2,3,4,5,6)\x00MoveJointsVel(1,0,0,0,0,0)\x00SetCheckpoint(1)\x00Home\x00ResumeMotion\x00"},
			[]string{
				"[1005][Motors are not activated.]", "[1005][Motors are not activated.]",
				"[1005][Motors are not activated.]", "[1005][Motors are not activated.]",
				"[1005][Motors are not activated.]",
			}},
		{"activation, with the 2007 status events", mecasim.Config{}, []string{
			"SetCtrlPortMonitoring(1)\x00", "ActivateRobot\x00", "MoveJoints(1,2,3,4,5,6)\x00", "ActivateRobot\x00",
			"GetStatusRobot\x00", "DeactivateRobot\x00", "SetCtrlPortMonitoring(0)\x00", "ActivateRobot\x00",
		}, []string{
			"[2096][Monitoring on control port enabled.]", "[2007][0,0,0,0,1,1,1]",
			"[2000][Motors activated.]", "[2007][1,0,0,0,0,1,1]",
			"[1006][Homing has not been performed.]",
			"[2001][Motors already activated.]",
			"[2007][1,0,0,0,0,1,1]",
			"[2004][Motors deactivated.]", "[2007][0,0,0,0,1,1,1]",
			"[2096][Monitoring on control port disabled.]",
			"[2000][Motors activated.]",
		}},
		{"pause, resume, clear and reset", mecasim.Config{},
			[]string{"ActivateRobot\x00", "PauseMotion\x00", "ResumeMotion\x00", "ClearMotion\x00", "ResetError\x00"},
			[]string{
				"[2000][Motors activated.]", "[2042][Motion paused.]", "[2043][Motion resumed.]",
				"[2044][The motion was cleared.]", "[2006][There was no error to reset.]",
			}},
		{"EOB, EOM and watchdog switches", mecasim.Config{}, []string{
			"SetEob(0)\x00SetEob(1)\x00SetEom(1)\x00SetEom(0)\x00ConnectionWatchdog(30)\x00ConnectionWatchdog(30)\x00ConnectionWatchdog(0)\x00",
		}, []string{
			"[2055][End of block is disabled.]", "[2054][End of block is enabled.]",
			"[2052][End of movement is enabled.]", "[2053][End of movement is disabled.]",
			"[2177][1]", "[2177][0]",
		}},
		{"real-time monitoring selection", mecasim.Config{}, []string{
			"SetRealTimeMonitoring(2211,2210,2200)\x00GetRealTimeMonitoring\x00SetRealTimeMonitoring(all)\x00SetRealTimeMonitoring(0)\x00",
		}, []string{
			"[2117][2210,2211]", "[2117][2210,2211]", "[2117][2202,2204,2210,2211,2212,2214]", "[2117][]",
		}},
		{"the settings mecademicpy sends are accepted", mecasim.Config{}, []string{
			"SetJointAcc(50)\x00SetCartLinVel(100)\x00SetCartAngVel(45)\x00SetCartAcc(50)\x00SetBlending(0)\x00",
			"SetJointVelLimit(50)\x00SetConf(1,1,-1)\x00SetAutoConf(1)\x00SetConfTurn(0)\x00SetAutoConfTurn(1)\x00",
			"GetJointAcc\x00GetCartLinVel\x00GetCartAngVel\x00GetCartAcc\x00GetBlending\x00GetJointVelLimit\x00",
		}, []string{"[2153][50]", "[2154][100]", "[2155][45]", "[2156][50]", "[2150][0]", "[2169][50]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, addr := serve(t, c.cfg)
			cl := connect(t, addr)
			for _, chunk := range c.chunks {
				cl.send(chunk)
				// Give the robot a chance to read each chunk on its own;
				// the test holds whether it does or not.
				time.Sleep(5 * time.Millisecond)
			}
			for i, want := range c.want {
				if got := cl.nextEvent(); got != want {
					t.Fatalf("message %d:\ngot  %q\nwant %q", i, got, want)
				}
			}
			cl.sync()
		})
	}
}

// The banner, byte for byte (§4): the model, "-virtual" and the firmware.
func TestBanner(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  mecasim.Config
		want string
	}{
		{mecasim.Config{}, "[3000][Connected to Meca500 R3 v9.3.0.]\x00"},
		{mecasim.Config{Firmware: "10.2.1", Virtual: true}, "[3000][Connected to Meca500 R3-virtual v10.2.1.]\x00"},
	} {
		_, addr := serve(t, c.cfg)
		cl := dial(t, addr)
		got, err := cl.raw()
		if err != nil || got != c.want {
			t.Errorf("banner: got %q, %v; want %q", got, err, c.want)
		}
	}
}

// A second control client gets [3001] and is closed, while the first stays
// connected (§1).
func TestSecondClient(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	first := connect(t, addr)
	testutil.WaitFor(t, "first client connected", func() bool { return r.Status().Connected })
	second := dial(t, addr)
	// mecademicpy's lone NUL, which the robot never reads: it must not
	// destroy the refusal.
	second.send("\x00")
	if m, err := second.raw(); m != "[3001][Another user is already connected, closing connection.]\x00" {
		t.Fatalf("second client: got %q, %v", m, err)
	}
	second.closed()
	first.cmd("GetRobotSerial")
	if m := first.next(); m != "[2083][M500-0000]" {
		t.Fatalf("first client after the refusal: %q", m)
	}
	// Once the first leaves, the next one is served.
	first.conn.Close()
	testutil.WaitFor(t, "first client gone", func() bool { return !r.Status().Connected })
	third := connect(t, addr)
	third.sync()
}
