package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/testutil"
)

// bridge sim -control: a camera unplugged by a POST makes /healthz say so in
// the camera's words, and plugging it back ends it; a word no device knows
// is a 400 saying what is known.
func TestSimControlUnplugsTheCamera(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"sim", "-ephemeral", "-metrics", "127.0.0.1:0", "-control", "127.0.0.1:0"}, &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("bridge sim exited %d\n%s", code, errb.String())
		}
	})
	find := func(what string, re *regexp.Regexp, in *testutil.SyncBuffer) string {
		var m []string
		testutil.WaitFor(t, what, func() bool { m = re.FindStringSubmatch(in.String()); return m != nil })
		return m[1]
	}
	metrics := find("the page's address", regexp.MustCompile(`metrics: (http://\S+)/metrics`), &out)
	control := find("the control's address", regexp.MustCompile(`fault control on (http://[0-9.]+:[0-9]+)`), &errb)
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(link, body string) (int, string) {
		resp, err := http.Post(control+"/fault/"+link, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testutil.WaitFor(t, "the Emio's camera streaming", func() bool {
		_, s := get(metrics + "/status.json")
		return strings.Contains(s, `"streaming":true`)
	})
	if code, body := post("emio", "camera unplug"); code != http.StatusOK || !strings.Contains(body, "unplugged") {
		t.Fatalf("camera unplug: %d %q", code, body)
	}
	const lack = "link emio is degraded: no fresh measurement to send"
	var health string // the last /healthz, said if the wait fails
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last /healthz:\n%s", health)
		}
	})
	testutil.WaitFor(t, "/healthz saying the camera is unplugged", func() bool {
		code, body := get(metrics + "/healthz")
		health = body
		return code == http.StatusServiceUnavailable && strings.Contains(body, lack) && strings.Contains(body, "device unplugged: the virtual camera") &&
			strings.Contains(body, "check the camera's USB 3 cable")
	})
	if code, body := post("emio", "camera plug"); code != http.StatusOK {
		t.Fatalf("camera plug: %d %q", code, body)
	}
	testutil.WaitFor(t, "/healthz without the camera's lack", func() bool {
		_, body := get(metrics + "/healthz")
		return !strings.Contains(body, lack)
	})
	if code, body := post("emio", "lidar unplug"); code != http.StatusBadRequest || !strings.Contains(body, "want camera or servos") {
		t.Errorf("an unknown part: %d %q", code, body)
	}
	if !strings.Contains(errb.String(), "emio camera unplug (control): emio: the virtual camera is unplugged") {
		t.Errorf("the injected fault is not in the log:\n%s", errb.String())
	}
}
