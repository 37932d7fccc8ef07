package main

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

	"github.com/labbridge/bridge/meca500/mecasim"
)

// mecaStdin is where `bridge sim meca500` reads its console's commands; tests
// set a pipe.
var mecaStdin io.Reader = os.Stdin

// cmdSimMeca500 is `bridge sim meca500`: a simulated Meca500 on a TCP port,
// which mecademicpy, MecaPortal-less scripts and `bridge run` can drive,
// until interrupted. While it runs, faults are injected by lines typed on
// standard input and, with -control, by POST /fault/NAME on a small HTTP
// endpoint; the parsing and the effects are mecasim.Robot.Control's.
func cmdSimMeca500(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim meca500", "sim meca500 [-listen 127.0.0.1:10000] [-firmware 9.3.0] [-virtual] [-control 127.0.0.1:PORT]", stderr)
	listen := fs.String("listen", "127.0.0.1:10000", "the control port to serve (a real robot's is 10000)")
	firmware := fs.String("firmware", mecasim.DefaultFirmware, "firmware version to advertise (9.x or 10.x)")
	virtual := fs.Bool("virtual", false, "say R3-virtual in the banner, as MecaPortal's virtual robot")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	control := fs.String("control", "", "serve fault injection over HTTP here: POST /fault/NAME[?value=V] (estop, pstop, error, drop, delay, full), GET /status")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	robot, err := mecasim.New(mecasim.Config{Firmware: *firmware, Virtual: *virtual})
	if err != nil {
		return err
	}
	if err := checkDuration("sim meca500", "duration", *duration, true); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("bridge sim meca500: cannot serve on %s: %w (another simulator or program holds it? try -listen 127.0.0.1:0)", *listen, err)
	}
	defer ln.Close()
	out := &syncWriter{w: stdout}
	out.printf("simulated Meca500 R3 (firmware %s) on %s\n", *firmware, ln.Addr())
	out.printf("connect mecademicpy or a bridge link (address = %q); Ctrl-C stops\n", ln.Addr().String())
	ctx, cancel := withDuration(ctx, *duration)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // before the wait: the console and the control stop with the robot
	if *control != "" {
		cln, err := net.Listen("tcp", *control)
		if err != nil {
			return fmt.Errorf("bridge sim meca500: cannot serve the control endpoint on %s: %w (try -control 127.0.0.1:0)", *control, err)
		}
		srv := &http.Server{Handler: controlHandler(robot, out), ReadHeaderTimeout: 5 * time.Second}
		out.printf("fault control on http://%s: POST /fault/NAME[?value=V], GET /status\n", cln.Addr())
		wg.Go(func() {
			if err := srv.Serve(cln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				out.printf("control endpoint: %v\n", err)
			}
		})
		wg.Go(func() {
			<-ctx.Done()
			sctx, stop := context.WithTimeout(context.Background(), time.Second)
			defer stop()
			_ = srv.Shutdown(sctx)
		})
	}
	out.printf("type a fault to inject (help lists them): estop, estop release, estop reset, pstop…, error, drop, delay 500ms, full 10, status\n")
	lines := readLines(ctx, mecaStdin, &wg)
	wg.Go(func() { console(ctx, robot, lines, out) })
	err = robot.Serve(ctx, ln)
	st := robot.Status()
	out.printf("served %d motion command(s); joints %v\n", st.MotionCommands, fmtJoints(robot.Joints()))
	return err
}

// console applies each line typed as a fault and prints the robot's state
// after it.
func console(ctx context.Context, robot *mecasim.Robot, lines <-chan string, out *syncWriter) {
	for {
		select {
		case <-ctx.Done():
			return
		case line, ok := <-lines:
			if !ok {
				return
			}
			words := strings.Fields(line)
			switch {
			case len(words) == 0:
				continue
			case words[0] == "help":
				out.printf("%s\n", mecasim.ControlHelp)
				continue
			}
			state, err := robot.Control(words)
			if err != nil {
				out.printf("%v\n", err)
				continue
			}
			out.printf("%s: %s\n", strings.Join(words, " "), state)
		}
	}
}

// readLines reads lines from r until its end or ctx's. A standard input
// that cannot be interrupted (a blocking terminal) keeps its reader until
// its next line or the process's end; any other stops at ctx's end, and is
// waited for in wg.
func readLines(ctx context.Context, r io.Reader, wg *sync.WaitGroup) <-chan string {
	lines := make(chan string)
	stopped := make(chan struct{})
	read := func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stopped:
				return
			}
		}
	}
	interrupt := func() bool { return false }
	switch f := r.(type) {
	case *os.File:
		interrupt = func() bool { return f.SetReadDeadline(time.Now()) == nil }
	case io.Closer:
		interrupt = func() bool { return f.Close() == nil }
	}
	var reader sync.WaitGroup
	reader.Go(read)
	wg.Go(func() {
		<-ctx.Done()
		close(stopped)
		if interrupt() {
			reader.Wait()
		}
	})
	return lines
}

// controlHandler serves POST /fault/NAME (the value in ?value= or the body:
// POST /fault/delay?value=500ms, POST /fault/estop with body "release") and
// GET /status; each answers the robot's state line, or 400 and what is
// accepted.
func controlHandler(robot *mecasim.Robot, out *syncWriter) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault/{name}", func(w http.ResponseWriter, r *http.Request) {
		words := []string{r.PathValue("name")}
		value := r.URL.Query().Get("value")
		if value == "" {
			b, _ := io.ReadAll(io.LimitReader(r.Body, 1024))
			value = string(b)
		}
		words = append(words, strings.Fields(value)...)
		state, err := robot.Control(words)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out.printf("%s (control): %s\n", strings.Join(words, " "), state)
		fmt.Fprintln(w, state)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, robot.StateLine())
	})
	return mux
}

// syncWriter serialises the lines of the console, the control endpoint and
// the command.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, format, args...)
}

func fmtJoints(q [6]float64) string {
	return fmt.Sprintf("[%.2f %.2f %.2f %.2f %.2f %.2f]", q[0], q[1], q[2], q[3], q[4], q[5])
}
