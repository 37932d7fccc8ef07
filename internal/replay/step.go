package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ErrStep is a replay that cannot be played a tick at a time.
var ErrStep = errors.New("replay: cannot step")

// stepHelp is what a person stepping a replay can type.
const stepHelp = "Enter plays one tick, a number that many, c the rest; Ctrl-C stops"

// stepper plays p a tick at a time as a person asks, a line of in each:
// an empty line one tick, a number that many, "c" the rest. After each
// tick asked for it writes to out the tick, its recorded time and how far
// the replayed measurement is from the recorded one. It returns when the
// recording is played or ctx ends.
func stepper(ctx context.Context, in *os.File, out io.Writer, p *Player, t *Track) error {
	lines, stop, err := readLines(in)
	if err != nil {
		return err
	}
	defer stop()
	next := 0      // the first row not yet said
	quiet := false // after "c": the summary says the rest
	say := func(upTo int) {
		for ; next <= upTo; next++ {
			if quiet || !p.got[next] {
				continue // after "c"; or a row the replay skipped (a seq the recording skipped)
			}
			col, d := "", 0.0
			for j, v := range p.replayed[next] {
				if a := math.Abs(v - t.Meas[next][j]); a > d || col == "" {
					col, d = t.Columns[j], a
				}
			}
			if d == 0 {
				fmt.Fprintf(out, "tick %d (seq %d, %.3f s): replayed = recorded\n", t.Tick[next], t.Seq[next], float64(t.At[next])/1e9)
			} else {
				fmt.Fprintf(out, "tick %d (seq %d, %.3f s): replayed − recorded up to %.6g (%s)\n", t.Tick[next], t.Seq[next], float64(t.At[next])/1e9, d, col)
			}
		}
	}
	fmt.Fprintf(out, "paused before the first tick: %s\n", stepHelp)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Done():
			row, _ := p.Answered()
			say(row)
			return nil
		case line, ok := <-lines:
			if !ok {
				quiet, lines = true, nil // the input ended: play the rest
				p.Allow(-1)
				continue
			}
			switch line = strings.TrimSpace(line); {
			case line == "":
				p.Allow(1)
			case line == "c":
				quiet = true
				fmt.Fprintln(out, "playing the rest")
				p.Allow(-1)
			default:
				n, err := strconv.ParseInt(line, 10, 64)
				if err != nil || n < 1 {
					fmt.Fprintf(out, "%q: %s\n", line, stepHelp)
					continue
				}
				p.Allow(n)
			}
		case <-wake(p):
			row, _ := p.Answered()
			say(row)
		}
	}
}

// wake is the channel a held player signals on.
func wake(p *Player) <-chan struct{} {
	_, c := p.Answered()
	return c
}

// readLines reads in a line at a time into the channel it returns, closed
// at the end of in. stop ends the reading and waits for it: the reader
// polls in for a line every pollEvery, so that it never sits in a read a
// person may not end, and in's file is left as it was (a terminal shared
// with the shell stays blocking, whatever ends the process).
func readLines(in *os.File) (<-chan string, func(), error) {
	rc, err := in.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrStep, in.Name(), err)
	}
	lines := make(chan string)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(lines)
		var line []byte
		buf := make([]byte, 256)
		for {
			select {
			case <-quit:
				return
			default:
			}
			var n int
			var rerr error
			cerr := rc.Control(func(fd uintptr) {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				k, err := unix.Poll(fds, int(pollEvery/time.Millisecond))
				if err != nil && !errors.Is(err, unix.EINTR) {
					rerr = err
					return
				}
				if k == 0 || err != nil {
					return // nothing yet: look again
				}
				n, rerr = unix.Read(int(fd), buf)
				if n == 0 && rerr == nil {
					rerr = io.EOF
				}
			})
			if cerr != nil || rerr != nil && !errors.Is(rerr, unix.EINTR) && !errors.Is(rerr, unix.EAGAIN) {
				return
			}
			for _, b := range buf[:max(n, 0)] {
				if b != '\n' {
					if len(line) < maxLine {
						line = append(line, b)
					}
					continue
				}
				select {
				case lines <- string(line):
				case <-quit:
					return
				}
				line = line[:0]
			}
		}
	})
	stop := func() {
		close(quit)
		wg.Wait()
	}
	return lines, stop, nil
}

// pollEvery is how often the stepper's reader looks for a line, and so
// the longest its stop waits; maxLine bounds a line kept (a person's).
const (
	pollEvery = 100 * time.Millisecond
	maxLine   = 4096
)
