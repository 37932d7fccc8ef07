package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// only says what dir holds, so that a test can check no temporary file is
// left.
func only(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A write replaces the file whole, with the permissions asked, and leaves
// nothing else in the folder.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bridge.toml")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(p, 0o644, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if got := content(t, p); got != "new\n" {
		t.Errorf("content %q", got)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v %v", st.Mode(), err)
	}
	big := bytes.Repeat([]byte("0123456789"), 100000) // more than the buffer
	if err := Write(p, 0o755, func(w io.Writer) error { _, err := w.Write(big); return err }); err != nil {
		t.Fatal(err)
	}
	if got := content(t, p); got != string(big) {
		t.Errorf("a large file: %d bytes, want %d", len(got), len(big))
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o755 {
		t.Errorf("mode %v", st.Mode())
	}
	only(t, dir, "bridge.toml")
}

// The write func fails half way: the old file is whole, no temporary file
// is left, and the error names the path and wraps the cause.
func TestWriteFuncErrorKeepsOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	if err := os.WriteFile(p, []byte("old page"), 0o644); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("plot: no data")
	err := Write(p, 0o644, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("x"), 200000)) // some of it reaches the file
		return cause
	})
	var ae *Error
	if !errors.As(err, &ae) || ae.Path != p || !errors.Is(err, cause) ||
		err.Error() != "cannot write "+p+": plot: no data" {
		t.Errorf("error %v", err)
	}
	if got := content(t, p); got != "old page" {
		t.Errorf("old file now %d bytes", len(got))
	}
	only(t, dir, "report.html")
}

// A folder that does not exist, or a file where a folder should be, is
// said as such.
func TestWriteMissingFolder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "none", "bridge.toml")
	err := WriteBytes(p, 0o644, []byte("x"))
	want := "cannot write " + p + ": the folder " + filepath.Join(dir, "none") + " does not exist; create it or choose another place"
	if !errors.Is(err, fs.ErrNotExist) || err == nil || err.Error() != want {
		t.Errorf("error %v\nwant %s", err, want)
	}
	if err := Flagged(err, "-out"); err.Error() != strings.Replace(want, "another place", "another -out", 1) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("flagged: %v", err)
	}
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = WriteBytes(filepath.Join(file, "x.toml"), 0o644, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), file+" is a file, not a folder") {
		t.Errorf("a file as folder: %v", err)
	}
	// A folder where the file should be, empty or not.
	for _, inside := range []bool{false, true} {
		p := filepath.Join(dir, "afolder")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if inside {
			if err := os.WriteFile(filepath.Join(p, "keep"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err = WriteBytes(p, 0o644, []byte("x"))
		if err == nil || !strings.HasSuffix(err.Error(), p+" is a folder; name a file in it") {
			t.Errorf("a folder in the way (files in it: %v): %v", inside, err)
		}
	}
	only(t, dir, "afile", "afolder")
}

// A place no file can be created in: /proc takes none even from root.
func TestWriteUnwritableProc(t *testing.T) {
	if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
		t.Skip("no /proc on this system: the case needs Linux's /proc mounted")
	}
	err := WriteBytes("/proc/bridge.toml", 0o644, []byte("x"))
	if err == nil || !strings.HasPrefix(err.Error(), "cannot write /proc/bridge.toml: files cannot be created in /proc") {
		t.Errorf("/proc: %v", err)
	}
}

// A folder without write permission takes no file from a user other than
// root. Root writes in any folder, so as root the check runs in a copy of
// this test binary started as user nobody.
func TestWriteUnwritable(t *testing.T) {
	if os.Getenv("ATOMICFILE_AS_NOBODY") != "" {
		writeUnwritable(t, os.Getenv("ATOMICFILE_AS_NOBODY"))
		return
	}
	if os.Geteuid() != 0 {
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		writeUnwritable(t, dir)
		return
	}
	// A folder everyone may enter, holding the binary and the read-only
	// folder: t.TempDir's parents are closed to other users.
	top, err := os.MkdirTemp("", "atomicfile-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	test := filepath.Join(top, "atomicfile.test")
	if err := os.WriteFile(test, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(test, "-test.run=^TestWriteUnwritable$", "-test.v")
	cmd.Env = append(os.Environ(), "ATOMICFILE_AS_NOBODY="+dir, "GOCOVERDIR=")
	cmd.Dir = top
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestWriteUnwritable") {
		t.Errorf("as user nobody (uid 65534): %v\n%s", err, out)
	}
}

func writeUnwritable(t *testing.T, dir string) {
	t.Helper()
	err := WriteBytes(filepath.Join(dir, "a.toml"), 0o644, []byte("x"))
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), "the folder "+dir+" is not writable by this user") {
		t.Errorf("read-only folder: %v", err)
	}
}

// A disk that fills part way: a small tmpfs (root only), then the wording
// with the error injected, as a write func sees it.
func TestWriteDiskFull(t *testing.T) {
	t.Run("tmpfs", func(t *testing.T) {
		dir := t.TempDir()
		if os.Geteuid() != 0 {
			t.Skip("a full disk needs a small tmpfs, which only root can mount")
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs for a full disk (%v: %s): run as root where mount works", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", dir).Run() })
		p := filepath.Join(dir, "run.mat")
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Write(p, 0o644, func(w io.Writer) error {
			for range 64 {
				if _, err := w.Write(make([]byte, 4096)); err != nil {
					return errors.New("matfile: short write") // rewords the cause
				}
			}
			return nil
		})
		if !errors.Is(err, syscall.ENOSPC) || err.Error() != "cannot write "+p+": the disk is full; free some space or write elsewhere" {
			t.Errorf("error %v", err)
		}
		if got := content(t, p); got != "old" {
			t.Errorf("old file now %q", got)
		}
		only(t, dir, "run.mat")
	})
	t.Run("injected", func(t *testing.T) {
		full := &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
		if got := Explain("/x/run.csv", "-out", full); got != "the disk is full; free some space or write elsewhere" {
			t.Errorf("ENOSPC: %q", got)
		}
		if got := Explain("/x/run.csv", "-out", &os.PathError{Op: "open", Path: "/x/run.csv", Err: syscall.EROFS}); got != "the folder /x is on a read-only file system; choose another -out" {
			t.Errorf("EROFS: %q", got)
		}
		if got := Explain("/x/run.csv", "", &os.PathError{Op: "open", Path: "/x/run.csv", Err: syscall.EIO}); got != "open /x/run.csv: input/output error; choose another place" {
			t.Errorf("EIO: %q", got)
		}
	})
}

// A staged file is beside its destination, not in it, until Commit;
// Discard leaves the destination as it was and nothing else.
func TestStage(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "bridge@.service")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }
	st, err := Stage(p, 0o644, write)
	if err != nil {
		t.Fatal(err)
	}
	if got := content(t, p); got != "old" || st.Path() != p {
		t.Errorf("staged: the destination is %q", got)
	}
	st.Discard()
	only(t, dir, "bridge@.service")
	if got := content(t, p); got != "old" {
		t.Errorf("discarded: %q", got)
	}
	if st, err = Stage(p, 0o644, write); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, p); got != "new" {
		t.Errorf("committed: %q", got)
	}
	only(t, dir, "bridge@.service")
}

// A destination that is not a regular file (a pipe here; a device such as
// /dev/full alike) is refused and left as it is: a rename would replace it.
func TestWriteRefusesNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	err := Write(fifo, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
	var ae *Error
	if !errors.Is(err, ErrNotFile) || !errors.As(err, &ae) || !strings.Contains(err.Error(), fifo+" is a device, a pipe or a socket, not a file, and stays as it is") {
		t.Fatalf("Write: %v", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", fi.Mode(), err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left in the folder: %v", left)
	}
}
