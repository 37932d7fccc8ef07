package meca500_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/meca500"
	"github.com/labbridge/bridge/plant"
)

// step is one line of a transcript: the client sends want (a frame without
// its NUL), or the server sends its chunks (one write each, so frames split
// and merge as TCP may deliver them), or the server closes.
type step struct {
	want  string
	send  []string
	close bool
}

func want(frame string) step         { return step{want: frame} }
func send(chunks ...string) step     { return step{send: chunks} }
func frames(msgs ...string) []string { return []string{strings.Join(msgs, "\x00") + "\x00"} }

const (
	banner93 = "[3000][Connected to Meca500 R3 v9.3.0.]"
	cycle    = "[2200][1000,1,2,3,4,5,6]\x00[2201][1000,190,0,308,0,90,0]\x00[2230][1000]"
)

// connected is the connect dialogue of a 9.3 robot (docs/meca500.md §4,
// §10): lone NUL (checked by the server), banner, control-port monitoring,
// status, monitoring set-up.
func connected(status string) []step {
	return []step{
		send(banner93 + "\x00"),
		want("-SetCtrlPortMonitoring(1)"),
		send(frames("[2096][1]", "[2007]["+status+"]")...),
		want("-GetStatusRobot"),
		send("[2007][" + status + "]\x00"),
	}
}

// monitoring is the monitoring set-up after activation and homing.
func monitoring() []step {
	return []step{want("-SetRealTimeMonitoring(2200,2201)"), want("-SetMonitoringInterval(0.01)")}
}

// streaming is the end of the start-up of an activated, homed robot.
func streaming() []step {
	return []step{
		want("-SetRealTimeMonitoring(2200,2201)"),
		want("-SetMonitoringInterval(0.01)"),
		want("ClearMotion"),
		send(frames("[2044][The motion was cleared.]", "[2007][1,1,0,0,1,0,0]")...),
		want("ResumeMotion"),
		send(frames("[2043][Motion resumed.]", "[2007][1,1,0,0,0,0,0]")...),
		want("-SetVelTimeout(0.04)"),
		send(cycle + "\x00"),
	}
}

func join(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// fakeRobot plays a transcript against one client connection.
type fakeRobot struct {
	ln   net.Listener
	done chan error
}

func playTranscript(t *testing.T, steps []step) *fakeRobot {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP port: %v", err)
	}
	f := &fakeRobot{ln: ln, done: make(chan error, 1)}
	go func() { f.done <- f.play(steps) }()
	t.Cleanup(func() { ln.Close() })
	return f
}

func (f *fakeRobot) play(steps []step) error {
	conn, err := f.ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	// The client's first byte is the lone NUL.
	var first [1]byte
	if _, err := io.ReadFull(conn, first[:]); err != nil || first[0] != 0 {
		return errors.New("the client did not start with a lone NUL")
	}
	got := make(chan string, 64)
	go func() {
		defer close(got)
		fr := meca500.NewFramer(4096)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			fr.Feed(buf[:n], func(b []byte) { got <- string(b) })
			if err != nil {
				return
			}
		}
	}()
	for i, s := range steps {
		switch {
		case s.close:
			return conn.Close()
		case s.want != "":
			select {
			case g, ok := <-got:
				if !ok {
					return errors.New("step " + itoa(i) + ": the client closed; want " + s.want)
				}
				if g != s.want {
					return errors.New("step " + itoa(i) + ": client sent " + g + "; want " + s.want)
				}
			case <-time.After(20 * time.Second):
				return errors.New("step " + itoa(i) + ": nothing from the client; want " + s.want)
			}
		default:
			for _, c := range s.send {
				if _, err := conn.Write([]byte(c)); err != nil {
					return err
				}
				time.Sleep(time.Millisecond) // let TCP deliver the chunks apart
			}
		}
	}
	// What the client sends after the transcript is a failure: the
	// transcript says everything it may send.
	select {
	case g, ok := <-got:
		if ok {
			return errors.New("after the transcript the client sent " + g)
		}
	case <-time.After(50 * time.Millisecond):
	}
	return nil
}

func itoa(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func (f *fakeRobot) addr() string { return f.ln.Addr().String() }

func (f *fakeRobot) wait(t *testing.T) {
	t.Helper()
	if err := <-f.done; err != nil {
		t.Error(err)
	}
}

func testConfig(addr string) meca500.Config {
	return meca500.Config{
		Address: addr, ResetErrors: true, Activate: true, Home: true, Resume: true,
		VelTimeout: 40 * time.Millisecond, Watchdog: 250 * time.Millisecond,
		MonitoringInterval: 10 * time.Millisecond, ReplyTimeout: 10 * time.Second,
		WriteTimeout: time.Second,
	}
}

// The start-up, byte for byte, for the states a robot can be found in.
func TestStartupTranscripts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*meca500.Config)
		steps   []step
		wantErr error
	}{
		{"ready robot", nil, join(connected("1,1,0,0,0,0,0"), streaming()), nil},
		{"deactivated robot", nil, join(connected("0,0,0,0,0,0,0"), []step{
			want("ActivateRobot"),
			send(frames("[2000][Motors activated.]", "[2007][1,0,0,0,0,0,0]")...),
			want("Home"),
			send("[2002][Homing done.]\x00[20", "07][1,1,0,0,0,0,0]\x00"),
		}, streaming()), nil},
		{"split and merged frames", nil, join([]step{
			send("[3", "00", "0][Connected to Meca500 R3 v9.3.0.]\x00"),
			want("-SetCtrlPortMonitoring(1)"),
			send("[2096][1]\x00[2007][1,1,0,0,0,0,0]\x00[2007][1,1,0,0,0,0,0]\x00"[:17], "[2096][1]\x00[2007][1,1,0,0,0,0,0]\x00"[17:]),
			want("-GetStatusRobot"),
			send("[2007][1,1,0,0,0,0,0]\x00"),
		}, streaming()), nil},
		{"firmware 9.1: no silent prefix", nil, []step{
			send("[3000][Connected to Meca500 R3 v9.1.0.]\x00"),
			want("SetCtrlPortMonitoring(1)"),
			send(frames("[2096][1]", "[2007][1,1,0,0,0,0,0]")...),
			want("GetStatusRobot"),
			send("[2007][1,1,0,0,0,0,0]\x00"),
			want("SetRealTimeMonitoring(2200,2201)"),
			want("SetMonitoringInterval(0.01)"),
			want("ClearMotion"),
			send(frames("[2044][The motion was cleared.]", "[2007][1,1,0,0,1,0,0]")...),
			want("ResumeMotion"),
			send(frames("[2043][Motion resumed.]", "[2007][1,1,0,0,0,0,0]")...),
			want("SetVelTimeout(0.04)"),
			send(cycle + "\x00"),
		}, nil},
		{"error reset", nil, join(connected("1,1,0,1,1,0,0"), []step{
			want("ResetError"),
			send(frames("[2005][The error was reset.]", "[2007][1,1,0,0,1,0,0]")...),
			want("ResumeMotion"),
			send(frames("[2043][Motion resumed.]", "[2007][1,1,0,0,0,0,0]")...),
		}, streaming()), nil},
		{"error kept: reset_errors = false", func(c *meca500.Config) { c.ResetErrors = false },
			connected("1,1,0,1,0,0,0"), meca500.ErrPolicy},
		{"paused after a connection drop: resume = false", func(c *meca500.Config) { c.Resume = false },
			join(connected("1,1,0,0,1,0,0"), monitoring()), meca500.ErrPolicy},
		{"deactivated: activate = false", func(c *meca500.Config) { c.Activate = false },
			connected("0,0,0,0,0,0,0"), meca500.ErrPolicy},
		{"busy", nil, []step{send("[3001][Another user is already connected, closing connection.]\x00"), {close: true}}, meca500.ErrBusy},
		{"firmware 8.3", nil, []step{send("[3000][Connected to Meca500 R3 v8.3.0.]\x00")}, meca500.ErrFirmware},
		{"activation fails", nil, join(connected("0,0,0,0,0,0,0"), []step{
			want("ActivateRobot"),
			send("[1013][Activation failed.]\x00"),
		}), &meca500.RobotError{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := playTranscript(t, tc.steps)
			cfg := testConfig(f.addr())
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			arm, err := meca500.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = arm.Open(context.Background())
			switch target := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("open: %v", err)
				}
			case *meca500.RobotError:
				if !errors.As(err, &target) {
					t.Fatalf("open: %v, want a robot error", err)
				}
			default:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("open: %v, want %v", err, tc.wantErr)
				}
				t.Logf("the user reads: %v", err)
			}
			arm.Close()
			f.wait(t)
		})
	}
}

// Streaming: a fresh command goes out with the watchdog refresh in one
// write; the first idle tick sends zero velocity, and every idle tick
// refreshes the watchdog (the loop is alive: a silent partner must not drop
// the connection); the measurement is the newest cycle.
func TestStreamingTranscript(t *testing.T) {
	steps := join(connected("1,1,0,0,0,0,0"), streaming(), []step{
		want("MoveJointsVel(1.5,-2,0,0,0,125)"),
		want("-ConnectionWatchdog(0.25)"),
		want("MoveJointsVel(0,0,0,0,0,0)"),
		want("-ConnectionWatchdog(0.25)"),
		want("-ConnectionWatchdog(0.25)"),
		want("-ConnectionWatchdog(0.25)"),
		want("MoveJointsVel(0,0,0,0,0,37.5)"),
		want("-ConnectionWatchdog(0.25)"),
	})
	f := playTranscript(t, steps)
	arm := openArm(t, testConfig(f.addr()))
	m := make([]float64, arm.MeasureLen())
	if err := arm.Measure(m); err != nil {
		t.Fatal(err)
	}
	if got := m[:6]; !equal(got, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("joints %v", got)
	}
	if got := m[6:13]; !equal(got, []float64{1, 1, 0, 0, 0, 0, 0}) {
		t.Errorf("status %v", got)
	}
	if !arm.Ready() || m[14] < 0 || m[14] > 60 {
		t.Errorf("ready %v, age %v", arm.Ready(), m[14])
	}
	// 1000 °/s is clamped to J6's 500 °/s × 0.25.
	if err := arm.Command([]float64{1.5, -2, 0, 0, 0, 1000}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := arm.Idle(); err != nil {
			t.Fatal(err)
		}
	}
	if err := arm.Command([]float64{0, 0, 0, 0, 0, 37.5}); err != nil {
		t.Fatal(err)
	}
	f.wait(t)
}

// A safety stop is reported, degrades the link and is never reset: the
// reopen keeps the connection, reads the status, turns the watchdog off
// (nothing streams) and fails without a reset, activation or motion.
func TestSafetyStopLeftAlone(t *testing.T) {
	steps := join(connected("1,1,0,0,0,0,0"), streaming(), []step{
		send("[3070][1]\x00[2007][0,1,0,0,1,0,0]\x00"),
		want("-SetCtrlPortMonitoring(1)"),
		send(frames("[2096][1]", "[2007][0,1,0,0,1,0,0]")...),
		want("-ConnectionWatchdog(0)"),
		want("-GetStatusRobot"),
		send("[2007][0,1,0,0,1,0,0]\x00"),
	})
	f := playTranscript(t, steps)
	arm := openArm(t, testConfig(f.addr()))
	var stop *meca500.SafetyStopError
	deadline := time.Now().Add(20 * time.Second)
	err := arm.Idle()
	for ; !errors.As(err, &stop) && time.Now().Before(deadline); err = arm.Idle() {
		time.Sleep(time.Millisecond)
	}
	if stop == nil || stop.Code != 3070 {
		t.Fatalf("idle: %v, want the emergency stop", err)
	}
	err = arm.Reopen(context.Background())
	var stopped *meca500.StoppedError
	if !errors.Is(err, plant.ErrStopLatched) || !errors.As(err, &stopped) || stopped.Code != 3070 || !stopped.Engaged || errors.Is(err, plant.ErrAbsent) {
		t.Fatalf("reopen: %v", err)
	}
	t.Logf("the user reads: %v", err)
	f.wait(t)
}

// A robot that closes the connection fails Measure, and Reopen connects
// again; nothing listening is an absent robot, polled by the supervisor.
func TestConnectionLossAndAbsence(t *testing.T) {
	f := playTranscript(t, join(connected("1,1,0,0,0,0,0"), streaming(), []step{{close: true}}))
	cfg := testConfig(f.addr())
	cfg.ConnectTimeout = 300 * time.Millisecond
	arm := openArm(t, cfg)
	f.wait(t)
	m := make([]float64, arm.MeasureLen())
	deadline := time.Now().Add(20 * time.Second)
	err := arm.Measure(m)
	for ; err == nil && time.Now().Before(deadline); err = arm.Measure(m) {
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, meca500.ErrDisconnected) {
		t.Fatalf("measure after the robot closed: %v", err)
	}
	f.ln.Close()
	err = arm.Reopen(context.Background())
	if !errors.Is(err, plant.ErrAbsent) {
		t.Fatalf("reopen with no robot: %v", err)
	}
	t.Logf("the user reads: %v", err)
}

// openArm connects an arm and runs its start-up; it is closed when the
// test ends.
func openArm(t *testing.T, cfg meca500.Config) *meca500.Arm {
	t.Helper()
	arm, err := meca500.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arm.Close() })
	if err := arm.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return arm
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
