package main

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/statuspage"
)

// bridge resume LINK posts to the running bridge's control endpoint and
// says its answer; a refusal is an error and a non-zero exit.
func TestResumeCommand(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(statuspage.New(statuspage.Config{Resume: func(link string) error {
		asked = append(asked, link)
		if link != "meca500" {
			return errors.New("bridge: nothing to resume: link emio is running and does not wait for a person")
		}
		return nil
	}}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"resume", "meca500", "-metrics", addr}, &out, &errb); code != 0 || !strings.Contains(out.String(), "resume asked") {
		t.Fatalf("exit %d, out %q, err %q", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run(t.Context(), []string{"resume", "emio", "-metrics", addr}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "does not wait for a person") {
		t.Fatalf("exit %d, out %q, err %q: want 1 and the reason", code, out.String(), errb.String())
	}
	if code := run(t.Context(), []string{"resume"}, &out, &errb); code != 2 {
		t.Fatalf("no link: exit %d, want 2", code)
	}
	if len(asked) != 2 {
		t.Errorf("asked %v", asked)
	}
}
