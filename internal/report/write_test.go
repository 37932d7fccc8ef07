package report

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// WriteFile replaces a page only with a whole one, and a failure leaves
// the older page as it was and nothing else in the folder.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	r := Build(&Recording{Name: "small", Links: []*Link{bigLink(100)}})
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := r.WriteHTML(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the page: %v, %d bytes, want %d", err, len(got), want.Len())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}

	// A folder in the way of the rename: the write fails at the end.
	blocked := filepath.Join(dir, "blocked.html")
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blocked, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile(blocked); err == nil {
		t.Error("a page written over a folder")
	}
	missing := filepath.Join(dir, "none", "report.html")
	if err := r.WriteFile(missing); !errors.Is(err, fs.ErrNotExist) ||
		err.Error() != "report: cannot write "+missing+": the folder "+filepath.Dir(missing)+" does not exist; create it or choose another place" {
		t.Errorf("missing folder: %v", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 2 {
		t.Errorf("left in the folder: %v", left)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, got) {
		t.Error("the older page changed")
	}
}
