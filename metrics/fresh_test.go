package metrics

import (
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// recorder is a Registerer that remembers every collector registered.
type recorder struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.Registry.Register(c); err != nil {
		return err
	}
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

var fqNameRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

// described returns the names of the families the collectors describe.
func (r *recorder) described(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, c := range r.collectors {
		ch := make(chan *prometheus.Desc)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqNameRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %v", d)
			}
			names[m[1]] = true
		}
	}
	return names
}

// fullSet registers every kind of metric the package has, for the link
// "emio" (servos, camera, lock, faults), "meca500" (a relay) and "vrep" (a
// scene), with nothing observed yet.
func fullSet(t *testing.T, reg prometheus.Registerer) *Link {
	t.Helper()
	set, err := New(reg, BuildInfo{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := set.Link("emio", time.Second/30)
	if err != nil {
		t.Fatal(err)
	}
	l.Devices("camera", "faults")
	for _, name := range []string{"meca500", "vrep"} {
		if _, err := set.Link(name, 4*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := set.Camera("emio", time.Second/30); err != nil {
		t.Fatal(err)
	}
	lock := LockReading{State: "locking", States: []string{"locking", "locked", "lost"}, RateHz: 30}
	if err := set.FrameLock("emio", func() LockReading { return lock }); err != nil {
		t.Fatal(err)
	}
	servos := []ServoReading{{ID: 1, TemperatureC: 35, LimitC: 72}, {ID: 2, TemperatureC: math.NaN(), LimitC: 72}}
	if err := set.Servos("emio", func(dst []ServoReading) []ServoReading { return append(dst, servos...) }); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Faults("emio", []string{"no_partner", "camera_down", "servo_hot"}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Relay("meca500", func() float64 { return math.NaN() }); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Scene("vrep", 50*time.Millisecond, []string{"other", "refused"}); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Tap("emio"); err != nil {
		t.Fatal(err)
	}
	return l
}

// Every family is exported before anything happens, every counter series
// at 0: a rate() or increase() over a restart or a first event needs the
// series to exist before it.
func TestEverySeriesFromTheStart(t *testing.T) {
	reg := &recorder{Registry: NewRegistry()}
	fullSet(t, reg)
	// Absent until there is something to say: the loop thread's set-up.
	later := map[string]bool{"bridge_realtime_info": true, "bridge_realtime_dma_latency_held": true, "bridge_realtime_memory_locked": true}
	fams := gather(t, reg)
	counters := 0
	for name := range reg.described(t) {
		mf, ok := fams[name]
		if later[name] {
			if ok {
				t.Errorf("%s exported before the loop's set-up", name)
			}
			continue
		}
		if !ok || len(mf.GetMetric()) == 0 {
			t.Errorf("%s: no series on a fresh Set", name)
			continue
		}
		if mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		counters++
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Errorf("%s%v = %v on a fresh Set, want 0", name, labelsOf(m), v)
			}
		}
	}
	if counters < 25 {
		t.Errorf("only %d counter families checked: is a collector missing from fullSet?", counters)
	}
	// Every link has its plant's restarts; emio has its dependencies'.
	for _, want := range []map[string]string{
		{"link": "emio", "device": "plant"}, {"link": "emio", "device": "camera"}, {"link": "emio", "device": "faults"},
		{"link": "meca500", "device": "plant"}, {"link": "vrep", "device": "plant"},
	} {
		series(t, fams, "bridge_device_restarts_total", want)
	}
}
