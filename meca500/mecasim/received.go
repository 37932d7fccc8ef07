package mecasim

import "time"

// What the robot received, for tests that check a client's dead-man in its
// own cycles and on the robot's clock rather than on a busy machine's wall
// clock.

// Velocity is a velocity command the robot accepted into its queue.
type Velocity struct {
	// Name is the command as sent: MoveJointsVel, MoveLinVelWrf or
	// MoveLinVelTrf.
	Name string
	V    [6]float64
	// Watchdogs is how many ConnectionWatchdog commands the robot had
	// received before this one: a client that sends one each cycle, after
	// its command, numbers its cycles with it.
	Watchdogs int
}

// WatchdogExpiry is a connection watchdog's expiry, on the robot's clock
// (time since New).
type WatchdogExpiry struct {
	// Refreshed is when the watchdog was last armed or refreshed.
	Refreshed time.Duration
	// Expired is when it expired: Refreshed plus the timeout it was armed
	// with, the instant the robot's real-time controller acts on. Noticed
	// is when the simulator stepped past it, later on a busy machine.
	Expired, Noticed time.Duration
}

// recentVelocities is how many velocity commands the robot remembers.
const recentVelocities = 2

// Velocities returns the last velocity commands accepted (at most two),
// oldest first.
func (r *Robot) Velocities() []Velocity {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Velocity(nil), r.st.velocities...)
}

// LastWatchdogExpiry returns the last connection-watchdog expiry; false
// before one.
func (r *Robot) LastWatchdogExpiry() (WatchdogExpiry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.lastExpiry, r.st.watchdogExpiries > 0
}

// received records a velocity command accepted; r.mu is held.
func (s *state) received(name string, v [6]float64) {
	if len(s.velocities) == recentVelocities {
		s.velocities = append(s.velocities[:0], s.velocities[1:]...)
	}
	s.velocities = append(s.velocities, Velocity{Name: name, V: v, Watchdogs: s.watchdogCommands})
}
