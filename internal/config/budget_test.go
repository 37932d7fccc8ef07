package config

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

// "auto" shares 90 % of the CPUs equally among the real-time, unpinned
// loops (and their partners), at most half a period each; pinned loops,
// SCHED_OTHER loops, "0s" and a loop that sets no budget (the default)
// keep none; an explicit budget is kept and leaves less to share; a share
// under minAutoShare keeps SCHED_FIFO, with a warning that names the links.
func TestAssignBudgets(t *testing.T) {
	link := func(name string, rate float64, loop string) string {
		return fmt.Sprintf("[[link]]\nname = %q\nrate_hz = %v\n[link.loop]\n%s\n", name, rate, loop)
	}
	many := func(n int, rate float64) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(link(fmt.Sprintf("l%02d", i), rate, "priority = 80\nbudget = \"auto\""))
		}
		return b.String()
	}
	for _, tc := range []struct {
		name     string
		doc      string
		cpus     int
		partners bool
		want     map[string]time.Duration
		warn     string
	}{
		{"one link, half its period", link("a", 30, "priority = 80\nbudget = \"auto\""), 2, true,
			map[string]time.Duration{"a": 16666 * time.Microsecond}, ""},
		{"4 links at 1 kHz with partners", many(4, 1000), 2, true,
			map[string]time.Duration{"l00": 225 * time.Microsecond, "l03": 225 * time.Microsecond}, ""},
		{"8 links at 1 kHz without partners", many(8, 1000), 2, false,
			map[string]time.Duration{"l00": 225 * time.Microsecond}, ""},
		{"16 links at 1 kHz: too little each", many(16, 1000), 2, true,
			map[string]time.Duration{"l00": 0, "l15": 0}, `link "l00", link "l01"`},
		{"16 links at 1 kHz on 8 CPUs", many(16, 1000), 8, true,
			map[string]time.Duration{"l00": 225 * time.Microsecond}, ""},
		{"pinned, normal priority, 0s and no budget keep none",
			link("pinned", 1000, "priority = 80\ncpu = 1\nbudget = \"auto\"") + link("normal", 1000, "priority = 0\nbudget = \"auto\"") +
				link("fifo", 1000, "priority = 80\nbudget = \"0s\"") + link("default", 1000, "priority = 80"), 2, true,
			map[string]time.Duration{"pinned": 0, "normal": 0, "fifo": 0, "default": 0}, ""},
		{"an explicit budget is kept and shared around",
			link("mine", 1000, "priority = 80\nbudget = \"450us\"") + link("auto", 1000, "priority = 80\nbudget = \"auto\""), 1, true,
			map[string]time.Duration{"mine": 450 * time.Microsecond, "auto": 0}, `link "auto": loop.budget = "auto" would leave`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.Links {
				if b := c.Links[i].Budget(); b != 0 && c.Links[i].Loop.Budget.Auto {
					t.Errorf("%s: budget %v before AssignBudgets, want 0 (SCHED_FIFO)", c.Links[i].Name, b)
				}
			}
			warn := c.AssignBudgets(tc.cpus, tc.partners)
			got := map[string]time.Duration{}
			for i := range c.Links {
				got[c.Links[i].Name] = c.Links[i].Budget()
				if c.Links[i].LinkConfig().Loop.Budget != c.Links[i].Budget() {
					t.Errorf("%s: LinkConfig's budget %v, want %v", c.Links[i].Name, c.Links[i].LinkConfig().Loop.Budget, c.Links[i].Budget())
				}
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("%s: budget %v, want %v", name, got[name], want)
				}
			}
			if (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
				t.Errorf("warning %q, want one containing %q", warn, tc.warn)
			}
			if warn != "" && !strings.Contains(warn, "keep SCHED_FIFO") {
				t.Errorf("warning %q must say what the loops keep", warn)
			}
		})
	}
}

// The benches' loop flags fill a LoopTable; a budget, lead or spin that is
// neither "auto" nor a duration is refused naming the flag.
func TestLoopFlags(t *testing.T) {
	fs := flag.NewFlagSet("bench link", flag.ContinueOnError)
	read := LoopFlags(fs, "bench link", true)
	if err := fs.Parse([]string{"-priority", "70", "-cpu", "1", "-budget", "auto", "-lead", "200us", "-spin", "auto"}); err != nil {
		t.Fatal(err)
	}
	loop, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if loop.Priority != 70 || *loop.CPU != 1 || !*loop.DMALatency || !loop.Budget.Auto ||
		loop.Lead.Duration != 200*time.Microsecond || !loop.Spin.Auto {
		t.Errorf("LoopTable = %+v budget %+v lead %+v", loop, *loop.Budget, *loop.Lead)
	}
	fs = flag.NewFlagSet("bench links", flag.ContinueOnError)
	read = LoopFlags(fs, "bench links", false)
	if fs.Lookup("lead") != nil || fs.Lookup("spin") != nil {
		t.Error("bench links has no -lead or -spin")
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if loop, err := read(); err != nil || loop.Budget.Auto || loop.Budget.Duration != 0 {
		t.Errorf("no -budget: %+v, %v; want 0s (SCHED_FIFO, as loop.budget's default)", loop.Budget, err)
	}
	if err := fs.Parse([]string{"-budget", "lots"}); err != nil {
		t.Fatal(err)
	}
	if _, err := read(); err == nil || !strings.Contains(err.Error(), `bridge bench links: -budget "lots": want auto or a duration`) {
		t.Errorf("read() = %v, want the flag named", err)
	}
	fs = flag.NewFlagSet("bench link", flag.ContinueOnError)
	read = LoopFlags(fs, "bench link", true)
	if err := fs.Parse([]string{"-spin", "fast"}); err != nil {
		t.Fatal(err)
	}
	if _, err := read(); err == nil || !strings.Contains(err.Error(), `bridge bench link: -spin "fast"`) {
		t.Errorf("read() = %v, want -spin named", err)
	}
}
