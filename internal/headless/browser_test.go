package headless

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A page that keeps polling is followed in one session, in real time:
// what the server says next shows in the same page, and the browser ends
// with the test.
func TestBrowserFollowsAPollingPage(t *testing.T) {
	var word atomic.Value
	word.Store("first")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!DOCTYPE html><body style="background:#2f6fd6;color:#fff;font:40px sans-serif"><p id="w">–</p><script>
async function poll() {
  try { document.getElementById("w").textContent = await (await fetch("word", {cache: "no-store"})).text(); } catch (e) {}
  setTimeout(poll, 100);
}
poll();
</script>`))
	})
	mux.HandleFunc("GET /word", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(word.Load().(string))) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b := Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := b.Resize(ctx, 640, 480); err != nil {
		t.Fatal(err)
	}
	if err := b.Navigate(ctx, srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	const shows = `document.getElementById("w")?.textContent === `
	if err := b.Wait(ctx, shows+`"first"`); err != nil {
		t.Fatal(err)
	}
	word.Store("second")
	if err := b.Wait(ctx, shows+`"second"`); err != nil {
		t.Fatal(err)
	}
	if text, err := b.Text(ctx); err != nil || !strings.Contains(text, "second") {
		t.Errorf("Text = %q, %v", text, err)
	}

	var sum int
	if err := b.Eval(ctx, `[1, 2, 3].reduce((a, b) => a + b)`, &sum); err != nil || sum != 6 {
		t.Errorf("Eval: %d, %v", sum, err)
	}
	var awaited string
	if err := b.Eval(ctx, `new Promise(ok => setTimeout(() => ok("later"), 10))`, &awaited); err != nil || awaited != "later" {
		t.Errorf("Eval of a promise: %q, %v", awaited, err)
	}
	var ee *EvalError
	if err := b.Eval(ctx, `nosuchname.x`, nil); !errors.As(err, &ee) || !strings.Contains(ee.Exception, "nosuchname") {
		t.Errorf("Eval of a throwing expression: %v", err)
	}
	// A deadline that passes ends a wait for what never comes.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	err := b.Wait(short, `document.title === "never"`)
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait for what never comes: %v", err)
	}
	// The session still answers after a wait that gave up.
	if err := b.Wait(ctx, shows+`"second"`); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "page.png")
	if err := b.Screenshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if r := img.Bounds(); r.Dx() != 640 || r.Dy() != 480 {
		t.Errorf("screenshot %v, want the 640x480 viewport", r)
	}
	// The page's blue background, drawn.
	if r, g, bl, _ := img.At(5, 5).RGBA(); r>>8 != 0x2f || g>>8 != 0x6f || bl>>8 != 0xd6 {
		t.Errorf("pixel (5, 5) = %02x %02x %02x, want the page's 2f 6f d6", r>>8, g>>8, bl>>8)
	}

	if err := b.Navigate(ctx, "http://127.0.0.1:1/"); !errors.Is(err, ErrNavigate) {
		t.Errorf("navigating to a closed port: %v", err)
	}
}
