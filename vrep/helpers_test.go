package vrep_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// startAZ serves a simulated AZ scene on a loopback port for the test.
func startAZ(t testing.TB, cfg vrepsim.AZConfig) (*vrepsim.AZ, string) {
	t.Helper()
	scene, err := vrepsim.NewAZ(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	serve(t, func(ctx context.Context) error { return scene.Serve(ctx, ln) })
	return scene, ln.Addr().String()
}

// startZMQ serves a simulated ZMQ scene on a loopback port for the test.
func startZMQ(t testing.TB, cfg vrepsim.ZMQConfig) (*vrepsim.ZMQ, string) {
	t.Helper()
	scene, err := vrepsim.NewZMQ(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	serve(t, func(ctx context.Context) error { return scene.Serve(ctx, ln) })
	return scene, ln.Addr().String()
}

// serve runs fn until the test ends and checks that it returned nil.
func serve(t testing.TB, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { err = fn(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}

// patience bounds a wait for something that must happen; a loaded machine
// is slow, never wrong.
const patience = 30 * time.Second

// counter is an Observer that counts.
type counter struct {
	mu                                                 sync.Mutex
	exchanges, reconnects, restarts, superseded, stops int
	failed                                             map[vrep.Reason]int
	lastTime                                           float64
}

func (c *counter) Exchanged(_ time.Duration, simTime float64) {
	c.mu.Lock()
	c.exchanges++
	c.lastTime = simTime
	c.mu.Unlock()
}
func (c *counter) Failed(r vrep.Reason) {
	c.mu.Lock()
	if c.failed == nil {
		c.failed = map[vrep.Reason]int{}
	}
	c.failed[r]++
	c.mu.Unlock()
}
func (c *counter) Reconnected() { c.mu.Lock(); c.reconnects++; c.mu.Unlock() }
func (c *counter) Restarted()   { c.mu.Lock(); c.restarts++; c.mu.Unlock() }
func (c *counter) Superseded()  { c.superseded++ } // the loop thread's: no lock, no allocation
func (c *counter) DeadmanStop() { c.stops++ }

func (c *counter) get(f func(*counter) int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f(c)
}

// fakeClock is the dead-man's clock, moved by the test.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }
