package fault_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/fault"
)

// clock is a hand-driven clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time       { return c.t }
func (c *clock) step(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                { return &clock{t: time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)} }
func lines(b *bytes.Buffer) []string  { return strings.Split(strings.TrimSpace(b.String()), "\n") }
func textLogger(b *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// sink records the metric calls.
type sink struct {
	mu     sync.Mutex
	calls  []string
	active map[string]bool
}

func (s *sink) Set(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		s.active = map[string]bool{}
	}
	s.active[name] = on
}

func (s *sink) Started(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "start "+name)
}

// An event fault: logged once when it starts, once a minute with the count
// while it lasts, once when it has been quiet for 5 s; never once per event.
func TestEventFaultLogsStartCountsAndEnd(t *testing.T) {
	c := newClock()
	var buf bytes.Buffer
	var n uint64 = 7 // events before the watcher started are history
	var sk sink
	w, err := fault.New(fault.Config{Link: "emio", Logger: textLogger(&buf), Now: c.now, Sink: &sk, Probes: []fault.Probe{{
		Name: "wrong_size", Title: "replies of the wrong size from the Simulink host", Advice: "check nb_markers",
		Events: func() uint64 { return n }, Detail: func() string { return "48 bytes, want 40" },
	}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Poll()
	if w.Health() != nil {
		t.Fatal("history counted as a fault")
	}
	// 20 wrong-size replies a second for 150 s, polled every 250 ms.
	for range 600 {
		c.step(250 * time.Millisecond)
		n += 5
		w.Poll()
	}
	err = w.Health()
	var fe *fault.Error
	if !errors.Is(err, fault.ErrFault) || !errors.As(err, &fe) || len(fe.Faults) != 1 {
		t.Fatalf("health: %v", err)
	}
	if a := fe.Faults[0]; a.Events != 3000 || a.Detail != "48 bytes, want 40" || c.t.Sub(a.Since) != 150*time.Second-250*time.Millisecond {
		t.Fatalf("active: %+v", a)
	}
	if got, want := err.Error(), "replies of the wrong size from the Simulink host (48 bytes, want 40), 3000 since it started"; got != want {
		t.Fatalf("health text %q, want %q", got, want)
	}
	for range 20 { // 5 s without an event
		c.step(250 * time.Millisecond)
		w.Poll()
	}
	if w.Health() != nil {
		t.Fatal("still active after 5 s of quiet")
	}
	want := []string{
		`level=WARN msg="replies of the wrong size from the Simulink host" link=emio fault=wrong_size events=5 detail="48 bytes, want 40" advice="check nb_markers"`,
		`level=WARN msg="replies of the wrong size from the Simulink host (still)" link=emio fault=wrong_size detail="48 bytes, want 40" events=1200 in=1m0s for=1m0s`,
		`level=WARN msg="replies of the wrong size from the Simulink host (still)" link=emio fault=wrong_size detail="48 bytes, want 40" events=1200 in=1m0s for=2m0s`,
		`level=INFO msg="replies of the wrong size from the Simulink host: over" link=emio fault=wrong_size lasted=2m35s events=3000`,
	}
	if got := lines(&buf); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(sk.calls, ",") != "start wrong_size" || sk.active["wrong_size"] {
		t.Fatalf("sink: %v %v", sk.calls, sk.active)
	}
}

// A level fault starts only once it has held for After, and a condition
// that flickers shorter than that is no fault.
func TestLevelFaultWaitsForAfter(t *testing.T) {
	c := newClock()
	var buf bytes.Buffer
	on, detail := false, ""
	w, err := fault.New(fault.Config{Logger: textLogger(&buf), Now: c.now, Probes: []fault.Probe{{
		Name: "no_partner", Title: "no Simulink host answers", After: 3 * time.Second,
		Level: func() (bool, string) { return on, detail },
	}}})
	if err != nil {
		t.Fatal(err)
	}
	on = true
	for range 8 { // 2 s
		w.Poll()
		c.step(250 * time.Millisecond)
	}
	on = false
	w.Poll()
	if buf.Len() != 0 || w.Health() != nil {
		t.Fatalf("a 2 s condition became a fault: %s", buf.String())
	}
	on, detail = true, "sending to 127.0.0.1:25000"
	for range 13 { // 3 s
		w.Poll()
		c.step(250 * time.Millisecond)
	}
	a := w.Active()
	if len(a) != 1 || a[0].Detail != "sending to 127.0.0.1:25000" || c.t.Sub(a[0].Since) != 3250*time.Millisecond {
		t.Fatalf("active: %+v", a)
	}
	on = false
	w.Poll()
	want := []string{
		`level=WARN msg="no Simulink host answers" fault=no_partner detail="sending to 127.0.0.1:25000"`,
		`level=INFO msg="no Simulink host answers: over" fault=no_partner lasted=3.3s`,
	}
	if got := lines(&buf); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A lasting level fault is repeated once a minute, not at every poll.
func TestLevelFaultRepeatsOncePerMinute(t *testing.T) {
	c := newClock()
	var buf bytes.Buffer
	w, err := fault.New(fault.Config{Logger: textLogger(&buf), Now: c.now, Probes: []fault.Probe{{
		Name: "servo_hot", Title: "a servo is overheating",
		Level: func() (bool, string) { return true, "servo 2: 74 °C, limit 72 °C" },
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 * 600 { // 10 min at 4 polls a second
		w.Poll()
		c.step(250 * time.Millisecond)
	}
	if got := len(lines(&buf)); got != 10 {
		t.Fatalf("%d lines in 10 min, want 10 (a start and one a minute):\n%s", got, buf.String())
	}
}

func TestConfigRefusals(t *testing.T) {
	lvl := func() (bool, string) { return false, "" }
	for _, tc := range []struct {
		name   string
		probes []fault.Probe
		want   string
	}{
		{"bad name", []fault.Probe{{Name: "Wrong Size", Title: "x", Level: lvl}}, `probe name "Wrong Size"`},
		{"twice", []fault.Probe{{Name: "a", Title: "x", Level: lvl}, {Name: "a", Title: "y", Level: lvl}}, `two probes named "a"`},
		{"neither", []fault.Probe{{Name: "a", Title: "x"}}, "exactly one of Level and Events"},
		{"both", []fault.Probe{{Name: "a", Title: "x", Level: lvl, Events: func() uint64 { return 0 }}}, "exactly one"},
		{"untitled", []fault.Probe{{Name: "a", Level: lvl}}, "no title"},
	} {
		_, err := fault.New(fault.Config{Probes: tc.probes})
		if !errors.Is(err, fault.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrConfig with %q", tc.name, err, tc.want)
		}
	}
}

// A counter that goes back (its part was rebuilt) is no event.
func TestCounterResetIsNoFault(t *testing.T) {
	c := newClock()
	n := uint64(100)
	w, err := fault.New(fault.Config{Now: c.now, Probes: []fault.Probe{{Name: "kernel_drops", Title: "drops", Events: func() uint64 { return n }}}})
	if err != nil {
		t.Fatal(err)
	}
	w.Poll()
	n = 0
	w.Poll()
	n = 0
	w.Poll()
	if w.Health() != nil {
		t.Fatal("a reset counted as events")
	}
}

// Poll, Active and Health from several goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	var mu sync.Mutex
	n := uint64(0)
	w, err := fault.New(fault.Config{Probes: []fault.Probe{{Name: "e", Title: "e", Events: func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		n++
		return n
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 200 {
				w.Poll()
				_ = w.Health()
				_ = w.Active()
			}
		})
	}
	wg.Wait()
}

// A rate fault (Window, Allow): a few events a minute, as a loaded machine
// gives a 1 kHz loop, never make it active; more than Allow in a minute
// do, and it ends once the minute holds no more than Allow again.
func TestRateFaultCountsOverItsWindow(t *testing.T) {
	c := newClock()
	var buf bytes.Buffer
	var n uint64 = 500 // history
	w, err := fault.New(fault.Config{Logger: textLogger(&buf), Now: c.now, Probes: []fault.Probe{{
		Name: "overruns", Title: "the loop overran its period",
		Events: func() uint64 { return n }, Window: time.Minute, Allow: 10,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	const poll = 250 * time.Millisecond
	w.Poll()
	// Ten minutes at 6 a minute, one every 10 s: never a fault.
	for i := range 10 * 240 {
		c.step(poll)
		if i%40 == 0 {
			n++
		}
		w.Poll()
		if err := w.Health(); err != nil {
			t.Fatalf("at %d events a minute, poll %d: %v", 6, i, err)
		}
	}
	// A quiet minute, then a burst of 11 within a second: active at once,
	// with the count.
	for range 280 {
		c.step(poll)
		w.Poll()
	}
	for range 11 {
		n++
	}
	c.step(poll)
	w.Poll()
	a := w.Active()
	if len(a) != 1 || a[0].Detail != "11 in the last 1m0s, more than 10" || a[0].Events != 11 {
		t.Fatalf("after a burst of 11: %+v", a)
	}
	// It lasts while the minute holds the burst, and ends once it slid out.
	var ended time.Duration
	for d := poll; d <= 2*time.Minute; d += poll {
		c.step(poll)
		w.Poll()
		if w.Health() == nil {
			ended = d
			break
		}
	}
	if ended < time.Minute-poll || ended > time.Minute+poll {
		t.Errorf("ended %v after the burst, want once the 1 min window no longer holds it", ended)
	}
	if got := strings.Count(buf.String(), "msg=\"the loop overran its period\""); got != 1 {
		t.Errorf("started %d times, want once:\n%s", got, buf.String())
	}
	// A counter reset (a rebuilt link) is not a burst.
	n = 0
	c.step(poll)
	w.Poll()
	if err := w.Health(); err != nil {
		t.Errorf("after a counter reset: %v", err)
	}
}

// A window needs an Events probe.
func TestRateFaultConfig(t *testing.T) {
	_, err := fault.New(fault.Config{Probes: []fault.Probe{{Name: "x", Title: "x", Level: func() (bool, string) { return false, "" }, Window: time.Minute}}})
	if !errors.Is(err, fault.ErrConfig) {
		t.Errorf("a window on a level probe: %v", err)
	}
}
