package mecasim_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/meca500/mecasim"
)

// Home needs activation, then [2002] and the 2007 (§5.2); a second Home
// finds it done. (TestHomingTakesTime times the homing on a synthetic
// clock.)
func TestHome(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	c.cmd("SetCtrlPortMonitoring(1)")
	c.expect("[2007]")
	c.cmd("Home")
	if m := c.nextEvent(); m != "[1005][Motors are not activated.]" {
		t.Fatalf("Home before activation: %q", m)
	}
	c.cmd("ActivateRobot")
	c.cmd("Home")
	for _, want := range []string{
		"[2000][Motors activated.]", "[2007][1,0,0,0,0,1,1]", "[2002][Homing done.]", "[2007][1,1,0,0,0,1,1]",
	} {
		if m := c.nextEvent(); m != want {
			t.Fatalf("got %q, want %q", m, want)
		}
	}
	if st := r.Status(); !st.Homed || st.Homing {
		t.Errorf("status after homing: %+v", st)
	}
	c.cmd("Home")
	if m := c.nextEvent(); m != "[2003][Homing already done.]" {
		t.Fatalf("second Home: %q", m)
	}
}

// MoveJoints runs to its target; the checkpoint after it is reached only
// then (§5.3); the 2007 shows the robot busy, then at rest with EOB.
func TestMoveJointsCheckpoint(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	target := [6]float64{10, 20, 30, 0, 15, 0}
	c.send("MoveJoints(10,20,30,0,15,0)\x00SetCheckpoint(7)\x00")
	if m := c.nextEvent(); m != "[2007][1,1,0,0,0,0,0]" {
		t.Fatalf("moving: %q", m)
	}
	c.expect("[3030][7]")
	if got := r.Joints(); got != target {
		t.Fatalf("joints at the checkpoint: %v, want %v", got, target)
	}
	c.expect("[3012][End of block.]")
	c.expect("[2007][1,1,0,0,0,1,1]")
	c.cmd("GetJoints")
	c.cmd("GetRtTargetJointPos")
	if m := c.nextEvent(); m != "[2026][10,20,30,0,15,0]" {
		t.Fatalf("GetJoints: %q", m)
	}
	// The query's 2200 is among the periodic ones: any 2200 now says the
	// target.
	if m := c.expect("[2200]["); !strings.HasSuffix(m, ",10,20,30,0,15,0]") {
		t.Fatalf("GetRtTargetJointPos: %q", m)
	}
	if st := r.Status(); st.MotionCommands != 1 || st.Queued != 0 || !st.EOB || !st.EOM {
		t.Errorf("status: %+v", st)
	}
}

// A target beyond the joint limits puts the robot in error when the move
// starts (§8).
func TestMoveJointsOverLimit(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	c.cmd("MoveJoints(0,95,0,0,0,0)")
	if m := c.expect("[1007]"); m != "[1007][Joint over limit: joint 2 target 95 outside -70 to 90.]" {
		t.Fatalf("%q", m)
	}
	if st := r.Status(); !st.Error || st.ErrorCode != 1007 || !st.Paused {
		t.Errorf("status: %+v", st)
	}
}

// MoveJointsVel integrates the speeds until the velocity timeout, then the
// joints stop (§6).
func TestMoveJointsVelTimeout(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	c.cmd("SetVelTimeout(0.3)")
	c.cmd("MoveJointsVel(10,0,0,0,0,-20)")
	c.expect("[2007][1,1,0,0,0,0,0]")
	c.expect("[3012]")
	c.expect("[2007][1,1,0,0,0,1,1]")
	q := r.Joints()
	// 10°/s and −20°/s for 0.3 s of the robot's clock: 3° and −6°, less if
	// the machine stalled for more than a second (the simulation does not
	// catch up on that).
	if !(q[0] > 0 && q[0] <= 3+1e-9) || math.Abs(q[5]+2*q[0]) > 1e-9 || q[1] != 0 || q[2] != 0 || q[3] != 0 || q[4] != 0 {
		t.Fatalf("joints after the velocity command: %v", q)
	}
	t.Logf("joints after 0.3 s at (10, …, −20) °/s: %v", q)
	// At rest: nothing changes any more.
	time.Sleep(100 * time.Millisecond)
	if again := r.Joints(); again != q {
		t.Fatalf("joints still moving after the timeout: %v then %v", q, again)
	}

	// Streaming: each command extends the motion.
	c.cmd("SetVelTimeout(0.05)")
	start := r.Joints()[0]
	testutil.WaitFor(t, "joint 1 moves on under a stream", func() bool {
		c.cmd("MoveJointsVel(30,0,0,0,0,0)")
		return r.Joints()[0] > start+1
	})
	testutil.WaitFor(t, "the stream's end stops the robot", func() bool { return r.Status().EOB })
	q = r.Joints()
	time.Sleep(100 * time.Millisecond)
	if again := r.Joints(); again != q {
		t.Fatalf("joints still moving after the stream: %v then %v", q, again)
	}

	// Out of the admissible range (§6).
	c.cmd("MoveJointsVel(0,0,0,0,0,501)")
	if m := c.expect("[1003]"); m != "[1003][Argument error: MoveJointsVel joint 6 speed 501, want -500 to 500.]" {
		t.Fatalf("%q", m)
	}
}

// A joint halts just before its limit, without an error (§6).
func TestJointLimitHalt(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{Initial: [6]float64{170, 0, 0, 0, -110, 0}})
	c := connect(t, addr)
	ready(c)
	c.cmd("SetVelTimeout(1)")
	c.cmd("MoveJointsVel(150,0,0,0,-300,0)")
	c.expect("[2007][1,1,0,0,0,0,0]")
	c.expect("[2007][1,1,0,0,0,1,1]")
	q := r.Joints()
	if !(q[0] < 175 && q[0] > 174.99) || !(q[4] > -115 && q[4] < -114.99) {
		t.Fatalf("joints at the limits: %v", q)
	}
	if st := r.Status(); st.Error {
		t.Fatalf("error at a joint limit: %+v", st)
	}
	c.sync()
}

// MoveLinVelWrf moves the flange along the commanded direction (§6).
func TestMoveLinVelWrf(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{Initial: [6]float64{0, -10, 30, 0, 40, 0}})
	c := connect(t, addr)
	ready(c)
	before := r.Pose()
	c.cmd("SetVelTimeout(0.5)")
	c.cmd("MoveLinVelWrf(0,20,0,0,0,0)")
	c.expect("[2007][1,1,0,0,0,0,0]")
	c.expect("[2007][1,1,0,0,0,1,1]")
	after := r.Pose()
	d := [6]float64{}
	for i := range d {
		d[i] = after[i] - before[i]
		if i >= 3 {
			d[i] = math.Remainder(d[i], 360) // γ is near ±180°
		}
	}
	// Up to 10 mm along y; the rest of the pose stays put.
	if !(d[1] > 2 && d[1] < 10.1) || math.Abs(d[0]) > 0.05*d[1] || math.Abs(d[2]) > 0.05*d[1] ||
		math.Abs(d[3]) > 0.2 || math.Abs(d[4]) > 0.2 || math.Abs(d[5]) > 0.2 {
		t.Fatalf("pose moved by %v", d)
	}
	c.cmd("MoveLinVelWrf(1001,0,0,0,0,0)")
	if m := c.nextEvent(); m != "[1003][Argument error: MoveLinVelWrf linear velocity 1001, want -1000 to 1000.]" {
		t.Fatalf("%q", m)
	}
}

// Without a refresh the connection watchdog closes the connection after
// [3086][1] and leaves the robot paused for the next client (§6, §9).
func TestConnectionWatchdog(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	// Refreshed, a long watchdog does not fire.
	c.cmd("ConnectionWatchdog(10)")
	c.expect("[2177][1]")
	for range 5 {
		c.cmd("ConnectionWatchdog(10)")
		time.Sleep(10 * time.Millisecond)
	}
	c.sync()
	// One write: the watchdog may expire before the client could write
	// again.
	c.send("ConnectionWatchdog(0.2)\x00SetVelTimeout(1)\x00MoveJointsVel(10,0,0,0,0,0)\x00")
	c.expect("[3086][1]")
	c.expect("[2007][1,1,0,0,1,1,1]")
	c.closed()
	testutil.WaitFor(t, "the robot sees the client gone", func() bool { return !r.Status().Connected })
	st := r.Status()
	if st.WatchdogExpiries != 1 || !st.Paused || !st.Activated || st.Watchdog || !st.EOM {
		t.Fatalf("status after the expiry: %+v", st)
	}

	next := connect(t, addr)
	next.cmd("SetCtrlPortMonitoring(1)")
	next.expect("[2096]")
	if m := next.nextEvent(); m != "[2007][1,1,0,0,1,1,1]" {
		t.Fatalf("the next client sees %q, want paused", m)
	}
	next.cmd("MoveJoints(5,0,0,0,0,0)")
	next.cmd("SetCheckpoint(1)")
	next.cmd("ResumeMotion")
	next.expect("[2043]")
	next.expect("[3030][1]")
}

// A client that disconnects while the robot moves leaves it stopped and
// paused (§9).
func TestDisconnectWhileMoving(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	c.cmd("SetJointVel(1)") // a move of minutes
	c.cmd("MoveJoints(100,0,0,0,0,0)")
	c.expect("[2007][1,1,0,0,0,0,0]")
	c.conn.Close()
	testutil.WaitFor(t, "stopped and paused", func() bool {
		st := r.Status()
		return !st.Connected && st.Paused && st.EOM && st.EOB && st.Activated
	})
	if q := r.Joints(); !(q[0] >= 0 && q[0] < 100) {
		t.Fatalf("joints: %v", q)
	}
}

// DropClient closes the connection from the robot's side; another client
// may connect at once.
func TestDropClient(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	c.sync()
	r.DropClient()
	c.closed()
	if r.Status().Connected {
		t.Fatal("still connected after DropClient")
	}
	connect(t, addr).sync()
}

// A motion error: [3005], es = 1, the queue cleared with its checkpoints
// discarded (3040 on 10.2.1); moves are refused with [1011] until ResetError,
// and run again only after ResumeMotion (§8).
func TestMotionError(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{Firmware: "10.2.1"})
	c := connect(t, addr)
	ready(c)
	c.cmd("SetJointVel(1)") // a move of minutes: the error comes first
	c.cmd("MoveJoints(100,0,0,0,0,0)")
	c.cmd("SetCheckpoint(5)")
	c.expect("[2007][1,1,0,0,0,0,0]")
	// The status message can leave before the session has read the
	// checkpoint; the error must find it in the queue.
	testutil.WaitFor(t, "checkpoint queued", func() bool { return r.Status().Queued == 1 })
	r.MotionError()
	for _, want := range []string{"[3005][Motion error.]", "[3040][5]", "[2007][1,1,0,1,1,1,1]"} {
		if m := c.nextEvent(); m != want {
			t.Fatalf("got %q, want %q", m, want)
		}
	}
	if st := r.Status(); !st.Error || st.ErrorCode != 3005 || st.Queued != 0 {
		t.Fatalf("status: %+v", st)
	}
	c.cmd("MoveJoints(0,0,0,0,0,0)")
	c.cmd("ResumeMotion")
	c.cmd("ResetError")
	c.cmd("ResetError")
	for _, want := range []string{
		"[1011][The robot is in error.]", "[1011][The robot is in error.]",
		"[2005][The error was reset.]", "[2007][1,1,0,0,1,1,1]", "[2006][There was no error to reset.]",
	} {
		if m := c.nextEvent(); m != want {
			t.Fatalf("got %q, want %q", m, want)
		}
	}
	// Still paused: the move waits for ResumeMotion.
	c.cmd("SetJointVel(100)")
	c.cmd("MoveJoints(0,0,0,0,0,0)")
	c.cmd("SetCheckpoint(6)")
	c.cmd("ResumeMotion")
	c.expect("[2043]")
	c.expect("[3030][6]")
	if q := r.Joints(); q != [6]float64{} {
		t.Fatalf("joints: %v", q)
	}
}

// EStop: [3070][1] removes power; [3070][2] on release; activation is
// refused until the power supply's reset, [3070][0] (§8).
func TestEStop(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	r.EStop(true)
	for _, want := range []string{"[3070][1]", "[2007][0,0,0,0,1,1,1]"} {
		if m := c.nextEvent(); m != want {
			t.Fatalf("got %q, want %q", m, want)
		}
	}
	c.cmd("ActivateRobot")
	c.cmd("MoveJoints(1,0,0,0,0,0)")
	for _, want := range []string{
		"[1013][Activation failed: a safety stop must be reset at the power supply.]", "[1005][Motors are not activated.]",
	} {
		if m := c.nextEvent(); m != want {
			t.Fatalf("got %q, want %q", m, want)
		}
	}
	r.EStop(false)
	if m := c.nextEvent(); m != "[3070][2]" {
		t.Fatalf("release: %q", m)
	}
	if !r.Status().EStop {
		t.Fatal("EStop cleared before the reset")
	}
	r.ResetPowerSupply()
	if m := c.nextEvent(); m != "[3070][0]" {
		t.Fatalf("reset: %q", m)
	}
	if st := r.Status(); st.EStop || st.Activated {
		t.Fatalf("status after the reset: %+v", st)
	}
	c.cmd("ActivateRobot")
	c.expect("[2000]")

	r.PStop1(true)
	c.expect("[3069][1]")
	r.PStop1(false)
	c.expect("[3069][2]")
	r.ResetPowerSupply()
	c.expect("[3069][0]")
}

// BufferFull(n) refuses the next n queued commands with [1000].
func TestBufferFull(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	r.BufferFull(2)
	for range 3 {
		c.cmd("MoveJointsVel(0,0,0,0,0,0)")
	}
	for range 2 {
		if m := c.nextEvent(); m != "[1000][Command buffer is full.]" {
			t.Fatalf("%q", m)
		}
	}
	// The third was accepted: no reply, and the robot is busy with it.
	if m := c.nextEvent(); m != "[2007][1,1,0,0,0,0,0]" {
		t.Fatalf("%q", m)
	}
	if st := r.Status(); st.BufferFull != 2 || st.MotionCommands != 1 {
		t.Fatalf("status: %+v", st)
	}
}

// SetReplyDelay holds every message back by the delay, in order.
func TestReplyDelay(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	const delay = 300 * time.Millisecond
	r.SetReplyDelay(delay)
	start := time.Now()
	c.cmd("GetRobotSerial")
	c.cmd("GetJoints")
	if m := c.next(); m != "[2083][M500-0000]" {
		t.Fatalf("%q", m)
	}
	// A lower bound only: a loaded machine may add to it, never take away.
	if d := time.Since(start); d < delay {
		t.Fatalf("reply after %v, before the %v delay", d, delay)
	}
	if m := c.next(); m != "[2026][0,0,0,0,0,0]" {
		t.Fatalf("%q", m)
	}
	r.SetReplyDelay(0)
	c.sync()
}

// With monitoring on the control port, a cycle is 2200, 2201, the optional
// codes enabled, then 2230, stamped with one rising timestamp (§7).
func TestMonitoringCycle(t *testing.T) {
	t.Parallel()
	_, addr := serve(t, mecasim.Config{MonitoringInterval: 5 * time.Millisecond})
	c := connect(t, addr)
	c.cmd("SetRealTimeMonitoring(2210,2211)")
	c.expect("[2117]")
	c.cmd("SetCtrlPortMonitoring(1)")
	c.expect("[2007]")
	checkCycles(t, c, []string{"2200", "2201", "2210", "2211", "2230"})
	c.cmd("SetMonitoringInterval(0.002)")
	c.cmd("GetMonitoringInterval")
	c.expect("[2116][0.002]")
}

// checkCycles reads three whole cycles and checks their codes and stamps.
func checkCycles(t *testing.T, c *client, codes []string) {
	t.Helper()
	c.expect("[2230]")
	var last int64 = -1
	for range 3 {
		var stamp int64 = -1
		for _, code := range codes {
			m := c.next()
			if !strings.HasPrefix(m, "["+code+"][") {
				t.Fatalf("cycle: got %q, want code %s", m, code)
			}
			payload := strings.TrimSuffix(m[7:], "]")
			fields := strings.Split(payload, ",")
			ts, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				t.Fatalf("timestamp of %q: %v", m, err)
			}
			if n := map[bool]int{true: 1, false: 7}[code == "2230"]; len(fields) != n {
				t.Fatalf("%q: %d fields", m, len(fields))
			}
			if stamp >= 0 && ts != stamp {
				t.Fatalf("%q: timestamp %d within a cycle stamped %d", m, ts, stamp)
			}
			stamp = ts
		}
		if stamp <= last {
			t.Fatalf("timestamp %d after %d", stamp, last)
		}
		last = stamp
	}
}

// The monitoring port serves many clients: the banner, a 2007, then the
// cycles and status changes (§1, §7).
func TestMonitoringPort(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	mon := serveMonitoring(t, r)
	a, b := dial(t, mon), dial(t, mon)
	for _, m := range []*client{a, b} {
		if got := m.next(); got != "[3000][Connected to Meca500 R3 v9.3.0.]" {
			t.Fatalf("banner: %q", got)
		}
		if got := m.next(); got != "[2007][0,0,0,0,1,1,1]" {
			t.Fatalf("status: %q", got)
		}
		checkCycles(t, m, []string{"2200", "2201", "2230"})
	}
	c := connect(t, addr)
	c.cmd("ActivateRobot")
	c.expect("[2000]")
	if got := a.nextEvent(); got != "[2007][1,0,0,0,0,1,1]" {
		t.Fatalf("status change on the monitoring port: %q", got)
	}
	r.EStop(true)
	for _, want := range []string{"[2007][1,0,0,0,0,1,1]", "[3070][1]", "[2007][0,0,0,0,1,1,1]"} {
		if got := b.nextEvent(); got != want {
			t.Fatalf("monitoring port: got %q, want %q", got, want)
		}
	}
}

// New refuses what a Meca500 is not (§4, §6).
func TestConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []mecasim.Config{
		{Firmware: "8.4.0"}, {Firmware: "11.1.5"}, {Firmware: "9.3"}, {Firmware: "v9.3.0"}, {Firmware: "9.3.0.1"},
		{MonitoringInterval: 500 * time.Microsecond}, {MonitoringInterval: 2 * time.Second},
		{Initial: [6]float64{0, 91, 0, 0, 0, 0}}, {Initial: [6]float64{math.NaN(), 0, 0, 0, 0, 0}},
		{Serial: "M500]"},
	} {
		if _, err := mecasim.New(cfg); err == nil || !strings.HasPrefix(err.Error(), "mecasim: ") {
			t.Errorf("New(%+v): %v", cfg, err)
		}
	}
	if _, err := mecasim.New(mecasim.Config{Firmware: "10.0.0", MonitoringInterval: time.Second}); err != nil {
		t.Errorf("New: %v", err)
	}
}

// OnCommand sees every well-formed command before it runs, with its name as
// sent and its numbers.
func TestOnCommand(t *testing.T) {
	t.Parallel()
	got := make(chan string, 10)
	_, addr := serve(t, mecasim.Config{OnCommand: func(name string, args []float64) {
		got <- fmt.Sprintf("%s %v", name, args)
	}})
	c := connect(t, addr)
	c.send("\x00-GetJoints\x00MoveJointsVel(1, 2.5,-3,0,0,0)\x00SetRealTimeMonitoring(all)\x00Bad(\x00")
	c.cmd("SyncCmdQueue(4242)")
	c.expect("[2097][4242]")
	close(got)
	var all []string
	for s := range got {
		all = append(all, s)
	}
	want := "GetJoints [] MoveJointsVel [1 2.5 -3 0 0 0] SetRealTimeMonitoring [NaN] SyncCmdQueue [4242]"
	if s := strings.Join(all, " "); s != want {
		t.Fatalf("OnCommand saw %q, want %q", s, want)
	}
}

// Serve runs until its context ends, returns nil, and can serve the same
// listener again; the robot's state lives on. A second Serve meanwhile is
// refused.
func TestServeAgain(t *testing.T) {
	t.Parallel()
	r, err := mecasim.New(mecasim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := mecasim.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for round := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Serve(ctx, ln) }()
		c := connect(t, ln.Addr().String())
		if round == 0 {
			c.cmd("ActivateRobot")
			c.expect("[2000]")
		} else if !r.Status().Activated {
			t.Fatalf("round %d: the state did not survive", round)
		}
		if err := r.Serve(ctx, ln); !errors.Is(err, mecasim.ErrServing) {
			t.Fatalf("a second Serve: %v", err)
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: Serve: %v", round, err)
			}
		case <-time.After(patience):
			t.Fatalf("round %d: Serve still running", round)
		}
		c.closed()
	}
}

// A listener without SetDeadline is closed when the context ends, which is
// the only way to stop its Accept; a listener closed by its owner ends Serve
// with an error.
func TestServeListenerEnds(t *testing.T) {
	t.Parallel()
	r, err := mecasim.New(mecasim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := mecasim.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, struct{ net.Listener }{ln}) }()
	connect(t, ln.Addr().String()).sync()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the plain listener is open: %v", err)
	}

	ln, err = mecasim.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- r.Serve(context.Background(), ln) }()
	connect(t, ln.Addr().String()).sync()
	ln.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) || !strings.HasPrefix(err.Error(), "mecasim: ") {
		t.Fatalf("Serve on a closed listener: %v", err)
	}
}
