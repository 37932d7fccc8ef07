package report

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"codeberg.org/go-fonts/liberation/liberationsansregular"

	"github.com/labbridge/bridge/tap/payload"
)

// A Report is a recording with its links' statistics.
type Report struct {
	Recording *Recording
	Stats     []*Stats // one per link, in the order of Recording.Links
}

// Build computes the statistics of every link of rec.
func Build(rec *Recording) *Report {
	r := &Report{Recording: rec}
	for _, l := range rec.Links {
		r.Stats = append(r.Stats, Analyze(l))
	}
	return r
}

// Summary is one line on link i: its length and rate, what was lost and
// the timing percentiles.
func (r *Report) Summary(i int) string {
	l, s := r.Recording.Links[i], r.Stats[i]
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d rows, %s", l.Name, s.Rows, fmtSeconds(s.Duration))
	if s.RateHz > 0 {
		fmt.Fprintf(&b, " at %s Hz", sig(s.RateHz))
	}
	fmt.Fprintf(&b, ", lost %d", s.Lost)
	if len(s.Gaps) > 0 {
		fmt.Fprintf(&b, " in %d gap%s", len(s.Gaps), plural(len(s.Gaps)))
	}
	fmt.Fprintf(&b, ", reordered %d, timeouts %d", s.Reordered, s.Timeouts())
	if s.Lateness.N > 0 {
		fmt.Fprintf(&b, ", lateness p99 %s", fmtUs(s.Lateness.P99))
	}
	if s.Reply.N > 0 {
		fmt.Fprintf(&b, ", reply p99 %s", fmtUs(s.Reply.P99))
	}
	if s.Deviation.N > 0 {
		fmt.Fprintf(&b, ", send deviation p99 %s", fmtUs(s.Deviation.P99))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func fmtSeconds(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm%02.0fs", int(s/3600), int(math.Mod(s, 3600)/60), math.Mod(s, 60))
	case s >= 120:
		return fmt.Sprintf("%dm%02.0fs", int(s/60), math.Mod(s, 60))
	}
	return strconv.FormatFloat(s, 'f', 3, 64) + " s"
}

// The view models of the template.
type (
	pageView struct {
		Title, Name, Date, Span string
		Style                   template.CSS
		Links                   []*linkView
	}
	kv struct {
		Key, Value string
		Bad        bool // shown in red: a loss, a timeout, an overrun
	}
	count struct {
		Name, Color string
		N           int
		Pct         string
	}
	gapRow struct {
		At, Seq, Lost, Span string
	}
	changeRow struct {
		At, From, To string
	}
	linkView struct {
		ID, Name, File, Rate, Brief string
		Problems                    bool
		// Twin: the stream of a link's shadow twin (LINK_shadow, no
		// command): its measurement is robot − model.
		Twin                       bool
		TwinOf                     string
		General, Timing, Integrity []kv
		Statuses                   []count
		Timeline, Lateness, Reply  figure
		Deviation                  figure
		Meas, Cmd                  []figure
		Lost                       int64
		NGaps                      int
		Gaps                       []gapRow
		Changes                    []changeRow
		MoreChanges                int
		Warnings                   []string
	}
)

// WriteHTML writes the report as one self-contained HTML page.
func (r *Report) WriteHTML(w io.Writer) error {
	v := pageView{Name: r.Recording.Name, Title: r.Recording.Name + " — bridge report", Style: pageStyle()}
	first, last := math.Inf(1), math.Inf(-1)
	for i, l := range r.Recording.Links {
		if l.Rows() > 0 {
			first, last = min(first, minOf(l.Deadline)), max(last, maxOf(l.Deadline))
		}
		lv, err := r.linkView(i)
		if err != nil {
			return err
		}
		v.Links = append(v.Links, lv)
	}
	if !math.IsInf(first, 0) {
		sec, frac := math.Modf(first)
		v.Date = time.Unix(int64(sec), int64(frac*1e9)).UTC().Format("Monday 2 January 2006, 15:04:05 MST")
		v.Span = fmtSeconds(last - first)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := page.Execute(bw, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

func (r *Report) linkView(i int) (*linkView, error) {
	l, s := r.Recording.Links[i], r.Stats[i]
	v := &linkView{ID: "link-" + strconv.Itoa(i+1), Name: l.Name, File: l.File, Lost: s.Lost, NGaps: len(s.Gaps), Warnings: l.Warnings}
	if s.RateHz > 0 {
		v.Rate = sig(s.RateHz) + " Hz"
	}
	v.Problems = s.Lost > 0 || s.Timeouts() > 0 || s.Status[3] > 0 || s.Overrun > 0
	v.Brief = fmt.Sprintf("%s · lost %d · timeouts %d", fmtSeconds(s.Duration), s.Lost, s.Timeouts())
	if of, ok := payload.TwinOf(l.Name); ok && len(l.Cmd) == 0 {
		// A shadow twin's stream: no exchange of its own to time.
		v.Twin, v.TwinOf = true, of
		v.Problems = s.Lost > 0
		v.Brief = fmt.Sprintf("%s · robot − model of %s", fmtSeconds(s.Duration), of)
	}
	pct := func(n int) string {
		if s.Rows == 0 {
			return ""
		}
		p := 100 * float64(n) / float64(s.Rows)
		if p > 0 && p < 0.1 {
			return "<0.1 %"
		}
		return strconv.FormatFloat(p, 'f', 1, 64) + " %"
	}
	tri := func(d Dist) string {
		if d.N == 0 {
			return "–"
		}
		return fmtUs(d.P50) + " / " + fmtUs(d.P99) + " / " + fmtUs(d.Max)
	}
	n := strconv.Itoa
	v.General = []kv{
		{Key: "rows", Value: n(s.Rows)},
		{Key: "duration", Value: fmtSeconds(s.Duration)},
		{Key: "ticks", Value: fmt.Sprintf("%d (%d – %d)", s.Ticks, s.FirstTick, s.LastTick)},
		{Key: "rate", Value: orDash(v.Rate)},
		{Key: "period", Value: fmtUs(nanIfZero(s.PeriodUs))},
	}
	v.Timing = []kv{
		{Key: "lateness p50 / p99 / max", Value: tri(s.Lateness)},
		{Key: "reply latency p50 / p99 / max", Value: tri(s.Reply)},
		{Key: "replies", Value: n(s.Reply.N) + " (" + pct(s.Reply.N) + ")"},
		{Key: "send interval (median)", Value: fmtUs(nanIfZero(s.IntervalUs))},
		{Key: "send-interval deviation p50 / p99 / max", Value: tri(s.Deviation)},
	}
	v.Integrity = []kv{
		{Key: "lost ticks", Value: lostText(s), Bad: s.Lost > 0},
		{Key: "reordered", Value: n(s.Reordered), Bad: s.Reordered > 0},
		{Key: "duplicates", Value: n(s.Duplicates), Bad: s.Duplicates > 0},
		{Key: "late replies", Value: n(s.Late) + " (" + pct(s.Late) + ")", Bad: s.Late > 0},
		{Key: "stale measurements", Value: n(s.Stale), Bad: s.Stale > 0},
		{Key: "overruns", Value: n(s.Overrun), Bad: s.Overrun > 0},
		{Key: "commands applied", Value: n(s.Applied) + " (" + pct(s.Applied) + ")"},
		{Key: "state changes", Value: n(len(s.StateChanges))},
	}
	for k, name := range StatusNames {
		if s.Status[k] > 0 || k == 1 {
			v.Statuses = append(v.Statuses, count{Name: name, Color: statusColors[k], N: s.Status[k], Pct: pct(s.Status[k])})
		}
	}
	if s.OtherStatus > 0 {
		v.Statuses = append(v.Statuses, count{Name: "other", Color: otherColor, N: s.OtherStatus, Pct: pct(s.OtherStatus)})
	}
	for _, g := range s.LargestGaps(10) {
		seq := strconv.FormatInt(g.First, 10)
		if g.Last != g.First {
			seq += " – " + strconv.FormatInt(g.Last, 10)
		}
		v.Gaps = append(v.Gaps, gapRow{At: strconv.FormatFloat(g.Time, 'f', 3, 64), Seq: seq, Lost: strconv.FormatInt(g.Lost, 10), Span: fmtUs(g.Span * 1e6)})
	}
	const maxChanges = 20
	for k, c := range s.StateChanges {
		if k == maxChanges {
			v.MoreChanges = len(s.StateChanges) - maxChanges
			break
		}
		v.Changes = append(v.Changes, changeRow{At: strconv.FormatFloat(c.Time, 'f', 3, 64), From: nameOf(StateNames, c.From), To: nameOf(StateNames, c.To)})
	}

	ax := newTimeAxis(l, s)
	var err error
	if v.Timeline, err = timeline(l, s, ax); err != nil {
		return nil, err
	}
	if v.Lateness, err = histogram(s.Lateness, "lateness", palette[0]); err != nil {
		return nil, err
	}
	if v.Reply, err = histogram(s.Reply, "reply latency", palette[3]); err != nil {
		return nil, err
	}
	if v.Deviation, err = deviationPlot(s, ax); err != nil {
		return nil, err
	}
	if v.Meas, err = measurementPlots(l, ax); err != nil {
		return nil, err
	}
	if v.Cmd, err = commandPlots(l, ax); err != nil {
		return nil, err
	}
	return v, nil
}

func lostText(s *Stats) string {
	if s.Lost == 0 {
		return "0"
	}
	return fmt.Sprintf("%d in %d gap%s", s.Lost, len(s.Gaps), plural(len(s.Gaps)))
}

func nameOf(names []string, c uint8) string {
	if int(c) < len(names) {
		return names[c]
	}
	return strconv.Itoa(int(c))
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func nanIfZero(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// pageStyle is the page's CSS, with the font the plots' text was measured
// with embedded (Liberation Sans, SIL Open Font License), so that labels
// fit on any machine, installed fonts or not.
var pageStyle = sync.OnceValue(func() template.CSS {
	return template.CSS(`@font-face{font-family:"Liberation Sans";src:url(data:font/ttf;base64,` +
		base64.StdEncoding.EncodeToString(liberationsansregular.TTF) + `) format("truetype");font-weight:normal;font-style:normal}` + css)
})

const css = `
:root{--ink:#24292f;--muted:#5f6873;--line:#e1e4e8;--bg:#f5f6f8;--card:#fff;--bad:#c62828;--ok:#2e7d32;--accent:#4e79a7}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans",Arial,sans-serif;font-variant-numeric:tabular-nums}
svg text{font-family:"Liberation Sans",Arial,Helvetica,sans-serif!important}
header{background:#1f2a37;color:#f3f5f7;padding:22px 0 18px}
.wrap{max-width:1240px;margin:0 auto;padding:0 24px}
header h1{margin:0;font-size:26px;font-weight:600;letter-spacing:.2px}
header h1 small{font-size:14px;font-weight:400;color:#aab4c0;margin-left:10px}
header .meta{margin-top:4px;color:#c9d1da}
nav.links{display:flex;flex-wrap:wrap;gap:10px;margin-top:14px}
nav.links a{display:block;padding:8px 12px;border-radius:8px;background:#2b3948;color:#f3f5f7;text-decoration:none;border:1px solid #3a4a5c;min-width:180px}
nav.links a:hover{background:#34455a}
nav.links b{font-weight:600}
nav.links span{display:block;font-size:12px;color:#aab4c0}
nav.links i{font-style:normal;display:inline-block;width:8px;height:8px;border-radius:50%;margin-right:6px;background:#59a14f}
nav.links i.bad{background:#e15759}
main{padding:8px 0 40px}
section.link{background:var(--card);border:1px solid var(--line);border-radius:12px;margin:22px 0;padding:18px 22px 22px;box-shadow:0 1px 2px rgba(0,0,0,.04)}
section.link>h2{margin:0 0 2px;font-size:21px;font-weight:600}
section.link>h2 .rate{font-size:13px;font-weight:500;color:var(--accent);background:#eaf0f7;border-radius:10px;padding:2px 9px;margin-left:8px;vertical-align:middle}
.file{color:var(--muted);font-size:12px;word-break:break-all}
h3{font-size:14px;font-weight:600;text-transform:uppercase;letter-spacing:.6px;color:var(--muted);margin:22px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.tables{display:grid;grid-template-columns:repeat(3,1fr);gap:18px 28px;margin-top:12px;align-items:start}
table.kv{width:100%;border-collapse:collapse;font-size:13px}
table.kv th{text-align:left;font-weight:400;color:var(--muted);padding:3px 8px 3px 0;white-space:nowrap}
table.kv td{text-align:right;padding:3px 0;white-space:nowrap}
table.kv tr+tr th,table.kv tr+tr td{border-top:1px solid #f0f1f3}
table.kv caption{text-align:left;font-weight:600;font-size:12px;letter-spacing:.5px;text-transform:uppercase;color:var(--ink);padding-bottom:4px}
td.bad{color:var(--bad);font-weight:600}
.chips{display:flex;flex-wrap:wrap;gap:8px;margin:14px 0 0}
.chip{display:inline-flex;align-items:center;gap:6px;border:1px solid var(--line);border-radius:14px;padding:3px 10px 3px 8px;font-size:12.5px;background:#fafbfc}
.chip i{display:inline-block;width:10px;height:10px;border-radius:3px}
.chip b{font-weight:600}
.chip span{color:var(--muted)}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:14px 22px}
figure{margin:0;min-width:0}
figure figcaption{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 12px;font-size:13px;margin-bottom:2px}
figure figcaption b{font-weight:600;margin-right:4px}
.legend{display:inline-flex;align-items:center;gap:4px;color:var(--muted);font-size:12px}
.legend i{display:inline-block;width:16px;height:0;border-top:2px solid}
.legend i.dash{border-top-style:dashed}
.legend i.wide{border-top-width:5px;opacity:.45}
.legend i.band{height:10px;width:12px;border:0;border-radius:2px}
.note{color:var(--muted);font-size:12px;margin:0 0 2px}
svg.plot{display:block;width:100%;height:auto;overflow:visible}
.empty{color:var(--muted);font-style:italic;border:1px dashed var(--line);border-radius:8px;padding:26px;text-align:center;font-size:13px}
table.list{border-collapse:collapse;font-size:13px;min-width:420px}
table.list th{font-weight:600;text-align:right;color:var(--muted);border-bottom:1px solid var(--line);padding:4px 12px}
table.list td{text-align:right;padding:3px 12px;border-bottom:1px solid #f0f1f3}
table.list th:first-child,table.list td:first-child{padding-left:0}
.two{display:grid;grid-template-columns:1fr 1fr;gap:22px}
.lead{margin:4px 0 8px}
.lead b.bad{color:var(--bad)}
.warn{color:#8a5a00;background:#fff8e1;border:1px solid #f3e0a6;border-radius:8px;padding:6px 10px;font-size:12.5px;margin-top:10px}
footer{color:var(--muted);font-size:12px;text-align:center;padding:0 0 30px}
@media (max-width:900px){.tables,.grid,.two{grid-template-columns:1fr}}
@media print{body{background:#fff}section.link{box-shadow:none;break-inside:avoid-page}header{background:#fff;color:#000}}
`

var page = template.Must(template.New("page").Parse(`{{template "head" .}}
<body>
<header><div class="wrap">
<h1>{{.Name}}<small>bridge recording</small></h1>
<div class="meta">{{if .Date}}recorded {{.Date}} · {{.Span}} · {{end}}{{len .Links}} link{{if ne (len .Links) 1}}s{{end}}</div>
<nav class="links">{{range .Links}}<a href="#{{.ID}}"><b><i{{if .Problems}} class="bad"{{end}}></i>{{.Name}}</b>{{if .Rate}} · {{.Rate}}{{end}}<span>{{.Brief}}</span></a>{{end}}</nav>
</div></header>
<main><div class="wrap">
{{range .Links}}<section class="link" id="{{.ID}}">
<h2>{{.Name}}{{if .Rate}}<span class="rate">{{.Rate}}</span>{{end}}</h2>
<div class="file">{{.File}}</div>
{{if .Twin}}<p class="lead">The shadow twin of <b>{{.TwinOf}}</b>: per measured value, the robot's measurement less its model's, on each tick the twin compared (docs/architecture.md "The shadow twin"). Zero is a robot that does what its model does.</p>
<div class="tables">
<table class="kv"><caption>Recording</caption>{{range .General}}<tr><th>{{.Key}}</th><td{{if .Bad}} class="bad"{{end}}>{{.Value}}</td></tr>{{end}}</table>
</div>
<h3>Robot − model</h3>
{{if .Meas}}<div class="grid">{{range .Meas}}{{template "fig" .}}{{end}}</div>{{else}}<div class="empty">no measurement columns</div>{{end}}
{{else}}
<div class="tables">
<table class="kv"><caption>Recording</caption>{{range .General}}<tr><th>{{.Key}}</th><td{{if .Bad}} class="bad"{{end}}>{{.Value}}</td></tr>{{end}}</table>
<table class="kv"><caption>Timing</caption>{{range .Timing}}<tr><th>{{.Key}}</th><td{{if .Bad}} class="bad"{{end}}>{{.Value}}</td></tr>{{end}}</table>
<table class="kv"><caption>Integrity</caption>{{range .Integrity}}<tr><th>{{.Key}}</th><td{{if .Bad}} class="bad"{{end}}>{{.Value}}</td></tr>{{end}}</table>
</div>
<div class="chips">{{range .Statuses}}<span class="chip"><i style="background:{{.Color}}"></i><b>{{.Name}}</b> {{.N}} <span>{{.Pct}}</span></span>{{end}}</div>
{{range .Warnings}}<div class="warn">{{.}}</div>{{end}}
<h3>Status</h3>
{{template "fig" .Timeline}}
<h3>Timing</h3>
<div class="grid">{{template "fig" .Lateness}}{{template "fig" .Reply}}</div>
<div style="margin-top:14px">{{template "fig" .Deviation}}</div>
<h3>Measurement</h3>
{{if .Meas}}<div class="grid">{{range .Meas}}{{template "fig" .}}{{end}}</div>{{else}}<div class="empty">no measurement columns</div>{{end}}
<h3>Command received and applied</h3>
{{if .Cmd}}<div class="grid">{{range .Cmd}}{{template "fig" .}}{{end}}</div>{{else}}<div class="empty">no command columns</div>{{end}}
<div class="two">
<div><h3>Losses</h3>
<p class="lead">{{if .Lost}}<b class="bad">{{.Lost}} tick{{if ne .Lost 1}}s{{end}} lost</b> in {{.NGaps}} gap{{if ne .NGaps 1}}s{{end}} of rtp_seq{{if gt .NGaps 10}}; the 10 largest{{end}}:{{else}}No tick lost: every rtp_seq between the first and the last arrived.{{end}}</p>
{{if .Gaps}}<table class="list"><tr><th>at (s)</th><th>rtp_seq missing</th><th>ticks</th><th>without data</th></tr>{{range .Gaps}}<tr><td>{{.At}}</td><td>{{.Seq}}</td><td>{{.Lost}}</td><td>{{.Span}}</td></tr>{{end}}</table>{{end}}
</div>
<div><h3>State changes</h3>
{{if .Changes}}<table class="list"><tr><th>at (s)</th><th>from</th><th>to</th></tr>{{range .Changes}}<tr><td>{{.At}}</td><td>{{.From}}</td><td>{{.To}}</td></tr>{{end}}</table>{{if .MoreChanges}}<p class="note">… and {{.MoreChanges}} more</p>{{end}}{{else}}<p class="lead">The state did not change.</p>{{end}}
</div>
</div>
{{end}}
</section>
{{end}}</div></main>
<footer>bridge report · rows as bridge record wrote them (docs/tap.md §5) · percentiles are nearest-rank</footer>
</body>
</html>
{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="bridge">
<title>{{.Title}}</title>
<style>{{.Style}}</style>
</head>{{end}}
{{define "fig"}}<figure><figcaption><b>{{.Title}}</b>{{range .Legend}}<span class="legend"><i class="{{.Kind}}" style="{{if eq .Kind "band"}}background{{else}}border-color{{end}}:{{.Color}}"></i>{{.Label}}</span>{{end}}</figcaption>{{if .Note}}<p class="note">{{.Note}}</p>{{end}}{{if .Empty}}<div class="empty">{{.Empty}}</div>{{else}}{{.SVG}}{{end}}</figure>{{end}}
`))
