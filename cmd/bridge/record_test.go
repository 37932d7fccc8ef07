package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// freeUDPPort is a loopback UDP port free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no UDP socket on loopback: %v", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// bridge sim -tap and bridge record together: every link of the default
// gets a CSV whose header names its values with their units and whose rows
// parse; the summary says how many rows and losses.
func TestRecordSim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole default for seconds")
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freeUDPPort(t))
	out := filepath.Join(dir, "run.csv")
	// The recorder runs until the bridge has stopped, however long a busy
	// machine takes to start it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var recOut, recErr bytes.Buffer
	var recCode int
	wg.Go(func() {
		recCode = run(ctx, []string{"record", "-listen", addr, "-out", out, "-pcap", filepath.Join(dir, "run.pcap")}, &recOut, &recErr)
	})
	time.Sleep(200 * time.Millisecond) // the recorder binds first; a late start only loses the first packets
	var simOut, simErr bytes.Buffer
	if code := run(context.Background(), []string{"sim", "-ephemeral", "-metrics", "", "-tap", addr, "-duration", "5s"}, &simOut, &simErr); code != 0 {
		cancel()
		wg.Wait()
		t.Fatalf("sim: %d\n%s", code, simErr.String())
	}
	time.Sleep(500 * time.Millisecond) // the last datagrams are read
	cancel()
	wg.Wait()
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
