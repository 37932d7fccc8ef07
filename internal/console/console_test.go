package console

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *lines) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// Typed lines and posted faults reach Apply as words; its answer is said,
// its error is a 400 or a line; GET /status answers the state.
func TestConsole(t *testing.T) {
	var mu sync.Mutex
	var got []string
	apply := func(w []string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, strings.Join(w, " "))
		if w[0] == "bad" {
			return "", io.ErrUnexpectedEOF
		}
		return "done", nil
	}
	in, typed := io.Pipe()
	var out lines
	c, err := Start(context.Background(), Config{Name: "sim", In: in, Out: &out, Addr: "127.0.0.1:0", Apply: apply,
		Status: func() string { return "state ok" }, Help: "estop, drop"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	io.WriteString(typed, "estop release\n\nhelp\nbad\n")
	wait(t, &out, "sim: unexpected EOF")
	_, rest, _ := strings.Cut(out.String(), "http://")
	addr, _, _ := strings.Cut(rest, ": ")
	resp, err := http.Post("http://"+addr+"/fault/delay?value=500ms", "text/plain", strings.NewReader(""))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err = http.Post("http://"+addr+"/fault/bad", "text/plain", nil); err != nil || resp.StatusCode != 400 {
		t.Fatalf("POST bad: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "state ok\n" {
		t.Errorf("status %q", b)
	}
	for _, want := range []string{"estop release: done", "estop, drop", "delay 500ms (control): done"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "|") != "estop release|bad|delay 500ms|bad" {
		t.Errorf("applied %q", got)
	}
}

func wait(t *testing.T, out *lines, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, out.String())
		}
	}
}
