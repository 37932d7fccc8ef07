package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/loopbench"
)

// lastLine returns the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// bridge partner -json keeps its first line (where it listens) and prints
// its report as one JSON object on the last line.
func TestPartnerJSON(t *testing.T) {
	code, out, stderr := runCLI(t, "partner", "-listen", "127.0.0.1:0", "-accept", "", "-reply-to", "127.0.0.1:9", "-duration", "1s", "-json")
	if code != 0 || !strings.HasPrefix(out, "partner: listening on 127.0.0.1:") {
		t.Fatalf("partner -json: %d %q %q", code, out, stderr)
	}
	var r loopbench.PartnerReport
	if err := json.Unmarshal([]byte(lastLine(out)), &r); err != nil {
		t.Fatalf("last line: %v in %q", err, out)
	}
	if r.LastSeq != -1 || r.SendTiming.Clock != "kernel" || r.SendTiming.Intervals != 0 {
		t.Errorf("report %+v", r)
	}
	if code, out, _ := runCLI(t, "partner", "-listen", "127.0.0.1:0", "-accept", "", "-reply-to", "127.0.0.1:9", "-duration", "100ms"); code != 0 ||
		!strings.Contains(out, "partner: send interval unknown: no two measurements of consecutive seq (kernel timestamps), gaps 0") {
		t.Errorf("partner without -json: %d %q", code, out)
	}
}

// bridge partner times the sends it receives: n measurements, each sent
// once the previous one is answered, make n−1 intervals in its report.
func TestPartnerReportsSendTiming(t *testing.T) {
	const n = 50
	replies, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer replies.Close()
	for _, asJSON := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		args := []string{"partner", "-listen", "127.0.0.1:0", "-accept", "", "-reply-to", replies.LocalAddr().String()}
		if asJSON {
			args = append(args, "-json")
		}
		first, rest, done := startCommand(ctx, t, args...)
		f := strings.Fields(first) // "partner: listening on ADDR ..."
		if len(f) < 4 {
			t.Fatalf("first line %q", first)
		}
		to, err := net.ResolveUDPAddr("udp4", f[3])
		if err != nil {
			t.Fatal(err)
		}
		meas, buf := make([]byte, 64), make([]byte, 64)
		for seq := -1; seq < n; seq++ {
			binary.LittleEndian.PutUint64(meas, math.Float64bits(float64(seq)))
			if _, err := replies.WriteToUDP(meas, to); err != nil {
				t.Fatal(err)
			}
			replies.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, _, err := replies.ReadFromUDP(buf); err != nil {
				t.Fatalf("seq %d: no reply: %v", seq, err)
			}
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("exit %d", code)
		}
		out := <-rest
		if !asJSON {
			if !strings.Contains(out, "over 49 intervals") || !strings.Contains(out, "(kernel timestamps), gaps 0") {
				t.Errorf("report:\n%s", out)
			}
			continue
		}
		var r loopbench.PartnerReport
		if err := json.Unmarshal([]byte(lastLine(out)), &r); err != nil {
			t.Fatalf("last line: %v in %q", err, out)
		}
		if r.Received != n+1 || r.Handshakes != 1 || r.SendTiming.Intervals != n-1 || r.SendTiming.Clock != "kernel" || r.SendTiming.Gaps != 0 {
			t.Errorf("report %+v", r)
		}
	}
}

// bench link reads the partner process's view of its sends from the
// process's last line.
func TestBenchLinkPartnerProcessSendTiming(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a second process")
	}
	bin := filepath.Join(t.TempDir(), "bridge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "bench", "link", "-rate", "200", "-duration", "1s", "-partner", "process", "-priority", "0", "-dma-latency=false")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr.String())
	}
	if !strings.Contains(string(out), "partner's view  send rate ") || !strings.Contains(string(out), "(kernel timestamps)") {
		t.Errorf("report:\n%s\n%s", out, stderr.String())
	}
}
