package loopbench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// StartProcess starts cmd, a peer of a benchmark (`bridge partner` in a
// process of its own), and waits until the first line it prints starts with
// ready, or until wait has passed. stop interrupts the process and waits for
// it. The rest of its standard output is discarded.
func StartProcess(cmd *exec.Cmd, ready string, wait time.Duration) (stop func(), err error) {
	p, err := StartPeer(cmd, ready, wait)
	if err != nil {
		return nil, err
	}
	return func() { p.Stop() }, nil
}

// Peer is a process started by StartPeer.
type Peer struct {
	cmd   *exec.Cmd
	out   *lineWriter
	first string
	once  sync.Once
	last  string
	err   error
}

// First returns the first line the peer printed, the one that starts with
// ready: where a peer bound on port 0 says which port it holds.
func (p *Peer) First() string { return p.first }

// StartPeer is StartProcess for a peer whose final report matters: Stop
// returns the last line it printed.
func StartPeer(cmd *exec.Cmd, ready string, wait time.Duration) (*Peer, error) {
	started := make(chan string, 1)
	out := &lineWriter{first: started}
	cmd.Stdout = out
	// A child of the peer that keeps its output open must not hold Wait.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loopbench: start %s: %w", cmd.Path, err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var err error
	select {
	case line := <-started:
		if strings.HasPrefix(line, ready) {
			return &Peer{cmd: cmd, out: out, first: line}, nil
		}
		err = fmt.Errorf("loopbench: %s said %q, want %q…", cmd.Path, line, ready)
	case <-t.C:
		err = fmt.Errorf("loopbench: %s did not say %q within %v", cmd.Path, ready, wait)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, err
}

// Stop interrupts the peer (SIGINT, as a person at its terminal would, so
// that it prints its report), waits for it to exit and returns the last line
// of its standard output. err is Wait's. Later calls return the same.
func (p *Peer) Stop() (last string, err error) {
	p.once.Do(func() {
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			p.cmd.Process.Kill()
		}
		p.err = p.cmd.Wait()
		p.last = p.out.lastLine()
	})
	return p.last, p.err
}

// maxLine bounds the line a lineWriter keeps; a longer one is cut.
const maxLine = 1 << 20

// lineWriter hands the first line written to it to first, and keeps the
// last one; it discards the rest.
type lineWriter struct {
	mu    sync.Mutex
	first chan<- string
	cur   []byte // the line being written
	last  string // the last complete line
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			w.add(rest)
			break
		}
		w.add(rest[:i])
		line := string(w.cur)
		w.cur = w.cur[:0]
		if w.first != nil {
			w.first <- line
			w.first = nil
		}
		w.last = line
		rest = rest[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) add(b []byte) {
	w.cur = append(w.cur, b[:min(len(b), maxLine-len(w.cur))]...)
}

// lastLine returns the last line, unterminated or not.
func (w *lineWriter) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.cur) > 0 {
		return string(w.cur)
	}
	return w.last
}
