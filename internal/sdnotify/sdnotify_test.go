package sdnotify

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func read(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 256)
	n, err := c.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}

func TestSend(t *testing.T) {
	c, path := listen(t)
	n := New(path)
	if err := n.Ready("1 link running"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, c); got != "READY=1\nSTATUS=1 link running" {
		t.Errorf("got %q", got)
	}
	n.Stopping()
	if got := read(t, c); got != "STOPPING=1" {
		t.Errorf("got %q", got)
	}
	if err := New("").Send("READY=1"); !errors.Is(err, ErrNoSocket) {
		t.Errorf("no socket: %v", err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	cases := []struct {
		usec, pid string
		want      time.Duration
	}{
		{"2000000", "", time.Second},
		{"2000000", "42", time.Second},
		{"2000000", "7", 0},
		{"", "", 0},
		{"nope", "", 0},
		{"-5", "", 0},
	}
	for _, c := range cases {
		if got := WatchdogInterval(c.usec, c.pid, 42); got != c.want {
			t.Errorf("%q %q: %v, want %v", c.usec, c.pid, got, c.want)
		}
	}
}

// The watchdog pings only while the loop advances.
func TestWatchdogPingsOnlyOnProgress(t *testing.T) {
	c, path := listen(t)
	var ticks atomic.Uint64
	var last uint64
	alive := func() bool { n := ticks.Load(); moved := n != last; last = n; return moved }
	w := &Watchdog{N: New(path), Interval: 5 * time.Millisecond, Alive: alive}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Serve(ctx) }()
	time.Sleep(50 * time.Millisecond) // stalled: no ping
	c.SetReadDeadline(time.Now())
	if _, err := c.Read(make([]byte, 64)); err == nil {
		t.Fatal("pinged while the loop was stalled")
	}
	ticks.Add(1)
	if got := read(t, c); got != "WATCHDOG=1" {
		t.Errorf("got %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The lifecycle says READY=1 with its status once ready, pings while alive,
// and STOPPING=1 at the end.
func TestLifecycle(t *testing.T) {
	c, path := listen(t)
	var ready, alive atomic.Bool
	l := &Lifecycle{N: New(path), Watchdog: 5 * time.Millisecond, Poll: time.Millisecond,
		Ready: func() (bool, string) { return ready.Load(), "2 link(s) ticking" }, Alive: alive.Load}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Serve(ctx) }()
	time.Sleep(20 * time.Millisecond) // not ready: nothing sent
	c.SetReadDeadline(time.Now())
	if _, err := c.Read(make([]byte, 64)); err == nil {
		t.Fatal("notified before ready")
	}
	ready.Store(true)
	if got := read(t, c); got != "READY=1\nSTATUS=2 link(s) ticking" {
		t.Errorf("got %q", got)
	}
	alive.Store(true)
	if got := read(t, c); got != "WATCHDOG=1" {
		t.Errorf("got %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for {
		if got := read(t, c); got == "STOPPING=1" {
			break
		} else if got != "WATCHDOG=1" {
			t.Fatalf("got %q, want STOPPING=1", got)
		}
	}
}

// After READY=1, STATUS= follows what is wrong now: sent when it changes,
// never repeated while it stays the same, and a newline in it cannot end
// the assignment.
func TestLifecycleStatusFollowsChanges(t *testing.T) {
	c, path := listen(t)
	var mu sync.Mutex
	status := "emio: running"
	set := func(s string) { mu.Lock(); status = s; mu.Unlock() }
	l := &Lifecycle{N: New(path), Poll: time.Millisecond, StatusEvery: time.Millisecond,
		Ready:  func() (bool, string) { return true, "1 link(s) ticking" },
		Status: func() string { mu.Lock(); defer mu.Unlock(); return status }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Serve(ctx) }()
	if got := read(t, c); got != "READY=1\nSTATUS=1 link(s) ticking" {
		t.Fatalf("got %q", got)
	}
	if got := read(t, c); got != "STATUS=emio: running" {
		t.Fatalf("got %q", got)
	}
	set("emio: handshaking: no Simulink host answers\nmeca500: running")
	if got := read(t, c); got != "STATUS=emio: handshaking: no Simulink host answers; meca500: running" {
		t.Fatalf("got %q", got)
	}
	set("emio: running")
	if got := read(t, c); got != "STATUS=emio: running" {
		t.Fatalf("got %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Nothing but STOPPING=1 after the last change: no repeats.
	if got := read(t, c); got != "STOPPING=1" {
		t.Fatalf("got %q, want STOPPING=1 (a status repeated?)", got)
	}
}
