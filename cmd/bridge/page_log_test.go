package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/labbridge/bridge/config"
)

// The ring keeps the warnings and errors, link apart and the error first,
// even those the log's level hides, and passes everything else through
// unchanged.
func TestLogRing(t *testing.T) {
	var out bytes.Buffer
	ring := &logRing{}
	logger := slog.New(withRing(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError}), ring))
	if ringOf(logger) != ring || ringOf(slog.New(slog.DiscardHandler)) != nil {
		t.Fatal("ringOf does not find the ring")
	}
	logger.Info("fine")
	link := logger.With("link", "emio")
	link.Warn("partner lost", "after", "3 timeouts", "err", fmt.Errorf("simulink: timeout"))
	link.WithGroup("servo").Error("servo failed", "id", 2)
	logger.Error("plain", slog.Group("g", "a", 1))

	got := ring.recent()
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
	ring := &logRing{}
	logger := slog.New(withRing(slog.DiscardHandler, ring))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				logger.Warn("w", "g", g, "i", i)
				_ = ring.recent()
			}
		})
	}
	wg.Wait()
	if n := len(ring.recent()); n != recentLines {
		t.Fatalf("%d lines after 200, want %d", n, recentLines)
	}
	for i := range 15 {
		logger.Error(fmt.Sprint("line ", i))
	}
	got := ring.recent()
	for i, l := range got {
		if want := fmt.Sprint("line ", i+5); l.Message != want {
			t.Errorf("line %d is %q, want %q", i, l.Message, want)
		}
	}
}

// A link without a camera has no thumbnail, nor has an unknown link.
func TestThumbnailsWithoutCamera(t *testing.T) {
	th := thumbnails([]*config.Built{{Config: &config.Link{Name: "meca"}}})
	for _, link := range []string{"meca", "nolink"} {
		if img, found := th(link, 320); found || img != nil {
			t.Errorf("thumbnail of %q: %v %v, want not found", link, img, found)
		}
	}
}
