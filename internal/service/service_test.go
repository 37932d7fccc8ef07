package service

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/testutil"
)

// A service builds its links, serves the metrics and the status page while
// the links run, says where, and stops with its context; Close releases it.
func TestServeAndStop(t *testing.T) {
	cfg, err := config.SimLinks(2, 100, config.LoopTable{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, "test", "dev", config.Env{Partner: true, Ephemeral: true}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Links()) != 2 || s.MetricsAddr() == nil {
		t.Fatalf("links %d, metrics at %v: want 2 links and a metrics address", len(s.Links()), s.MetricsAddr())
	}
	var desc strings.Builder
	s.Describe(&desc)
	if !strings.Contains(desc.String(), "link-00") || !strings.Contains(desc.String(), "metrics: http://"+s.MetricsAddr().String()+"/metrics") {
		t.Errorf("Describe:\n%s", desc.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, nil) }()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.MetricsAddr().String() + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testutil.WaitFor(t, "the links to tick and the metrics to say so", func() bool {
		code, body := get("/metrics")
		return code == http.StatusOK && strings.Contains(body, `bridge_loop_ticks_total{link="link-01"}`)
	})
	if code, body := get("/status.json"); code != http.StatusOK || !strings.Contains(body, `"link-00"`) {
		t.Errorf("/status.json: %d %.200s", code, body)
	}
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Errorf("Serve: %v", err)
	}
	s.Close()
}
