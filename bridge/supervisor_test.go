package bridge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestBackoffGrowsCapsAndStartsOverWhenHealthy(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Factor: 2, Healthy: 10 * time.Second}
	s := newBackoffState(b, 1)
	t0 := time.Unix(0, 0)
	var got []time.Duration
	for range 6 {
		got = append(got, s.next(t0))
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("delays %v, want %v ms", got, want)
		}
	}
	// Up for less than Healthy: the series goes on.
	s.up(t0)
	if d := s.next(t0.Add(9 * time.Second)); d != time.Second {
		t.Fatalf("after 9 s up: %v, want 1s (the series goes on)", d)
	}
	// Up for Healthy: a new failure, retried at once, then from Initial.
	s.up(t0)
	if d := s.next(t0.Add(10 * time.Second)); d != 0 {
		t.Fatalf("after 10 s healthy: %v, want 0 (at once)", d)
	}
	if d := s.next(t0.Add(10 * time.Second)); d != 100*time.Millisecond {
		t.Fatalf("the next: %v, want 100ms", d)
	}
}

func TestBackoffJitterBounds(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: time.Second, Factor: 2, Jitter: 0.2}
	s := newBackoffState(b, 7)
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		d := s.next(time.Time{})
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 800*time.Millisecond || hi > 1200*time.Millisecond || hi-lo < 300*time.Millisecond {
		t.Errorf("jittered delays in [%v, %v], want spread within 0.8s..1.2s", lo, hi)
	}
}

type flaky struct {
	calls atomic.Int32
	fails int32
}

func (f *flaky) Serve(ctx context.Context) error {
	if f.calls.Add(1) <= f.fails {
		return errors.New("flaky: broke")
	}
	<-ctx.Done()
	return nil
}

func TestSupervisorRestartsFailedService(t *testing.T) {
	sup := NewSupervisor(SupervisorConfig{Backoff: Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond, Factor: 2}, Seed: 1})
	f := &flaky{fails: 3}
	if err := sup.Add("flaky", f); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- sup.Serve(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for f.calls.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("restarted %d times", f.calls.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if err := sup.Add("late", f); !errors.Is(err, ErrServing) {
		t.Errorf("Add while serving: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := f.calls.Load(); n != 4 {
		t.Errorf("%d calls, want 4 (3 failures, then it ran until stop)", n)
	}
}

// Leaving running is a warning (the partner lost, a device down), so that
// it reaches the page's last warnings; entering running and the stop are
// not.
func TestLeavingRunningIsAWarning(t *testing.T) {
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{Link: "m", From: Running, To: Handshaking, Cause: CausePartnerLost}, "level=WARN"},
		{Event{Link: "m", From: Running, To: Degraded, Cause: CauseDeviceError}, "level=WARN"},
		{Event{Link: "m", From: Handshaking, To: Running, Cause: CauseHandshake}, "level=INFO"},
		{Event{Link: "m", From: Running, To: Stopped, Cause: CauseStop}, "level=INFO"},
		// Frames that stop are a warning; the camera's first frame awaited
		// at the start is not (no_measurement warns if it lasts).
		{Event{Link: "m", From: Running, To: Degraded, Cause: CauseIncomplete}, "level=WARN"},
		{Event{Link: "m", From: Handshaking, To: Degraded, Cause: CauseIncomplete}, "level=INFO"},
		{Event{Link: "m", From: Handshaking, To: Degraded, Cause: CauseDeviceError}, "level=WARN"},
		{Event{Link: "m", From: Degraded, To: Running, Cause: CauseComplete}, "level=INFO"},
	} {
		var b strings.Builder
		s := NewSupervisor(SupervisorConfig{Logger: slog.New(slog.NewTextHandler(&b, nil))})
		s.emit(&linkEntry{}, tc.ev)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%v -> %v (%s): %q, want %s", tc.ev.From, tc.ev.To, tc.ev.Cause, b.String(), tc.want)
		}
	}
}
