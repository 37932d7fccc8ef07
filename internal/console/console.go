// Package console lets a person and a script drive a running simulator:
// lines typed on standard input, and an HTTP endpoint (POST /fault/NAME,
// GET /status), both carried to one function that applies a command's
// words (mecasim.Robot.Control, vrepsim.Control; docs/meca500.md §15,
// docs/vrep.md §4.2). It parses nothing itself.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Config configures a Console.
type Config struct {
	// Name starts the messages ("bridge sim vrep").
	Name string
	// In is where a person types commands; nil: none.
	In io.Reader
	// Out gets the answers, and the endpoint's address; the Console's
	// Printf shares it.
	Out io.Writer
	// Addr is where the HTTP endpoint listens; "": none.
	Addr string
	// Apply applies a command's words and returns what to tell.
	Apply func(words []string) (string, error)
	// Status is the simulator's state, for GET /status.
	Status func() string
	// Help answers a typed "help"; it also lists the endpoint's names.
	Help string
}

// Console is a running console. Stop ends it.
type Console struct {
	cfg    Config
	mu     sync.Mutex // Out is shared by the reader, the endpoint and the command
	srv    *http.Server
	wg     sync.WaitGroup
	reader sync.WaitGroup
	wait   bool // the reader can be interrupted, so Stop waits for it
	cancel context.CancelFunc
}

// Start starts the endpoint (when Addr is set) and the reader of In (when
// set) until ctx is done or Stop.
func Start(ctx context.Context, cfg Config) (*Console, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &Console{cfg: cfg, cancel: cancel}
	if cfg.Addr != "" {
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%s: cannot serve the control endpoint on %s: %w (try -control 127.0.0.1:0)", cfg.Name, cfg.Addr, err)
		}
		c.srv = &http.Server{Handler: c.handler(), ReadHeaderTimeout: 5 * time.Second}
		c.Printf("fault control on http://%s: POST /fault/NAME[?value=V], GET /status\n", ln.Addr())
		c.wg.Go(func() {
			if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				c.Printf("%s: control endpoint: %v\n", cfg.Name, err)
			}
		})
	}
	if in := cfg.In; in != nil {
		f, isFile := in.(*os.File)
		// A terminal in blocking mode cannot be interrupted: its read ends
		// with the process.
		c.wait = !isFile || f.SetReadDeadline(time.Time{}) == nil
		c.reader.Go(func() {
			sc := bufio.NewScanner(in)
			for sc.Scan() && ctx.Err() == nil {
				c.typed(strings.Fields(sc.Text()))
			}
		})
		context.AfterFunc(ctx, func() {
			if isFile {
				f.SetReadDeadline(time.Now())
			} else if cl, ok := in.(io.Closer); ok {
				cl.Close()
			}
		})
	}
	return c, nil
}

func (c *Console) typed(words []string) {
	switch {
	case len(words) == 0:
	case words[0] == "help":
		c.Printf("%s\n", c.cfg.Help)
	default:
		out, err := c.cfg.Apply(words)
		if err != nil {
			c.Printf("%s: %v\n", c.cfg.Name, err)
			return
		}
		c.Printf("%s: %s\n", strings.Join(words, " "), out)
	}
}

// handler serves POST /fault/NAME, its value in ?value= (or ?args=) or the
// body (POST /fault/delay?value=500ms, POST /fault/estop with the body
// "release"), and GET /status; each answers the simulator's words, or 400
// and what is accepted.
func (c *Console) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		words := append([]string{r.PathValue("name")}, strings.Fields(r.URL.Query().Get("value"))...)
		words = append(words, strings.Fields(r.URL.Query().Get("args"))...)
		words = append(words, strings.Fields(string(body))...)
		out, err := c.cfg.Apply(words)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.Printf("%s (control): %s\n", strings.Join(words, " "), out)
		fmt.Fprintln(w, out)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, c.cfg.Status())
	})
	return mux
}

// Printf writes to Out, never in the middle of another line.
func (c *Console) Printf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.cfg.Out, format, args...)
}

// Stop ends the endpoint and the reader and waits for them, except a read
// of a terminal, which cannot be interrupted and ends with the process.
func (c *Console) Stop() {
	c.cancel()
	if c.srv != nil {
		ctx, done := context.WithTimeout(context.Background(), time.Second)
		c.srv.Shutdown(ctx)
		done()
	}
	c.wg.Wait()
	if c.wait {
		c.reader.Wait()
	}
}
