package metrics

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/simulink"
)

// promtool, Prometheus' own linter, accepts the exposition of every metric
// of the package (a link with its camera, lock, servos, faults and
// real-time settings, a relay, a scene), in the text format a scrape gets.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testutil.RequirePeer(t, "promtool", "apt-get install prometheus", err)
	}
	reg := &recorder{Registry: NewRegistry()}
	l := fullSet(t, reg)
	for i := range 42 {
		l.ObserveTick(int64(i)*1000, 5000)
		l.ObserveLead(200_000, 150_000, false)
		l.Exchanged(simulink.OKNoDelay)
		l.Reply(30_000, false)
	}
	l.DeviceRestart("camera")
	l.RealTime(RealTimeInfo{Policy: "SCHED_FIFO", Priority: 80, CPUs: "1", DMALatency: true, LockedMemory: true})
	if err := l.SetState(StateRunning); err != nil {
		t.Fatal(err)
	}
	base := startServer(t, reg, nil)
	_, body := get(t, base+"/metrics")
	for _, want := range []string{"bridge_loop_lateness_quantile_seconds{", "bridge_servo_temperature_celsius{", "bridge_fault_active{",
		"bridge_realtime_info{", "bridge_relay_safety_stops_total{", "bridge_vrep_failures_total{", "bridge_camera_lock_state{"} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape lacks %s…", want)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	if len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics complains:\n%s", out)
	}
}
