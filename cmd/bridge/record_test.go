package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/tap/payload"
)

// startRecord runs bridge record on a loopback port of the kernel's choice
// (-listen 127.0.0.1:0) until the test ends, and returns the address it
// bound, read from what it says once it records; wait returns its exit
// code once ctx has stopped it.
func startRecord(t *testing.T, ctx context.Context, stdout, stderr *testutil.SyncBuffer, args ...string) (addr string, wait func() int) {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"record", "-listen", "127.0.0.1:0"}, args...), stdout, stderr)
	}()
	const said = "recording the taps arriving on "
	testutil.WaitFor(t, "bridge record to bind its port", func() bool {
		select {
		case code := <-done:
			t.Fatalf("record: exit %d before it recorded\n%s%s", code, stdout.String(), stderr.String())
		default:
		}
		_, rest, ok := strings.Cut(stderr.String(), said)
		addr, _, _ = strings.Cut(rest, " ")
		return ok && strings.Contains(rest, " into ")
	})
	return addr, func() int { return <-done }
}

// bridge sim -tap and bridge record together: every link of the default
// gets a CSV whose header names its values with their units and whose rows
// parse; the summary says how many rows and losses.
func TestRecordSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole default for seconds")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "run.csv")
	// The recorder runs until the bridge has stopped, however long a busy
	// machine takes to start it; it has bound its port before the bridge
	// starts, so every link's packets reach it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var recOut, recErr testutil.SyncBuffer
	addr, wait := startRecord(t, ctx, &recOut, &recErr, "-out", out, "-pcap", filepath.Join(dir, "run.pcap"))
	var simOut, simErr bytes.Buffer
	if code := run(context.Background(), []string{"sim", "-ephemeral", "-metrics", "", "-tap", addr, "-duration", "5s"}, &simOut, &simErr); code != 0 {
		cancel()
		wait()
		t.Fatalf("sim: %d\n%s", code, simErr.String())
	}
	// What is checked below (headers, rows, the summary) holds of a
	// recording that misses the last datagrams: no wait for them.
	cancel()
	recCode := wait()
	if recCode != 0 {
		t.Fatalf("record: %d\n%s%s", recCode, recOut.String(), recErr.String())
	}
	t.Log(recOut.String())
	for link, want := range map[string][]string{
		"emio":    {"meas_markers_1_mm", "meas_angles_4_rad", "cmd_angles_1_rad", "applied_angles_4_rad"},
		"meca500": {"meas_joints_1_deg", "cmd_joint_velocity_6_deg_per_s"},
		"vrep":    {"meas_sim_time_s", "cmd_speeds_2_rad_per_s"},
	} {
		path := filepath.Join(dir, "run."+link+".csv")
		f, err := os.Open(path)
		if err != nil {
			t.Errorf("%s: %v\n%s", link, err, recOut.String())
			continue
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(rows) < 2 {
			t.Errorf("%s: %d rows", path, len(rows))
			continue
		}
		header := strings.Join(rows[0], ",")
		if !strings.HasPrefix(header, "time_s,deadline_unix_s,rtp_seq,tick,seq,status,state,lateness_us,reply_latency_us,late,applied,stale,overrun,") {
			t.Errorf("%s: header %s", link, header)
		}
		for _, col := range want {
			if !strings.Contains(","+header+",", ","+col+",") {
				t.Errorf("%s: no column %s in %s", link, col, header)
			}
		}
		if !strings.Contains(recOut.String(), link+": ") {
			t.Errorf("the summary does not name %s:\n%s", link, recOut.String())
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.pcap")); err != nil || fi.Size() < 1000 {
		t.Errorf("pcap: %v", err)
	}
}

// An -out or -pcap whose folder takes no file stops bridge record at once,
// before it says it records: exit 1, the path and the reason in the
// user's words, and nothing left on disk.
func TestRecordRefusesOutput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "somefile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(dir, "none")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-out", filepath.Join(none, "run.csv")},
			"bridge record: cannot write " + filepath.Join(none, "run.csv") + ": the folder " + none + " does not exist; create it or choose another -out"},
		{[]string{"-out", filepath.Join(none, "run.mat")}, "bridge record: cannot write " + filepath.Join(none, "run.mat") + ": the folder " + none + " does not exist"},
		{[]string{"-out", filepath.Join(file, "run.csv")}, "bridge record: cannot write " + filepath.Join(file, "run.csv") + ": " + file + " is a file, not a folder; choose another -out"},
		{[]string{"-out", filepath.Join(dir, "run.csv"), "-pcap", filepath.Join(none, "run.pcap")},
			"bridge record: cannot write " + filepath.Join(none, "run.pcap") + ": the folder " + none + " does not exist; create it or choose another -pcap"},
		// The CSVs' folder is tried first: an older pcap stays as it was.
		{[]string{"-out", filepath.Join(none, "run.csv"), "-pcap", file}, "cannot write " + filepath.Join(none, "run.csv")},
	}
	if fi, err := os.Stat("/proc/self"); err == nil && fi.IsDir() {
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"-out", "/proc/run.csv"}, "bridge record: cannot write /proc/run.csv: files cannot be created in /proc"})
	}
	for _, c := range cases {
		args := append([]string{"record", "-listen", "127.0.0.1:0", "-duration", "1m"}, c.args...)
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), c.want) ||
			strings.Contains(stderr.String(), "recording the taps") {
			t.Errorf("%v: exit %d, stderr %q, want exit 1 and %q only", c.args, code, stderr.String(), c.want)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left in the folder: %v", left)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x" {
		t.Errorf("the older file given to -pcap is now %q (%v)", b, err)
	}
}

// tapPacket is tap packet i of the link, with its descriptor.
func tapPacket(t *testing.T, link string, i int) []byte {
	t.Helper()
	r := payload.Record{Status: 1, State: 2, Seq: int64(i), Tick: uint64(i), Deadline: 1_700_000_000_000_000_000 + int64(i)*10_000_000,
		Flags: payload.FlagDescriptor, ReplyLatency: -1, Measurement: []float64{float64(i)}, Command: []float64{0}, Applied: []float64{0},
		Descriptor: &payload.Descriptor{Link: link, RateHz: 100, Measure: []payload.Field{{Name: "x", Unit: "mm", Len: 1}}, Command: []payload.Field{{Name: "v", Len: 1}}}}
	h := rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: uint16(i), SSRC: 7}
	b := make([]byte, h.MarshalSize()+r.MarshalSize())
	n, err := h.MarshalTo(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.MarshalTo(b[n:]); err != nil {
		t.Fatal(err)
	}
	return b
}

// recordUntilStopped runs bridge record with args while tap packets of
// link "emio" arrive, until it stops by itself.
func recordUntilStopped(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb testutil.SyncBuffer
	done := make(chan int, 1)
	addr, wait := startRecord(t, t.Context(), &out, &errb, append([]string{"-duration", "2m"}, args...)...)
	go func() { done <- wait() }()
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case code := <-done:
			return code, out.String(), errb.String()
		case <-tick.C:
			conn.Write(tapPacket(t, "emio", i))
		}
	}
}

// A link's CSV that cannot be created when its first packet comes stops
// the recording: exit 1 (no panic), the path and the reason, no progress.
func TestRecordLinkFileFails(t *testing.T) {
	dir := t.TempDir()
	// A folder where the link's file would go.
	if err := os.Mkdir(filepath.Join(dir, "run.emio.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := recordUntilStopped(t, "-out", filepath.Join(dir, "run.csv"))
	want := "bridge record: cannot write " + filepath.Join(dir, "run.emio.csv") + ": " + filepath.Join(dir, "run.emio.csv") + " is a folder"
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stdout, "emio: nothing written") {
		t.Errorf("exit %d\nstdout %s\nstderr %s\nwant exit 1 and %q", code, stdout, stderr, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left in the folder: %v", left)
	}
}

// A full disk (/dev/full) stops the recording with exit 1 and a message
// saying how many rows are in which file.
func TestRecordDiskFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.emio.csv")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := recordUntilStopped(t, "-out", filepath.Join(dir, "run.mat"))
	want := "bridge record: writing " + path + " stopped after 0 rows, which are in the file: the disk is full"
	if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stdout, "MAT-file") {
		t.Errorf("exit %d\nstdout %s\nstderr %s\nwant exit 1 and %q", code, stdout, stderr, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("left in the folder (no MAT-file, no spill): %v", left)
	}
}
