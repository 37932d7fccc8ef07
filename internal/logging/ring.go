package logging

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Line is a warning or an error as the status page shows it.
type Line struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"` // WARN, ERROR
	// Link is the link the line is about, when it names one.
	Link    string `json:"link,omitempty"`
	Message string `json:"message"`
	// Detail is the line's other attributes, "key=value" separated by
	// spaces (the error first).
	Detail string `json:"detail,omitempty"`
}

// RingLines is how many warnings and errors a Ring keeps.
const RingLines = 10

// Ring keeps the process's last warnings and errors, whatever the log level
// lets through to the log itself. Safe for concurrent use; the zero Ring is
// empty and ready.
type Ring struct {
	mu    sync.Mutex
	lines [RingLines]Line
	next  int // where the next line goes
	n     int // lines held, up to RingLines
}

func (r *Ring) add(l Line) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines[r.next] = l
	r.next = (r.next + 1) % len(r.lines)
	r.n = min(r.n+1, len(r.lines))
}

// Recent returns the lines held, oldest first.
func (r *Ring) Recent() []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Line, 0, r.n)
	for i := range r.n {
		out = append(out, r.lines[(r.next-r.n+i+len(r.lines))%len(r.lines)])
	}
	return out
}

// ringHandler passes every record to the next handler and keeps the
// warnings and errors in its ring.
type ringHandler struct {
	next  slog.Handler
	ring  *Ring
	attrs attrs
}

// WithRing wraps h so that ring keeps its warnings and errors, even those
// h's level hides.
func WithRing(h slog.Handler, ring *Ring) slog.Handler { return &ringHandler{next: h, ring: ring} }

// RingOf is the ring a logger's handler keeps (WithRing), nil if it keeps
// none.
func RingOf(l *slog.Logger) *Ring {
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
func (h *ringHandler) line(r slog.Record) Line {
	l := Line{Time: r.Time, Level: r.Level.String(), Message: r.Message}
	if l.Time.IsZero() {
		l.Time = time.Now()
	}
	var errs, rest []string
	h.attrs.each(r, func(key string, v slog.Value) {
		switch {
		case key == "link" && l.Link == "":
			l.Link = v.String()
		case key == "err" || key == "error":
			errs = append(errs, key+"="+v.String())
		default:
			rest = append(rest, key+"="+text(v))
		}
	})
	l.Detail = strings.Join(append(errs, rest...), " ")
	return l
}

func (h *ringHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = h.attrs.with(as)
	return &c
}

func (h *ringHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.attrs = h.attrs.in(name)
	return &c
}
