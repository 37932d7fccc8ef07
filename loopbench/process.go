package loopbench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// StartProcess starts cmd, a peer of a benchmark (`bridge partner` in a
// process of its own), and waits until the first line it prints starts with
// ready, or until wait has passed. stop interrupts the process and waits for
// it. The rest of its standard output is discarded.
func StartProcess(cmd *exec.Cmd, ready string, wait time.Duration) (stop func(), err error) {
	started := make(chan string, 1)
	cmd.Stdout = &firstLine{ch: started}
	// A child of the peer that keeps its output open must not hold Wait.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case line := <-started:
		if strings.HasPrefix(line, ready) {
			return func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }, nil
		}
		err = fmt.Errorf("%s said %q, want %q…", cmd.Path, line, ready)
	case <-t.C:
		err = fmt.Errorf("%s did not say %q within %v", cmd.Path, ready, wait)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, err
}

// firstLine hands the first line written to it to ch and discards the rest.
type firstLine struct {
	buf []byte
	ch  chan<- string
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.ch != nil {
		f.buf = append(f.buf, p...)
		if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
			f.ch <- string(f.buf[:i])
			f.ch = nil
		}
	}
	return len(p), nil
}
