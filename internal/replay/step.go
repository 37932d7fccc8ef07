package replay

import (
	"bufio"
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
			if !p.got[next] {
				continue // a row the replay skipped (a seq the recording skipped)
			}
			col, d := "", 0.0
			for j, v := range p.replayed[next] {
				if a := math.Abs(v - t.Meas[next][j]); a > d || col == "" {
					col, d = t.Columns[j], a
				}
			}
			if quiet {
				continue
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
// at the end of in. stop ends the reading, even within a read that waits
// for a person, and waits for it: in is read through a non-blocking copy of
// its descriptor, whose read the runtime's poller can cut short.
func readLines(in *os.File) (<-chan string, func(), error) {
	rc, err := in.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrStep, in.Name(), err)
	}
	fd := -1
	if cerr := rc.Control(func(f uintptr) { fd, err = unix.Dup(int(f)) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrStep, in.Name(), err)
	}
	// O_NONBLOCK belongs to the open file, which the terminal's shell
	// shares: it is put back before the copy is closed.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrStep, in.Name(), err)
	}
	f := os.NewFile(uintptr(fd), in.Name())
	lines := make(chan string)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 256), 4096) // a person's line; longer is refused
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-quit:
				return
			}
		}
	})
	stop := func() {
		close(quit)
		f.SetReadDeadline(time.Now())
		wg.Wait()
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
		}
		f.Close()
	}
	return lines, stop, nil
}
