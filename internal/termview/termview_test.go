package termview

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// viewLinks are three links as the default simulation shows them.
func viewLinks() []Row {
	return []Row{
		{Name: "emio", State: "running", RTT: 45 * time.Microsecond, OK: 3, OKNoDelay: 997, Exchanges: 1003,
			Timeout: 3, Reconn: 1, Drop: 2,
			Deps:    []string{"frame 812 found 1", "lock locked 30.0000 Hz +0 ppm phase 1.20 ms"},
			Vectors: []string{"cmd [+0.010 -0.020 +0.030 +0.000]", "markers [12.5 -3.0 250.0]"}},
		{Name: "meca500", State: "handshaking", RTT: 1234 * time.Microsecond, Exchanges: 0,
			Vectors: []string{"cmd [+0.000 +0.000 +0.000 +0.000 +0.000 +0.000]"}},
		{Name: "vrep", State: "running", RTT: 77 * time.Microsecond, OK: 500, Exchanges: 500, Late: 4, Overrun: 1,
			Vectors: []string{"cmd [+1.000 -1.000]", "pose [0.5 0.2]"}},
	}
}

func TestBlockRowsWidths(t *testing.T) {
	for _, tc := range []struct {
		cols int
		want []string
	}{
		{80, []string{
			"emio    running     ok  99.7%  timeout 3 desync 0 reconn 1  rtt 1.234ms late 0",
			"meca500 handshaking ok      -  timeout 0 desync 0 reconn 0  rtt 1.234ms late 0",
			"vrep    running     ok 100.0%  timeout 0 desync 0 reconn 0  rtt 77µs late 4",
		}},
		{200, []string{
			"emio    running     ok  99.7%  timeout 3 desync 0 reconn 1  rtt 45µs late 0     drop 2 overrun 0  frame 812 found 1  lock locked 30.0000 Hz +0 ppm phase 1.20 ms  cmd [+0.010 -0.020 +0.030 +0.000]  m…",
			"meca500 handshaking ok      -  timeout 0 desync 0 reconn 0  rtt 1.234ms late 0  drop 0 overrun 0  cmd [+0.000 +0.000 +0.000 +0.000 +0.000 +0.000]",
			"vrep    running     ok 100.0%  timeout 0 desync 0 reconn 0  rtt 77µs late 4     drop 0 overrun 1  cmd [+1.000 -1.000]  pose [0.5 0.2]",
		}},
		{40, []string{
			"emio    running     ok  99.7%",
			"meca500 handshaking ok      -",
			"vrep    running     ok 100.0%",
		}},
		{20, []string{
			"emio    running…",
			"meca500 handshakin…",
			"vrep    running…",
		}},
	} {
		links := viewLinks()
		if tc.cols == 80 {
			links[0].RTT = 1234 * time.Microsecond
		}
		got := Block(links, tc.cols)
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%d columns:\n%s\nwant\n%s", tc.cols, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
		for _, r := range got {
			if n := runeLen(r); n >= tc.cols {
				t.Errorf("%d columns: a row of %d: %q", tc.cols, n, r)
			}
		}
	}
}

// screen is a terminal cols wide that interprets what View emits:
// \r, \n, ESC[nA, ESC[2K and text, wrapping at the last column like
// a terminal, so that a row too wide shows as a wrap.
type screen struct {
	mu        sync.Mutex
	cols      int
	lines     []string
	row, col  int
	wrapped   int
	sawEscape bool
	wrote     chan int // when set, each Write sends the columns it drew at
}

var escape = regexp.MustCompile(`^\x1b\[(\d*)([AK])`)

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := string(p)
	for in != "" {
		if m := escape.FindStringSubmatch(in); m != nil {
			s.sawEscape = true
			n, _ := strconv.Atoi(m[1])
			switch {
			case m[2] == "A":
				s.row = max(s.row-max(n, 1), 0)
			case m[2] == "K" && n == 2:
				s.set(s.row, "")
			}
			in = in[len(m[0]):]
			continue
		}
		r, size := []rune(in[:min(len(in), 4)])[0], 0
		size = len(string(r))
		in = in[size:]
		switch r {
		case '\r':
			s.col = 0
		case '\n':
			s.row, s.col = s.row+1, 0
		default:
			if s.col == s.cols {
				s.wrapped++
				s.row, s.col = s.row+1, 0
			}
			l := []rune(s.line(s.row))
			for len(l) < s.col {
				l = append(l, ' ')
			}
			if s.col < len(l) {
				l[s.col] = r
			} else {
				l = append(l, r)
			}
			s.set(s.row, string(l))
			s.col++
		}
	}
	if s.wrote != nil {
		s.wrote <- s.cols
	}
	return len(p), nil
}

func (s *screen) line(i int) string {
	if i < len(s.lines) {
		return s.lines[i]
	}
	return ""
}

func (s *screen) set(i int, l string) {
	for len(s.lines) <= i {
		s.lines = append(s.lines, "")
	}
	s.lines[i] = l
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimRight(strings.Join(s.lines, "\n"), "\n") // the cursor's empty row
}

func TestTermViewLogAboveBlock(t *testing.T) {
	scr := &screen{cols: 80}
	tv := New(scr, scr)
	tv.Show([]string{"building the links…"})
	tv.Write([]byte("warn: a slow build\n"))
	tv.Detach() // the build is done: its line stays
	tv.Write([]byte("bridge dev: 3 link(s)\n"))
	tv.Show([]string{"emio a", "vrep a"})
	tv.Write([]byte("link emio: handshake done\n"))
	tv.Show([]string{"emio b", "vrep b"})
	tv.Write([]byte("link vrep: partner "))
	tv.Show([]string{"emio c", "vrep c"}) // a partial log line waits for its end
	tv.Write([]byte("lost\nsecond line\n"))
	tv.Show([]string{"emio d"})
	want := strings.Join([]string{
		"warn: a slow build",
		"building the links…",
		"bridge dev: 3 link(s)",
		"link emio: handshake done",
		"link vrep: partner lost",
		"second line",
		"emio d",
	}, "\n")
	if got := scr.text(); got != want {
		t.Errorf("screen:\n%s\nwant\n%s", got, want)
	}
	if !scr.sawEscape {
		t.Error("no ANSI sequence: the block was not redrawn in place")
	}
	tv.Show(nil)
	if got := scr.text(); got != strings.TrimSuffix(want, "\nemio d") {
		t.Errorf("after erase:\n%s", got)
	}
}

// The exact bytes of one log line written over a two-row block: up two
// rows clearing each, the line, the block again.
func TestTermViewBytes(t *testing.T) {
	var out, log strings.Builder
	tv := New(&out, &log)
	tv.Show([]string{"a", "b"})
	out.Reset()
	tv.Write([]byte("x=1\n"))
	if got, want := out.String(), "\r\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[2Ka\n\x1b[2Kb\n"; got != want {
		t.Errorf("out %q, want %q", got, want)
	}
	if log.String() != "x=1\n" {
		t.Errorf("log %q", log.String())
	}
	out.Reset()
	tv.Show([]string{"c"})
	if got, want := out.String(), "\r\x1b[2A\x1b[2Kc\n\x1b[2K\n\x1b[1A"; got != want {
		t.Errorf("redraw %q, want %q", got, want)
	}
}

// On SIGWINCH the view reads the width again and redraws at once; a block
// the terminal reflowed when it got narrower is erased whole.
func TestTermViewResize(t *testing.T) {
	scr := &screen{cols: 100, wrote: make(chan int, 10)}
	tv := New(scr, scr)
	var mu sync.Mutex
	cols := 100
	tv.width = func() int { mu.Lock(); defer mu.Unlock(); return cols }
	links := viewLinks()
	var asked []int
	rows := func(c int) []string { asked = append(asked, c); return Block(links, c) }
	winch := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { tv.Run(ctx, winch, time.Hour, rows) })

	winch <- syscall.SIGWINCH
	<-scr.wrote
	// The terminal narrows to 60 and reflows each 99-column row into 2.
	mu.Lock()
	cols = 60
	mu.Unlock()
	scr.mu.Lock()
	var reflowed []string
	for _, l := range scr.lines {
		r := []rune(l)
		for len(r) > 60 {
			reflowed, r = append(reflowed, string(r[:60])), r[60:]
		}
		reflowed = append(reflowed, string(r))
	}
	scr.lines, scr.row, scr.cols = reflowed, len(reflowed), 60
	scr.mu.Unlock()
	winch <- syscall.SIGWINCH
	<-scr.wrote
	cancel()
	wg.Wait()
	if len(asked) != 2 || asked[0] != 100 || asked[1] != 60 {
		t.Errorf("rows asked at %v columns, want [100 60]", asked)
	}
	// Stopped: the block is erased, the screen empty; nothing wrapped.
	if got := scr.text(); got != "" || scr.wrapped != 0 {
		t.Errorf("after the resize and stop (%d wraps):\n%s", scr.wrapped, got)
	}
}
