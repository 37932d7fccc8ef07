// Package logging is the bridge's log: the service's logger as its
// configuration and its output ask (New), a terminal's short lines
// (NewTerminal), systemd's journal priorities, and the ring of the last
// warnings that the status page shows (Ring). Every handler flattens a
// record's attributes the same way (flatten).
//
// The journal reads a service's standard error (sd-daemon(3),
// systemd.exec(5) JOURNAL_STREAM; docs/faults.md §4): a line that starts
// with "<N>" gets syslog priority N, so that `journalctl -p warning` finds
// the warnings. Without the prefix every line is logged at the unit's
// default priority (info).
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Syslog priorities (RFC 5424 §6.2.1) that slog levels map to.
const (
	PriorityErr     = 3
	PriorityWarning = 4
	PriorityInfo    = 6
	PriorityDebug   = 7
)

// Attached reports whether f is the stream systemd connected to the
// journal: JOURNAL_STREAM (its value passed as stream) is "device:inode"
// of that stream, and f must be the same file, not a pipe a wrapper put in
// between.
func Attached(f *os.File, stream string) bool {
	if f == nil || stream == "" {
		return false
	}
	var dev, ino uint64
	if n, err := fmt.Sscanf(stream, "%d:%d", &dev, &ino); n != 2 || err != nil {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return uint64(st.Dev) == dev && st.Ino == ino
}

// Priority is the syslog priority of a slog level.
func Priority(l slog.Level) int {
	switch {
	case l >= slog.LevelError:
		return PriorityErr
	case l >= slog.LevelWarn:
		return PriorityWarning
	case l >= slog.LevelInfo:
		return PriorityInfo
	}
	return PriorityDebug
}

// NewJournal returns a handler that writes each record through the handler
// made by inner on w, with the record's priority prefixed to its line.
// inner must write one record in one Write call, as slog's text and JSON
// handlers do.
func NewJournal(w io.Writer, inner func(io.Writer) slog.Handler) slog.Handler {
	pw := &prefixWriter{w: w}
	return &handler{mu: new(sync.Mutex), pw: pw, h: inner(pw)}
}

type handler struct {
	// mu makes the priority and the Write that follows one step: slog's
	// handlers serialise their writes, but the priority is set outside.
	mu *sync.Mutex
	pw *prefixWriter
	h  slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pw.prio = byte('0' + Priority(r.Level))
	return h.h.Handle(ctx, r)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{mu: h.mu, pw: h.pw, h: h.h.WithAttrs(as)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{mu: h.mu, pw: h.pw, h: h.h.WithGroup(name)}
}

type prefixWriter struct {
	w    io.Writer
	prio byte
	buf  []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(append(p.buf[:0], '<', p.prio, '>'), b...)
	if _, err := p.w.Write(p.buf); err != nil {
		return 0, err
	}
	return len(b), nil
}
