package testutil_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// fakeTB records how a helper ended a test. Fatalf and Skipf end the
// goroutine, as the real ones do, so the helper under test runs in one of
// its own.
type fakeTB struct {
	testing.TB // the methods not overridden are never called
	mu         sync.Mutex
	fatal      string
	skip       string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skip = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn with a fake TB on a goroutine of its own and returns how it
// ended: the fatal and skip messages, empty when fn returned.
func run(fn func(testing.TB)) (fatal, skip string) {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fatal, f.skip
}

// Without BRIDGE_REQUIRE_PEERS a missing peer skips, naming the peer, the
// reason and the install command; with it set to 1 the test fails instead,
// saying the peer is required and how to install it.
func TestRequirePeerSkipsOrFails(t *testing.T) {
	missing := errors.New(`exec: "octave": executable file not found in $PATH`)
	for _, c := range []struct {
		env       string
		wantFatal bool
	}{{"", false}, {"0", false}, {"1", true}} {
		t.Run("env="+c.env, func(t *testing.T) {
			t.Setenv(testutil.RequireEnv, c.env)
			fatal, skip := run(func(tb testing.TB) {
				testutil.RequirePeer(tb, "GNU Octave", "apt-get install octave", missing)
			})
			got := skip
			if c.wantFatal {
				got = fatal
				if skip != "" || fatal == "" {
					t.Fatalf("fatal %q, skip %q: want a failure", fatal, skip)
				}
				if !strings.Contains(fatal, "is required (BRIDGE_REQUIRE_PEERS=1)") {
					t.Errorf("fatal %q does not say the peer is required", fatal)
				}
			} else if fatal != "" || skip == "" {
				t.Fatalf("fatal %q, skip %q: want a skip", fatal, skip)
			}
			for _, want := range []string{"GNU Octave", "apt-get install octave", "executable file not found"} {
				if !strings.Contains(got, want) {
					t.Errorf("message %q lacks %q", got, want)
				}
			}
		})
	}
}

// A python3 without the module asked for goes through RequirePeer, naming
// the module and the install command; so does a PATH without python3,
// naming python3.
func TestPythonMissing(t *testing.T) {
	testutil.Python(t, "apt-get install python3")
	t.Setenv(testutil.RequireEnv, "1")
	fatal, _ := run(func(tb testing.TB) {
		testutil.Python(tb, "pip install no-such-module", "json", "bridge_no_such_module_xyz")
	})
	for _, want := range []string{"python3 with json, bridge_no_such_module_xyz", "ModuleNotFoundError", "pip install no-such-module", "required"} {
		if !strings.Contains(fatal, want) {
			t.Errorf("fatal %q lacks %q", fatal, want)
		}
	}

	t.Setenv("PATH", t.TempDir())
	t.Setenv(testutil.RequireEnv, "")
	_, skip := run(func(tb testing.TB) { testutil.Python(tb, "pip install json", "json") })
	if !strings.Contains(skip, "python3 is not available") || !strings.Contains(skip, "apt-get install python3") {
		t.Errorf("skip %q does not name python3 and how to install it", skip)
	}
}

// Python returns a python3 that imports what was asked, and RunPython runs
// it, with its standard output and error apart.
func TestRunPython(t *testing.T) {
	py := testutil.Python(t, "apt-get install python3", "json", "sys")
	stdout, stderr, err := testutil.RunPython(t, py, "-c", `import sys; print("out", sys.argv[1]); print("err", file=sys.stderr); sys.exit(3)`, "arg")
	if string(stdout) != "out arg\n" || string(stderr) != "err\n" {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("err %v, want exit status 3", err)
	}
}

// WaitFor returns as soon as the condition holds, however many polls that
// takes; WaitForWithin fails past its bound, naming what it waited for.
func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	go func() {
		for n.Load() < 3 {
			n.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	testutil.WaitFor(t, "three steps", func() bool { return n.Load() >= 3 })

	fatal, _ := run(func(tb testing.TB) {
		testutil.WaitForWithin(tb, 10*time.Millisecond, "the impossible", func() bool { return false })
	})
	if !strings.Contains(fatal, "timed out waiting for the impossible") {
		t.Errorf("fatal %q", fatal)
	}
	fatal, _ = run(func(tb testing.TB) {
		testutil.WaitForWithin(tb, time.Nanosecond, "what already holds", func() bool { return true })
	})
	if fatal != "" {
		t.Errorf("a condition that holds failed: %q", fatal)
	}
}

// SyncBuffer takes writes from many goroutines while it is read, and
// Lines leaves out a line still being written.
func TestSyncBuffer(t *testing.T) {
	var b testutil.SyncBuffer
	var w io.Writer = &b
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				fmt.Fprintf(w, "g%d l%d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := b.Lines()
	if len(lines) != 8*50 {
		t.Fatalf("%d lines, want %d", len(lines), 8*50)
	}
	if !slices.Contains(lines, "g7 l49") || !b.Contains("g0 l0\n") {
		t.Errorf("lines lack a write: %q", lines[:3])
	}
	b.Write([]byte("partial"))
	if got := b.Lines(); len(got) != 8*50 {
		t.Errorf("a partial line counted: %d lines", len(got))
	}
	var empty testutil.SyncBuffer
	if empty.Lines() != nil || empty.Contains("x") {
		t.Error("an empty buffer has lines")
	}
}

// A reserved port refuses connections until listen, then accepts them on
// the same address.
func TestClosedTCPPort(t *testing.T) {
	addr, listen := testutil.ClosedTCPPort(t)
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("a connection to %s before listen was accepted", addr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial before listen: %v, want connection refused", err)
	}
	ln := listen()
	if ln.Addr().String() != addr {
		t.Fatalf("listening on %s, reserved %s", ln.Addr(), addr)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
}

// A closed UDP port takes nothing, and the sender learns it (port
// unreachable); once open it receives from anyone.
func TestClosedUDPPort(t *testing.T) {
	rx, open := testutil.ClosedUDPPort(t)
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	// The unreachable of one datagram fails a later call on tx.
	testutil.WaitFor(t, "port unreachable at the sender", func() bool {
		_, err := tx.Write([]byte("nobody"))
		return errors.Is(err, syscall.ECONNREFUSED)
	})
	open()
	buf := make([]byte, 16)
	for {
		if _, err := tx.Write([]byte("someone")); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatal(err)
		}
		rx.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		n, _, err := rx.ReadFromUDPAddrPort(buf)
		if err == nil {
			if string(buf[:n]) != "someone" {
				t.Fatalf("read %q", buf[:n])
			}
			return
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal(err)
		}
	}
}
