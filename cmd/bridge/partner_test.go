package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/realtime"
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

// bridge partner -priority -cpu runs its receive thread at SCHED_FIFO on
// that CPU, as bridge sim runs a link's built-in partner; out-of-range
// values are refused.
func TestPartnerPriorityFlags(t *testing.T) {
	if code, _, stderr := runCLI(t, "partner", "-priority", "120"); code == 0 || !strings.Contains(stderr, "-priority 120") {
		t.Errorf("-priority 120: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "partner", "-cpu", "-3"); code == 0 || !strings.Contains(stderr, "-cpu -3") {
		t.Errorf("-cpu -3: %d %q", code, stderr)
	}
	allowed, err := realtime.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed[len(allowed)-1]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var out, errb testutil.SyncBuffer
	go func() {
		done <- run(ctx, []string{"partner", "-listen", "127.0.0.1:0", "-accept", "", "-reply-to", "127.0.0.1:9", "-priority", "7", "-cpu", strconv.Itoa(cpu)}, &out, &errb)
	}()
	// The receive thread: the only one of this process at SCHED_FIFO 7.
	var tid int
	testutil.WaitFor(t, "a thread at SCHED_FIFO 7, or the partner's warning that it is not permitted", func() bool {
		tid = fifoThread(7)
		return tid != 0 || strings.Contains(errb.String(), "not permitted") || len(done) > 0
	})
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("partner: %d %q", code, errb.String())
	}
	if tid == 0 {
		t.Skipf("SCHED_FIFO is not permitted here (run as root or with CAP_SYS_NICE): %s", errb.String())
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(tid, &set); err == nil && (set.Count() != 1 || !set.IsSet(cpu)) {
		t.Errorf("the receive thread may run on %d CPUs, want CPU %d alone", set.Count(), cpu)
	}
}

// fifoThread returns a thread of this process at SCHED_FIFO priority, or 0.
func fifoThread(priority int) int {
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis; rt_priority and
		// policy are the 40th and 41st of the line (proc(5)).
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 39 {
			continue
		}
		if f[37] == strconv.Itoa(priority) && f[38] == "1" {
			tid, _ := strconv.Atoi(e.Name())
			return tid
		}
	}
	return 0
}
