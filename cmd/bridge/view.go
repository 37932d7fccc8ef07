package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/labbridge/bridge/config"
	"github.com/labbridge/bridge/simulink"
)

// statusLine is one link's live status: state, exchange counters, the last
// command and the last measurement by field, and its dependencies' status.
func statusLine(b *config.Built) string {
	st := b.Master.Stats()
	var drops uint64
	for _, d := range st.Dropped {
		drops += d
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-8s %-11s seq %-7d %-11s rtt %-9v ok %d/%d late %d timeout %d desync %d reconn %d drop %d overrun %d",
		b.Config.Name, b.Link.State(), st.Seq, st.LastStatus, st.LastLatency.Round(time.Microsecond),
		st.Status[simulink.OK], st.Status[simulink.OKNoDelay], st.Late, st.Status[simulink.Timeout], st.Status[simulink.Desync],
		st.Status[simulink.Reconnected], drops, b.Link.Overruns())
	cmd := make([]float64, b.Layout.CommandLen())
	b.Link.Command(cmd)
	writeVector(&sb, "cmd", b.Layout.Command[0].Unit, cmd)
	meas := make([]float64, b.Layout.MeasureLen())
	if b.Link.Measurement(meas) {
		for _, f := range b.Layout.Measure {
			if f.Name != b.Layout.Command[0].Name { // the command's echo (the angles) adds little to cmd
				writeVector(&sb, f.Name, f.Unit, meas[:f.Len])
			}
			meas = meas[f.Len:]
		}
	}
	for _, s := range b.Status() {
		sb.WriteByte(' ')
		sb.WriteString(s)
	}
	if n := b.Link.Stale(); n > 0 {
		fmt.Fprintf(&sb, " stale %d", n)
	}
	if clock := b.Config.Clock; clock == "frame" {
		fmt.Fprintf(&sb, " missed %s ticks %d", clock, b.Link.MissedTriggers())
	}
	return sb.String()
}

// writeVector writes ` name [v v …]`, in the unit's precision.
func writeVector(sb *strings.Builder, name, unit string, v []float64) {
	fmt.Fprintf(sb, " %s [", name)
	for j, x := range v {
		if j > 0 {
			sb.WriteByte(' ')
		}
		switch {
		case unit == "rad" || unit == "rad/s":
			fmt.Fprintf(sb, "%+.3f", x)
		case strings.Contains(unit, "mm") || strings.Contains(unit, "deg"):
			fmt.Fprintf(sb, "%.1f", x)
		case unit == "s":
			fmt.Fprintf(sb, "%.3f", x)
		default:
			fmt.Fprintf(sb, "%g", x)
		}
	}
	sb.WriteByte(']')
}

// view redraws one line per link until ctx is done.
func (a *app) view(ctx context.Context, w io.Writer) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	drawn := 0
	for {
		select {
		case <-ctx.Done():
			if drawn > 0 {
				// \r first: a ^C echoed by the terminal moved the cursor.
				fmt.Fprintf(w, "\r\033[%dA\033[J", drawn)
			}
			return
		case <-t.C:
		}
		var b strings.Builder
		if drawn > 0 {
			fmt.Fprintf(&b, "\r\033[%dA", drawn)
		}
		cols, _ := termWidth(w)
		cols = max(cols-1, 20) // a line that wraps would break the redraw
		for _, l := range a.links {
			b.WriteString("\r\033[K")
			line := []rune(statusLine(l))
			b.WriteString(string(line[:min(len(line), cols)]))
			b.WriteByte('\n')
		}
		io.WriteString(w, b.String())
		drawn = len(a.links)
	}
}
