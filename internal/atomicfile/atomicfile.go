// Package atomicfile writes a file whole or not at all. The data goes to a
// temporary file in the destination's folder (a rename within a file
// system is atomic), is synced to disk (a lab PC loses power), and is
// renamed over the destination only then: a failed or interrupted write
// leaves the file that was there whole, and no temporary file behind.
//
// It also owns the wording of why a file cannot be written, in a user's
// words, so that every command says a missing folder or a full disk alike.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Error is a file that was not written; the file that was at Path, if any,
// is as it was. Its message is "cannot write PATH: why; what to do", to
// follow the name of the package that was writing.
type Error struct {
	Path string
	Err  error
	// Flag is the command-line flag that named Path ("-out"), for the
	// advice; "" is "another place".
	Flag string
}

func (e *Error) Error() string {
	return "cannot write " + e.Path + ": " + Explain(e.Path, e.Flag, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNotFile is a destination that exists and is not a regular file (a
// device such as /dev/full, a pipe, a socket): renaming over it would
// replace it.
var ErrNotFile = errors.New("atomicfile: not a regular file")

// Write writes path with what write writes, whole or not at all, with
// permissions perm. The writer is buffered; write must not keep it.
func Write(path string, perm fs.FileMode, write func(io.Writer) error) error {
	p, err := Stage(path, perm, write)
	if err != nil {
		return err
	}
	return p.Commit()
}

// Pending is a file written whole and synced beside its destination, not
// yet in place: Commit puts it there, Discard removes it. A caller that
// writes several files stages them all before it commits any.
type Pending struct {
	path, tmp string
}

// Stage writes what write writes to a temporary file beside path, with
// permissions perm, and syncs it; path is not touched. On error nothing
// is left.
func Stage(path string, perm fs.FileMode, write func(io.Writer) error) (_ *Pending, err error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, &Error{Path: path, Err: ErrNotFile}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file private; perm is what the caller asked.
	if err := f.Chmod(perm); err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	w := &sticky{w: bufio.NewWriterSize(f, 64<<10)}
	if err := write(w); err != nil {
		// A failed write to the file is the file's error, whatever write
		// made of it.
		if w.err != nil {
			err = w.err
		}
		return nil, &Error{Path: path, Err: err}
	}
	if w.err != nil {
		return nil, &Error{Path: path, Err: w.err}
	}
	if err := w.w.Flush(); err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	if err := f.Sync(); err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	if err := f.Close(); err != nil {
		return nil, &Error{Path: path, Err: err}
	}
	return &Pending{path: path, tmp: tmp}, nil
}

// Path is the destination.
func (p *Pending) Path() string { return p.path }

// Commit renames the file into place. On error the temporary file is
// removed and the destination is as it was.
func (p *Pending) Commit() error {
	if err := os.Rename(p.tmp, p.path); err != nil {
		os.Remove(p.tmp)
		return &Error{Path: p.path, Err: err}
	}
	return nil
}

// Discard removes the staged file; the destination is untouched.
func (p *Pending) Discard() { os.Remove(p.tmp) }

// Flagged is err, as Write returns it, with its advice naming flag, the
// command-line flag that named the file; an error that is not an *Error is
// returned as it is.
func Flagged(err error, flag string) error {
	var e *Error
	if errors.As(err, &e) {
		f := *e
		f.Flag = flag
		return &f
	}
	return err
}

// WriteBytes writes data to path, whole or not at all.
func WriteBytes(path string, perm fs.FileMode, data []byte) error {
	return Write(path, perm, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// sticky remembers the first error of the file's writer, so that a write
// func that drops or rewords it cannot hide a full disk.
type sticky struct {
	w   *bufio.Writer
	err error
}

func (s *sticky) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// Explain says in a user's words why path could not be created or written,
// and what to do. flag names what the user changes to write elsewhere
// ("-out"); "" is "another place".
func Explain(path, flag string, err error) string {
	other := flag
	if other == "" {
		other = "place"
	}
	dir := filepath.Dir(path)
	switch {
	case errors.Is(err, ErrNotFile):
		return fmt.Sprintf("%s is a device, a pipe or a socket, not a file, and stays as it is; choose another %s", path, other)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the disk is full; free some space or write elsewhere"
	case errors.Is(err, syscall.EROFS):
		return fmt.Sprintf("the folder %s is on a read-only file system; choose another %s", dir, other)
	case errors.Is(err, syscall.ENOTDIR):
		if f := fileInPath(dir); f != "" {
			return fmt.Sprintf("%s is a file, not a folder; choose another %s", f, other)
		}
		return fmt.Sprintf("%s is not a folder; choose another %s", dir, other)
	case errors.Is(err, syscall.EISDIR), (errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY)) && isDir(path):
		// A rename over a folder that holds files says EEXIST.
		if flag == "" {
			return fmt.Sprintf("%s is a folder; name a file in it", path)
		}
		return fmt.Sprintf("%s is a folder; give %s a file name in it", path, flag)
	case errors.Is(err, fs.ErrNotExist):
		if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
			return fmt.Sprintf("the folder %s does not exist; create it or choose another %s", dir, other)
		}
		return fmt.Sprintf("files cannot be created in %s (%v); choose another %s", dir, err, other)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("the folder %s is not writable by this user; choose another %s", dir, other)
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Sprintf("%v; choose another %s", err, other)
	}
	// Not the file system's: the data could not be made, and another
	// place would not help.
	return err.Error()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// fileInPath is the nearest ancestor of dir that exists and is not a
// folder, or "".
func fileInPath(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			if !fi.IsDir() {
				return d
			}
			return ""
		}
		if p := filepath.Dir(d); p == d {
			return ""
		}
	}
}
