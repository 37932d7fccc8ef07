package mecasim_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/labbridge/bridge/meca500/mecasim"
)

// The robot remembers its last two velocity commands, each numbered by the
// ConnectionWatchdog commands before it, and places a watchdog's expiry
// its timeout after the last refresh on its own clock.
func TestReceived(t *testing.T) {
	t.Parallel()
	r, addr := serve(t, mecasim.Config{})
	c := connect(t, addr)
	ready(c)
	if _, ok := r.LastWatchdogExpiry(); ok {
		t.Fatal("an expiry before any watchdog")
	}
	// One write: a long watchdog holds until the short refresh, the last
	// frame, starts its 0.2 s.
	c.send("MoveJointsVel(1,0,0,0,0,0)\x00ConnectionWatchdog(30)\x00MoveJointsVel(5,0,0,0,0,0)\x00" +
		"ConnectionWatchdog(30)\x00MoveJointsVel(0,0,0,0,0,0)\x00ConnectionWatchdog(0.2)\x00")
	c.expect("[2177][1]")
	c.expect("[3086][1]")
	want := []mecasim.Velocity{{Name: "MoveJointsVel", V: [6]float64{5}, Watchdogs: 1}, {Name: "MoveJointsVel", Watchdogs: 2}}
	if got := r.Velocities(); !reflect.DeepEqual(got, want) {
		t.Errorf("velocities %+v, want %+v", got, want)
	}
	e, ok := r.LastWatchdogExpiry()
	if !ok || e.Expired-e.Refreshed != 200*time.Millisecond || e.Noticed < e.Expired || e.Refreshed <= 0 {
		t.Errorf("expiry %+v (%v): want 200ms after the refresh, noticed then or later", e, ok)
	}
}
