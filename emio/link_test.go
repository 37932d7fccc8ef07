package emio_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// holdExchanger answers every tick with the same command, as a partner would.
type holdExchanger struct{ u []float64 }

func (h holdExchanger) Exchange(_, command []float64, _ int64) simulink.Status {
	copy(command, h.u)
	return simulink.OKNoDelay
}
func (holdExchanger) Synced() bool { return true }

// The U2D2 is unplugged and plugged back while the loop runs, through the
// real serial path on a pseudo-terminal: the link goes degraded, the loop
// keeps ticking, and the supervisor reopens the servos by itself.
func TestUnplugDuringRunningLoop(t *testing.T) {
	sb, link, ctx := servePTY(t, dxlsim.DefaultBusConfig())
	m, err := emio.New(emio.Config{
		IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Fast: true,
		Bus:  dynamixel.BusConfig{Baud: 1000000, Margin: 20 * time.Millisecond},
		Open: func() (dynamixel.Port, error) { return dynamixel.OpenSerial(link, 1000000) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	lim := []bridge.Limit{{Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}, {Min: -1.5, Max: 1.5}}
	l, err := bridge.NewLink(bridge.LinkConfig{Name: "emio", Loop: bridge.LoopConfig{Period: 10 * time.Millisecond, CPU: -1}, Limits: lim},
		m, holdExchanger{u: []float64{0.3, 0.3, 0.3, 0.3}}, realtime.NewClock(), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{Backoff: bridge.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Factor: 2}, Seed: 1})
	sup.AddLink(l, nil)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sup.Serve(sctx) }()

	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (state %v)", what, l.State())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("running with commands applied", func() bool { return l.State() == bridge.Running && l.Applied() > 5 })
	sb.Unplug()
	wait("degraded", func() bool { return l.State() == bridge.Degraded })
	t0 := l.Ticks()
	wait("ticks while unplugged", func() bool { return l.Ticks() > t0+20 })
	sb.Plug()
	wait("recovered", func() bool { return l.State() == bridge.Running })
	a0 := l.Applied()
	wait("commands after recovery", func() bool { return l.Applied() > a0+5 })
	want, _ := dynamixel.RadToPulse(0.3)
	if g := sb.Servo(0).Value(dynamixel.ItemGoalPosition); g != int64(want) {
		t.Errorf("goal %d after recovery, want %d", g, want)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// servePTY serves simulated servos on a pseudo-terminal until the test
// ends, and returns their bus, the terminal's path and a context that ends
// with the test.
func servePTY(t *testing.T, bc dxlsim.BusConfig) (*dxlsim.Bus, string, context.Context) {
	t.Helper()
	sb, err := dxlsim.NewBus(bc)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "u2d2")
	pt, err := dxlsim.NewPTY(sb, link)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { pt.Serve(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return sb, link, ctx
}
