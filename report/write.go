package report

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes the page to path through a temporary file beside it,
// renamed into place only when whole: a failed or interrupted write leaves
// an older page as it was and no half page. The error wraps the file
// system's, with path.
func (r *Report) WriteFile(path string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes it private; a page is for reading.
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	w := bufio.NewWriterSize(tmp, 1<<16)
	if err := r.WriteHTML(w); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return nil
}
