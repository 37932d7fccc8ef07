package mecasim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/labbridge/bridge/meca500/mecasim"
)

// The console's commands, each checked on the robot itself and on what its
// client receives.
func TestControl(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	for _, tc := range []struct {
		cmd   string
		event string // what the client receives, "" for nothing
		check func(mecasim.Status) bool
		line  string // in the state line
	}{
		{"status", "", func(s mecasim.Status) bool { return s.Activated && s.Homed }, "activated=yes homed=yes paused=no error=0 estop=off"},
		{"full 2", "", func(s mecasim.Status) bool { return s.BufferFullPending == 2 }, "buffer_full_pending=2"},
		{"full 0", "", func(s mecasim.Status) bool { return s.BufferFullPending == 0 }, "buffer_full_pending=0"},
		{"delay 20ms", "", func(s mecasim.Status) bool { return s.ReplyDelay.Milliseconds() == 20 }, "reply_delay=20ms"},
		{"delay 0", "", func(s mecasim.Status) bool { return s.ReplyDelay == 0 }, "reply_delay=0s"},
		{"ESTOP", "[3070][1]", func(s mecasim.Status) bool { return s.EStopState == 1 && !s.Activated }, "activated=no homed=no paused=yes error=0 estop=pressed"},
		{"estop release", "[3070][2]", func(s mecasim.Status) bool { return s.EStopState == 2 }, "estop=released-awaiting-reset"},
		{"estop reset", "[3070][0]", func(s mecasim.Status) bool { return s.EStopState == 0 && !s.Activated }, "estop=off"},
		{"pstop", "[3069][1]", func(s mecasim.Status) bool { return s.PStop1State == 1 }, "pstop=pressed"},
		{"pstop release", "[3069][2]", func(s mecasim.Status) bool { return s.PStop1State == 2 }, "pstop=released-awaiting-reset"},
		{"pstop reset", "[3069][0]", func(s mecasim.Status) bool { return s.PStop1State == 0 }, "pstop=off"},
	} {
		line, err := r.Control(strings.Fields(tc.cmd))
		if err != nil {
			t.Fatalf("%s: %v", tc.cmd, err)
		}
		if !tc.check(r.Status()) || !strings.Contains(line, tc.line) {
			t.Errorf("%s: status %+v, line %q, want …%s…", tc.cmd, r.Status(), line, tc.line)
		}
		if tc.event != "" {
			c.expect(tc.event)
		}
	}
	ready(c)
	if line, err := r.Control([]string{"error"}); err != nil || !strings.Contains(line, "error=3005") {
		t.Errorf("error: %q, %v", line, err)
	}
	c.expect("[3005]")
	if line, err := r.Control([]string{"drop"}); err != nil || !strings.Contains(line, "client=none") {
		t.Errorf("drop: %q, %v", line, err)
	}
	c.closed()
	for _, bad := range []string{"", "fly", "estop twice", "delay soon", "delay -1s", "full many", "error 3", "drop now", "status all"} {
		if _, err := r.Control(strings.Fields(bad)); !errors.Is(err, mecasim.ErrControl) {
			t.Errorf("%q: %v, want ErrControl", bad, err)
		} else if !strings.Contains(err.Error(), "want") {
			t.Errorf("%q: %v does not say what is accepted", bad, err)
		}
	}
}

// A client that connects while a safety stop holds the robot is told so
// after the banner.
func TestSafetyStopSaidOnConnect(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	r.EStop(true)
	r.EStop(false)
	r.PStop1(true)
	c := connect(t, addr)
	if m := c.next(); m != "[3070][2]" {
		t.Errorf("after the banner: %q, want the E-stop awaiting its reset", m)
	}
	if m := c.next(); m != "[3069][1]" {
		t.Errorf("then %q, want the protective stop pressed", m)
	}
}
