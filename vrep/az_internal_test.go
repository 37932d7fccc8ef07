package vrep

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/vrep/vrepsim"
)

// A scene that waits for the client to close is noticed once: the client
// stops waiting for its close.
func TestAZClientLearnsCloseLast(t *testing.T) {
	scene, err := vrepsim.NewAZ(vrepsim.AZConfig{CloseLast: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback port: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { scene.Serve(ctx, ln) })
	defer wg.Wait()
	defer cancel()
	c, err := NewAZClient(ln.Addr().String(), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Exchange(Request{Left: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if !c.lingers {
		t.Error("the client still waits for a scene that closes last")
	}
	// The scene counts a reply once written: the client may have it first.
	for deadline := time.Now().Add(30 * time.Second); scene.Stats().Exchanges != 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("scene %+v", scene.Stats())
		}
	}
}
