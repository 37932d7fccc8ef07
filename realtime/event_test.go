package realtime

import (
	"testing"
	"time"
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
