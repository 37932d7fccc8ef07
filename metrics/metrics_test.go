package metrics

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/labbridge/bridge/simulink"
)

// gather returns the families of reg by name.
func gather(t *testing.T, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	m := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		m[mf.GetName()] = mf
	}
	return m
}

func labelsOf(m *dto.Metric) map[string]string {
	l := make(map[string]string)
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// series returns the metric of family name whose labels include want, failing
// unless exactly one matches.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf, ok := fams[name]
	if !ok {
		t.Fatalf("family %s missing", name)
	}
	var found []*dto.Metric
	for _, m := range mf.GetMetric() {
		l := labelsOf(m)
		match := true
		for k, v := range want {
			if l[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return math.NaN()
}

func newSet(t *testing.T) (*prometheus.Registry, *Set) {
	t.Helper()
	reg := NewRegistry()
	s, err := New(reg, BuildInfo{Version: "1.2.3", Commit: "abc123", GoVersion: "go1.26.8"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return reg, s
}

func TestBuckets(t *testing.T) {
	tests := []struct {
		period time.Duration
		want   []float64
	}{
		{time.Millisecond, []float64{10e-6, 20e-6, 40e-6, 80e-6, 160e-6, 320e-6, 640e-6, 1e-3, 2e-3, 4e-3}},
		// A power of two that equals the period is not repeated.
		{1280 * time.Microsecond, []float64{10e-6, 20e-6, 40e-6, 80e-6, 160e-6, 320e-6, 640e-6, 1.28e-3, 2.56e-3, 5.12e-3}},
		{10 * time.Microsecond, []float64{10e-6, 20e-6, 40e-6}},
		{5 * time.Microsecond, []float64{5e-6, 10e-6, 20e-6}},
		{0, nil},
		{-time.Second, nil},
	}
	for _, tt := range tests {
		got := Buckets(tt.period)
		if len(got) != len(tt.want) {
			t.Errorf("Buckets(%v) = %v, want %v", tt.period, got, tt.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-12 {
				t.Errorf("Buckets(%v) = %v, want %v", tt.period, got, tt.want)
				break
			}
		}
	}
	// 30 Hz: the period is exact and the layout strictly increases.
	p := time.Second / 30
	b := Buckets(p)
	if b[0] != 10e-6 || !slices.Contains(b, p.Seconds()) || b[len(b)-1] != 4*p.Seconds() {
		t.Errorf("Buckets(%v) = %v: want 10 µs first, the period and 4× the period", p, b)
	}
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			t.Errorf("Buckets(%v) not increasing at %d: %v", p, i, b)
		}
	}
}

func TestNewErrors(t *testing.T) {
	reg, _ := newSet(t)
	if _, err := New(reg, BuildInfo{}); !errors.Is(err, ErrRegister) {
		t.Errorf("second New on one registry: %v, want ErrRegister", err)
	}
	if _, err := New(nil, BuildInfo{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(nil): %v, want ErrInvalid", err)
	}
	if _, err := New(prometheus.NewRegistry(), BuildInfo{Version: "\xff"}); !errors.Is(err, ErrRegister) {
		t.Errorf("New with invalid UTF-8 label: %v, want ErrRegister", err)
	}
}

func TestLinkErrors(t *testing.T) {
	_, s := newSet(t)
	if _, err := s.Link("a", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		period time.Duration
		want   error
	}{
		{"a", time.Millisecond, ErrDuplicateLink},
		{"a", 2 * time.Millisecond, ErrDuplicateLink},
		{"", time.Millisecond, ErrInvalid},
		{"bad\xff", time.Millisecond, ErrInvalid},
		{"b", 0, ErrInvalid},
		{"b", -time.Millisecond, ErrInvalid},
	}
	for _, tt := range tests {
		_, err := s.Link(tt.name, tt.period)
		if !errors.Is(err, tt.want) {
			t.Errorf("Link(%q, %v) = %v, want %v", tt.name, tt.period, err, tt.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "metrics: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
	// A failed Link leaves the name free.
	if _, err := s.Link("b", time.Millisecond); err != nil {
		t.Errorf("Link(b) after failures: %v", err)
	}
}

func TestGatheredMetrics(t *testing.T) {
	reg, s := newSet(t)
	fast, err := s.Link("servo", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	slowPeriod := time.Second / 30
	slow, err := s.Link("camera", slowPeriod)
	if err != nil {
		t.Fatal(err)
	}

	fams := gather(t, reg)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s missing: Go or process collector not registered", name)
		}
	}
	bi := series(t, fams, "bridge_build_info", map[string]string{"version": "1.2.3", "commit": "abc123", "go": "go1.26.8"})
	if value(bi) != 1 {
		t.Errorf("bridge_build_info = %v, want 1", value(bi))
	}
	// Every labelled series exists at 0 before anything happened.
	for _, link := range []string{"servo", "camera"} {
		for i := range simulink.NumStatus {
			st := simulink.Status(i).String()
			if v := value(series(t, fams, "bridge_link_status_total", map[string]string{"link": link, "status": st})); v != 0 {
				t.Errorf("status %s = %v, want 0", st, v)
			}
		}
		for i := range simulink.NumDropReason {
			r := simulink.DropReason(i).String()
			if v := value(series(t, fams, "bridge_link_dropped_datagrams_total", map[string]string{"link": link, "reason": r})); v != 0 {
				t.Errorf("dropped %s = %v, want 0", r, v)
			}
		}
		for _, r := range []string{"nonfinite", "clamped"} {
			series(t, fams, "bridge_link_rejected_commands_total", map[string]string{"link": link, "reason": r})
		}
		for _, n := range []string{"bridge_loop_ticks_total", "bridge_loop_overruns_total", "bridge_link_late_replies_total",
			"bridge_link_state_changes_total", "bridge_loop_lateness_max_seconds", "bridge_link_stale_measurements_total"} {
			if v := value(series(t, fams, n, map[string]string{"link": link})); v != 0 {
				t.Errorf("%s{link=%s} = %v, want 0", n, link, v)
			}
		}
		checkStateSet(t, fams, link, StateStarting)
	}
	if got := fams["bridge_link_status_total"].GetType(); got != dto.MetricType_COUNTER {
		t.Errorf("bridge_link_status_total type %v", got)
	}
	if got := fams["bridge_link_state"].GetType(); got != dto.MetricType_GAUGE {
		t.Errorf("bridge_link_state type %v", got)
	}
	if v := value(series(t, fams, "bridge_loop_period_seconds", map[string]string{"link": "camera"})); v != slowPeriod.Seconds() {
		t.Errorf("camera period = %v, want %v", v, slowPeriod.Seconds())
	}

	// Activity on the fast link, and a reply on the slow one.
	slow.Reply(20_000_000, false)
	fast.ObserveTick(2_500_000, 300_000) // 2.5 ms late: beyond 2× the period
	fast.ObserveTick(-10, 100_000)       // early counts as 0
	fast.ObserveTick(50_000, 100_000)
	fast.ObserveOverrun(2)
	fast.ObserveOverrun(0)
	fast.ObserveOverrun(-3)
	fast.Exchanged(simulink.OKNoDelay)
	fast.Exchanged(simulink.OKNoDelay)
	fast.Exchanged(simulink.Timeout)
	fast.Exchanged(simulink.Status(200)) // ignored
	fast.Reply(400_000, false)
	fast.Reply(1_500_000, true)
	fast.Dropped(simulink.DropSource)
	fast.Dropped(simulink.DropReason(99)) // ignored
	fast.RejectedNonFinite()
	fast.Clamped()
	fast.StaleMeasurement()
	fast.StaleMeasurement()
	fast.DeviceRestart("dxl")
	fast.DeviceRestart("dxl")
	fast.DeviceRestart("bad\xff")
	if err := fast.SetState(StateRunning); err != nil {
		t.Fatal(err)
	}
	if err := fast.SetState(StateRunning); err != nil { // no change, not counted
		t.Fatal(err)
	}
	err = fast.SetState("flying")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"flying"`) {
		t.Errorf("SetState(flying) = %v, want ErrInvalid naming the state", err)
	}
	if fast.State() != StateRunning {
		t.Errorf("State = %q after a refused change, want running", fast.State())
	}

	fams = gather(t, reg)
	servo := map[string]string{"link": "servo"}
	camera := map[string]string{"link": "camera"}
	counters := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"bridge_loop_ticks_total", servo, 3},
		{"bridge_loop_ticks_total", camera, 0},
		{"bridge_loop_overruns_total", servo, 2},
		{"bridge_link_status_total", map[string]string{"link": "servo", "status": "OK_NO_DELAY"}, 2},
		{"bridge_link_status_total", map[string]string{"link": "servo", "status": "TIMEOUT"}, 1},
		{"bridge_link_status_total", map[string]string{"link": "servo", "status": "OK"}, 0},
		{"bridge_link_late_replies_total", servo, 1},
		{"bridge_link_dropped_datagrams_total", map[string]string{"link": "servo", "reason": "source"}, 1},
		{"bridge_link_rejected_commands_total", map[string]string{"link": "servo", "reason": "nonfinite"}, 1},
		{"bridge_link_rejected_commands_total", map[string]string{"link": "servo", "reason": "clamped"}, 1},
		{"bridge_link_stale_measurements_total", map[string]string{"link": "servo"}, 2},
		{"bridge_device_restarts_total", map[string]string{"link": "servo", "device": "dxl"}, 2},
		{"bridge_device_restarts_total", map[string]string{"link": "servo", "device": "bad\uFFFD"}, 1},
		{"bridge_link_state_changes_total", servo, 1},
		{"bridge_loop_lateness_max_seconds", servo, 2.5e-3},
		{"bridge_loop_lateness_max_seconds", camera, 0},
	}
	for _, c := range counters {
		if got := value(series(t, fams, c.name, c.labels)); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	checkStateSet(t, fams, "servo", StateRunning)
	checkStateSet(t, fams, "camera", StateStarting)

	// Histograms: per-link layouts on one registry.
	for _, h := range []struct {
		name   string
		link   string
		period time.Duration
		count  uint64
		sum    float64
	}{
		{"bridge_loop_wakeup_lateness_seconds", "servo", time.Millisecond, 3, 2.55e-3},
		{"bridge_loop_cycle_duration_seconds", "servo", time.Millisecond, 3, 0.5e-3},
		{"bridge_link_reply_latency_seconds", "servo", time.Millisecond, 2, 1.9e-3},
		{"bridge_loop_wakeup_lateness_seconds", "camera", slowPeriod, 0, 0},
		{"bridge_link_reply_latency_seconds", "camera", slowPeriod, 1, 0.02},
	} {
		m := series(t, fams, h.name, map[string]string{"link": h.link})
		hist := m.GetHistogram()
		if hist == nil {
			t.Fatalf("%s{link=%s} is not a histogram", h.name, h.link)
		}
		if hist.GetSampleCount() != h.count || math.Abs(hist.GetSampleSum()-h.sum) > 1e-12 {
			t.Errorf("%s{link=%s}: count %d sum %v, want %d %v", h.name, h.link, hist.GetSampleCount(), hist.GetSampleSum(), h.count, h.sum)
		}
		var bounds []float64
		for _, b := range hist.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if !slices.Equal(bounds, Buckets(h.period)) {
			t.Errorf("%s{link=%s} buckets %v, want %v", h.name, h.link, bounds, Buckets(h.period))
		}
		if bounds[0] != 10e-6 || !slices.Contains(bounds, h.period.Seconds()) {
			t.Errorf("%s{link=%s} buckets %v: want 10 µs first and the period %v", h.name, h.link, bounds, h.period.Seconds())
		}
	}
	// The 2.5 ms tick is above 2× the 1 ms period: only the 4× bucket has it.
	lat := series(t, fams, "bridge_loop_wakeup_lateness_seconds", servo).GetHistogram().GetBucket()
	if n := len(lat); lat[n-2].GetCumulativeCount() != 2 || lat[n-1].GetCumulativeCount() != 3 {
		t.Errorf("lateness buckets 2×, 4× hold %d, %d, want 2, 3", lat[n-2].GetCumulativeCount(), lat[n-1].GetCumulativeCount())
	}

	// The lateness maximum covers the last minute of ticks, not a scrape
	// window: another scrape still sees it, and smaller ticks leave it.
	fams = gather(t, reg)
	if v := value(series(t, fams, "bridge_loop_lateness_max_seconds", servo)); v != 2.5e-3 {
		t.Errorf("lateness max after a second scrape = %v, want 2.5e-3", v)
	}
	fast.ObserveTick(70_000, 1)
	fast.ObserveTick(20_000, 1)
	fams = gather(t, reg)
	if v := value(series(t, fams, "bridge_loop_lateness_max_seconds", servo)); v != 2.5e-3 {
		t.Errorf("lateness max = %v, want 2.5e-3", v)
	}
	// Restarts: the plant's series exists from the start, Devices adds others.
	if v := value(series(t, fams, "bridge_device_restarts_total", map[string]string{"link": "camera", "device": "plant"})); v != 0 {
		t.Errorf("camera's plant restarts = %v, want 0", v)
	}
	slow.Devices("camera", "faults")
	fams = gather(t, reg)
	for _, d := range []string{"plant", "camera", "faults"} {
		if v := value(series(t, fams, "bridge_device_restarts_total", map[string]string{"link": "camera", "device": d})); v != 0 {
			t.Errorf("restarts{device=%s} = %v, want 0", d, v)
		}
	}
}

// checkStateSet asserts that exactly the series state=want is 1.
func checkStateSet(t *testing.T, fams map[string]*dto.MetricFamily, link, want string) {
	t.Helper()
	for _, st := range LinkStates() {
		v := value(series(t, fams, "bridge_link_state", map[string]string{"link": link, "state": st}))
		if (st == want) != (v == 1) || (v != 0 && v != 1) {
			t.Errorf("bridge_link_state{link=%s,state=%s} = %v, want state %s set", link, st, v, want)
		}
	}
}

func TestLinkStatesFresh(t *testing.T) {
	a := LinkStates()
	a[0] = "mutated"
	if b := LinkStates(); b[0] != StateStarting || len(b) != 5 {
		t.Errorf("LinkStates = %v after mutating a copy", b)
	}
}

func TestHotPathAllocs(t *testing.T) {
	_, s := newSet(t)
	l, err := s.Link("x", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	tests := []struct {
		name string
		fn   func()
	}{
		{"ObserveTick", func() { n++; l.ObserveTick(n*1000, n*300) }},
		{"ObserveOverrun", func() { l.ObserveOverrun(1) }},
		{"Exchanged", func() { l.Exchanged(simulink.OK) }},
		{"Reply", func() { n++; l.Reply(n*500, n%2 == 0) }},
		{"Dropped", func() { l.Dropped(simulink.DropStale) }},
		{"RejectedNonFinite", l.RejectedNonFinite},
		{"StaleMeasurement", l.StaleMeasurement},
		{"Clamped", l.Clamped},
	}
	// A 10 s period makes blocks of one tick: every call moves the lateness
	// window on and clears a whole block.
	rot, err := s.Link("rotating", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		name string
		fn   func()
	}{"ObserveTick rotating the window", func() { n++; rot.ObserveTick(n*1000, n*300) }})
	for _, tt := range tests {
		if a := testing.AllocsPerRun(1000, tt.fn); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tt.name, a)
		}
	}
	// Through the interface, as the UDP master calls it.
	var o simulink.Observer = l
	if a := testing.AllocsPerRun(1000, func() { o.Exchanged(simulink.Desync); o.Reply(1, false); o.Dropped(simulink.DropSize) }); a != 0 {
		t.Errorf("simulink.Observer calls: %v allocations, want 0", a)
	}
}

func BenchmarkObserveTick(b *testing.B) { benchObserveTick(b, time.Millisecond) }

// With a 10 s period every tick starts a block and clears a whole one: the
// lateness window's worst case.
func BenchmarkObserveTickRotating(b *testing.B) { benchObserveTick(b, 10*time.Second) }

func benchObserveTick(b *testing.B, period time.Duration) {
	_, s := newSetB(b)
	l, err := s.Link("x", period)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for b.Loop() {
		n++
		l.ObserveTick(n&0xffff*100, 200_000)
	}
}

func BenchmarkObserverExchange(b *testing.B) {
	_, s := newSetB(b)
	l, err := s.Link("x", time.Millisecond)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		l.Exchanged(simulink.OKNoDelay)
		l.Reply(400_000, false)
	}
}

func newSetB(b *testing.B) (*prometheus.Registry, *Set) {
	reg := prometheus.NewRegistry()
	s, err := New(reg, BuildInfo{})
	if err != nil {
		b.Fatal(err)
	}
	return reg, s
}

func TestThisBuild(t *testing.T) {
	b := ThisBuild("1.2.3")
	if b.Version != "1.2.3" || b.Commit == "" || b.GoVersion != runtime.Version() {
		t.Errorf("build info %+v", b)
	}
}
