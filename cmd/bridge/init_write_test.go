package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// names lists dir, so that a test can check nothing was left behind.
func names(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range ents {
		n = append(n, e.Name())
	}
	return strings.Join(n, " ")
}

// bridge init -out that cannot be written: exit 1, a message naming the
// file with why and what to do, the file that was there whole, and no
// temporary file beside it. One case per failure.
func TestInitOutFailures(t *testing.T) {
	t.Run("missing folder", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "none", "bridge.toml")
		code, _, stderr := runCLI(t, "init", "-sim", "-out", out)
		want := "bridge init: cannot write " + out + ": the folder " + filepath.Dir(out) + " does not exist; create it or choose another -out"
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d\n%s\nwant %s", code, stderr, want)
		}
		if got := names(t, dir); got != "" {
			t.Errorf("left: %s", got)
		}
	})
	t.Run("a folder in the way", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "bridge.toml")
		if err := os.MkdirAll(filepath.Join(out, "keep"), 0o755); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI(t, "init", "-sim", "-force", "-out", out)
		if code != 1 || !strings.Contains(stderr, out+" is a folder; give -out a file name in it") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
		if got := names(t, dir); got != "bridge.toml" || names(t, out) != "keep" {
			t.Errorf("left: %s; the folder holds %s", got, names(t, out))
		}
	})
	t.Run("no file can be created", func(t *testing.T) {
		if fi, err := os.Stat("/proc/self"); err != nil || !fi.IsDir() {
			t.Skip("no /proc: a place no one can create a file in")
		}
		code, _, stderr := runCLI(t, "init", "-sim", "-out", "/proc/bridge.toml")
		if code != 1 || !strings.Contains(stderr, "bridge init: cannot write /proc/bridge.toml: files cannot be created in /proc") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
	})
	t.Run("disk full over a good file", func(t *testing.T) {
		dir := t.TempDir()
		if os.Geteuid() != 0 {
			t.Skip("a full disk needs a small tmpfs, which only root can mount")
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs for a full disk (%v: %s): run as root where mount works", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", dir).Run() })
		out := filepath.Join(dir, "bridge.toml")
		const good = "# a configuration that works\n"
		if err := os.WriteFile(out, []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
		filler, err := os.Create(filepath.Join(dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		for err == nil {
			_, err = filler.Write(make([]byte, 4096))
		}
		filler.Close()
		code, _, stderr := runCLI(t, "init", "-sim", "-force", "-out", out)
		if code != 1 || !strings.Contains(stderr, "bridge init: cannot write "+out+": the disk is full; free some space or write elsewhere") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
		if b, err := os.ReadFile(out); err != nil || string(b) != good {
			t.Errorf("%s is now %q, %v; want it as it was", out, b, err)
		}
		if got := names(t, dir); got != "bridge.toml filler" {
			t.Errorf("left: %s", got)
		}
	})
}
