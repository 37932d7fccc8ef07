// Package sdnotify speaks systemd's notification protocol (sd_notify(3),
// docs/realtime.md §11): READY=1, STATUS=, STOPPING=1 and WATCHDOG=1 datagrams
// on the AF_UNIX socket named by $NOTIFY_SOCKET, and a watchdog that pings only
// while the real-time loop advances, so that a stuck loop gets the service
// restarted even though other goroutines are alive.
package sdnotify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNoSocket means the process does not run under systemd with
// NotifyAccess; notifications are then silently skipped.
var ErrNoSocket = errors.New("sdnotify: NOTIFY_SOCKET is not set")

// Notifier sends notifications to one socket.
type Notifier struct {
	addr string
}

// New returns a notifier for the socket path in socketEnv (the value of
// $NOTIFY_SOCKET; a leading @ names an abstract socket, which Go's dialer
// understands). An empty value gives a notifier whose sends do nothing.
func New(socketEnv string) *Notifier { return &Notifier{addr: socketEnv} }

// Enabled reports whether notifications go anywhere.
func (n *Notifier) Enabled() bool { return n.addr != "" }

// Send sends newline-separated KEY=VALUE assignments.
func (n *Notifier) Send(state string) error {
	if n.addr == "" {
		return ErrNoSocket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: dial %q: %w", n.addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("sdnotify: send %q: %w", state, err)
	}
	return nil
}

// Ready tells systemd that start-up is complete, with a status line.
func (n *Notifier) Ready(status string) error { return n.Send("READY=1\nSTATUS=" + status) }

// Stopping tells systemd that the service is shutting down.
func (n *Notifier) Stopping() error { return n.Send("STOPPING=1") }

// WatchdogInterval parses $WATCHDOG_USEC and returns half of it, the advised
// ping interval; 0 when the watchdog is off or the value is not for us
// (watchdogPID names another process).
func WatchdogInterval(watchdogUsec, watchdogPID string, pid int) time.Duration {
	if watchdogUsec == "" {
		return 0
	}
	if watchdogPID != "" && watchdogPID != strconv.Itoa(pid) {
		return 0
	}
	us, err := strconv.ParseInt(watchdogUsec, 10, 64)
	if err != nil || us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond / 2
}

// Watchdog pings every interval while Alive says the service makes
// progress.
type Watchdog struct {
	N        *Notifier
	Interval time.Duration
	// Alive reports, at each call, whether the service advanced since the
	// previous call: for the bridge, whether every link's loop ticked
	// (bridge.Supervisor.Progress), so one stalled link is enough to stop
	// the pings.
	Alive func() bool
}

// Serve pings until ctx is done. A stalled service skips the ping, so
// systemd restarts it after WatchdogSec.
func (w *Watchdog) Serve(ctx context.Context) error {
	if w.Interval <= 0 || !w.N.Enabled() {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if !w.Alive() {
			continue
		}
		if err := w.N.Send("WATCHDOG=1"); err != nil {
			return err
		}
	}
}

// Lifecycle tells systemd a service's life: READY=1 with a status once
// Ready holds, WATCHDOG=1 while Alive holds (with $WATCHDOG_USEC set), and
// STOPPING=1 when its context ends.
type Lifecycle struct {
	N *Notifier
	// Watchdog is the ping interval (WatchdogInterval); 0: no pings.
	Watchdog time.Duration
	// Ready reports whether start-up is complete, with a status line.
	Ready func() (bool, string)
	// Alive is Watchdog.Alive.
	Alive func() bool
	// Poll is how often Ready is asked; 0 means 10 ms.
	Poll time.Duration
	// Status, if set, says what the service is doing now (what is wrong,
	// first); after READY=1 it is asked every StatusEvery and sent as
	// STATUS= whenever it changes, so `systemctl status` tells the truth.
	Status func() string
	// StatusEvery: 0 means one second.
	StatusEvery time.Duration
}

// Serve runs until ctx is done; it does nothing when no socket is set.
// Notification errors are returned when ctx ends; they never stop the
// service.
func (l *Lifecycle) Serve(ctx context.Context) error {
	if !l.N.Enabled() {
		<-ctx.Done()
		return nil
	}
	defer l.N.Stopping()
	poll := l.Poll
	if poll <= 0 {
		poll = 10 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if ok, status := l.Ready(); ok {
			if err := l.N.Ready(status); err != nil {
				return err
			}
			break
		}
	}
	t.Stop()
	var wg sync.WaitGroup
	var statusErr error
	if l.Status != nil {
		wg.Go(func() { statusErr = l.serveStatus(ctx) })
	}
	w := &Watchdog{N: l.N, Interval: l.Watchdog, Alive: l.Alive}
	err := w.Serve(ctx)
	wg.Wait()
	return errors.Join(err, statusErr)
}

// serveStatus sends STATUS= when Status changes, until ctx is done.
func (l *Lifecycle) serveStatus(ctx context.Context) error {
	every := l.StatusEvery
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		// A newline would end the assignment early (sd_notify(3)).
		s := strings.ReplaceAll(l.Status(), "\n", "; ")
		if s == last {
			continue
		}
		if err := l.N.Send("STATUS=" + s); err != nil {
			return err
		}
		last = s
	}
}
