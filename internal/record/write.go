package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/labbridge/bridge/internal/atomicfile"
)

// ErrWrite is an output that cannot be created or written: the recording
// stops there (docs/tap.md §5).
var ErrWrite = errors.New("record: cannot write")

// WriteError is an output file that could not be created (Opened false)
// or written (Opened true); Rows were written to it before the failure,
// whole, and are on disk.
type WriteError struct {
	Path   string
	Opened bool
	Rows   uint64
	Err    error
	// Flag is the command-line flag that named Path, for the advice; "" is
	// -out.
	Flag string
}

func (e *WriteError) Error() string {
	if !e.Opened {
		return fmt.Sprintf("record: cannot write %s: %s", e.Path, explain(e.Path, e.Flag, e.Err))
	}
	return fmt.Sprintf("record: writing %s stopped after %d rows, which are in the file: %s", e.Path, e.Rows, explain(e.Path, e.Flag, e.Err))
}

func (e *WriteError) Unwrap() []error { return []error{ErrWrite, e.Err} }

func explain(path, flag string, err error) string {
	if flag == "" {
		flag = "-out"
	}
	return atomicfile.Explain(path, flag, err)
}

// Probe creates and removes a file in the folder of path, so that a
// folder that is missing or takes no file is found before anything is
// recorded; the error is a *WriteError naming path. New does it for Out
// and Mat.
func Probe(path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".bridge-record-*.probe")
	if err != nil {
		return &WriteError{Path: path, Err: err}
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// truncater is a file that can be cut back to its last whole row after a
// write that failed part way.
type truncater interface{ Truncate(int64) error }

// rollback cuts w back to size, when it can, so that a failed write leaves
// no half row behind.
func rollback(w io.Writer, size int64) {
	if t, ok := w.(truncater); ok {
		_ = t.Truncate(size)
	}
}
