package logging

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// terminal writes log lines for a person at a terminal: the time of day,
// the level when it is not INFO, the link, the message, and then only the
// attributes the message does not already say. A status view prints them
// above its rows, so a line must read well at 80 columns: the text
// handler's "time=… level=INFO msg=… event=\"link state\" from=… to=…"
// wrapped each line to three rows.
type terminal struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Leveler
	attrs attrs
}

// NewTerminal returns the handler of a log read at a terminal, at level.
func NewTerminal(w io.Writer, level slog.Leveler) slog.Handler {
	return &terminal{mu: new(sync.Mutex), w: w, level: level}
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

func (h *terminal) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *terminal) Handle(_ context.Context, r slog.Record) error {
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
	h.attrs.each(r, func(key string, v slog.Value) {
		switch {
		case key == "link":
			link = v.String()
		case key == "event" && v.String() == "link state":
			state = true
		default:
			rest = append(rest, slog.Attr{Key: key, Value: v})
		}
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
		b.WriteString("  " + a.Key + "=" + text(a.Value))
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b.Bytes())
	return err
}

func (h *terminal) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = h.attrs.with(as)
	return &c
}

func (h *terminal) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.attrs = h.attrs.in(name)
	return &c
}
