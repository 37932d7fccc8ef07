package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snapshot is every file and folder under root with its mode and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			m[p] = fmt.Sprintf("dir %v", fi.Mode())
			return nil
		}
		b, err := os.ReadFile(p)
		m[p] = fmt.Sprintf("%v %q %v", fi.Mode(), b, err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if before[p] != after[p] {
			t.Errorf("%s: %s is %s, was %q", what, p, after[p], before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: %s is gone", what, p)
		}
	}
}

// fakeRunner records the commands run and fails the one named fail.
type fakeRunner struct {
	ran  []string
	fail string
}

func (f *fakeRunner) run(_ context.Context, argv []string) error {
	line := strings.Join(argv, " ")
	f.ran = append(f.ran, line)
	if line == f.fail {
		return errors.New("exit status 1")
	}
	return nil
}

// states are the roots an install starts from: an empty machine, and one
// with an older install of every file, which -force replaces.
func states(t *testing.T) map[string]func(t *testing.T) (lab, Options) {
	return map[string]func(t *testing.T) (lab, Options){
		"empty": func(t *testing.T) (lab, Options) {
			l := newLab(t)
			if err := os.MkdirAll(l.root, 0o755); err != nil {
				t.Fatal(err)
			}
			o := l.options("a")
			o.RunCommands = true
			return l, o
		},
		"older install": func(t *testing.T) (lab, Options) {
			l := newLab(t)
			for _, p := range []string{BinaryPath, UnitPath, RulesPath, SysusersPath, AdapterRulesPath("a"), ConfigPath("a"),
				EmioapiDir("a") + "/camera_2d_points.csv", EmioapiDir("a") + "/cameraparameter.json"} {
				mustWrite(t, filepath.Join(l.root, p), "older "+p+"\n")
			}
			os.Chmod(filepath.Join(l.root, BinaryPath), 0o700)
			o := l.options("a")
			o.RunCommands, o.Force = true, true
			return l, o
		},
	}
}

// steps are the steps of a whole install from the state.
func steps(t *testing.T, state func(t *testing.T) (lab, Options)) []string {
	l, o := state(t)
	var all []string
	o.Step = func(s string) { all = append(all, s) }
	o.Runner = (&fakeRunner{}).run
	if _, _, err := l.install(t, o); err != nil {
		t.Fatal(err)
	}
	return all
}

// An interrupt at any step of bridge install (staging a file, renaming one
// into place, running a command) leaves the root exactly as it was: no
// temporary file, no new folder, every replaced file back with its mode;
// the error wraps context.Canceled and says what was undone.
func TestInstallInterruptedAtEachStep(t *testing.T) {
	for name, state := range states(t) {
		all := steps(t, state)
		for _, kind := range []string{"stage ", "place ", "run "} {
			if !slices.ContainsFunc(all, func(s string) bool { return strings.HasPrefix(s, kind) }) {
				t.Fatalf("%s: no %q step among %q", name, kind, all)
			}
		}
		for i, at := range all {
			l, o := state(t)
			before := snapshot(t, l.root)
			ctx, cancel := context.WithCancel(context.Background())
			n := 0
			o.Step = func(string) {
				if n == i {
					cancel()
				}
				n++
			}
			fr := &fakeRunner{}
			o.Runner = fr.run
			var out bytes.Buffer
			_, err := Install(ctx, o, &out)
			cancel()
			what := name + ", interrupted at " + at
			if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "install: interrupted") {
				t.Errorf("%s: %v", what, err)
				continue
			}
			if strings.HasPrefix(at, "stage ") != strings.Contains(err.Error(), "nothing was changed") ||
				!strings.HasPrefix(at, "stage ") && !strings.Contains(err.Error(), "every file is as it was before") {
				t.Errorf("%s: %v", what, err)
			}
			sameTree(t, what, before, snapshot(t, l.root))
			// What systemd and udev read, they read again once the files
			// are back.
			if slices.Contains(fr.ran, "systemctl daemon-reload") && fr.ran[len(fr.ran)-1] != "systemctl daemon-reload" {
				t.Errorf("%s: the daemon was not reloaded after the undo: %q", what, fr.ran)
			}
		}
	}
}

// A command that fails after the files are in place puts them back, and
// the error names it and says the files are as they were.
func TestInstallCommandFailsPutsBack(t *testing.T) {
	for name, state := range states(t) {
		for _, c := range Commands("a") {
			line := strings.Join(c, " ")
			l, o := state(t)
			before := snapshot(t, l.root)
			fr := &fakeRunner{fail: line}
			o.Runner = fr.run
			_, out, err := l.install(t, o)
			what := name + ", " + line + " failing"
			if !errors.Is(err, ErrCommand) || errors.Is(err, context.Canceled) ||
				!strings.Contains(err.Error(), line+": exit status 1; every file is as it was before") {
				t.Errorf("%s: %v", what, err)
			}
			if !strings.Contains(out, "put back the previous") && !strings.Contains(out, "removed $ROOT") {
				t.Errorf("%s: the output does not say what was undone:\n%s", what, out)
			}
			sameTree(t, what, before, snapshot(t, l.root))
		}
	}
}

// A file that cannot be staged (a file where a folder must be) or placed
// (a folder with files where a file must go) changes nothing.
func TestInstallWriteFailureChangesNothing(t *testing.T) {
	l := newLab(t)
	mustWrite(t, filepath.Join(l.root, "etc/sysusers.d"), "not a folder\n")
	before := snapshot(t, l.root)
	_, _, err := l.install(t, l.options("a"))
	if err == nil || !strings.Contains(err.Error(), "is a file, not a folder") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("staging: %v", err)
	}
	sameTree(t, "staging", before, snapshot(t, l.root))

	l = newLab(t)
	mustWrite(t, filepath.Join(l.root, ConfigPath("a"), "keep"), "a file in a folder named like the configuration\n")
	o := l.options("a")
	o.Force = true
	before = snapshot(t, l.root)
	_, _, err = l.install(t, o)
	if err == nil || !strings.Contains(err.Error(), "is a folder") || !strings.Contains(err.Error(), "every file is as it was before") {
		t.Errorf("placing: %v", err)
	}
	sameTree(t, "placing", before, snapshot(t, l.root))
}
