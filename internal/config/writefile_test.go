package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The calibration saved beside the frames is written whole or not at all:
// a failed write leaves the older file and nothing else, and says which
// file it was.
func TestWriteFileKeepsOlder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "camera_2d_points.csv")
	if err := writeFile(p, func(w io.Writer) error { _, err := io.WriteString(w, "1,2\n"); return err }); err != nil {
		t.Fatal(err)
	}
	broken := errors.New("sim: no calibration")
	err := writeFile(p, func(w io.Writer) error { io.WriteString(w, "3,"); return broken })
	if !errors.Is(err, broken) || !strings.HasPrefix(err.Error(), "config: cannot write "+p+": ") {
		t.Errorf("error %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "1,2\n" {
		t.Errorf("the older file is now %q", b)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left: %v", left)
	}
	missing := filepath.Join(dir, "none", "camera_2d_points.csv")
	if err := writeFile(missing, func(io.Writer) error { return nil }); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing folder: %v", err)
	}
}
