package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labbridge/bridge/config"
)

// cmdResume is `bridge resume LINK`: a person's go for a robot that latched a
// stop (an emergency or protective stop, a servo's hardware error), sent to
// the running bridge's control endpoint (POST /links/LINK/resume on its
// metrics address).
func cmdResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("resume", "resume LINK [-config FILE] [-metrics ADDR]", stderr)
	cfgPath := fs.String("config", "", "configuration of the running bridge (default ./bridge.toml, else the embedded default): its [service] metrics address")
	var addr metricsFlag
	fs.Var(&addr, "metrics", "the running bridge's metrics `address`, like 127.0.0.1:9310 (default: the configuration's)")
	link := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		link, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if link == "" {
		fmt.Fprintln(stderr, "bridge resume: name the link whose robot a person has checked, like: bridge resume meca500")
		fs.Usage()
		return errUsage
	}
	cfg, _, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	target := addr.resolve(cfg.Service.Metrics)
	if target == "" {
		return fmt.Errorf("bridge resume: the configuration serves no metrics address, so the running bridge cannot be reached: set [service] metrics, or stop and start the bridge")
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return fmt.Errorf("bridge resume: metrics address %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + "/links/" + link + "/resume"
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return fmt.Errorf("bridge resume: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("bridge resume: no bridge answers at %s (is it running, with this configuration?): %w", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("bridge resume: %s", msg)
	}
	fmt.Fprintln(stdout, msg)
	return nil
}
