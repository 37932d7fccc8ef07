package loopbench

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// First is the line the peer said it was ready with: a peer bound on port
// 0 names its port there.
func TestPeerFirst(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerHelper$")
	cmd.Env = append(os.Environ(), "LOOPBENCH_TEST_PEER=done")
	p, err := StartPeer(cmd, "partner: listening", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if got := p.First(); got != "partner: listening on x" {
		t.Errorf("First() = %q, want the ready line %q", got, "partner: listening on x")
	}
}
