package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Lines for a terminal: time of day, level only when not INFO, the link
// before the message unless the message names it, the attributes a link
// state's message already says left out, an empty error left out.
func TestTermHandler(t *testing.T) {
	var b bytes.Buffer
	at := time.Date(2026, 11, 24, 12, 23, 55, 675e6, time.UTC)
	h := newTermHandler(&b, slog.LevelInfo)
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
