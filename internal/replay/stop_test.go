package replay

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/record"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// A replay into a velocity-commanded robot that is stopped (Ctrl-C, a
// signal: its context ends) leaves the robot stopped, as seen on the
// device: the scene's last speeds are zero, and nothing is written after
// that halt.
func TestReplayStopLeavesTheWheelsStopped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP port for the scene: %v", err)
	}
	scene, err := vrepsim.NewAZ(vrepsim.AZConfig{Step: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sceneCtx, stopScene := context.WithCancel(t.Context())
	sceneDone := make(chan error, 1)
	go func() { sceneDone <- scene.Serve(sceneCtx, ln) }()
	defer func() { stopScene(); <-sceneDone }()

	cfg, err := config.Parse([]byte(`
[[link]]
name = "vrep"
rate_hz = 20
apply = "immediate"
[link.loop]
priority = 0
[link.plant]
kind = "vrep"
protocol = "az"
address = "` + ln.Addr().String() + `"
timeout = "1s"
measure = ["sim_time", "left_angle", "right_angle"]
command = ["left_speed", "right_speed"]
min = [-10.0, -10.0]
max = [10.0, 10.0]
`))
	if err != nil {
		t.Fatal(err)
	}
	// 20 s of the wheels turning at 1 and 0.5 rad/s.
	d := cfg.Links[0].Descriptor()
	n := 400
	track := &Track{Link: "vrep", File: "run.vrep.csv", Columns: record.Columns(&d, 0, 0)[len(record.Columns(nil, 0, 0)):], Period: 50 * time.Millisecond}
	for i := range n {
		track.Seq, track.Tick, track.At = append(track.Seq, int64(i)), append(track.Tick, int64(i)), append(track.At, int64(i)*int64(50*time.Millisecond))
		track.Meas = append(track.Meas, make([]float64, 3))
		track.Cmd, track.Applied = append(track.Cmd, []float64{1, 0.5}), append(track.Applied, []float64{1, 0.5})
		track.AppliedOn, track.Answered, track.Overran = append(track.AppliedOn, true), append(track.Answered, true), append(track.Overran, false)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg, "vrep", track, Options{Real: true})
		done <- err
	}()
	testutil.WaitFor(t, "the recorded speeds on the scene's wheels", func() bool {
		return slices.Equal(scene.World().Snapshot().Speeds, []float64{1, 0.5})
	})
	cancel() // what SIGINT and SIGTERM do to `bridge replay`
	select {
	case err := <-done:
		t.Logf("replay stopped: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the replay did not stop within a minute of its context's end")
	}
	after := scene.World().Snapshot()
	if !slices.Equal(after.Speeds, []float64{0, 0}) {
		t.Fatalf("the wheels' speeds after the stop: %v, want 0", after.Speeds)
	}
	time.Sleep(300 * time.Millisecond)
	if later := scene.World().Snapshot(); later.Steps != after.Steps || !slices.Equal(later.Speeds, []float64{0, 0}) {
		t.Errorf("the scene was written to after the halt: %d steps then %d, speeds %v", after.Steps, later.Steps, later.Speeds)
	}
}
