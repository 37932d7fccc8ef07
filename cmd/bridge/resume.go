package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/statuspage"
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
	msg, err := statuspage.Resume(ctx, target, link)
	if errors.Is(err, statuspage.ErrNotResumed) {
		return fmt.Errorf("bridge resume: %s", strings.TrimPrefix(err.Error(), statuspage.ErrNotResumed.Error()+": "))
	}
	if err != nil {
		return fmt.Errorf("bridge resume: %w", err)
	}
	fmt.Fprintln(stdout, msg)
	return nil
}
