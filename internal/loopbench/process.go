package loopbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/labbridge/bridge/simulink"
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

// PartnerProcess starts `exe partner -json` (the bridge's own executable)
// as the partner of master in a process of its own, its shape and
// controller those of link in the configuration file doc. The master is
// bound already: the process is told its ports, binds its own on port 0
// and says which on its first line, and the master is pointed there, so no
// port is free between choosing and binding it. The process runs until
// Stop, or until ctx is done; either interrupts it, so that it prints its
// report (PartnerTiming reads it).
func PartnerProcess(ctx context.Context, exe string, master *simulink.Master, link string, doc []byte) (*Peer, error) {
	replyTo, err := master.ListenAddr()
	if err != nil {
		return nil, err
	}
	from, err := master.LocalAddr()
	if err != nil {
		return nil, err
	}
	unmap := func(ap netip.AddrPort) string { return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String() }
	f, err := os.CreateTemp("", "bridge-bench-*.toml")
	if err != nil {
		return nil, fmt.Errorf("loopbench: the partner's configuration: %w", err)
	}
	defer os.Remove(f.Name()) // read by the partner before it prints its first line
	_, err = f.Write(doc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("loopbench: the partner's configuration %s: %w", f.Name(), err)
	}
	cmd := exec.CommandContext(ctx, exe, "partner", "-listen", "127.0.0.1:0", "-accept", unmap(from),
		"-reply-to", unmap(replyTo), "-config", f.Name(), "-link", link, "-json")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	// The partner prints one line once its sockets are bound:
	// "partner: listening on ADDR (accepting …".
	const ready = "partner: listening on "
	peer, err := StartPeer(cmd, ready, 30*time.Second)
	if err != nil {
		return nil, err
	}
	at, _, _ := strings.Cut(strings.TrimPrefix(peer.First(), ready), " ")
	addr, err := netip.ParseAddrPort(at)
	if err == nil {
		err = master.SetRemote(addr)
	}
	if err != nil {
		peer.Stop()
		return nil, fmt.Errorf("loopbench: the partner process said %q, want the address it listens on: %w", peer.First(), err)
	}
	return peer, nil
}

// PartnerTiming stops a PartnerProcess and reads the send timing from the
// JSON report on its last line.
func (p *Peer) PartnerTiming() (SendTimingReport, error) {
	last, err := p.Stop()
	if err != nil {
		return SendTimingReport{}, fmt.Errorf("loopbench: partner process: %w", err)
	}
	var r PartnerReport
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		return SendTimingReport{}, fmt.Errorf("loopbench: partner process's last line %q: %w", last, err)
	}
	return r.SendTiming, nil
}
