package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot sizes, in points of the SVG's view box; the page scales them to its
// column width. Text is 9 to 10 pt in the view box, so it reads at about
// 12 px on the page.
const (
	fullW  vg.Length = 900 // vg.Length is in points
	halfW  vg.Length = 444
	plotH  vg.Length = 200
	bandsH vg.Length = 112
	// pxPerPt: the page shows a point of the view box at about 1.25 px;
	// down-sampling keeps one min/max pair per pixel column.
	pxPerPt = 1.25
)

func hexColor(s string) color.NRGBA {
	v, _ := strconv.ParseUint(s[1:], 16, 32)
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

// The palette (Tableau 10): series colors in order, then named ones.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// statusColors and stateColors color the timeline's bands, indexed like
// StatusNames and StateNames; statusRank orders statuses by how much they
// matter, so that a pixel column holding several shows the worst.
var (
	statusColors = []string{"#8da0cb", "#59a14f", "#9fd39a", "#f28e2b", "#e15759", "#b07aa1"}
	statusRank   = []int{1, 0, 0, 3, 5, 4}
	stateColors  = []string{"#c7c7c7", "#8da0cb", "#59a14f", "#edc948", "#5a5a5a"}
	stateRank    = []int{1, 2, 0, 3, 4}
	otherColor   = "#333333"
	lossColor    = "#d62728"
	inkColor     = hexColor("#333333")
	axisColor    = hexColor("#8a8f98")
	gridColor    = hexColor("#e6e8eb")
	markerColors = map[string]string{"p50": "#4e79a7", "p99": "#f28e2b", "max": "#d62728"}
)

func colorOf(i int) string { return palette[i%len(palette)] }

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func textStyle(size float64) text.Style {
	return text.Style{Color: inkColor, Font: font.From(sans, vg.Length(size)), Handler: plot.DefaultTextHandler, YAlign: text.YBottom}
}

// newPlot is a plot in the page's style: sans-serif text, grey axes, a light
// grid, labels with their unit. xTicks and yTicks are about how many labelled
// ticks each axis should have.
func newPlot(xlabel, ylabel string, xTicks, yTicks int) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = color.Transparent
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		// gonum's alignments are kept: only the font and colors change.
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Label.TextStyle.Color = inkColor
		a.Tick.Label.Font = font.From(sans, 9)
		a.Tick.Label.Color = hexColor("#555a61")
		a.Color = axisColor
		a.Tick.Color = axisColor
		a.Tick.Length = 3
		a.Width = 0.6
		a.Tick.Width = 0.6
		a.Padding = 2
	}
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.X.Label.Padding, p.Y.Label.Padding = 3, 5
	p.X.Tick.Marker = niceTicks{n: xTicks}
	p.Y.Tick.Marker = niceTicks{n: yTicks}
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: gridColor, Width: 0.5}
	g.Horizontal = draw.LineStyle{Color: gridColor, Width: 0.5}
	p.Add(g)
	return p
}

// niceTicks are about n labelled ticks at round steps (1, 2, 2.5 or 5 times
// a power of ten), with unlabelled ones between, labelled with just the
// decimals the step needs.
type niceTicks struct{ n int }

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	n := max(t.n, 2)
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		return []plot.Tick{{Value: lo, Label: formatTick(lo, 0)}}
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, sub, dec := 10*mag, 5, -math.Floor(math.Log10(mag))-1
	for _, m := range []struct {
		f   float64
		sub int
		dec float64
	}{{1, 5, 0}, {2, 4, 0}, {2.5, 5, 1}, {5, 5, 0}} {
		if m.f*mag >= raw*0.999 {
			step, sub, dec = m.f*mag, m.sub, -math.Floor(math.Log10(mag))+m.dec
			break
		}
	}
	minor := step / float64(sub)
	if math.Abs(lo/minor) > 1e12 || math.Abs(hi/minor) > 1e12 {
		// Steps lost in the values' precision: the ends only.
		return []plot.Tick{{Value: lo, Label: formatTick(lo, 0)}, {Value: hi, Label: formatTick(hi, 0)}}
	}
	var ts []plot.Tick
	for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+minor*1e-9 && len(ts) < 500; k++ {
		v := k * minor
		if int64(math.Round(k))%int64(sub) == 0 {
			ts = append(ts, plot.Tick{Value: v, Label: formatTick(v, int(max(dec, 0)))})
		} else {
			ts = append(ts, plot.Tick{Value: v})
		}
	}
	return ts
}

func formatTick(v float64, dec int) string {
	if a := math.Abs(v); a >= 1e7 || a != 0 && a < 1e-5 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Trim(s, "-0.") == "" {
		return "0"
	}
	return s
}

// logTicks label the powers of ten of a log axis: 1, 10, 100, 1k, 10k….
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		v := math.Pow(10, e)
		if v >= lo && v <= hi {
			ts = append(ts, plot.Tick{Value: v, Label: countLabel(v)})
		}
		for k := 2.0; k < 10; k++ {
			if m := v * k; m >= lo && m <= hi {
				ts = append(ts, plot.Tick{Value: m})
			}
		}
	}
	return ts
}

func countLabel(v float64) string {
	switch {
	case v >= 1e6:
		return formatTick(v/1e6, 0) + "M"
	case v >= 1e3:
		return formatTick(v/1e3, 0) + "k"
	}
	return formatTick(v, 0)
}

var svgOpen = regexp.MustCompile(`<svg width="[^"]*" height="[^"]*"`)

// svg draws p into an inline SVG element of w×h points, scaled by the page.
func svg(p *plot.Plot, w, h vg.Length, label string) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i >= 0 {
		out = out[i:]
	}
	out = svgOpen.ReplaceAll(out, []byte(`<svg class="plot" role="img" aria-label="`+template.HTMLEscapeString(label)+`"`))
	return template.HTML(out), nil // #nosec: vgsvg escapes the text it writes
}

// trace is a line through X, Y broken where a value is NaN (no data).
type trace struct {
	X, Y  []float64
	Style draw.LineStyle
}

func (t *trace) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var lines [][]vg.Point
	var cur []vg.Point
	flush := func() {
		if len(cur) > 0 {
			lines = append(lines, c.ClipLinesXY(cur)...)
			cur = nil
		}
	}
	for i := range t.X {
		if math.IsNaN(t.Y[i]) || math.IsInf(t.Y[i], 0) {
			flush()
			continue
		}
		cur = append(cur, vg.Point{X: trX(t.X[i]), Y: trY(t.Y[i])})
	}
	flush()
	// One path for the whole trace: one element in the page, not one per
	// segment.
	var path vg.Path
	for _, l := range lines {
		if len(l) == 0 {
			continue
		}
		path.Move(l[0])
		if len(l) == 1 { // a lone sample: a dot's worth of line
			path.Line(vg.Point{X: l[0].X + 0.6, Y: l[0].Y})
		}
		for _, pt := range l[1:] {
			path.Line(pt)
		}
	}
	if len(path) > 0 {
		c.SetLineStyle(t.Style)
		c.Stroke(path)
	}
}

func (t *trace) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for i, y := range t.Y {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		xmin, xmax = min(xmin, t.X[i]), max(xmax, t.X[i])
		ymin, ymax = min(ymin, y), max(ymax, y)
	}
	if math.IsInf(xmin, 0) {
		return 0, 0, 0, 0
	}
	return xmin, xmax, ymin, ymax
}

// finite reports whether the trace has a value to draw.
func (t *trace) finite() bool {
	for _, y := range t.Y {
		if !math.IsNaN(y) && !math.IsInf(y, 0) {
			return true
		}
	}
	return false
}

// downsample makes the points of a trace of v over time t for cols pixel
// columns across [x0, x1]: the samples themselves when there are few, else
// the minimum and maximum of each column, in the order they came. A step
// of time longer than maxGap (no data) breaks the line, as does an empty
// column.
func downsample[T float32 | float64](t []float64, v []T, x0, x1 float64, cols int, maxGap float64) (xs, ys []float64) {
	n := min(len(t), len(v))
	if n <= 2*cols || x1 <= x0 {
		xs, ys = make([]float64, 0, n+8), make([]float64, 0, n+8)
		for i := range n {
			if i > 0 && maxGap > 0 && t[i]-t[i-1] > maxGap {
				xs, ys = append(xs, t[i]), append(ys, math.NaN())
			}
			xs, ys = append(xs, t[i]), append(ys, float64(v[i]))
		}
		return xs, ys
	}
	type bucket struct {
		lo, hi   float64
		ilo, ihi int
		some     bool
	}
	bs := make([]bucket, cols)
	scale := float64(cols) / (x1 - x0)
	for i := range n {
		y := float64(v[i])
		if math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		k := min(max(int((t[i]-x0)*scale), 0), cols-1)
		b := &bs[k]
		if !b.some {
			*b = bucket{lo: y, hi: y, ilo: i, ihi: i, some: true}
			continue
		}
		if y < b.lo {
			b.lo, b.ilo = y, i
		}
		if y > b.hi {
			b.hi, b.ihi = y, i
		}
	}
	xs, ys = make([]float64, 0, 2*cols+8), make([]float64, 0, 2*cols+8)
	gap := false
	for k, b := range bs {
		if !b.some {
			if !gap && len(xs) > 0 {
				xs, ys = append(xs, x0+float64(k)/scale), append(ys, math.NaN())
			}
			gap = true
			continue
		}
		gap = false
		switch {
		case b.ilo == b.ihi:
			xs, ys = append(xs, t[b.ilo]), append(ys, b.lo)
		case b.ilo < b.ihi:
			xs, ys = append(xs, t[b.ilo], t[b.ihi]), append(ys, b.lo, b.hi)
		default:
			xs, ys = append(xs, t[b.ihi], t[b.ilo]), append(ys, b.hi, b.lo)
		}
	}
	return xs, ys
}

// band is one colored stretch of a timeline lane.
type band struct {
	x0, x1 float64
	color  string
}

// bands draws lanes of colored stretches: lane i fills y in [i+0.12, i+0.88].
type bands struct {
	lanes  [][]band
	x0, x1 float64
}

func (b *bands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, lane := range b.lanes {
		y0, y1 := trY(float64(i)+0.12), trY(float64(i)+0.88)
		for _, s := range lane {
			x0, x1 := trX(s.x0), trX(s.x1)
			if x1-x0 < 1.2 { // a short event stays visible
				x1 = x0 + 1.2
			}
			pts := c.ClipPolygonXY([]vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
			c.FillPolygon(hexColor(s.color), pts)
		}
	}
}

func (b *bands) DataRange() (xmin, xmax, ymin, ymax float64) {
	return b.x0, b.x1, 0, float64(len(b.lanes))
}

// laneOf makes a lane of cols columns across [x0, x1] from per-row codes,
// each row lasting a period (s; 0: an instant): each column shows the
// highest-ranked code it holds; adjacent columns of one code merge, and a
// column no row covers (lost ticks) stays empty.
func laneOf(t []float64, code []uint8, x0, x1, period float64, cols int, colors []string, rank []int) []band {
	if len(t) == 0 || x1 <= x0 {
		return nil
	}
	best := make([]int, cols)
	for i := range best {
		best[i] = -1
	}
	rankOf := func(c uint8) int {
		if int(c) < len(rank) {
			return rank[c]
		}
		return len(rank) + 1
	}
	scale := float64(cols) / (x1 - x0)
	for i, c := range code {
		k0 := min(max(int((t[i]-x0)*scale), 0), cols-1)
		// The columns the row's period covers, at least its own.
		k1 := min(max(int(math.Ceil((t[i]+period-x0)*scale))-1, k0), cols-1)
		for k := k0; k <= k1; k++ {
			if best[k] < 0 || rankOf(c) > rankOf(uint8(best[k])) {
				best[k] = int(c)
			}
		}
	}
	var out []band
	for k := 0; k < cols; {
		j := k + 1
		for j < cols && best[j] == best[k] {
			j++
		}
		if c := best[k]; c >= 0 {
			clr := otherColor
			if c < len(colors) {
				clr = colors[c]
			}
			out = append(out, band{x0: x0 + float64(k)/scale, x1: x0 + float64(j)/scale, color: clr})
		}
		k = j
	}
	return out
}

// bars is a histogram on a log count axis: a bar per bin with a count,
// from the bottom of the axis.
type bars struct {
	lo, width float64
	counts    []int
	color     string
	// over counts the values beyond the last bin, drawn as a bar of
	// overColor after a gap.
	over int
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	bottom := trY(p.Y.Min)
	draw1 := func(x0, x1 float64, n int, clr string) {
		if n <= 0 {
			return
		}
		l, r := trX(x0), trX(x1)
		if r-l > 1.2 {
			r -= 0.4 // a hairline between bars
		}
		top := trY(float64(n))
		pts := c.ClipPolygonXY([]vg.Point{{X: l, Y: bottom}, {X: r, Y: bottom}, {X: r, Y: top}, {X: l, Y: top}})
		c.FillPolygon(hexColor(clr), pts)
	}
	for i, n := range b.counts {
		draw1(b.lo+float64(i)*b.width, b.lo+float64(i+1)*b.width, n, b.color)
	}
	if b.over > 0 {
		end := b.lo + float64(len(b.counts))*b.width
		draw1(end+b.width, end+4*b.width, b.over, "#9aa0a8")
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	top := 1
	for _, n := range b.counts {
		top = max(top, n)
	}
	top = max(top, b.over)
	xmax = b.lo + float64(len(b.counts))*b.width
	if b.over > 0 {
		xmax += 4 * b.width
	}
	// A decade of headroom for the markers' labels.
	return b.lo, xmax, 0.7, float64(top) * 12
}

// marker is a vertical line at X with a label at the top, on row Row (0 the
// highest) so that close markers' labels do not overlap.
type marker struct {
	X     float64
	Label string
	Color string
	Row   int
	// Edge: X is beyond the axis; the line is drawn at the right edge
	// and the label says so with an arrow.
	Edge bool
}

type markers []marker

func (ms markers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, m := range ms {
		x := trX(m.X)
		if m.Edge {
			x = c.Max.X - 1
		}
		if x < c.Min.X-0.5 || x > c.Max.X+0.5 {
			continue
		}
		clr := hexColor(m.Color)
		ls := draw.LineStyle{Color: clr, Width: 1.1}
		if m.Row > 0 {
			ls.Dashes = []vg.Length{3, 2}
		}
		c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
		st := textStyle(8.5)
		st.Color = clr
		st.YAlign = text.YTop
		y := c.Max.Y - 2 - vg.Length(m.Row)*11
		lbl := m.Label
		// Labels go right of their line, or left of it near the right
		// edge; a pale box keeps them readable over the bars.
		w := st.Width(lbl)
		lx := x + 3
		if m.Edge {
			lbl += " →"
			w = st.Width(lbl)
		}
		if lx+w > c.Max.X-2 {
			st.XAlign = text.XRight
			lx = x - 3
		}
		bx0 := lx - 1.5
		if st.XAlign == text.XRight {
			bx0 = lx - w - 1.5
		}
		box := []vg.Point{{X: bx0, Y: y + 1}, {X: bx0 + w + 3, Y: y + 1}, {X: bx0 + w + 3, Y: y - 10}, {X: bx0, Y: y - 10}}
		c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 215}, box)
		c.FillText(st, vg.Point{X: lx, Y: y}, lbl)
	}
}

// hline is a horizontal dashed line at Y.
type hline struct {
	Y     float64
	Color string
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.Y)
	if y < c.Min.Y || y > c.Max.Y {
		return
	}
	c.StrokeLine2(draw.LineStyle{Color: hexColor(h.Color), Width: 0.8, Dashes: []vg.Length{3, 2}}, c.Min.X, y, c.Max.X, y)
}
