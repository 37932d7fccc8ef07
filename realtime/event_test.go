package realtime

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestEventWaitAndTimeout(t *testing.T) {
	c := NewClock()
	e, err := NewEvent(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	// Nothing signalled: the wait times out at the deadline, not before.
	start := c.Now()
	n, _, err := e.WaitUntil(start + int64(20*time.Millisecond))
	if err != nil || n != 0 {
		t.Fatalf("timeout wait: n=%d err=%v", n, err)
	}
	if got := c.Now() - start; got < int64(20*time.Millisecond) {
		t.Fatalf("returned after %v, before the deadline", time.Duration(got))
	}

	// Signals that come while nobody waits are counted, newest time kept.
	for i := range 3 {
		if err := e.Signal(int64(100 + i)); err != nil {
			t.Fatal(err)
		}
	}
	n, at, err := e.WaitUntil(c.Now())
	if err != nil || n != 3 || at != 102 {
		t.Fatalf("pending signals: n=%d at=%d err=%v, want 3, 102", n, at, err)
	}

	// A signal from another goroutine wakes a waiter before its deadline.
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(5 * time.Millisecond)
		_ = e.Signal(c.Now())
	}()
	start = c.Now()
	n, at, err = e.WaitUntil(start + int64(5*time.Second))
	<-done
	if err != nil || n != 1 || at < start {
		t.Fatalf("woken wait: n=%d at=%d start=%d err=%v", n, at, start, err)
	}
}

func TestEventAllocs(t *testing.T) {
	c := NewClock()
	e, err := NewEvent(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	allocs := testing.AllocsPerRun(100, func() {
		_ = e.Signal(1)
		if n, _, _ := e.WaitUntil(c.Now() + int64(time.Second)); n != 1 {
			t.Fatalf("n = %d", n)
		}
	})
	if allocs != 0 {
		t.Fatalf("signal + wait allocate %v times", allocs)
	}
}

// After Close, Signal and WaitUntil fail with ErrClosed and never write to
// the descriptor number, which the kernel hands to the next file opened.
func TestEventClosedStaysClosed(t *testing.T) {
	c := NewClock()
	e, err := NewEvent(c)
	if err != nil {
		t.Fatal(err)
	}
	fd := e.fd
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The same number, now another file's: a pipe whose read end would show
	// a stray write.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if p[0] != fd && p[1] != fd {
		t.Logf("the kernel gave the pipe %v, not the event's old %d; the check below still holds", p, fd)
	}
	if err := e.Signal(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Signal after Close = %v, want ErrClosed", err)
	}
	if _, _, err := e.WaitUntil(c.Now() + int64(time.Millisecond)); !errors.Is(err, ErrClosed) {
		t.Errorf("WaitUntil after Close = %v, want ErrClosed", err)
	}
	buf := make([]byte, 16)
	if n, err := unix.Read(p[0], buf); n > 0 {
		t.Errorf("a closed event wrote %d bytes into the file that took its descriptor", n)
	} else if err != unix.EAGAIN {
		t.Errorf("read of the pipe: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}
