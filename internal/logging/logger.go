package logging

import (
	"io"
	"log/slog"
)

// Options say which log a service writes.
type Options struct {
	// Format is "auto" (a terminal's short lines on a terminal, JSON
	// otherwise), "text" or "json".
	Format string
	Level  slog.Level
	// Terminal: w is a terminal a person reads.
	Terminal bool
	// Journal: w is the stream systemd connected to its journal
	// (Attached); each line then carries its priority.
	Journal bool
}

// New is the service's logger on w as o asks, with a Ring of its last
// warnings and errors (RingOf).
func New(w io.Writer, o Options) *slog.Logger {
	var h slog.Handler
	switch {
	case o.Journal:
		h = NewJournal(w, func(w io.Writer) slog.Handler { return o.handler(w, false) })
	case o.Format == "auto" && o.Terminal:
		h = NewTerminal(w, o.Level)
	default:
		h = o.handler(w, o.Terminal)
	}
	return slog.New(WithRing(h, &Ring{}))
}

func (o Options) handler(w io.Writer, terminal bool) slog.Handler {
	opts := &slog.HandlerOptions{Level: o.Level}
	if o.Format == "json" || (o.Format == "auto" && !terminal) {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}
