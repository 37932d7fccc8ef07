package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/labbridge/bridge/internal/testutil"
)

// The dashboard as Grafana 10+ stores it, reduced to what the checks read.
type dashboard struct {
	UID           string
	Title         string
	SchemaVersion int
	Editable      bool
	Templating    struct{ List []variable }
	Panels        []panel
}

type dsRef struct{ Type, UID string }

type variable struct {
	Name, Label, Type, AllValue string
	Query                       json.RawMessage // a string, or an object with a query field
	Datasource                  *dsRef
	Multi, IncludeAll           bool
	Refresh                     int
}

// query returns the variable's query text whichever way it is stored.
func (v variable) query() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct{ Query string }
	json.Unmarshal(v.Query, &o)
	return o.Query
}

type panel struct {
	ID          int
	Type        string
	Title       string
	Description string
	Collapsed   bool
	GridPos     struct{ X, Y, W, H int }
	Datasource  *dsRef
	Targets     []target
	FieldConfig struct {
		Defaults  struct{ Unit string }
		Overrides []struct {
			Properties []struct {
				ID    string
				Value json.RawMessage
			}
		}
	}
	Panels []panel // a row's panels when it is collapsed
}

type target struct {
	RefID, Expr string
	Datasource  *dsRef
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	return d
}

// expand replaces the dashboard's variables by what Grafana sends with "All"
// selected (each variable's allValue) and $__rate_interval by rateInterval,
// giving plain PromQL.
func (d dashboard) expand(expr, rateInterval string) string {
	expr = strings.ReplaceAll(expr, "$__rate_interval", rateInterval)
	vars := slices.Clone(d.Templating.List)
	// Longest name first, so that $job never eats the start of $jobs.
	slices.SortFunc(vars, func(a, b variable) int { return len(b.Name) - len(a.Name) })
	for _, v := range vars {
		if v.AllValue != "" {
			expr = strings.ReplaceAll(expr, "${"+v.Name+"}", v.AllValue)
			expr = strings.ReplaceAll(expr, "$"+v.Name, v.AllValue)
		}
	}
	return expr
}

// queries lists every PromQL expression of the dashboard: each panel target,
// and each label_values() selector of a template variable.
type query struct {
	where string // "panel 12 "Title" A" or "variable job"
	expr  string
}

func (d dashboard) queries() []query {
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("panel %d %q %s", p.ID, p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if m := labelValuesRE.FindStringSubmatch(v.query()); m != nil {
			qs = append(qs, query{"variable " + v.Name, m[1]})
		}
	}
	return qs
}

// label_values(selector, label), the Prometheus data source's variable query.
var labelValuesRE = regexp.MustCompile(`^label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// Grafana's unit ids (packages/grafana-data/src/valueFormats/categories.ts),
// the subset a dashboard of this kind can want; dashboard-linter's
// panel-units-rule accepts the full list.
var grafanaUnits = map[string]bool{
	"none": true, "short": true, "percent": true, "percentunit": true, "string": true, "bool": true,
	"bool_yes_no": true, "bool_on_off": true, "ppm": true, "celsius": true, "fahrenheit": true, "kelvin": true,
	"hertz": true, "ns": true, "µs": true, "ms": true, "s": true, "m": true, "h": true, "d": true,
	"dtdurationms": true, "dtdurations": true, "dthms": true, "dtdhms": true, "clockms": true, "clocks": true,
	"cps": true, "ops": true, "reqps": true, "rps": true, "wps": true, "iops": true, "cpm": true, "opm": true,
	"pps": true, "bytes": true, "decbytes": true, "Bps": true, "binBps": true, "bps": true,
	"dateTimeAsIso": true, "dateTimeAsIsoNoDateIfToday": true, "dateTimeAsLocal": true, "dateTimeFromNow": true,
	"volt": true, "amp": true, "watt": true, "degree": true, "radian": true, "rotrpm": true, "rotrads": true,
	"lengthmm": true, "lengthm": true, "velocityms": true, "forceNm": true,
}

// TestDashboardLint applies the rules of Grafana's dashboard-linter
// (`dashboard-linter lint --strict`, which is not packaged for Debian) and
// this project's own rules to grafana-dashboard.json. Each subtest is one
// rule, named as the linter names it.
func TestDashboardLint(t *testing.T) {
	d := loadDashboard(t)
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	var panels []panel // every panel but rows
	for _, p := range d.Panels {
		if p.Type != "row" {
			panels = append(panels, p)
		}
	}

	// template-datasource-rule: one variable "datasource" of type
	// datasource, for Prometheus, labelled "Data source".
	t.Run("template-datasource-rule", func(t *testing.T) {
		v, ok := vars["datasource"]
		if !ok || v.Type != "datasource" || v.query() != "prometheus" || v.Label != "Data source" {
			t.Errorf("want a variable datasource of type datasource, query prometheus, label \"Data source\"; have %+v", v)
		}
	})

	// template-job-rule, template-instance-rule: variables job and instance
	// are queries on ${datasource}, multi-valued with All as ".+", labelled
	// in title case.
	for _, name := range []string{"job", "instance"} {
		t.Run("template-"+name+"-rule", func(t *testing.T) {
			v, ok := vars[name]
			if !ok {
				t.Fatalf("no $%s variable", name)
			}
			checkQueryVariable(t, v)
			if v.AllValue != ".+" {
				t.Errorf("$%s: allValue %q, want \".+\"", name, v.AllValue)
			}
		})
	}

	// template-label-promql-rule: every query variable is label_values() of
	// a selector on a metric the bridge exports (its PromQL is parsed with
	// the panels', in target-promql-rule).
	t.Run("template-label-promql-rule", func(t *testing.T) {
		names := exported(t)
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			m := labelValuesRE.FindStringSubmatch(v.query())
			if m == nil {
				t.Errorf("$%s: query %q is not label_values(selector, label)", v.Name, v.query())
				continue
			}
			sels, err := selectors(m[1])
			if err != nil || len(sels) != 1 || !names[sels[0].metric] {
				t.Errorf("$%s: %q does not select one metric the bridge exports (%v)", v.Name, m[1], err)
			}
		}
	})

	// template-on-time-change-reload-rule: query variables refresh on a time
	// range change (2), so a new robot shows up without a reload.
	t.Run("template-on-time-change-reload-rule", func(t *testing.T) {
		for _, v := range d.Templating.List {
			if v.Type == "query" && v.Refresh != 2 {
				t.Errorf("$%s: refresh %d, want 2", v.Name, v.Refresh)
			}
		}
	})

	// Project rule: every variable has a capitalised label, and the robot
	// variable (a target label set in prometheus.yml) is a query like job's.
	t.Run("template-label-capitalised", func(t *testing.T) {
		want := map[string]string{"datasource": "Data source", "job": "Job", "instance": "Instance", "robot": "Robot"}
		for _, v := range d.Templating.List {
			if w, ok := want[v.Name]; ok && v.Label != w {
				t.Errorf("$%s: label %q, want %q", v.Name, v.Label, w)
			}
			if r := []rune(v.Label); len(r) == 0 || !unicode.IsUpper(r[0]) {
				t.Errorf("$%s: label %q is not capitalised", v.Name, v.Label)
			}
		}
		if v, ok := vars["robot"]; !ok {
			t.Error("no $robot variable")
		} else {
			checkQueryVariable(t, v)
		}
	})

	// uneditable-dashboard-rule: a provisioned dashboard is changed in the
	// repository, not in the UI.
	t.Run("uneditable-dashboard-rule", func(t *testing.T) {
		if d.Editable {
			t.Error("editable: true, want false")
		}
	})

	// panel-datasource-rule (and its target-level twin): every panel and
	// every target queries ${datasource}. Rows hold no queries.
	t.Run("panel-datasource-rule", func(t *testing.T) {
		for _, p := range panels {
			if !isTemplated(p.Datasource) {
				t.Errorf("panel %d %q: datasource %+v, want prometheus ${datasource}", p.ID, p.Title, p.Datasource)
			}
			for _, tg := range p.Targets {
				if !isTemplated(tg.Datasource) {
					t.Errorf("panel %d %q target %s: datasource %+v, want prometheus ${datasource}", p.ID, p.Title, tg.RefID, tg.Datasource)
				}
			}
		}
	})

	// panel-title-description-rule: every panel says what it shows; rows
	// have a title.
	t.Run("panel-title-description-rule", func(t *testing.T) {
		for _, p := range d.Panels {
			if strings.TrimSpace(p.Title) == "" || (p.Type != "row" && strings.TrimSpace(p.Description) == "") {
				t.Errorf("panel %d %q (%s): missing title or description", p.ID, p.Title, p.Type)
			}
		}
	})

	// panel-units-rule: every panel has a valid unit in
	// fieldConfig.defaults.unit (the linter requires it of timeseries,
	// stat, gauge, table; here of every panel, state timelines and the
	// heatmap included), and every unit override is valid too.
	t.Run("panel-units-rule", func(t *testing.T) {
		for _, p := range panels {
			if !grafanaUnits[p.FieldConfig.Defaults.Unit] {
				t.Errorf("panel %d %q: unit %q is not a Grafana unit id", p.ID, p.Title, p.FieldConfig.Defaults.Unit)
			}
			for _, o := range p.FieldConfig.Overrides {
				for _, prop := range o.Properties {
					var u string
					if prop.ID == "unit" && (json.Unmarshal(prop.Value, &u) != nil || !grafanaUnits[u]) {
						t.Errorf("panel %d %q: override unit %s is not a Grafana unit id", p.ID, p.Title, prop.Value)
					}
				}
			}
		}
	})

	// panel-no-targets-rule: every panel queries something, with distinct
	// refIds.
	t.Run("panel-no-targets-rule", func(t *testing.T) {
		for _, p := range panels {
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %d %q: target %q empty or refId repeated", p.ID, p.Title, tg.RefID)
				}
				refs[tg.RefID] = true
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %d %q: no targets", p.ID, p.Title)
			}
		}
	})

	// target-promql-rule: every expression parses. Prometheus' parser is
	// promtool's: each expression becomes a recording rule of a generated
	// rule file that `promtool check rules` must accept.
	t.Run("target-promql-rule", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			testutil.RequirePeer(t, "promtool", "apt-get install prometheus", err)
		}
		var rules strings.Builder
		rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
		qs := d.queries()
		for i, q := range qs {
			expr, _ := json.Marshal(d.expand(q.expr, "1m")) // JSON strings are YAML strings
			fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", i, expr)
		}
		file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
		if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
			var index strings.Builder
			for i, q := range qs {
				fmt.Fprintf(&index, "query_%d (rule %d): %s: %s\n", i, i+1, q.where, q.expr)
			}
			t.Errorf("promtool check rules: %v\n%s\n%s", err, out, &index)
		}
	})

	// target-rate-interval-rule: every range is [$__rate_interval], which
	// Grafana keeps at least four scrape intervals wide; rate, irate and
	// increase therefore always see enough samples.
	t.Run("target-rate-interval-rule", func(t *testing.T) {
		rangeRE := regexp.MustCompile(`\[[^\]]*\]`)
		for _, q := range d.queries() {
			for _, r := range rangeRE.FindAllString(q.expr, -1) {
				if r != "[$__rate_interval]" {
					t.Errorf("%s: range %s, want [$__rate_interval]: %s", q.where, r, q.expr)
				}
			}
			for _, fn := range []string{"rate(", "increase("} {
				if strings.Contains(q.expr, fn) && !strings.Contains(q.expr, "[$__rate_interval]") {
					t.Errorf("%s: %s without [$__rate_interval]: %s", q.where, fn, q.expr)
				}
			}
		}
	})

	// target-counter-agg-rule: a counter (_total) is only read through
	// rate, irate or increase, never as its raw running total.
	t.Run("target-counter-agg-rule", func(t *testing.T) {
		for _, q := range d.queries() {
			if strings.HasPrefix(q.where, "variable ") {
				continue // label_values reads labels, not values
			}
			sels, err := selectors(q.expr)
			if err != nil {
				t.Errorf("%s: %v", q.where, err)
				continue
			}
			for _, s := range sels {
				if !strings.HasSuffix(s.metric, "_total") {
					continue
				}
				before := strings.TrimRight(q.expr[:s.start], " ")
				wrapped := strings.HasSuffix(before, "rate(") || strings.HasSuffix(before, "increase(")
				if !wrapped || !strings.HasPrefix(q.expr[s.end:], "[") {
					t.Errorf("%s: counter %s not inside rate/irate/increase: %s", q.where, s.metric, q.expr)
				}
			}
		}
	})

	// target-job-rule, target-instance-rule, and the project's robot rule:
	// every selector filters on job=~"$job", instance=~"$instance" and
	// robot=~"$robot", so the variables narrow every panel.
	t.Run("target-job-instance-robot-rule", func(t *testing.T) {
		for _, q := range d.queries() {
			sels, err := selectors(q.expr)
			if err != nil {
				t.Errorf("%s: %v", q.where, err)
				continue
			}
			if len(sels) == 0 {
				t.Errorf("%s: no metric selector in %s", q.where, q.expr)
			}
			// A variable's own query may use only the variables before it.
			want := []string{"job", "instance", "robot"}
			if name, ok := strings.CutPrefix(q.where, "variable "); ok {
				want = want[:max(0, slices.Index(want, name))]
			}
			for _, s := range sels {
				for _, l := range want {
					if s.matchers[l] != `=~"$`+l+`"` {
						t.Errorf("%s: %s has %s%s, want %s=~\"$%s\"", q.where, s.metric, l, s.matchers[l], l, l)
					}
				}
			}
		}
	})

	// Every metric a panel queries is one the bridge exports (a histogram's
	// _bucket, _count, _sum are its family's).
	t.Run("target-metric-exported", func(t *testing.T) {
		names := exported(t)
		for _, q := range d.queries() {
			sels, _ := selectors(q.expr)
			for _, s := range sels {
				m := s.metric
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(m, suf); ok && names[b] {
						m = b
					}
				}
				if !names[m] && m != "up" {
					t.Errorf("%s queries %s, which the bridge does not export", q.where, s.metric)
				}
			}
		}
	})

	// Grafana 10+ layout: schema 39, unique ids, rows expanded with their
	// panels after them in the top-level list, panels inside the 24 columns
	// and not overlapping.
	t.Run("layout", func(t *testing.T) {
		if d.SchemaVersion != 39 {
			t.Errorf("schemaVersion %d, want 39", d.SchemaVersion)
		}
		ids := map[int]bool{}
		for i, p := range d.Panels {
			if ids[p.ID] || p.ID <= 0 {
				t.Errorf("panel %q: id %d repeated or not positive", p.Title, p.ID)
			}
			ids[p.ID] = true
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
				t.Errorf("panel %d %q: gridPos %+v outside the 24 columns", p.ID, p.Title, g)
			}
			if p.Type == "row" && (p.Collapsed || len(p.Panels) != 0 || g.X != 0 || g.W != 24 || g.H != 1) {
				t.Errorf("row %q: want expanded, 24×1 at x 0, its panels after it", p.Title)
			}
			if i > 0 && g.Y < d.Panels[i-1].GridPos.Y {
				t.Errorf("panel %d %q: listed after a panel below it", p.ID, p.Title)
			}
			for _, q := range d.Panels[:i] {
				h := q.GridPos
				if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
					t.Errorf("panels %d %q and %d %q overlap", q.ID, q.Title, p.ID, p.Title)
				}
			}
		}
		if len(d.Panels) == 0 || d.Panels[0].Type != "row" {
			t.Fatal("the dashboard does not start with a row")
		}
		var rows []string
		for _, p := range d.Panels {
			if p.Type == "row" {
				rows = append(rows, p.Title)
			}
		}
		if want := []string{"Overview", "Timing", "Servos", "Camera", "Relay", "V-REP"}; !slices.Equal(rows, want) {
			t.Errorf("rows %q, want %q", rows, want)
		}
	})

	// Panels whose unit matters to read them: each quantity on its own axis
	// in its own unit (the camera's frame rate and its tracker time once
	// shared a "short" axis, where the tracker's milliseconds were a flat
	// line at 0).
	t.Run("content", func(t *testing.T) {
		want := []struct{ row, title, unit, metric string }{
			{"Overview", "Link state", "none", "bridge_link_state"},
			{"Overview", "Bridge version", "none", "bridge_build_info"},
			{"Overview", "Uptime", "dtdurations", "process_start_time_seconds"},
			{"Overview", "Active faults", "none", "bridge_fault_active"},
			{"Overview", "Real-time settings", "none", "bridge_realtime_info"},
			{"Timing", "Send lateness p50 / p99 / p99.9 and max (last minute)", "s", "bridge_loop_lateness_quantile_seconds"},
			{"Timing", "Wake-up lateness", "s", "bridge_loop_wakeup_lateness_seconds_bucket"},
			{"Servos", "Servo temperature", "celsius", "bridge_servo_temperature_limit_celsius"},
			{"Servos", "Servo hardware errors", "none", "bridge_servo_hardware_error"},
			{"Camera", "Camera frame rate", "hertz", "bridge_camera_frames_total"},
			{"Camera", "Tracker time p50 / p99", "s", "bridge_camera_track_seconds_bucket"},
			{"Camera", "Camera lock: clock error, stale ticks, skipped frames", "ppm", "bridge_camera_clock_error_ppm"},
		}
		row := ""
		found := map[string]panel{}
		for _, p := range d.Panels {
			if p.Type == "row" {
				row = p.Title
				continue
			}
			found[row+"/"+p.Title] = p
		}
		for _, w := range want {
			p, ok := found[w.row+"/"+w.title]
			if !ok {
				t.Errorf("no panel %q in row %s", w.title, w.row)
				continue
			}
			if p.FieldConfig.Defaults.Unit != w.unit {
				t.Errorf("panel %q: unit %q, want %q", w.title, p.FieldConfig.Defaults.Unit, w.unit)
			}
			var exprs []string
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			if !strings.Contains(strings.Join(exprs, "\n"), w.metric+"{") {
				t.Errorf("panel %q does not query %s", w.title, w.metric)
			}
		}
	})
}

// checkQueryVariable is dashboard-linter's check of a job-like variable.
func checkQueryVariable(t *testing.T, v variable) {
	t.Helper()
	if v.Type != "query" || !isTemplated(v.Datasource) || !v.Multi || !v.IncludeAll || v.AllValue == "" {
		t.Errorf("$%s: want a query on ${datasource}, multi, include All with an allValue; have %+v", v.Name, v)
	}
	if r := []rune(v.Label); len(r) == 0 || string(unicode.ToUpper(r[0]))+string(r[1:]) != v.Label || !strings.EqualFold(v.Label, v.Name) {
		t.Errorf("$%s: label %q, want %q", v.Name, v.Label, strings.ToUpper(v.Name[:1])+v.Name[1:])
	}
}

func isTemplated(ds *dsRef) bool {
	return ds != nil && ds.Type == "prometheus" && (ds.UID == "${datasource}" || ds.UID == "$datasource")
}

// A selector of an expression: the metric name, its label matchers as
// label → operator+quoted value, and where it stands in the expression.
type selector struct {
	metric     string
	matchers   map[string]string
	start, end int
}

// PromQL words that are not metric names where a name can stand.
var promqlWords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
}

// selectors finds the vector selectors of a PromQL expression (the
// Prometheus parser is not a dependency of this module; promtool parses the
// same expressions in target-promql-rule). It skips strings, numbers,
// durations, Grafana variables, function names (a word before "(") and the
// label lists of by, without, on, ignoring, group_left and group_right.
func selectors(expr string) ([]selector, error) {
	var out []selector
	isWord := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	skipSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\n' || expr[i] == '\t') {
			i++
		}
		return i
	}
	skipString := func(i int) (int, error) {
		q := expr[i]
		for j := i + 1; j < len(expr); j++ {
			if expr[j] == '\\' && q != '`' {
				j++
			} else if expr[j] == q {
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d", i)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '$': // a Grafana variable: $name or ${name}
			i++
			if i < len(expr) && expr[i] == '{' {
				for i < len(expr) && expr[i] != '}' {
					i++
				}
				i++
			}
			for i < len(expr) && isWord(expr[i], false) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isWord(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isWord(c, true):
			start := i
			for i < len(expr) && isWord(expr[i], false) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			switch {
			case word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" || word == "group_right":
				if next < len(expr) && expr[next] == '(' {
					end := strings.IndexByte(expr[next:], ')')
					if end < 0 {
						return nil, fmt.Errorf("unclosed label list after %s", word)
					}
					i = next + end + 1
				}
			case promqlWords[strings.ToLower(word)]:
			case next < len(expr) && expr[next] == '(':
				// a function call
			default:
				s := selector{metric: word, matchers: map[string]string{}, start: start, end: i}
				if next < len(expr) && expr[next] == '{' {
					end, err := parseMatchers(expr, next, s.matchers)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", word, err)
					}
					s.end, i = end, end
				}
				out = append(out, s)
			}
		default:
			i++
		}
	}
	return out, nil
}

var matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*(,|\})`)

// parseMatchers reads {l op "v", ...} from expr[i] == '{' into m and returns
// the index after the closing brace.
func parseMatchers(expr string, i int, m map[string]string) (int, error) {
	i++
	if rest := strings.TrimLeft(expr[i:], " "); strings.HasPrefix(rest, "}") {
		return len(expr) - len(rest) + 1, nil
	}
	for {
		g := matcherRE.FindStringSubmatchIndex(expr[i:])
		if g == nil {
			return 0, fmt.Errorf("bad label matchers at %q", expr[i:])
		}
		name, op, val := expr[i+g[2]:i+g[3]], expr[i+g[4]:i+g[5]], expr[i+g[6]:i+g[7]]
		m[name] = op + val
		closing := expr[i+g[8]] == '}'
		i += g[1]
		if closing {
			return i, nil
		}
	}
}

// The selector finder reads the dashboard's kinds of expression right.
func TestSelectors(t *testing.T) {
	sels, err := selectors(`histogram_quantile(0.99, sum by (le, link) (rate(bridge_x_bucket{job=~"$job",a="}"}[$__rate_interval]))) > ignoring (quantile) 0.2 * bridge_y + time() - up`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sels {
		got = append(got, fmt.Sprintf("%s %v", s.metric, s.matchers))
	}
	want := []string{`bridge_x_bucket map[a:="}" job:=~"$job"]`, `bridge_y map[]`, `up map[]`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
