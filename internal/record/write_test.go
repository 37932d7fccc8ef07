package record

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An output folder that takes no file is refused by New, before any
// packet, with the path and the reason in a user's words; nothing is left.
func TestNewRefusesFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "somefile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ out, want string }{
		{filepath.Join(dir, "none", "run.csv"), "the folder " + filepath.Join(dir, "none") + " does not exist; create it or choose another -out"},
		{filepath.Join(file, "run.csv"), file + " is a file, not a folder"},
		{filepath.Join(dir, "none", "run.mat"), "does not exist"},
	}
	if fi, err := os.Stat("/proc/self"); err == nil && fi.IsDir() {
		cases = append(cases, struct{ out, want string }{"/proc/run.csv", "files cannot be created in /proc"})
	}
	for _, c := range cases {
		cfg := Config{Out: c.out}
		if strings.HasSuffix(c.out, ".mat") {
			cfg.Mat = c.out
		}
		r, err := New(cfg)
		if r != nil || !errors.Is(err, ErrWrite) || !strings.Contains(err.Error(), "record: cannot write "+c.out+": ") ||
			!strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrWrite naming it and %q", c.out, err, c.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left in the folder: %v", left)
	}
}

// A link's CSV that cannot be created stops the recorder: the error names
// the file, every later packet returns it, no stream shows a path, and
// Close returns it without a panic, however many times it is called.
func TestOpenFailureStops(t *testing.T) {
	for _, held := range []bool{false, true} {
		calls := 0
		r, err := New(Config{Out: "/x/run.csv", Create: func(string) (io.WriteCloser, error) {
			calls++
			return nil, &os.PathError{Op: "open", Path: "/x/run.emio.csv", Err: syscall.ENOENT}
		}})
		if err != nil {
			t.Fatal(err)
		}
		d := desc()
		if held {
			d = nil // no descriptor: the stream is opened by Close
		}
		for i := range 3 {
			err = r.Packet(packet(t, 7, uint16(i), i, d), src, time.Now())
			if !held && (!errors.Is(err, ErrWrite) || !strings.Contains(err.Error(), "cannot write /x/run.emio.csv: the folder /x does not exist")) {
				t.Errorf("packet %d: %v", i, err)
			}
		}
		if st, _ := r.Streams(); len(st) != 1 || st[0].Path != "" || st[0].Rows != 0 {
			t.Errorf("streams %+v", st)
		}
		for range 2 {
			err := r.Close()
			name := "/x/run.emio.csv"
			if held {
				name = "/x/run.ssrc_00000007.csv"
			}
			if !errors.Is(err, ErrWrite) || !strings.Contains(err.Error(), "cannot write "+name) {
				t.Errorf("held %v: Close: %v", held, err)
			}
		}
		if calls != 1 {
			t.Errorf("held %v: %d creates, want 1", held, calls)
		}
	}
}

// fullFile takes limit bytes, then writes part of what it is given and
// fails as a full disk does; it can be cut back as a file can.
type fullFile struct {
	b     bytes.Buffer
	limit int
}

func (f *fullFile) Write(p []byte) (int, error) {
	if f.b.Len()+len(p) <= f.limit {
		return f.b.Write(p)
	}
	n := f.limit - f.b.Len()
	f.b.Write(p[:n])
	return n, &os.PathError{Op: "write", Path: "run.emio.csv", Err: syscall.ENOSPC}
}

func (f *fullFile) Truncate(n int64) error { f.b.Truncate(int(n)); return nil }
func (f *fullFile) Close() error           { return nil }

// A disk that fills during the run stops the recorder: the file keeps its
// header and every whole row, no half row, and the error says how many
// rows are in which file.
func TestWriteFailureKeepsRows(t *testing.T) {
	f := &fullFile{limit: 400}
	r, err := New(Config{Out: "/x/run.csv", Create: func(string) (io.WriteCloser, error) { return f, nil }})
	if err != nil {
		t.Fatal(err)
	}
	var stop error
	for i := 0; i < 100 && stop == nil; i++ {
		stop = r.Packet(packet(t, 7, uint16(i), i, desc()), src, time.Now())
	}
	lines := strings.Split(f.b.String(), "\n")
	rows := len(lines) - 2 // the header, and "" after the last newline
	if lines[len(lines)-1] != "" || rows < 1 {
		t.Fatalf("the file ends with a half row or has none: %q", f.b.String())
	}
	want := "record: writing /x/run.emio.csv stopped after " + strconv.Itoa(rows) + " rows, which are in the file: the disk is full"
	if !errors.Is(stop, ErrWrite) || !errors.Is(stop, syscall.ENOSPC) || !strings.HasPrefix(stop.Error(), want) {
		t.Errorf("error %v, want %q", stop, want)
	}
	if st, _ := r.Streams(); st[0].Rows != uint64(rows) {
		t.Errorf("streams say %d rows, the file has %d", st[0].Rows, rows)
	}
	if err := r.Close(); err != stop {
		t.Errorf("Close: %v, want %v", err, stop)
	}
}

// /dev/full, a real full device: the header cannot be written, and the
// recorder stops with the disk-full message.
func TestDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	r, err := New(Config{Out: "/x/run.csv", Create: func(string) (io.WriteCloser, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Packet(packet(t, 7, 0, 0, desc()), src, time.Now())
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "writing /x/run.emio.csv stopped after 0 rows") {
		t.Errorf("got %v", err)
	}
	if err := r.Close(); !errors.Is(err, ErrWrite) {
		t.Errorf("Close: %v", err)
	}
}

// A MAT-file whose assembly fails leaves the older file whole and no
// temporary file; a write error during the run leaves no MAT-file at all
// and no spill.
func TestMATFailureKeepsOlder(t *testing.T) {
	dir := t.TempDir()
	mat := filepath.Join(dir, "run.mat")
	old := []byte("an older MAT-file")
	if err := os.WriteFile(mat, old, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Out: mat, Mat: mat})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := r.Packet(packet(t, 7, uint16(i), i, desc()), src, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	// The spill gone: assembly fails part way.
	spills, _ := filepath.Glob(filepath.Join(dir, ".emio-*.spill"))
	if len(spills) != 1 {
		t.Fatalf("spills %v", spills)
	}
	os.Remove(spills[0])
	if err := r.Close(); !errors.Is(err, ErrWrite) || !strings.Contains(err.Error(), "cannot write "+mat) {
		t.Errorf("Close: %v", err)
	}
	if b, _ := os.ReadFile(mat); !bytes.Equal(b, old) {
		t.Errorf("the older MAT-file is now %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "run.emio.csv")); err != nil || strings.Count(string(b), "\n") != 11 {
		t.Errorf("the CSV: %v, %d lines", err, strings.Count(string(b), "\n"))
	}
}

// A disk that fills while the MAT-file is assembled (a small tmpfs, filled
// before Close; root only) leaves the older MAT-file whole, no temporary
// file, and says the disk is full.
func TestMATDiskFullKeepsOlder(t *testing.T) {
	dir := t.TempDir()
	if os.Geteuid() != 0 {
		t.Skip("a full disk needs a small tmpfs, which only root can mount")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for a full disk (%v: %s): run as root where mount works", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	mat := filepath.Join(dir, "run.mat")
	old := []byte("an older MAT-file")
	if err := os.WriteFile(mat, old, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Out: filepath.Join(t.TempDir(), "run.csv"), Mat: mat})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := r.Packet(packet(t, 7, uint16(i), i, desc()), src, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	filler, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = filler.Write(make([]byte, 4096))
	}
	filler.Close()
	if err := r.Close(); !errors.Is(err, ErrWrite) || !errors.Is(err, syscall.ENOSPC) ||
		!strings.Contains(err.Error(), "cannot write "+mat+": the disk is full") {
		t.Errorf("Close: %v", err)
	}
	if b, _ := os.ReadFile(mat); !bytes.Equal(b, old) {
		t.Errorf("the older MAT-file is now %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

// Once a file could not be written, the progress line shows no progress:
// it says why the recording stopped.
func TestProgressAfterFailure(t *testing.T) {
	rec, err := New(Config{Out: "/x/run.csv", Create: func(p string) (io.WriteCloser, error) {
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.ENOENT}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Packet(packet(t, 7, 0, 0, desc()), src, time.Now()); !errors.Is(err, ErrWrite) {
		t.Fatalf("packet: %v", err)
	}
	if p := progress(rec); !strings.HasPrefix(p, "stopped: record: cannot write /x/run.emio.csv") || strings.Contains(p, "pkts") {
		t.Errorf("progress %q", p)
	}
	if err := rec.Close(); !errors.Is(err, ErrWrite) {
		t.Errorf("Close: %v", err)
	}
}
