package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/labbridge/bridge/internal/atomicfile"
)

// txn is an install's changes to the system, all or nothing: planned
// (write, copy, note), then staged (every file written and synced beside
// its place, and the file it replaces saved beside it), placed (renamed
// in, in order), and taken up by the commands; an interrupt or a failure
// undoes what was done.
type txn struct {
	out    io.Writer
	result *Result
	step   func(string)
	items  []item
	dirs   []string // folders made by the staging, parents first
	placed int      // items[:placed] are done
}

// item is a line to say or a file to put in place, said when placed.
type item struct {
	line string
	path string // "" for a note
	mode fs.FileMode
	data []byte
	from string // a file to copy instead of data

	staged *atomicfile.Pending
	backup *atomicfile.Pending // the file that was at path, to put back
}

func (t *txn) note(format string, args ...any) {
	t.items = append(t.items, item{line: fmt.Sprintf(format, args...)})
}

func (t *txn) write(path string, data []byte, mode fs.FileMode, line string) {
	t.items = append(t.items, item{line: line, path: path, mode: mode, data: data})
}

func (t *txn) copy(path, from string, mode fs.FileMode, line string) {
	t.items = append(t.items, item{line: line, path: path, mode: mode, from: from})
}

func (t *txn) say(line string) {
	t.result.Actions = append(t.result.Actions, line)
	fmt.Fprintln(t.out, line)
}

// at is the point before a step: the test hook, then whether to go on.
func (t *txn) at(ctx context.Context, step string) error {
	if t.step != nil {
		t.step(step)
	}
	return ctx.Err()
}

// do stages every file, places them all, then runs cmds with run; when
// one step fails or ctx is done it undoes the others and says so.
func (t *txn) do(ctx context.Context, cmds [][]string, run func(context.Context, []string) error) error {
	if err := t.stage(ctx); err != nil {
		t.discard()
		if ctx.Err() != nil {
			return fmt.Errorf("install: interrupted before any file was placed; nothing was changed: %w", err)
		}
		return fmt.Errorf("install: %w; nothing was changed%s", err, rootAdvice(err))
	}
	if err := t.place(ctx); err != nil {
		undone := t.undo()
		if ctx.Err() != nil {
			return fmt.Errorf("install: interrupted while placing the files; %s: %w", undone, err)
		}
		return fmt.Errorf("install: %w; %s%s", err, undone, rootAdvice(err))
	}
	for i, c := range cmds {
		line := strings.Join(c, " ")
		err := t.at(ctx, "run "+line)
		if err == nil {
			fmt.Fprintf(t.out, "running %s\n", line)
			err = run(ctx, c)
		}
		if err == nil {
			continue
		}
		undone := t.undo()
		t.reload(ctx, cmds[:i], run)
		if ctx.Err() != nil {
			return fmt.Errorf("install: interrupted at %s; %s: %w", line, undone, ctx.Err())
		}
		return fmt.Errorf("%w: %s: %w; %s (bridge install without -run-systemctl prints the commands to run by hand)", ErrCommand, line, err, undone)
	}
	t.discardBackups()
	return nil
}

// rootAdvice is what to do about a file that cannot be written.
func rootAdvice(err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return " (run as root, or give -root DIR for a staged install)"
	}
	return ""
}

// stage writes every file beside its place and saves each file it will
// replace; nothing is in place yet.
func (t *txn) stage(ctx context.Context) error {
	for i := range t.items {
		it := &t.items[i]
		if it.path == "" {
			continue
		}
		if err := t.at(ctx, "stage "+it.path); err != nil {
			return err
		}
		if err := t.mkdirs(filepath.Dir(it.path)); err != nil {
			return err
		}
		if fi, err := os.Stat(it.path); err == nil && fi.Mode().IsRegular() {
			b, err := atomicfile.Stage(it.path, fi.Mode().Perm(), func(w io.Writer) error { return copyFrom(w, it.path) })
			if err != nil {
				return fmt.Errorf("save the file to replace: %w", err)
			}
			it.backup = b
		}
		write := func(w io.Writer) error { _, err := w.Write(it.data); return err }
		if it.from != "" {
			write = func(w io.Writer) error { return copyFrom(w, it.from) }
		}
		s, err := atomicfile.Stage(it.path, it.mode, write)
		if err != nil {
			return err
		}
		it.staged = s
	}
	return nil
}

func copyFrom(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// mkdirs makes dir and its missing parents, remembering them for undo.
func (t *txn) mkdirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil {
			return &atomicfile.Error{Path: missing[i], Err: err}
		}
		t.dirs = append(t.dirs, missing[i])
	}
	return nil
}

// place renames the staged files into place in order, saying each.
func (t *txn) place(ctx context.Context) error {
	for ; t.placed < len(t.items); t.placed++ {
		it := &t.items[t.placed]
		if it.path != "" {
			if err := t.at(ctx, "place "+it.path); err != nil {
				return err
			}
			if err := it.staged.Commit(); err != nil {
				return err
			}
			it.staged = nil
		}
		t.say(it.line)
	}
	return nil
}

// undo puts back the files that were replaced, removes those that were
// new and the folders made, newest first, and says what it did.
func (t *txn) undo() string {
	var failed []string
	restored, removed := 0, 0
	for i := t.placed - 1; i >= 0; i-- {
		it := &t.items[i]
		switch {
		case it.path == "":
		case it.backup != nil:
			if err := it.backup.Commit(); err != nil {
				failed = append(failed, err.Error())
				continue
			}
			it.backup = nil
			restored++
			fmt.Fprintf(t.out, "put back the previous %s\n", it.path)
		default:
			if err := os.Remove(it.path); err != nil {
				failed = append(failed, err.Error())
				continue
			}
			removed++
			fmt.Fprintf(t.out, "removed %s\n", it.path)
		}
	}
	t.placed = 0
	t.discard()
	if len(failed) > 0 {
		return fmt.Sprintf("not every file could be put back as it was (%s): fix them by hand", strings.Join(failed, "; "))
	}
	return fmt.Sprintf("every file is as it was before (%d put back, %d new removed)", restored, removed)
}

// discard removes what was staged and not placed, and the folders made
// that are empty again.
func (t *txn) discard() {
	for i := range t.items {
		it := &t.items[i]
		if it.staged != nil {
			it.staged.Discard()
			it.staged = nil
		}
	}
	t.discardBackups()
	for i := len(t.dirs) - 1; i >= 0; i-- {
		os.Remove(t.dirs[i]) // only when empty: a file of another's stays
	}
	t.dirs = nil
}

func (t *txn) discardBackups() {
	for i := range t.items {
		if b := t.items[i].backup; b != nil {
			b.Discard()
			t.items[i].backup = nil
		}
	}
}

// isReload says whether line is one of Commands that make systemd and
// udev read the files again: after an undo they read the files put back.
func isReload(line string) bool {
	return line == "udevadm control --reload" || line == "systemctl daemon-reload"
}

// reload runs again, after an undo, the reload commands among ran, even
// when interrupted, for a bounded time.
func (t *txn) reload(ctx context.Context, ran [][]string, run func(context.Context, []string) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, c := range ran {
		line := strings.Join(c, " ")
		if !isReload(line) {
			continue
		}
		fmt.Fprintf(t.out, "running %s again, for the files put back\n", line)
		if err := run(ctx, c); err != nil {
			fmt.Fprintf(t.out, "%s: %v: run it by hand\n", line, err)
		}
	}
}
