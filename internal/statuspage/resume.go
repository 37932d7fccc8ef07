package statuspage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNotResumed: the running bridge answered, and resumed nothing; the
// error's text is its reason.
var ErrNotResumed = errors.New("statuspage: not resumed")

// Resume asks the bridge whose page is served at addr (host:port; an
// unspecified host is this machine) to resume link, as POST
// /links/{link}/resume does (Config.Resume), and returns its answer.
func Resume(ctx context.Context, addr, link string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("statuspage: address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := "http://" + net.JoinHostPort(host, port) + "/links/" + url.PathEscape(link) + "/resume"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return "", fmt.Errorf("statuspage: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("statuspage: no bridge answers at %s (is it running, with this configuration?): %w", addr, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %s", ErrNotResumed, msg)
	}
	return msg, nil
}
