package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// Dashboard queries that may return nothing from a healthy `bridge sim`,
// keyed by panel title and refId (`"Title" A`), with the reason: a vector
// whose series appear only with a first event. None today: every series the
// dashboard reads exists at 0 from the start (the relay's error and
// safety-stop codes included). Every other query must return a series.
var mayBeEmpty = map[string]string{}

// TestDashboardQueriesOnRealPrometheus runs `bridge sim` (an Emio link with
// a virtual camera and simulated servos, a Meca500 relay and a V-REP relay),
// has a real Prometheus scrape it every second with the alert rules loaded,
// and requires every query of the dashboard to return data, every template
// variable to have values and every alert rule to evaluate without error.
func TestDashboardQueriesOnRealPrometheus(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		testutil.RequirePeer(t, "prometheus", "apt-get install prometheus", err)
	}
	goBin, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		t.Skip("go not found in PATH: cannot build the bridge")
	}
	d := loadDashboard(t)
	rules, err := filepath.Abs("bridge-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	bridge := filepath.Join(dir, "bridge")
	if out, err := exec.Command(goBin, "build", "-o", bridge, "github.com/labbridge/bridge/cmd/bridge").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bridge: %v\n%s", err, out)
	}
	// The working directory holds no bridge.toml, so sim runs its embedded
	// default configuration. Each program binds port 0 and says which port
	// it holds, so no other program can take one in between.
	sim := start(t, dir, bridge, "sim", "-ephemeral", "-metrics", "127.0.0.1:0")
	metricsAddr := boundAddr(t, sim, simMetricsRE)
	waitFor(t, 60*time.Second, "bridge sim serving /metrics", []*process{sim}, func() bool {
		code, _ := httpGet("http://" + metricsAddr + "/metrics")
		return code == http.StatusOK
	})

	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: bridge
    static_configs:
      - targets: [%q]
        labels: {robot: sim}
`, rules, metricsAddr), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := start(t, dir, promBin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0")
	api := "http://" + boundAddr(t, prom, promListeningRE)
	both := []*process{sim, prom}

	// A few scrapes, so that rate over the test's $__rate_interval has
	// samples to work on.
	waitFor(t, 60*time.Second, "five scrapes of bridge sim", both, func() bool {
		r, err := promQuery(api, `count_over_time(up{job="bridge"}[1m]) >= 5 and up{job="bridge"} == 1`)
		return err == nil && r.nonEmpty()
	})

	t.Run("variables", func(t *testing.T) {
		for _, v := range d.Templating.List {
			m := labelValuesRE.FindStringSubmatch(v.query())
			if v.Type != "query" || m == nil {
				continue
			}
			u := api + "/api/v1/label/" + m[2] + "/values?match[]=" + url.QueryEscape(d.expand(m[1], "15s"))
			var values []string
			if err := apiGet(u, &values); err != nil || len(values) == 0 {
				t.Errorf("$%s: %s gives no values (%v)", v.Name, v.query(), err)
			}
		}
	})

	t.Run("panels", func(t *testing.T) {
		type pending struct{ key, expr string }
		var todo []pending
		seen := map[string]bool{}
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				key := fmt.Sprintf("%q %s", p.Title, tg.RefID)
				seen[key] = true
				todo = append(todo, pending{key, d.expand(tg.Expr, "15s")})
			}
		}
		for key := range mayBeEmpty {
			if !seen[key] {
				t.Errorf("mayBeEmpty names %s, which the dashboard does not have", key)
			}
		}
		// Poll until each query has data or the deadline passes; the queries
		// allowed to stay empty do not hold the loop.
		deadline := time.Now().Add(60 * time.Second)
		for {
			var left []pending
			for _, q := range todo {
				r, err := promQuery(api, q.expr)
				switch {
				case err != nil:
					t.Errorf("%s: %v\n%s", q.key, err, q.expr)
				case !r.nonEmpty():
					left = append(left, q)
				}
			}
			todo = left
			waiting := 0
			for _, q := range todo {
				if _, ok := mayBeEmpty[q.key]; !ok {
					waiting++
				}
			}
			if waiting == 0 || time.Now().After(deadline) {
				break
			}
			checkRunning(t, both)
			time.Sleep(time.Second)
		}
		// Name the metrics bridge sim does not export at all: the usual
		// cause, a metric not wired yet.
		scraped := map[string]bool{}
		if r, err := promQuery(api, `group by (__name__) ({job="bridge"})`); err == nil {
			var series []struct{ Metric map[string]string }
			json.Unmarshal(r.Result, &series)
			for _, s := range series {
				scraped[s.Metric["__name__"]] = true
			}
		}
		for _, q := range todo {
			if why, ok := mayBeEmpty[q.key]; ok {
				t.Logf("%s: no data, allowed: %s", q.key, why)
				continue
			}
			var absent []string
			sels, _ := selectors(q.expr)
			for _, s := range sels {
				if !scraped[s.metric] {
					absent = append(absent, s.metric)
				}
			}
			if len(absent) > 0 {
				t.Errorf("%s: no data: bridge sim does not export %s\n%s", q.key, strings.Join(absent, ", "), q.expr)
			} else {
				t.Errorf("%s: no data from bridge sim\n%s", q.key, q.expr)
			}
		}
	})

	t.Run("alert rules", func(t *testing.T) {
		type rule struct{ Name, Health, LastError, State string }
		var got []rule
		waitFor(t, 60*time.Second, "every alert rule evaluated", both, func() bool {
			var data struct {
				Groups []struct{ Rules []rule }
			}
			if apiGet(api+"/api/v1/rules", &data) != nil {
				return false
			}
			got = got[:0]
			for _, g := range data.Groups {
				got = append(got, g.Rules...)
			}
			for _, r := range got {
				if r.Health == "unknown" || r.Health == "" {
					return false
				}
			}
			return len(got) > 0
		})
		if len(got) != len(wantAlerts) {
			t.Errorf("Prometheus loaded %d rules, want %d", len(got), len(wantAlerts))
		}
		for _, r := range got {
			if r.Health != "ok" {
				t.Errorf("%s: health %s: %s", r.Name, r.Health, r.LastError)
			}
			// A healthy sim should fire nothing; but a loaded machine can
			// really drop datagrams, so this is reported, not failed.
			if r.State == "firing" {
				t.Logf("%s fires on a healthy bridge sim", r.Name)
			}
		}
	})
}

// process is a command the test started, with its output.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed when it has exited
}

// start runs a command in dir and stops it (SIGTERM, then SIGKILL) at the
// end of the test.
func start(t *testing.T, dir, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: filepath.Base(bin), cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Killed if the test binary dies: a timeout's panic or a kill runs no
	// cleanup, and an orphaned bridge sim would load the machine for ever.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// The death signal follows the thread that started the process:
		// this goroutine keeps that thread until the process has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := p.cmd.Start()
		started <- err
		if err == nil {
			p.cmd.Wait()
		}
		close(p.done)
	}()
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// checkRunning fails the test if a process has exited.
func checkRunning(t *testing.T, ps []*process) {
	t.Helper()
	for _, p := range ps {
		select {
		case <-p.done:
			t.Fatalf("%s exited: %v\n%s", p.name, p.cmd.ProcessState, p.out.String())
		default:
		}
	}
}

// waitFor polls cond every 250 ms until it holds; past the deadline it
// fails with the processes' output.
func waitFor(t *testing.T, limit time.Duration, what string, ps []*process, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		checkRunning(t, ps)
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, p := range ps {
				fmt.Fprintf(&logs, "--- %s:\n%s\n", p.name, p.out.String())
			}
			t.Fatalf("no %s within %v\n%s", what, limit, &logs)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Where each program says the address it bound for port 0: bridge sim's
// describe line, Prometheus' log line once it listens (the flag's own value
// is logged before, as "Start listening for connections").
var (
	simMetricsRE    = regexp.MustCompile(`metrics: http://(\S+)/metrics`)
	promListeningRE = regexp.MustCompile(`msg="Listening on" address=(\S+)`)
)

// boundAddr waits until p prints the address it bound (re's group) and
// returns it.
func boundAddr(t *testing.T, p *process, re *regexp.Regexp) string {
	t.Helper()
	var addr string
	waitFor(t, 60*time.Second, p.name+" saying the address it listens on", []*process{p}, func() bool {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return addr
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func httpGet(u string) (int, []byte) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// apiGet decodes the data of a Prometheus HTTP API answer into v; an answer
// with status "error" is an error naming Prometheus' reason.
func apiGet(u string, v any) error {
	code, body := httpGet(u)
	if code == 0 {
		return fmt.Errorf("Prometheus does not answer")
	}
	var r struct {
		Status, ErrorType, Error string
		Data                     json.RawMessage
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("HTTP %d: %s", code, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, v)
}

type queryResult struct {
	ResultType string
	Result     json.RawMessage
}

// nonEmpty: a vector or matrix with a series, or a scalar or string.
func (r queryResult) nonEmpty() bool {
	if r.ResultType == "scalar" || r.ResultType == "string" {
		return true
	}
	var series []json.RawMessage
	return json.Unmarshal(r.Result, &series) == nil && len(series) > 0
}

// promQuery evaluates an instant query now.
func promQuery(api, expr string) (queryResult, error) {
	var r queryResult
	err := apiGet(api+"/api/v1/query?query="+url.QueryEscape(expr), &r)
	return r, err
}
