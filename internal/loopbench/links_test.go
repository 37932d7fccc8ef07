package loopbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
	"golang.org/x/sys/unix"
)

// A gated tick's wake-up lateness is its send lateness plus the lead it was
// planned with less the time from the wake-up to the send; an ungated tick
// reports its wake-up; on a scheduler both are the one lateness.
func TestLinksTiming(t *testing.T) {
	lt := NewLinkTiming(realtime.NewClock(), time.Millisecond)
	const us = int64(time.Microsecond)
	lt.ObserveTick(7*us, 1*us) // not gated: wake only
	lt.ObserveLead(100*us, 96*us, false)
	lt.ObserveTick(5*us, 120*us) // wake 5 + 100 − 96 = 9
	lt.ObserveLead(150*us, 130*us, true)
	lt.ObserveTick(30*us, 200*us) // planned with the lead of the tick before: 30 + 100 − 130 = 0
	lt.ObserveOverrun(2)
	if lt.ticks != 3 || lt.overruns != 2 || lt.send.Count() != 2 || lt.wake.Count() != 3 {
		t.Fatalf("ticks %d, overruns %d, sends %d, wakes %d", lt.ticks, lt.overruns, lt.send.Count(), lt.wake.Count())
	}
	if lt.send.Min() != 5*us || lt.send.Max() != 30*us || lt.wake.Min() != 0 || lt.wake.Max() != 9*us {
		t.Errorf("send %d..%d, wake %d..%d", lt.send.Min(), lt.send.Max(), lt.wake.Min(), lt.wake.Max())
	}
	if !lt.havePhase || lt.phase < 0 || lt.phase >= int64(time.Millisecond) {
		t.Errorf("phase %v %d", lt.havePhase, lt.phase)
	}

	st := NewLinkTiming(realtime.NewClock(), time.Millisecond)
	st.sendIsWake = true
	st.ObserveTick(4*us, 50*us)
	if st.send.Max() != 4*us || st.wake.Max() != 4*us || !st.havePhase {
		t.Errorf("scheduler tick: send %d, wake %d", st.send.Max(), st.wake.Max())
	}
}

func TestLinksTimingAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	lt := NewLinkTiming(realtime.NewClock(), time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		lt.ObserveLead(100, 50, false)
		lt.ObserveTick(10, 20)
		lt.ObserveOverrun(1)
	}); n != 0 {
		t.Errorf("the observer allocates %v times a tick", n)
	}
}

func TestLinksPhaseSpread(t *testing.T) {
	for _, c := range []struct {
		phases []int64
		want   int64
	}{
		{nil, 0}, {[]int64{5}, 0}, {[]int64{10, 30}, 20}, {[]int64{990, 10}, 20}, {[]int64{0, 250, 500, 750}, 750},
	} {
		if got := phaseSpread(c.phases, 1000); got != c.want {
			t.Errorf("phaseSpread(%v) = %d, want %d", c.phases, got, c.want)
		}
	}
}

func TestLinksReportRatios(t *testing.T) {
	mk := func(n int, p99s ...float64) LinksRun {
		r := LinksRun{Model: "thread", Links: n, RateHz: 1000, Warnings: []string{}}
		for i, v := range p99s {
			r.PerLink = append(r.PerLink, LinkResult{Name: fmt.Sprint("link-", i), SendUs: LatencyUS{P99: v}, Partner: PartnerTiming{DeviationUs: LatencyUS{P99: v / 2}}})
		}
		r.Summary = LinksSummary{
			SendP99Us:    median(r.PerLink, func(l LinkResult) float64 { return l.SendUs.P99 }),
			PartnerP99Us: median(r.PerLink, func(l LinkResult) float64 { return l.Partner.DeviationUs.P99 }),
		}
		return r
	}
	rep := NewLinksReport([]LinksRun{mk(4, 30, 10, 50, 20), mk(1, 10), mk(3, 40, 10, 30)})
	s := rep.Runs[0].Summary
	if s.SendP99Us != 25 || s.RatioTo != 1 || s.SendRatio == nil || *s.SendRatio != 2.5 || *s.PartnerRatio != 2.5 {
		t.Errorf("4 links: %+v", s)
	}
	if s := rep.Runs[2].Summary; s.SendP99Us != 30 || *s.SendRatio != 3 {
		t.Errorf("3 links: %+v", s)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil || !strings.Contains(b.String(), "summary  links 4  median p99 µs: send 25.0 (2.50x links 1)") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
	if one := NewLinksReport([]LinksRun{mk(2, 1, 2)}); one.Runs[0].Summary.SendRatio != nil {
		t.Error("a single run has a ratio")
	}
}

// stubPlant and stubExchanger make a link without devices or sockets.
type stubPlant struct{ halted atomic.Int32 }

func (*stubPlant) MeasureLen() int               { return 1 }
func (*stubPlant) CommandLen() int               { return 1 }
func (*stubPlant) Measure(dst []float64) error   { dst[0] = 1; return nil }
func (*stubPlant) Command([]float64) error       { return nil }
func (p *stubPlant) Halt(plant.HaltPolicy) error { p.halted.Add(1); return nil }

type stubExchanger struct{}

func (stubExchanger) Exchange(_, cmd []float64, _ int64) simulink.Status {
	cmd[0] = 0
	return simulink.OKNoDelay
}
func (stubExchanger) Synced() bool { return true }

// stubService is a dependency that records that it ran until stopped.
// gcPercent reads the GC percent without setting it (debug.SetGCPercent
// would turn the collector off for a moment, which a concurrent reader
// would see).
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

type stubService struct {
	served, stopped atomic.Int32
	gcPercent       atomic.Int32 // the GC percent while served
	nice            atomic.Int32 // the nice value while served
}

func (s *stubService) Serve(ctx context.Context) error {
	s.served.Add(1)
	s.gcPercent.Store(int32(gcPercent()))
	if pr, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil {
		s.nice.Store(int32(20 - pr))
	}
	<-ctx.Done()
	s.stopped.Add(1)
	return nil
}

// RunLinks runs the same links in both models; in the scheduler model the
// links are never served (they start in state "starting") and the bench
// halts the plants and serves the dependencies itself.
func TestRunLinks(t *testing.T) {
	for _, model := range []Model{ModelThread, ModelScheduler} {
		t.Run(string(model), func(t *testing.T) {
			clock := realtime.NewClock()
			var links []BenchLink
			var plants []*stubPlant
			var deps []*stubService
			for i := range 3 {
				p, dep := &stubPlant{}, &stubService{}
				timing := NewLinkTiming(clock, 2*time.Millisecond)
				l, err := bridge.NewLink(bridge.LinkConfig{
					Name: fmt.Sprint("l", i), Loop: bridge.LoopConfig{Period: 2 * time.Millisecond, CPU: -1, AutoLead: true},
					Limits: []bridge.Limit{{Min: -1, Max: 1}},
				}, p, stubExchanger{}, clock, timing, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				plants, deps = append(plants, p), append(deps, dep)
				links = append(links, BenchLink{Link: l, Deps: []bridge.Part{{Name: "dep", Service: dep}}, Timing: timing, Replies: NewReplies()})
			}
			procs := runtime.GOMAXPROCS(0)
			alongside := &stubService{}
			t.Setenv("GOGC", "")
			if err := os.Unsetenv("GOGC"); err != nil {
				t.Fatal(err)
			}
			gcBefore := gcPercent()
			pr, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
			if err != nil {
				t.Fatal(err)
			}
			niceBefore, nice := 20-pr, 0
			if realtime.Renice(niceBefore-1) == nil && realtime.Renice(niceBefore) == nil {
				nice = niceBefore - 1 // permitted here, and to give back
			}
			run, err := RunLinks(context.Background(), LinksConfig{Model: model, Duration: 300 * time.Millisecond, Stagger: true, GOMAXPROCS: AutoGOMAXPROCS,
				Alongside: map[string]bridge.Service{"http": alongside}, GC: realtime.GC{Percent: gcBefore + 555}, Nice: nice}, links)
			if err != nil {
				t.Fatal(err)
			}
			if alongside.served.Load() != 1 || alongside.stopped.Load() != 1 {
				t.Errorf("the service alongside: served %d, stopped %d; want 1 and 1", alongside.served.Load(), alongside.stopped.Load())
			}
			gcAfter := gcPercent()
			if got := alongside.gcPercent.Load(); got != int32(gcBefore+555) || gcAfter != gcBefore {
				t.Errorf("GC percent %d during the run, %d after it; want %d and %d", got, gcAfter, gcBefore+555, gcBefore)
			}
			if pr, _ := unix.Getpriority(unix.PRIO_PROCESS, 0); nice != 0 && (alongside.nice.Load() != int32(nice) || 20-pr != niceBefore) {
				t.Errorf("nice %d during the run, %d after it; want %d and %d", alongside.nice.Load(), 20-pr, nice, niceBefore)
			}
			loops := map[Model]int{ModelThread: 3, ModelScheduler: 1}[model]
			if run.GOMAXPROCS != runtime.NumCPU()+loops || runtime.GOMAXPROCS(0) != procs {
				t.Errorf("GOMAXPROCS %d during the run, %d after it, want %d and %d", run.GOMAXPROCS, runtime.GOMAXPROCS(0), runtime.NumCPU()+loops, procs)
			}
			if run.Model != string(model) || run.Links != 3 || len(run.PerLink) != 3 || run.RateHz != 500 {
				t.Fatalf("%+v", run)
			}
			for i, r := range run.PerLink {
				if r.Ticks == 0 || r.SendUs.P50 < 0 {
					t.Errorf("link %d: %+v", i, r)
				}
				if plants[i].halted.Load() != 1 || deps[i].served.Load() != 1 || deps[i].stopped.Load() != 1 {
					t.Errorf("link %d: halted %d, dependency served %d, stopped %d", i, plants[i].halted.Load(), deps[i].served.Load(), deps[i].stopped.Load())
				}
			}
			if model == ModelScheduler && run.Phases != "spread" {
				t.Errorf("phases %q", run.Phases)
			}
			if _, err := json.Marshal(NewLinksReport([]LinksRun{run})); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRunLinksErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := RunLinks(ctx, LinksConfig{Model: ModelThread, Duration: time.Second}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("no links: %v", err)
	}
	if _, err := ParseModel("fibers"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "want thread or scheduler") {
		t.Errorf("ParseModel: %v", err)
	}
	clock := realtime.NewClock()
	l, err := bridge.NewLink(bridge.LinkConfig{
		Name: "l", Loop: bridge.LoopConfig{Period: time.Millisecond, CPU: -1}, Limits: []bridge.Limit{{Min: -1, Max: 1}},
	}, &stubPlant{}, stubExchanger{}, clock, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunLinks(ctx, LinksConfig{Model: ModelScheduler, Duration: time.Second}, []BenchLink{{Link: l}}); !errors.Is(err, ErrConfig) {
		t.Errorf("no timing observer: %v", err)
	}
	if _, err := RunLinks(ctx, LinksConfig{Model: "x", Duration: time.Second}, []BenchLink{{Link: l, Timing: NewLinkTiming(clock, time.Millisecond)}}); !errors.Is(err, ErrConfig) {
		t.Errorf("model x: %v", err)
	}
	// Interrupted: what was measured, and an error saying so.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	run, err := RunLinks(cctx, LinksConfig{Model: ModelScheduler, Duration: time.Second}, []BenchLink{{Link: l, Timing: NewLinkTiming(clock, time.Millisecond)}})
	if err == nil || !strings.Contains(err.Error(), "interrupted") || run.Links != 1 {
		t.Errorf("interrupted: %+v %v", run, err)
	}
}

// ParseCounts takes one count or a list, and refuses what a run cannot do.
func TestParseCounts(t *testing.T) {
	for in, want := range map[string]string{"4": "[4]", "1, 4,16": "[1 4 16]", "0": "error", "1,,2": "error", "257": "error", "x": "error"} {
		got, err := ParseCounts(in)
		if s := fmt.Sprint(got); (err != nil) != (want == "error") || err == nil && s != want {
			t.Errorf("ParseCounts(%q) = %v, %v; want %s", in, got, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), "from 1 to 256") {
			t.Errorf("ParseCounts(%q): %v does not say what is wanted", in, err)
		}
	}
}
