package report

import (
	"bufio"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot/vg/draw"

	"github.com/labbridge/bridge/internal/atomicfile"
)

// Comparison is a recording and a replay of it, value by value, for one
// page: per field, the recorded and the replayed values overlaid, and
// their difference (`bridge replay -report`).
type Comparison struct {
	Name    string   // the recording's file
	What    string   // what was replayed, and where
	Summary []string // lines said above the plots
	// Diffs are per value, in the table under the lines.
	Diffs []Diff
	Time  []float64
	// Recorded and Replayed hold the same columns; a value is NaN where a
	// tick was not replayed.
	Recorded, Replayed []*Signal
}

// Diff is one value's difference in the table: the largest and the RMS
// of replayed − recorded, and the tick of the largest.
type Diff struct {
	Column   string
	Max, RMS float64
	At       string
}

// NewComparison builds a Comparison of columns (as a recording names them,
// meas_… or cmd_…) at time (s): recorded[i] and replayed[i] are row i's
// vectors, replayed only where got[i].
func NewComparison(name, what string, summary, columns []string, time []float64, recorded, replayed [][]float64, got []bool) *Comparison {
	c := &Comparison{Name: name, What: what, Summary: summary, Time: time}
	for j, col := range columns {
		_, rest, _ := strings.Cut(col, "_")
		field, index, unit := splitColumn(rest)
		rec := &Signal{Column: col, Field: field, Index: index, Unit: unit, Values: make([]float64, len(time))}
		rep := &Signal{Column: col, Field: field, Index: index, Unit: unit, Values: make([]float64, len(time))}
		for i := range time {
			rec.Values[i], rep.Values[i] = recorded[i][j], math.NaN()
			if got[i] {
				rep.Values[i] = replayed[i][j]
			}
		}
		c.Recorded, c.Replayed = append(c.Recorded, rec), append(c.Replayed, rep)
	}
	return c
}

// figures are, per field, the overlay and the difference.
func (c *Comparison) figures() ([]figure, error) {
	ax := timeAxis{}
	if len(c.Time) > 0 {
		ax.x0, ax.x1 = minOf(c.Time), maxOf(c.Time)
	}
	if len(c.Time) > 1 {
		ax.gap = 3.5 * (ax.x1 - ax.x0) / float64(len(c.Time)-1)
	}
	replayed := map[string]*Signal{}
	for _, s := range c.Replayed {
		replayed[s.Column] = s
	}
	var out []figure
	for _, g := range groups(c.Recorded) {
		label := axisLabel(g, "value")
		over := figure{Title: label}
		diff := figure{Title: "replayed − recorded, " + label}
		po, pd := newPlot("time (s)", label, 6, 5), newPlot("time (s)", "difference", 6, 5)
		anyO, anyD := false, false
		for i, s := range g.sigs {
			col := hexColor(colorOf(i))
			pale := color.NRGBA{R: col.R, G: col.G, B: col.B, A: 90}
			r := replayed[s.Column]
			for _, tr := range []struct {
				v     []float64
				style draw.LineStyle
			}{{s.Values, draw.LineStyle{Color: pale, Width: 3.2}}, {r.Values, draw.LineStyle{Color: col, Width: 0.9}}} {
				xs, ys := downsample(c.Time, tr.v, ax.x0, ax.x1, halfCols, ax.gap)
				if t := (&trace{X: xs, Y: ys, Style: tr.style}); t.finite() {
					po.Add(t)
					anyO = true
				}
			}
			d := make([]float64, len(s.Values))
			for k := range d {
				d[k] = r.Values[k] - s.Values[k]
			}
			xs, ys := downsample(c.Time, d, ax.x0, ax.x1, halfCols, ax.gap)
			if t := (&trace{X: xs, Y: ys, Style: draw.LineStyle{Color: col, Width: 0.9}}); t.finite() {
				pd.Add(t)
				anyD = true
			}
			if len(g.sigs) > 1 {
				sw := swatch{componentLabel(s, i), colorOf(i), "line"}
				over.Legend, diff.Legend = append(over.Legend, sw), append(diff.Legend, sw)
			}
		}
		over.Legend = append(over.Legend, swatch{"recorded", "#7f8790", "wide"}, swatch{"replayed", "#333333", "line"})
		if err := ax.finish(&over, po, anyO, label); err != nil {
			return nil, err
		}
		if err := ax.finish(&diff, pd, anyD, "difference"); err != nil {
			return nil, err
		}
		out = append(out, over, diff)
	}
	return out, nil
}

// WriteHTML writes the comparison as one self-contained HTML page.
func (c *Comparison) WriteHTML(w io.Writer) error {
	figs, err := c.figures()
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	v := struct {
		Title, Name, What string
		Style             template.CSS
		Summary           []string
		Diffs             []Diff
		Figures           []figure
	}{c.Name + " replayed — bridge replay", c.Name, c.What, pageStyle(), c.Summary, c.Diffs, figs}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := comparePage.Execute(bw, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// WriteFile writes the page to path, whole or not at all.
func (c *Comparison) WriteFile(path string) error {
	if err := atomicfile.Write(path, 0o644, c.WriteHTML); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

var comparePage = template.Must(template.Must(page.Clone()).New("compare").Parse(`{{template "head" .}}
<body>
<header><div class="wrap">
<h1>{{.Name}}<small>replayed</small></h1>
<div class="meta">{{.What}}</div>
</div></header>
<main><div class="wrap">
<section class="link">
{{range .Summary}}<p class="lead">{{.}}</p>{{end}}
{{if .Diffs}}<table class="list"><tr><th>value</th><th>max |replayed − recorded|</th><th>RMS</th><th>at tick</th></tr>{{range .Diffs}}<tr><td>{{.Column}}</td><td>{{printf "%.6g" .Max}}</td><td>{{printf "%.6g" .RMS}}</td><td>{{.At}}</td></tr>{{end}}</table>{{end}}
<h3>Recorded and replayed, and their difference</h3>
<div class="grid">{{range .Figures}}{{template "fig" .}}{{end}}</div>
</section>
</div></main>
<footer>bridge replay · the recording as bridge record wrote it (docs/tap.md §5) · the replay tick for tick, by seq</footer>
</body>
</html>
`))
