package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/meca500"
)

// bridge sim meca500 serves a simulated Meca500 that the bridge's own
// client connects to, activates and homes.
func TestSimMeca500(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, rest, done := startCommand(ctx, t, "sim", "meca500", "-listen", "127.0.0.1:0")
	_, addr, ok := strings.Cut(first, " on ")
	if !ok || !strings.HasPrefix(first, "simulated Meca500 R3 (firmware 9.3.0)") {
		t.Fatalf("first line %q", first)
	}
	arm, err := meca500.New(meca500.Config{Address: addr, Activate: true, Home: true, Resume: true, ReplyTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := arm.Open(ctx); err != nil {
		t.Fatalf("open %s: %v", addr, err)
	}
	if s, _ := arm.Status(); !s.Activated || !s.Homed {
		t.Errorf("status %v", s)
	}
	arm.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	if out := <-rest; !strings.Contains(out, "served") {
		t.Errorf("output %q", out)
	}
}

// startCommand runs a command of this binary until ctx is done: its first
// line of output, the rest of it once it has exited, and its exit status.
func startCommand(ctx context.Context, t *testing.T, args ...string) (first string, rest <-chan string, done <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		c := run(ctx, args, pw, &stderr)
		pw.Close()
		if c != 0 {
			t.Logf("%v: %s", args, stderr.String())
		}
		code <- c
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatalf("%v: no output", args)
	}
	first = lines.Text()
	out := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		out <- b.String()
	}()
	return first, out, code
}
