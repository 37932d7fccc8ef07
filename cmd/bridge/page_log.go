package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/labbridge/bridge/statuspage"
)

// recentLines is how many warnings and errors the status page shows.
const recentLines = 10

// logRing keeps the process's last warnings and errors for the status
// page, whatever the log level lets through to the log itself. Safe for
// concurrent use.
type logRing struct {
	mu    sync.Mutex
	lines [recentLines]statuspage.LogLine
	next  int // where the next line goes
	n     int // lines held, up to recentLines
}

func (r *logRing) add(l statuspage.LogLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines[r.next] = l
	r.next = (r.next + 1) % len(r.lines)
	r.n = min(r.n+1, len(r.lines))
}

// recent returns the lines held, oldest first.
func (r *logRing) recent() []statuspage.LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]statuspage.LogLine, 0, r.n)
	for i := range r.n {
		out = append(out, r.lines[(r.next-r.n+i+len(r.lines))%len(r.lines)])
	}
	return out
}

// ringHandler passes every record to the next handler and keeps the
// warnings and errors in its ring.
type ringHandler struct {
	next  slog.Handler
	ring  *logRing
	attrs []slog.Attr // from WithAttrs, already qualified by their groups
	group string      // the WithGroup prefix, "a.b." ("" for none)
}

// withRing wraps h so that ring keeps its warnings and errors.
func withRing(h slog.Handler, ring *logRing) *ringHandler { return &ringHandler{next: h, ring: ring} }

// ringOf is the ring a logger's handler keeps, nil if it keeps none.
func ringOf(l *slog.Logger) *logRing {
	if h, ok := l.Handler().(*ringHandler); ok {
		return h.ring
	}
	return nil
}

// Enabled lets a warning through even when the log's level hides it: the
// page still shows it.
func (h *ringHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *ringHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.ring.add(h.line(r))
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

// line is r as the page shows it: the link apart, the error first among
// the other attributes.
func (h *ringHandler) line(r slog.Record) statuspage.LogLine {
	l := statuspage.LogLine{Time: r.Time, Level: r.Level.String(), Message: r.Message}
	if l.Time.IsZero() {
		l.Time = time.Now()
	}
	var errs, rest []string
	add := func(key string, v slog.Value) {
		switch v = v.Resolve(); {
		case key == "link" && l.Link == "":
			l.Link = v.String()
		case key == "err" || key == "error":
			errs = append(errs, key+"="+v.String())
		default:
			rest = append(rest, attrString(key, v)...)
		}
	}
	for _, a := range h.attrs {
		add(a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		add(h.group+a.Key, a.Value)
		return true
	})
	l.Detail = strings.Join(append(errs, rest...), " ")
	return l
}

// attrString flattens a (group) attribute into key=value strings.
func attrString(key string, v slog.Value) []string {
	if v.Kind() != slog.KindGroup {
		s := v.String()
		if strings.ContainsAny(s, " =\"") {
			s = fmt.Sprintf("%q", s)
		}
		return []string{key + "=" + s}
	}
	var out []string
	for _, a := range v.Group() {
		k := a.Key
		if key != "" {
			k = key + "." + k
		}
		out = append(out, attrString(k, a.Value.Resolve())...)
	}
	return out
}

func (h *ringHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		c.attrs = append(c.attrs, slog.Attr{Key: h.group + a.Key, Value: a.Value})
	}
	return &c
}

func (h *ringHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.group = h.group + name + "."
	return &c
}
