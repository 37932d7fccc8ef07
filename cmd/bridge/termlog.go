package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// termHandler writes log lines for a person at a terminal: the time of day,
// the level when it is not INFO, the link, the message, and then only the
// attributes the message does not already say. The status view prints them
// above its rows, so a line must read well at 80 columns: the text
// handler's "time=… level=INFO msg=… event=\"link state\" from=… to=…"
// wrapped each line to three rows.
type termHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Leveler
	attrs []slog.Attr // from WithAttrs, groups flattened into dotted keys
	group string
}

func newTermHandler(w io.Writer, level slog.Leveler) *termHandler {
	return &termHandler{mu: new(sync.Mutex), w: w, level: level}
}

// redundant reports whether a link-state line's message already says the
// attribute.
func redundant(key string) bool {
	switch key {
	case "from", "to", "cause", "status":
		return true
	}
	return false
}

func (h *termHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *termHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	if !r.Time.IsZero() {
		b.WriteString(r.Time.Format("15:04:05.000 "))
	}
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("ERROR ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("WARN  ")
	case r.Level < slog.LevelInfo:
		b.WriteString("DEBUG ")
	}
	var link string
	var rest []slog.Attr
	state := false
	collect := func(a slog.Attr) {
		a.Value = a.Value.Resolve()
		switch {
		case a.Key == "link" && h.group == "":
			link = a.Value.String()
		case a.Key == "event" && a.Value.String() == "link state":
			state = true
		default:
			rest = append(rest, a)
		}
	}
	for _, a := range h.attrs {
		collect(a)
	}
	r.Attrs(func(a slog.Attr) bool {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		collect(a)
		return true
	})
	msg := r.Message
	if link != "" && !strings.HasPrefix(msg, "link "+link+":") {
		b.WriteString(link + ": ")
	}
	b.WriteString(msg)
	for _, a := range rest {
		if state && redundant(a.Key) {
			continue
		}
		if a.Value.Kind() == slog.KindAny && a.Value.Any() == nil {
			continue // an empty error says nothing
		}
		fmt.Fprintf(&b, "  %s=%s", a.Key, termValue(a.Value))
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

// termValue is a value as a person reads it: durations rounded, strings
// quoted only when they hold a space.
func termValue(v slog.Value) string {
	switch v.Kind() {
	case slog.KindDuration:
		d := v.Duration()
		switch {
		case d >= time.Second:
			d = d.Round(10 * time.Millisecond)
		case d >= time.Millisecond:
			d = d.Round(10 * time.Microsecond)
		}
		return d.String()
	case slog.KindGroup:
		parts := make([]string, 0, len(v.Group()))
		for _, a := range v.Group() {
			parts = append(parts, a.Key+"="+termValue(a.Value.Resolve()))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	s := v.String()
	if strings.ContainsAny(s, " \t\n\"") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func (h *termHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range attrs {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		c.attrs = append(c.attrs, a)
	}
	return &c
}

func (h *termHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}
