package report

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// Down-sampling: pixel columns of a half-width and a full-width plot's data
// area (the view box width less the axis, at pxPerPt).
var (
	halfCols = int(float64(halfW.Points()-50) * pxPerPt)
	fullCols = int(float64(fullW.Points()-50) * pxPerPt)
)

// A swatch is one entry of a figure's legend, drawn in HTML beside it.
type swatch struct {
	Label string
	Color string
	Kind  string // "line", "wide" (received command), "band", "dash"
}

// A figure is one plot of the page with its title and legend.
type figure struct {
	Title  string
	Note   string
	SVG    template.HTML
	Legend []swatch
	Empty  string // why there is no plot
}

// timeAxis holds the time span every time plot of a link shares, so that
// they line up.
type timeAxis struct {
	x0, x1 float64
	gap    float64 // s: a step longer than this breaks a line
}

// finish draws a half-width signal plot into f, or says it has nothing to
// draw when no value was finite.
func (a timeAxis) finish(f *figure, p *plot.Plot, any bool, label string) error {
	if !any {
		f.Empty, f.Legend = "no finite value recorded", nil
		return nil
	}
	a.set(p)
	var err error
	f.SVG, err = svg(p, halfW, plotH, label)
	return err
}

func (a timeAxis) set(p *plot.Plot) {
	p.X.Min, p.X.Max = a.x0, a.x1
	if a.x1 <= a.x0 {
		p.X.Max = a.x0 + 1
	}
}

func newTimeAxis(l *LinkFile, s *Stats) timeAxis {
	a := timeAxis{}
	if l.Rows() > 0 {
		a.x0, a.x1 = minOf(l.Time), maxOf(l.Time)
	}
	if s.PeriodUs > 0 {
		a.gap = 3.5 * s.PeriodUs / 1e6
	}
	return a
}

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// fmtUs writes a duration in µs with three significant digits, in ms from
// 10 ms up.
func fmtUs(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if math.Abs(v) >= 1000 {
		return sig(v/1000) + " ms"
	}
	return sig(v) + " µs"
}

// sig writes v with three significant digits, no exponent.
func sig(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// histogram is the distribution d of a quantity in µs, with its p50, p99
// and max marked. A long tail (max beyond four times the p99's distance
// from the minimum) is cut at twice that distance: the values beyond are
// one grey bar, and the max marker points past the axis.
func histogram(d Dist, what, clr string) (figure, error) {
	f := figure{Title: what + " histogram",
		Legend: []swatch{{"p50 " + fmtUs(d.P50), markerColors["p50"], "line"}, {"p99 " + fmtUs(d.P99), markerColors["p99"], "dash"}, {"max " + fmtUs(d.Max), markerColors["max"], "dash"}}}
	if d.N == 0 {
		f.Empty, f.Legend = "no "+what+" recorded", nil
		return f, nil
	}
	lo, hi := d.Min, d.Max
	if math.IsInf(hi-lo, 0) {
		f.Empty, f.Legend = "values beyond any scale: "+fmtUs(lo)+" to "+fmtUs(hi), nil
		return f, nil
	}
	if d.P99 > lo && d.Max-lo > 4*(d.P99-lo) {
		hi = lo + 2*(d.P99-lo)
	}
	if hi <= lo {
		lo, hi = lo-0.5, hi+0.5
	}
	const nb = 60
	b := &bars{lo: lo, width: (hi - lo) / nb, counts: make([]int, nb), color: clr}
	for _, v := range d.Sorted {
		if v > hi {
			b.over++
			continue
		}
		b.counts[min(max(int((v-lo)/b.width), 0), nb-1)]++
	}
	p := newPlot(what+" (µs)", "ticks", 5, 4)
	p.Add(b)
	p.Add(markers{
		{X: d.P50, Label: "p50", Color: markerColors["p50"], Row: 0},
		{X: d.P99, Label: "p99", Color: markerColors["p99"], Row: 1},
		{X: d.Max, Label: "max", Color: markerColors["max"], Row: 2, Edge: b.over > 0},
	})
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Y.Min = 0.7
	if b.over > 0 {
		f.Note = fmt.Sprintf("%d of %d beyond %s (grey bar)", b.over, d.N, fmtUs(hi))
	}
	var err error
	f.SVG, err = svg(p, halfW, plotH, what+" histogram")
	return f, err
}

// timeline is the link's status, state and losses over time, as colored
// bands.
func timeline(l *LinkFile, s *Stats, ax timeAxis) (figure, error) {
	f := figure{Title: "Status, state and losses over time"}
	for i, n := range StatusNames {
		if s.Status[i] > 0 {
			f.Legend = append(f.Legend, swatch{n, statusColors[i], "band"})
		}
	}
	seen := make([]bool, len(StateNames))
	for _, st := range l.State {
		if int(st) < len(seen) {
			seen[st] = true
		}
	}
	for i, n := range StateNames {
		if seen[i] {
			f.Legend = append(f.Legend, swatch{n, stateColors[i], "band"})
		}
	}
	f.Legend = append(f.Legend, swatch{"lost ticks", lossColor, "band"})
	if l.Rows() == 0 {
		f.Empty, f.Legend = "no rows", nil
		return f, nil
	}
	var loss []band
	for _, g := range s.Gaps {
		loss = append(loss, band{x0: g.Time, x1: g.Time + g.Span, color: lossColor})
	}
	b := &bands{x0: ax.x0, x1: ax.x1, lanes: [][]band{
		loss,
		laneOf(l.Time, l.State, ax.x0, ax.x1, s.PeriodUs/1e6, fullCols, stateColors, stateRank),
		laneOf(l.Time, l.Status, ax.x0, ax.x1, s.PeriodUs/1e6, fullCols, statusColors, statusRank),
	}}
	p := newPlot("time (s)", "", 8, 3)
	p.Add(b)
	ax.set(p)
	p.Y.Min, p.Y.Max = 0, 3
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0.5, Label: "lost"}, {Value: 1.5, Label: "state"}, {Value: 2.5, Label: "status"}}
	p.Y.Tick.Length = 0
	p.Y.Color = color.Transparent
	var err error
	f.SVG, err = svg(p, fullW, bandsH, "status timeline")
	return f, err
}

// deviationPlot is the signed send-interval deviation over time, with the
// p99 of its absolute value marked on both sides.
func deviationPlot(s *Stats, ax timeAxis) (figure, error) {
	f := figure{Title: "Send-interval deviation over time",
		Note:   "interval between the sends of consecutive ticks less the nominal " + fmtUs(s.IntervalUs),
		Legend: []swatch{{"deviation", palette[0], "line"}, {"±p99 " + fmtUs(s.Deviation.P99), markerColors["p99"], "dash"}}}
	if len(s.DevUs) == 0 {
		f.Empty, f.Legend, f.Note = "no two consecutive ticks were sent", nil, ""
		return f, nil
	}
	xs, ys := downsample(s.DevTime, s.DevUs, ax.x0, ax.x1, fullCols, ax.gap)
	p := newPlot("time (s)", "deviation (µs)", 8, 5)
	p.Add(&trace{X: xs, Y: ys, Style: draw.LineStyle{Color: hexColor(palette[0]), Width: 0.8}})
	p.Add(hline{Y: s.Deviation.P99, Color: markerColors["p99"]}, hline{Y: -s.Deviation.P99, Color: markerColors["p99"]})
	ax.set(p)
	// Keep ±p99 in view even when every deviation is on one side.
	p.Y.Min = min(p.Y.Min, -s.Deviation.P99*1.1)
	p.Y.Max = max(p.Y.Max, s.Deviation.P99*1.1)
	var err error
	f.SVG, err = svg(p, fullW, plotH, "send-interval deviation")
	return f, err
}

// group is the signals of one field: a vector column group.
type group struct {
	field, unit string
	sigs        []*Signal
}

func groups(sigs []*Signal) []*group {
	var out []*group
	at := map[[2]string]*group{}
	for _, s := range sigs {
		k := [2]string{s.Field, s.Unit}
		g := at[k]
		if g == nil {
			g = &group{field: s.Field, unit: s.Unit}
			at[k] = g
			out = append(out, g)
		}
		g.sigs = append(g.sigs, s)
	}
	return out
}

// axisLabel is a field's name and unit as an axis label: "markers (mm)".
func axisLabel(g *group, kind string) string {
	name := g.field
	if name == "" {
		name = kind + " (by position)"
	}
	if g.unit != "" {
		return name + " (" + UnitLabel(g.unit) + ")"
	}
	return name
}

func componentLabel(s *Signal, i int) string {
	if s.Index > 0 {
		return strconv.Itoa(s.Index)
	}
	return strconv.Itoa(i + 1)
}

// measurementPlots are one plot per measured field, a line per value.
func measurementPlots(l *LinkFile, ax timeAxis) ([]figure, error) {
	var out []figure
	for _, g := range groups(l.Meas) {
		label := axisLabel(g, "measurement")
		f := figure{Title: label}
		p := newPlot("time (s)", label, 6, 5)
		any := false
		for i, s := range g.sigs {
			xs, ys := downsample(l.Time, s.Values, ax.x0, ax.x1, halfCols, ax.gap)
			t := &trace{X: xs, Y: ys, Style: draw.LineStyle{Color: hexColor(colorOf(i)), Width: 1}}
			if t.finite() {
				p.Add(t)
				any = true
			}
			if len(g.sigs) > 1 {
				f.Legend = append(f.Legend, swatch{componentLabel(s, i), colorOf(i), "line"})
			}
		}
		if err := ax.finish(&f, p, any, label); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// commandPlots are one plot per commanded field: the command received as
// a wide pale line, the command applied to the plant as a thin one on it,
// in the same color per value, so that a clamp or a held command shows
// where they part.
func commandPlots(l *LinkFile, ax timeAxis) ([]figure, error) {
	applied := map[[2]string]*Signal{}
	for _, s := range l.Applied {
		applied[[2]string{s.Field, strconv.Itoa(s.Index)}] = s
	}
	var out []figure
	for _, g := range groups(l.Cmd) {
		label := axisLabel(g, "command")
		f := figure{Title: label}
		p := newPlot("time (s)", label, 6, 5)
		any := false
		for i, s := range g.sigs {
			c := hexColor(colorOf(i))
			pale := color.NRGBA{R: c.R, G: c.G, B: c.B, A: 90}
			xs, ys := downsample(l.Time, s.Values, ax.x0, ax.x1, halfCols, ax.gap)
			t := &trace{X: xs, Y: ys, Style: draw.LineStyle{Color: pale, Width: 3.2}}
			if t.finite() {
				p.Add(t)
				any = true
			}
			if a := applied[[2]string{s.Field, strconv.Itoa(s.Index)}]; a != nil {
				xs, ys := downsample(l.Time, a.Values, ax.x0, ax.x1, halfCols, ax.gap)
				t := &trace{X: xs, Y: ys, Style: draw.LineStyle{Color: c, Width: 0.9}}
				if t.finite() {
					p.Add(t)
					any = true
				}
			}
			if len(g.sigs) > 1 {
				f.Legend = append(f.Legend, swatch{componentLabel(s, i), colorOf(i), "line"})
			}
		}
		f.Legend = append(f.Legend, swatch{"received", "#7f8790", "wide"}, swatch{"applied", "#333333", "line"})
		if err := ax.finish(&f, p, any, label); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
