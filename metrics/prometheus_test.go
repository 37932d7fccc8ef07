package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/simulink"
)

// linkWithTraffic returns a served registry whose link "emio" has seen ticks.
func linkWithTraffic(t *testing.T) string {
	t.Helper()
	reg, set := newSet(t)
	l, err := set.Link("emio", time.Second/30)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 42 {
		l.ObserveTick(int64(i)*1000, 5000)
		l.Exchanged(simulink.OKNoDelay)
		l.Reply(30_000, false)
	}
	l.Dropped(simulink.DropSize)
	if err := l.SetState(StateRunning); err != nil {
		t.Fatal(err)
	}
	sc, err := set.Scene("vrep", time.Second/20, []string{"other", "refused"})
	if err != nil {
		t.Fatal(err)
	}
	sc.Exchanged(85*time.Microsecond, 12.5)
	sc.Failed(1)
	return startServer(t, reg, nil)
}

// A real Prometheus server scrapes /metrics and answers queries on it.
func TestRealPrometheusScrapes(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		testutil.RequirePeer(t, "prometheus", "apt-get install prometheus", err)
	}
	target := strings.TrimPrefix(linkWithTraffic(t), "http://")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, fmt.Appendf(nil, "global:\n  scrape_interval: 200ms\nscrape_configs:\n  - job_name: bridge\n    static_configs:\n      - targets: [%q]\n        labels: {robot: a}\n", target), 0o644)
	// Prometheus binds port 0 and logs the port it holds, so that no other
	// program can take it between a choice and the bind.
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0")
	var logs testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	listening := regexp.MustCompile(`msg="Listening on" address=(\S+)`)
	var web string
	testutil.WaitFor(t, "Prometheus saying the address it listens on", func() bool {
		select {
		case <-exited:
			t.Fatalf("Prometheus exited: %v\n%s", cmd.ProcessState, logs.String())
		default:
		}
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			web = m[1]
		}
		return web != ""
	})
	query := url.QueryEscape(`bridge_loop_ticks_total{job="bridge",robot="a",link="emio"}`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus never returned the series; its log:\n%s", logs.String())
		}
		time.Sleep(300 * time.Millisecond)
		code, body := getQuiet("http://" + web + "/api/v1/query?query=" + query)
		if code != 200 {
			continue
		}
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Value [2]any
				}
			}
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "success" || len(r.Data.Result) == 0 {
			continue
		}
		if v := r.Data.Result[0].Value[1]; v != "42" {
			t.Fatalf("bridge_loop_ticks_total = %v, want 42", v)
		}
		return
	}
}

// getQuiet is a GET that reports failure as status 0 (the server may still
// be starting).
func getQuiet(u string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
