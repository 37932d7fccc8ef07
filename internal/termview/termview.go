// Package termview draws the links' status on a terminal: one row per link,
// redrawn in place under the log lines, its fields dropped from the right
// on a narrow terminal (README "Status"), and the one-line status of the
// exit summary. It speaks plain ANSI (ECMA-48: CUU, EL) to any terminal.
package termview

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/internal/statuspage"
)

// Legend explains the status fields; `bridge run -help` and
// `bridge sim -help` print it after the flags.
const Legend = `
Status: on a terminal, one row per link, redrawn 4 times a second under the
log lines; a narrow terminal drops fields from the right (vectors first, then
drop, rtt, timeout). Without a terminal, one line per link at exit.
  state        starting, handshaking (seq -1 until the partner answers),
               running, degraded (a device is down), stopped
  ok 99.6%     replies used (OK + OK_NO_DELAY) of all exchanges
  ok N/M       (exit line) N replies OK (seq-1), M OK_NO_DELAY (seq)
  timeout      ticks without a reply in the window
  desync       replies with a wrong seq (never applied; queue flushed)
  reconn       re-handshakes after consecutive timeouts or desyncs
  rtt          the last reply's latency, from the send of the seq it answers
  late         replies that came after their tick's window
  drop         datagrams dropped: wrong size, other host, NaN/Inf, kernel
  overrun      periods the loop skipped
  seq, last    (exit line) the last seq sent, the last exchange's status
  frame/lock   the camera's newest frame, markers found, (held): the markers
               are the last good ones; the frame lock's rate and phase
  stale        ticks that sent the last measurement again (device down)
  missed       ticks of a camera-paced link that ran without a frame
  cmd [..]     the last command; then the measurement by field
`

// Row is one link's status, read once per redraw so that the layout is
// a pure function of it.
type Row struct {
	Name, State, Last string
	Seq               int64
	RTT               time.Duration
	OK, OKNoDelay     uint64
	Exchanges         uint64 // every status counted: the ok % denominator
	Late, Timeout     uint64
	Desync, Reconn    uint64
	Drop, Overrun     uint64
	Deps              []string // dependencies' status, stale, missed ticks
	Vectors           []string // "cmd [...]", then the measurement's fields
}

// RowOf is the terminal's row of a link's status: the command as one
// vector, then the measurement by field but for the command's echo.
func RowOf(l statuspage.LinkStatus) Row {
	r := Row{
		Name: l.Name, State: l.State, Last: l.Last, Seq: l.Seq,
		RTT: time.Duration(math.Round(l.RTTMs*1e3)) * time.Microsecond,
		OK:  l.Counts.OK, OKNoDelay: l.Counts.OKNoDelay, Exchanges: l.Exchanges, Late: l.Counts.Late,
		Timeout: l.Counts.Timeouts, Desync: l.Counts.Desyncs, Reconn: l.Counts.Reconnects,
		Drop: l.Counts.Drops, Overrun: l.Counts.Overruns, Deps: l.Status,
	}
	if len(l.Command) == 0 {
		return r
	}
	var cmd []float64
	for _, f := range l.Command {
		cmd = append(cmd, f.Values...)
	}
	r.Vectors = append(r.Vectors, vector("cmd", l.Command[0].Unit, cmd))
	for _, f := range l.Measurement {
		if f.Name != l.Command[0].Name { // the command's echo (the angles) adds little to cmd
			r.Vectors = append(r.Vectors, vector(f.Name, f.Unit, f.Values))
		}
	}
	return r
}

// Line is one link's whole status on one line: the exit summary, and
// the live view when stdout is not a terminal.
func (r Row) Line() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-8s %-11s seq %-7d %-11s rtt %-9v ok %d/%d late %d timeout %d desync %d reconn %d drop %d overrun %d",
		r.Name, r.State, r.Seq, r.Last, r.RTT, r.OK, r.OKNoDelay, r.Late, r.Timeout, r.Desync, r.Reconn, r.Drop, r.Overrun)
	for _, v := range r.Vectors {
		sb.WriteString(" " + v)
	}
	for _, d := range r.Deps {
		sb.WriteString(" " + d)
	}
	return sb.String()
}

// vector is `name [v v …]`, in the unit's precision.
func vector(name, unit string, v []float64) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s [", name)
	for j, x := range v {
		if j > 0 {
			sb.WriteByte(' ')
		}
		switch {
		case unit == "rad" || unit == "rad/s":
			fmt.Fprintf(&sb, "%+.3f", x)
		case strings.Contains(unit, "mm") || strings.Contains(unit, "deg"):
			fmt.Fprintf(&sb, "%.1f", x)
		case unit == "s":
			fmt.Fprintf(&sb, "%.3f", x)
		default:
			fmt.Fprintf(&sb, "%g", x)
		}
	}
	sb.WriteByte(']')
	return sb.String()
}

// Block lays out one row per link for a terminal cols wide. The fixed
// groups, in order of importance, are padded to line up across rows and
// either shown whole or dropped (with every group after them), the same for
// every row; the variable tail (dependencies, then vectors) fills what is
// left and ends in "…" when cut. No row reaches the last column: a row that
// wrapped would break the cursor arithmetic of the redraw.
func Block(links []Row, cols int) []string {
	fit := max(cols-1, 10)
	// The state column is as wide as the longest state, so that a link
	// handshaking again does not shift every column.
	nameW, stateW := 0, runeLen("handshaking")
	for _, r := range links {
		nameW, stateW = max(nameW, runeLen(r.Name)), max(stateW, runeLen(r.State))
	}
	groups := make([][]string, len(links))
	for i, r := range links {
		ok := "ok      -"
		if r.Exchanges > 0 {
			ok = fmt.Sprintf("ok %5.1f%%", float64(r.OK+r.OKNoDelay)*100/float64(r.Exchanges))
		}
		groups[i] = []string{
			pad(r.Name, nameW) + " " + pad(r.State, stateW) + " " + ok,
			fmt.Sprintf("timeout %d desync %d reconn %d", r.Timeout, r.Desync, r.Reconn),
			fmt.Sprintf("rtt %v late %d", r.RTT, r.Late),
			fmt.Sprintf("drop %d overrun %d", r.Drop, r.Overrun),
		}
	}
	widths := make([]int, 4)
	for _, g := range groups {
		for j, s := range g {
			widths[j] = max(widths[j], runeLen(s))
		}
	}
	shown, used := 1, widths[0]
	for shown < len(widths) && used+2+widths[shown] <= fit {
		used += 2 + widths[shown]
		shown++
	}
	rows := make([]string, len(links))
	for i, r := range links {
		var sb strings.Builder
		for j := range shown {
			if j > 0 {
				sb.WriteString("  ")
			}
			sb.WriteString(pad(groups[i][j], widths[j]))
		}
		row := strings.TrimRight(sb.String(), " ")
		if shown == len(widths) {
			// The tail only when every fixed group is there: a row is
			// read left to right, a gap would hide what is missing.
			if tail := strings.Join(append(append([]string{}, r.Deps...), r.Vectors...), "  "); tail != "" && used+2+4 <= fit {
				row = pad(row, used) + "  " + tail
			}
		}
		rows[i] = clip(row, fit)
	}
	return rows
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, n int) string { return s + strings.Repeat(" ", max(n-runeLen(s), 0)) }

// clip cuts s to n columns, its last one "…" when cut.
func clip(s string, n int) string {
	if runeLen(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:max(n-1, 0)]), " ") + "…"
}

// View owns the bottom of the terminal: a block of rows redrawn in
// place, with log lines written above it. It is the logger's writer when
// stdout and stderr are the same terminal, so that a log line first erases
// the block, then is written, then the block comes back below it.
type View struct {
	mu      sync.Mutex
	out     io.Writer  // the terminal the block is drawn on (stdout)
	log     io.Writer  // where log lines go (stderr)
	width   func() int // the terminal's columns; read at start and on SIGWINCH
	rows    []string   // the block as drawn, the cursor on the row below it
	lines   int        // screen rows the block takes (more than rows after a reflow)
	partial []byte     // a log line not yet ended by '\n'
}

func New(out, log io.Writer) *View {
	return &View{out: out, log: log, width: func() int { c, _ := Width(out); return c }}
}

// Write writes whole log lines above the block; a partial line waits for its
// end, so that the block never sits in the middle of a line.
func (t *View) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	i := bytes.LastIndexByte(t.partial, '\n')
	if i < 0 {
		return len(p), nil
	}
	if err := t.writeAbove(t.partial[:i+1]); err != nil {
		return 0, err
	}
	t.partial = append(t.partial[:0], t.partial[i+1:]...)
	return len(p), nil
}

// writeAbove erases the block, writes p to the log, and draws the block
// again under it; t.mu is held.
func (t *View) writeAbove(p []byte) error {
	if t.lines > 0 {
		// Row by row rather than ESC[J: tmux moves a screen cleared from
		// its top row into its history, which would keep the block there.
		if _, err := io.WriteString(t.out, "\r"+strings.Repeat("\x1b[1A\x1b[2K", t.lines)); err != nil {
			return err
		}
		t.lines = 0
	}
	if _, err := t.log.Write(p); err != nil {
		return err
	}
	return t.redraw(t.rows)
}

// Show replaces the block by rows, in place.
func (t *View) Show(rows []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.redraw(rows)
}

// redraw draws rows over the block; t.mu is held.
func (t *View) redraw(rows []string) error {
	var b strings.Builder
	if t.lines > 0 {
		// \r first: a ^C echoed by the terminal moved the cursor.
		fmt.Fprintf(&b, "\r\x1b[%dA", t.lines)
	}
	for _, r := range rows {
		b.WriteString("\x1b[2K" + r + "\n")
	}
	if extra := t.lines - len(rows); extra > 0 { // what is left of a taller block
		fmt.Fprintf(&b, "%s\x1b[%dA", strings.Repeat("\x1b[2K\n", extra), extra)
	}
	t.rows, t.lines = rows, len(rows)
	if b.Len() == 0 {
		return nil
	}
	_, err := io.WriteString(t.out, b.String())
	return err
}

// resized accounts for a terminal that reflowed the block when it got
// narrower: a row wider than cols now takes several screen rows, and the
// next redraw must go up past all of them.
func (t *View) resized(cols int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cols <= 0 || t.lines != len(t.rows) {
		return
	}
	n := 0
	for _, r := range t.rows {
		n += max((runeLen(r)+cols-1)/cols, 1)
	}
	t.lines = n
}

// Detach leaves the block on the screen as plain lines, and writes out a
// partial log line: what comes next is written below it.
func (t *View) Detach() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows, t.lines = nil, 0
	if len(t.partial) > 0 {
		t.log.Write(append(t.partial, '\n'))
		t.partial = t.partial[:0]
	}
}

// Run redraws the block from rows every period and at once on a resize
// (winch), until ctx is done; it then erases the block, so that the exit
// summary takes its place.
func (t *View) Run(ctx context.Context, winch <-chan os.Signal, period time.Duration, rows func(cols int) []string) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	cols := t.width()
	for {
		select {
		case <-ctx.Done():
			t.Show(nil)
			t.Detach()
			return
		case <-winch:
			cols = t.width()
			t.resized(cols)
		case <-tick.C:
		}
		t.Show(rows(cols))
	}
}

// SameTerminal reports whether a and b are the same terminal device, where
// log lines written to one would land inside a block drawn on the other.
func SameTerminal(a, b io.Writer) bool {
	fa, ok1 := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok1 || !ok2 || !IsTerminal(a) || !IsTerminal(b) {
		return false
	}
	var sa, sb unix.Stat_t
	if unix.Fstat(int(fa.Fd()), &sa) != nil || unix.Fstat(int(fb.Fd()), &sb) != nil {
		return false
	}
	return sa.Rdev == sb.Rdev && sa.Ino == sb.Ino && sa.Dev == sb.Dev
}

// Watch draws rows on t every period and on each SIGWINCH until ctx is
// done (Run).
func (t *View) Watch(ctx context.Context, period time.Duration, rows func(cols int) []string) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	t.Run(ctx, winch, period, rows)
}

// Width is the width of w in columns when w is a terminal.
func Width(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	return int(ws.Col), err == nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool { _, ok := Width(w); return ok }
