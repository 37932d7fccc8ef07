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
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var stderr strings.Builder
		code := run(ctx, []string{"sim", "meca500", "-listen", "127.0.0.1:0"}, pw, &stderr)
		pw.Close()
		done <- code
	}()
	lines := bufio.NewScanner(pr)
	if !lines.Scan() {
		t.Fatal("no output")
	}
	first := lines.Text()
	_, addr, ok := strings.Cut(first, " on ")
	if !ok || !strings.HasPrefix(first, "simulated Meca500 R3 (firmware 9.3.0)") {
		t.Fatalf("first line %q", first)
	}
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		for lines.Scan() {
			b.WriteString(lines.Text() + "\n")
		}
		rest <- b.String()
	}()
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
