package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/realtime"
)

// A short real run in each model: two links, each ticking against its own
// partner on loopback. Timing values are the machine's, never asserted.
func TestBenchLinksShort(t *testing.T) {
	for _, model := range []string{"", "thread", "scheduler"} {
		args := []string{"bench", "links", "-links", "2", "-rate", "200", "-duration", "1s", "-json"}
		if model != "" {
			args = append(args, "-model", model)
		}
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, stderr)
		}
		var rep loopbench.LinksReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v in %q", args, err, out)
		}
		if len(rep.Runs) != 1 || rep.Runs[0].Links != 2 || len(rep.Runs[0].PerLink) != 2 {
			t.Fatalf("%v: %+v", args, rep)
		}
		if model != "" && rep.Runs[0].Model != model {
			t.Errorf("%v: model %q", args, rep.Runs[0].Model)
		}
		for _, l := range rep.Runs[0].PerLink {
			if l.Ticks == 0 || l.Partner.Clock == "" {
				t.Errorf("%v: link %+v", args, l)
			}
		}
	}
}

// A list of counts runs one after the other, with ratios to the smallest;
// -http serves the metrics server alongside (loopbench's TestRunLinks
// checks that it is served for each run).
func TestBenchLinksList(t *testing.T) {
	code, out, stderr := runCLI(t, "bench", "links", "-links", "1,2", "-rate", "200", "-duration", "300ms", "-priority", "0", "-model", "scheduler", "-http", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("%d %s %s", code, out, stderr)
	}
	if !strings.Contains(stderr, "serving http://127.0.0.1:") {
		t.Errorf("-http: no address in %q", stderr)
	}
	if strings.Count(out, "\nsummary  links ") != 2 || !strings.Contains(out, "x links 1)") || !strings.Contains(out, "model scheduler") {
		t.Errorf("output:\n%s", out)
	}
}

func TestBenchLinksFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-links", "0"}, 1, "bridge bench links: -links \"0\": want counts of links from 1 to 256"},
		{[]string{"-links", "1,x"}, 1, "want counts of links"},
		{[]string{"-model", "fibers"}, 1, "bridge bench links: -model: loopbench: model \"fibers\""},
		{[]string{"-duration", "0s"}, 1, "bridge bench links: -duration 0s"},
		{[]string{"-gomaxprocs", "many"}, 1, "bridge bench links: -gomaxprocs \"many\": want auto"},
		{[]string{"-rate", "0", "-links", "1"}, 1, "bridge bench links: -rate 0: want a rate above 0 Hz"},
		{[]string{"-cpu", "4096"}, 1, "bridge bench links: -cpu 4096: realtime: cannot confine the process's threads: CPU 4096 is not one of the CPUs this process may use"},
		{[]string{"extra"}, 2, "unexpected argument"},
		{[]string{"-help"}, 0, "Usage: bridge bench links"},
	} {
		code, _, stderr := runCLI(t, append([]string{"bench", "links"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if code, _, stderr := runCLI(t, "bench"); code != 2 || !strings.Contains(stderr, "bridge bench links") {
		t.Errorf("bench usage: %d %q", code, stderr)
	}
}

// -cpu pins the links to one CPU and keeps the rest on the others; the
// process gets its CPUs back after the run.
func TestBenchLinksCPU(t *testing.T) {
	cpus, err := realtime.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skipf("needs 2 CPUs to keep one for the links; this process may use %v", cpus)
	}
	pin := strconv.Itoa(cpus[len(cpus)-1])
	code, out, stderr := runCLI(t, "bench", "links", "-links", "2", "-rate", "200", "-duration", "300ms", "-cpu", pin, "-json")
	if code != 0 {
		t.Fatalf("%d %s %s", code, out, stderr)
	}
	var rep loopbench.LinksReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) != 1 {
		t.Fatalf("%v in %q", err, out)
	}
	// The loops are on the one CPU, so cyclictest watches that one.
	if st := rep.Runs[0].Stalls; st == nil || (st.Cyclictest == "ran" && !strings.Contains(st.CyclictestArgs, " -t 1 -a "+pin+" ")) {
		t.Errorf("stall watch %+v, want cyclictest on CPU %s alone", st, pin)
	}
	if after, err := realtime.AllowedCPUs(); err != nil || !slices.Equal(after, cpus) {
		t.Errorf("after the run this thread may use %v (%v), want %v back", after, err, cpus)
	}
}
