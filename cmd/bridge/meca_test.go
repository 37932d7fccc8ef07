package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/meca500"
	"github.com/labbridge/bridge/plant"
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

// bridge sim meca500 takes faults typed on its standard input and posted to
// its control endpoint, and prints the robot's state after each; a bridge
// client connected to it sees their effects.
func TestSimMeca500Faults(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in, typed := io.Pipe()
	simStdin = in
	t.Cleanup(func() { simStdin = os.Stdin })
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		c := run(ctx, []string{"sim", "meca500", "-listen", "127.0.0.1:0", "-control", "127.0.0.1:0"}, pw, &stderr)
		pw.Close()
		code <- c
	}()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// expect reads lines until one contains want.
	expect := func(want string) string {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before %q (stderr %s)", want, stderr.String())
				}
				if strings.Contains(l, want) {
					return l
				}
			case <-timeout:
				t.Fatalf("no line with %q", want)
			}
		}
	}
	_, addr, _ := strings.Cut(expect("simulated Meca500 R3"), " on ")
	_, control, _ := strings.Cut(expect("fault control on "), "http://")
	control = strings.TrimSuffix(strings.Fields(control)[0], ":")
	arm, err := meca500.New(meca500.Config{Address: addr, Activate: true, Home: true, Resume: true, ReplyTimeout: 20 * time.Second, Link: "arm"})
	if err != nil {
		t.Fatal(err)
	}
	defer arm.Close()
	if err := arm.Open(ctx); err != nil {
		t.Fatalf("open %s: %v", addr, err)
	}
	m := make([]float64, arm.MeasureLen())
	// Typed: the E-stop, seen by the bridge's client.
	fmt.Fprintln(typed, "estop")
	if l := expect("estop: "); !strings.Contains(l, "activated=no") || !strings.Contains(l, "estop=pressed") {
		t.Errorf("after estop: %q", l)
	}
	waitUntil(t, "the client latched", func() bool { return errors.Is(arm.Measure(m), plant.ErrStopLatched) })
	// Posted: its release, a bad fault, the status.
	post := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Post("http://"+control+path, "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/fault/estop?value=release"); code != 200 || !strings.Contains(body, "estop=released-awaiting-reset") {
		t.Errorf("POST estop release: %d %q", code, body)
	}
	expect("estop release (control): ")
	if code, body := post("/fault/fly"); code != 400 || !strings.Contains(body, "want one of") {
		t.Errorf("POST fly: %d %q", code, body)
	}
	fmt.Fprintln(typed, "delay soon")
	expect("bad control command")
	fmt.Fprintln(typed, "estop reset")
	expect("estop=off")
	fmt.Fprintln(typed, "status")
	if l := expect("status: "); !strings.Contains(l, "activated=no") || !strings.Contains(l, "client=connected") {
		t.Errorf("status: %q: a reset starts nothing", l)
	}
	arm.Close()
	typed.Close()
	cancel()
	if c := <-code; c != 0 {
		t.Errorf("exit %d: %s", c, stderr.String())
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 20 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
