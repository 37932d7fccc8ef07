package headless

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// ErrExited: Chromium exited, or was killed, before it answered.
var ErrExited = errors.New("headless: chromium exited")

// ProtocolError is a DevTools error reply to a command.
type ProtocolError struct {
	Method  string
	Code    int
	Message string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("headless: %s: DevTools error %d: %s", e.Method, e.Code, e.Message)
}

// EvalError is an exception thrown by an expression in the page.
type EvalError struct {
	Expr      string
	Exception string
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("headless: %q threw: %s", e.Expr, e.Exception)
}

// startTimeout is how long Chromium may take to listen: a cold start on a
// loaded two-core machine takes seconds, never this long.
const startTimeout = 2 * time.Minute

// Browser is one headless Chromium driven over the DevTools protocol, with
// one page: a test navigates it, evaluates expressions in it while the
// page keeps running in real time (no virtual time budget, so a page that
// polls forever is fine), and takes screenshots of it.
type Browser struct {
	ws      *wsConn
	session string // the page's, on the browser's connection

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply

	dead    chan struct{} // closed when the reader stops
	readErr error         // why, set before dead is closed
	reader  sync.WaitGroup

	cmd    *exec.Cmd
	exited chan struct{} // closed when Chromium has been waited on
	stderr *stderrTail
}

type reply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Start starts headless Chromium with args added to its command line
// (--window-size=…), opens a page on about:blank and connects to it.
// Without chromium the test skips, saying how to install it
// (testutil.RequirePeer: fails where peers are required). At the test's
// cleanup Chromium is killed and waited on.
func Start(t testing.TB, args ...string) *Browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		testutil.RequirePeer(t, "chromium", "apt-get install chromium", err)
		return nil // a fake testing.TB may return
	}
	// The profile is made before the cleanup that kills Chromium is
	// registered, so that it is removed after Chromium stopped writing.
	profile := t.TempDir()
	args = append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
		"--remote-debugging-port=0", "--user-data-dir=" + profile}, args...)
	cmd := exec.Command(bin, append(args, "about:blank")...)
	b := &Browser{cmd: cmd, exited: make(chan struct{}), stderr: newStderrTail(), pending: map[int64]chan reply{}, dead: make(chan struct{})}
	cmd.Stderr = b.stderr
	// Its own process group, so that the renderers and helpers it starts
	// are killed with it; and killed if the test binary dies (a test
	// timeout's panic runs no cleanup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A helper that outlived the kill would hold stderr open for ever.
	cmd.WaitDelay = 10 * time.Second
	started := make(chan error, 1)
	go func() {
		// The death signal follows the thread that started the process:
		// this goroutine keeps that thread until Chromium has exited, so
		// that no other goroutine ending locked to it takes Chromium along.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(b.exited)
		err := cmd.Start()
		started <- err
		if err == nil {
			cmd.Wait()
		}
	}()
	if err := <-started; err != nil {
		t.Fatalf("headless: starting %s: %v", bin, err)
	}
	t.Cleanup(b.close)

	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	if err := b.connect(ctx); err != nil {
		t.Fatalf("%v\nchromium's stderr:\n%s", err, b.stderr)
	}
	return b
}

func (b *Browser) connect(ctx context.Context) error {
	var wsURL string
	select {
	case wsURL = <-b.stderr.listening:
	case <-b.exited:
		return fmt.Errorf("headless: before it listened for DevTools: %w", ErrExited)
	case <-ctx.Done():
		return fmt.Errorf("headless: chromium did not say where DevTools listens: %w", ctx.Err())
	}
	ws, err := dialWebSocket(ctx, wsURL)
	if err != nil {
		return err
	}
	b.ws = ws
	b.reader.Add(1)
	go b.read()

	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return err
	}
	b.session = attached.SessionID
	return nil
}

// close kills Chromium's process group and waits for it and the reader.
func (b *Browser) close() {
	if b.ws != nil {
		b.ws.Close()
	}
	syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.exited
	b.reader.Wait()
}

// read hands each reply to the call waiting for it; events are dropped
// (the tests wait on the page's state, not on events). It stops when the
// connection ends.
func (b *Browser) read() {
	defer b.reader.Done()
	for {
		msg, err := b.ws.ReadMessage()
		if err != nil {
			b.readErr = err
			close(b.dead)
			return
		}
		var head struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(msg, &head) != nil || head.ID == 0 {
			continue
		}
		var r reply
		if err := json.Unmarshal(msg, &r); err != nil {
			r.Error = &struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			}{Message: "unreadable reply: " + err.Error()}
		}
		b.mu.Lock()
		ch := b.pending[head.ID]
		delete(b.pending, head.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- r // buffered: a caller that gave up is not waited for
		}
	}
}

// writeTimeout bounds sending one command.
const writeTimeout = time.Minute

// call sends one DevTools command, to the page's session unless session is
// "", and decodes its result into result (nil: ignored).
func (b *Browser) call(ctx context.Context, session, method string, params, result any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan reply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	p, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("headless: %s: %w", method, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("headless: %s: %w", method, err)
	}
	// Not ctx's deadline: a write cut in the middle of a frame would
	// spoil the connection for the calls after this one. A write on
	// loopback takes no time; only a hung browser reaches this bound.
	if err := b.ws.WriteText(p, time.Now().Add(writeTimeout)); err != nil {
		return fmt.Errorf("headless: %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return &ProtocolError{Method: method, Code: r.Error.Code, Message: r.Error.Message}
		}
		if result != nil {
			if err := json.Unmarshal(r.Result, result); err != nil {
				return fmt.Errorf("headless: %s result %.200s: %w", method, r.Result, err)
			}
		}
		return nil
	case <-b.dead:
		select {
		case <-b.exited:
			return fmt.Errorf("headless: %s: %w\nchromium's stderr:\n%s", method, ErrExited, b.stderr)
		default:
			return fmt.Errorf("headless: %s: %w", method, b.readErr)
		}
	case <-ctx.Done():
		return fmt.Errorf("headless: %s: no answer: %w", method, ctx.Err())
	}
}

// Navigate loads url in the page. It returns once the navigation is
// under way: what the page then shows is for Wait.
func (b *Browser) Navigate(ctx context.Context, url string) error {
	var r struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, b.session, "Page.navigate", map[string]any{"url": url}, &r); err != nil {
		return err
	}
	if r.ErrorText != "" {
		return fmt.Errorf("headless: navigating to %s: %s: %w", url, r.ErrorText, ErrNavigate)
	}
	return nil
}

// ErrNavigate: the page could not be loaded.
var ErrNavigate = errors.New("headless: navigation failed")

// Eval evaluates the JavaScript expression expr in the page (a promise is
// awaited) and decodes its value, as JSON, into v (nil: ignored).
func (b *Browser) Eval(ctx context.Context, expr string, v any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call(ctx, b.session, "Runtime.evaluate",
		map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if e := r.ExceptionDetails; e != nil {
		what := e.Exception.Description
		if what == "" {
			what = e.Text
		}
		return &EvalError{Expr: expr, Exception: what}
	}
	if v == nil {
		return nil
	}
	if len(r.Result.Value) == 0 {
		return fmt.Errorf("headless: %q has no JSON value (undefined, or a function)", expr)
	}
	if err := json.Unmarshal(r.Result.Value, v); err != nil {
		return fmt.Errorf("headless: %q = %.200s: %w", expr, r.Result.Value, err)
	}
	return nil
}

// Text is what the page shows as text (document.body.innerText).
func (b *Browser) Text(ctx context.Context) (string, error) {
	var s string
	err := b.Eval(ctx, `document.body ? document.body.innerText : ""`, &s)
	return s, err
}

// pollEvery is how often Wait evaluates: the status page polls every
// 500 ms, so a few looks per poll.
const pollEvery = 50 * time.Millisecond

// Wait evaluates expr every few tens of milliseconds, in real time, until
// it is true or ctx ends. An expression that throws (an element not made
// yet) counts as not yet true; the error says the last exception.
func (b *Browser) Wait(ctx context.Context, expr string) error {
	last := "nothing yet"
	for {
		var ok bool
		err := b.Eval(ctx, "!!("+expr+")", &ok)
		var ee *EvalError
		switch {
		case err == nil && ok:
			return nil
		case err == nil:
			last = "false"
		case errors.As(err, &ee):
			last = ee.Exception
		case ctx.Err() != nil:
			// The deadline ended the evaluation: say what was last seen.
		default:
			return err
		}
		t := time.NewTimer(pollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("headless: waiting for %q (last: %s): %w", expr, last, ctx.Err())
		case <-t.C:
		}
	}
}

// Resize sets the page's viewport to width × height CSS pixels (a window
// of --window-size is larger by its own frame).
func (b *Browser) Resize(ctx context.Context, width, height int) error {
	return b.call(ctx, b.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
}

// Screenshot writes a PNG of the whole page, beyond the window if the
// page is taller, to path.
func (b *Browser) Screenshot(ctx context.Context, path string) error {
	var m struct {
		Content struct {
			Width  float64 `json:"width"`
			Height float64 `json:"height"`
		} `json:"cssContentSize"`
	}
	if err := b.call(ctx, b.session, "Page.getLayoutMetrics", map[string]any{}, &m); err != nil {
		return err
	}
	params := map[string]any{"format": "png"}
	if w, h := math.Ceil(m.Content.Width), math.Ceil(m.Content.Height); w > 0 && h > 0 {
		params["captureBeyondViewport"] = true
		params["clip"] = map[string]any{"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := b.call(ctx, b.session, "Page.captureScreenshot", params, &r); err != nil {
		return err
	}
	img, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return fmt.Errorf("headless: screenshot data: %w", err)
	}
	if err := os.WriteFile(path, img, 0o644); err != nil {
		return fmt.Errorf("headless: screenshot: %w", err)
	}
	return nil
}

// listeningRe is the line where Chromium says where DevTools listens.
var listeningRe = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// stderrTail keeps the last lines Chromium wrote to stderr, for a
// failure's message, and says where DevTools listens as soon as it is
// written.
type stderrTail struct {
	mu        sync.Mutex
	buf       []byte
	line      []byte
	said      bool
	listening chan string
}

func newStderrTail() *stderrTail { return &stderrTail{listening: make(chan string, 1)} }

// tailBytes bounds what is kept: enough for the few lines before a crash.
const tailBytes = 16 << 10

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if len(s.buf) > tailBytes {
		s.buf = s.buf[len(s.buf)-tailBytes:]
	}
	if !s.said {
		s.line = append(s.line, p...)
		for {
			i := bytes.IndexByte(s.line, '\n')
			if i < 0 {
				break
			}
			if m := listeningRe.FindSubmatch(s.line[:i]); m != nil {
				s.listening <- string(m[1])
				s.said, s.line = true, nil
				break
			}
			s.line = s.line[i+1:]
		}
		if len(s.line) > tailBytes {
			s.line = s.line[len(s.line)-tailBytes:]
		}
	}
	return len(p), nil
}

func (s *stderrTail) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.buf)
}
