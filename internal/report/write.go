package report

import (
	"fmt"

	"github.com/labbridge/bridge/internal/atomicfile"
)

// WriteFile writes the page to path whole or not at all: a failed or
// interrupted write leaves an older page as it was and no half page. The
// error names path and says why, and wraps the file system's.
func (r *Report) WriteFile(path string) error {
	if err := atomicfile.Write(path, 0o644, r.WriteHTML); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
