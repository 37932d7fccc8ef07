package logging_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/logging"
)

// The ring keeps the warnings and errors, link apart and the error first,
// even those the log's level hides, and passes everything else through
// unchanged.
func TestLogRing(t *testing.T) {
	var out bytes.Buffer
	ring := &logging.Ring{}
	logger := slog.New(logging.WithRing(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError}), ring))
	if logging.RingOf(logger) != ring || logging.RingOf(slog.New(slog.DiscardHandler)) != nil {
		t.Fatal("ringOf does not find the ring")
	}
	logger.Info("fine")
	link := logger.With("link", "emio")
	link.Warn("partner lost", "after", "3 timeouts", "err", fmt.Errorf("simulink: timeout"))
	link.WithGroup("servo").Error("servo failed", "id", 2)
	logger.Error("plain", slog.Group("g", "a", 1))

	got := ring.Recent()
	if len(got) != 3 {
		t.Fatalf("%d lines kept, want 3: %+v", len(got), got)
	}
	if l := got[0]; l.Level != "WARN" || l.Link != "emio" || l.Message != "partner lost" ||
		l.Detail != `err=simulink: timeout after="3 timeouts"` || l.Time.IsZero() {
		t.Errorf("warning kept as %+v", l)
	}
	if l := got[1]; l.Level != "ERROR" || l.Link != "emio" || l.Detail != "servo.id=2" {
		t.Errorf("grouped error kept as %+v", l)
	}
	if l := got[2]; l.Link != "" || l.Detail != "g.a=1" {
		t.Errorf("error with a group kept as %+v", l)
	}
	// The log itself: the level still rules it.
	if s := out.String(); strings.Contains(s, "fine") || strings.Contains(s, "partner lost") || !strings.Contains(s, "servo failed") {
		t.Errorf("the log:\n%s", s)
	}
}

// The ring is bounded, keeps the newest lines in order, and takes lines
// from many goroutines at once.
func TestLogRingBounded(t *testing.T) {
	ring := &logging.Ring{}
	logger := slog.New(logging.WithRing(slog.DiscardHandler, ring))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				logger.Warn("w", "g", g, "i", i)
				_ = ring.Recent()
			}
		})
	}
	wg.Wait()
	if n := len(ring.Recent()); n != logging.RingLines {
		t.Fatalf("%d lines after 200, want %d", n, logging.RingLines)
	}
	for i := range 15 {
		logger.Error(fmt.Sprint("line ", i))
	}
	got := ring.Recent()
	for i, l := range got {
		if want := fmt.Sprint("line ", i+5); l.Message != want {
			t.Errorf("line %d is %q, want %q", i, l.Message, want)
		}
	}
}

// A terminal's line: the time of day, the level unless INFO, the link
// before the message, the attributes the message does not say, groups
// flattened as the ring flattens them.
func TestTerminal(t *testing.T) {
	var out bytes.Buffer
	h := logging.NewTerminal(&out, slog.LevelInfo)
	at := time.Date(2026, 11, 27, 14, 3, 4, 5e6, time.UTC)
	for _, r := range []struct {
		level slog.Level
		msg   string
		attrs []any
	}{
		{slog.LevelInfo, "started", []any{"link", "emio", "after", 1500 * time.Microsecond}},
		{slog.LevelWarn, "link emio: TIMEOUT", []any{"link", "emio", "event", "link state", "from", "running", "to", "handshaking"}},
		{slog.LevelError, "plain", []any{slog.Group("g", "a", 1, "b", "two words")}},
		{slog.LevelDebug, "hidden", nil},
	} {
		rec := slog.NewRecord(at, r.level, r.msg, 0)
		rec.Add(r.attrs...)
		if h.Enabled(t.Context(), r.level) {
			if err := h.Handle(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := "14:03:04.005 emio: started  after=1.5ms\n" +
		"14:03:04.005 WARN  link emio: TIMEOUT\n" +
		"14:03:04.005 ERROR plain  g.a=1  g.b=\"two words\"\n"
	if out.String() != want {
		t.Errorf("terminal:\n%s\nwant:\n%s", out.String(), want)
	}
}

// New picks the handler a service's output asks for.
func TestNew(t *testing.T) {
	for _, c := range []struct {
		o    logging.Options
		want string
	}{
		{logging.Options{Format: "auto", Terminal: true}, "emio: hello  n=1\n"},
		{logging.Options{Format: "auto"}, `"msg":"hello"`},
		{logging.Options{Format: "text"}, "level=INFO msg=hello link=emio n=1"},
		{logging.Options{Format: "auto", Journal: true}, `<6>{"time":`},
	} {
		var out bytes.Buffer
		l := logging.New(&out, c.o)
		l.Info("hello", "link", "emio", "n", 1)
		if !strings.Contains(out.String(), c.want) || logging.RingOf(l) == nil {
			t.Errorf("%+v: %q, want …%s… and a ring", c.o, out.String(), c.want)
		}
	}
}

// Lines for a terminal: time of day, level only when not INFO, the link
// before the message unless the message names it, the attributes a link
// state's message already says left out, an empty error left out.
func TestTerminalLines(t *testing.T) {
	var b bytes.Buffer
	at := time.Date(2026, 11, 24, 12, 23, 55, 675e6, time.UTC)
	h := logging.NewTerminal(&b, slog.LevelInfo)
	log := func(h slog.Handler, level slog.Level, msg string, args ...any) {
		r := slog.NewRecord(at, level, msg, 0)
		r.Add(args...)
		if h.Enabled(t.Context(), level) {
			if err := h.Handle(t.Context(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	log(h, slog.LevelInfo, "link emio: TIMEOUT: the Simulink host stopped answering", "event", "link state", "link", "emio", "from", "running", "to", "handshaking", "cause", "partner lost", "status", "TIMEOUT")
	log(h, slog.LevelWarn, "the loop overran its period", "link", "meca500", "fault", "overruns", "events", 1, "advice", "lower rate_hz")
	log(h, slog.LevelInfo, "camera: streaming", "link", "emio", "width", 640, "err", nil)
	log(h.WithAttrs([]slog.Attr{slog.String("link", "vrep")}), slog.LevelError, "scene lost", "after", 1234567*time.Microsecond, "err", errors.New("connection refused"))
	log(h.WithGroup("g"), slog.LevelInfo, "grouped", "k", "v")
	log(h, slog.LevelDebug, "not shown")
	want := strings.Join([]string{
		"12:23:55.675 link emio: TIMEOUT: the Simulink host stopped answering",
		`12:23:55.675 WARN  meca500: the loop overran its period  fault=overruns  events=1  advice="lower rate_hz"`,
		"12:23:55.675 emio: camera: streaming  width=640",
		`12:23:55.675 ERROR vrep: scene lost  after=1.23s  err="connection refused"`,
		"12:23:55.675 grouped  g.k=v",
		"",
	}, "\n")
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
