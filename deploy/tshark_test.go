package deploy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/labbridge/bridge/deploy"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/tap/payload"
)

// The dissector bridge install would ship is the one beside this test.
func TestTapDissectorEmbedded(t *testing.T) {
	want, err := os.ReadFile("bridge-tap.lua")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(deploy.TapDissector(), want) {
		t.Error("the embedded bridge-tap.lua differs from the file")
	}
}

// tshark returns tshark's path and the dissector's, or skips.
func tshark(t *testing.T) (bin, lua string) {
	t.Helper()
	bin, err := exec.LookPath("tshark")
	if err != nil {
		testutil.RequirePeer(t, "tshark", "apt-get install tshark", err)
	}
	out, _ := exec.Command(bin, "-v").CombinedOutput()
	if strings.Contains(string(out), "without Lua") {
		testutil.RequirePeer(t, "a tshark built with Lua (to load bridge-tap.lua)", "apt-get install tshark (Debian's is built with Lua)", nil)
	}
	lua, err = filepath.Abs("bridge-tap.lua")
	if err != nil {
		t.Fatal(err)
	}
	return bin, lua
}

// dissect runs tshark with the dissector on a capture whose tap is on UDP
// port port, with more arguments (-T fields …, -V …), and returns stdout.
// A Lua error, at load or in a packet, fails the test: tshark itself goes
// on after one.
func dissect(t *testing.T, bin, lua, capture string, port int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"-r", capture, "-d", fmt.Sprintf("udp.port==%d,rtp", port), "-X", "lua_script:" + lua}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, &stderr)
	}
	for _, s := range []string{stdout.String(), stderr.String()} {
		if strings.Contains(s, "Lua: Error") || strings.Contains(s, "Lua Error") || strings.Contains(s, "bridgetap: ") {
			t.Fatalf("tshark %s: a Lua error:\n%s\n%s", strings.Join(args, " "), &stderr, &stdout)
		}
	}
	return stdout.String()
}

// metricValue is the value of series (name and labels as /metrics writes
// them) in the text exposition text, 0 when it is absent.
func metricValue(text, series string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return 0
}

// rows splits tshark -T fields output separated by sep.
func rows(out, sep string) [][]string {
	var r [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			r = append(r, strings.Split(line, sep))
		}
	}
	return r
}

// tapSection is the dissector's part of tshark -V output: from its line to
// the blank line that ends the packet.
func tapSection(v string) string {
	i := strings.Index(v, "\nbridge telemetry tap")
	if i < 0 {
		return ""
	}
	s := v[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return s
}

var markersMM = regexp.MustCompile(`(?m)^\s+markers(\[\d+\])? \(mm\): -?[0-9]`)

// TestTapDissectorOnBridgeSim captures the tap of a real `bridge sim` (its
// default configuration: links emio, meca500 and vrep) on the loopback and
// reads it back through the dissector.
func TestTapDissectorOnBridgeSim(t *testing.T) {
	bin, lua := tshark(t)
	if runtime.GOOS != "linux" {
		t.Skip("captures on the Linux loopback interface lo")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found in PATH: cannot build the bridge")
	}
	dir := t.TempDir()
	bridge := filepath.Join(dir, "bridge")
	build := exec.Command(goBin, "build", "-o", bridge, "./cmd/bridge")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/bridge: %v\n%s", err, out)
	}

	// A socket holds the port for the test, so that nothing else takes it,
	// and drains it.
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback UDP port: %v", err)
	}
	t.Cleanup(func() { sink.Close() })
	go func() {
		buf := make([]byte, 65536)
		for {
			if _, _, err := sink.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	port := sink.LocalAddr().(*net.UDPAddr).Port

	// tshark captures until bridge sim has exited; the duration is only a
	// bound, far beyond the run.
	capture := filepath.Join(dir, "tap.pcapng")
	tsh := start(t, dir, bin, "-i", "lo", "-f", fmt.Sprintf("udp port %d", port), "-a", "duration:300", "-w", capture)
	permission := func() {
		out := tsh.out.String()
		for _, s := range []string{"ermission", "not permitted"} {
			if strings.Contains(out, s) {
				t.Skipf("capturing on lo is not permitted here (run as root, or let dumpcap capture: "+
					"dpkg-reconfigure wireshark-common, and join the group wireshark):\n%s", out)
			}
		}
	}
	// Capturing: tshark says so and dumpcap has written the file's header.
	deadline := time.Now().Add(60 * time.Second)
	for {
		fi, err := os.Stat(capture)
		if strings.Contains(tsh.out.String(), "Capturing on") && err == nil && fi.Size() > 0 {
			break
		}
		select {
		case <-tsh.done:
			permission()
			t.Fatalf("tshark exited before capturing: %v\n%s", tsh.cmd.ProcessState, tsh.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tshark not capturing within a minute:\n%s", tsh.out)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// bridge sim runs until its metrics say the capture holds what is
	// checked below, not for a fixed time: a loaded machine may take most
	// of any fixed run to start the Emio's exchanges.
	sim := start(t, dir, bridge, "sim", "-ephemeral", "-metrics", "127.0.0.1:0", "-tap", fmt.Sprintf("127.0.0.1:%d", port))
	metrics := "http://" + boundAddr(t, sim, simMetricsRE) + "/metrics"
	waitFor(t, 3*time.Minute, "Emio exchanges past seq 10 and a tapped tick of every link", []*process{sim, tsh}, func() bool {
		_, body := httpGet(metrics)
		text := string(body)
		exchanged := metricValue(text, `bridge_link_status_total{link="emio",status="OK"}`) +
			metricValue(text, `bridge_link_status_total{link="emio",status="OK_NO_DELAY"}`)
		return exchanged >= 20 &&
			metricValue(text, `bridge_tap_packets_total{link="meca500"}`) > 0 &&
			metricValue(text, `bridge_tap_packets_total{link="vrep"}`) > 0
	})
	sim.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-sim.done:
		if !sim.cmd.ProcessState.Success() {
			t.Fatalf("bridge sim after SIGINT: %v\n%s", sim.cmd.ProcessState, sim.out)
		}
	case <-time.After(time.Minute):
		t.Fatalf("bridge sim did not stop within a minute of SIGINT:\n%s", sim.out)
	}
	tsh.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-tsh.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("tshark did not stop within a minute of SIGINT:\n%s", tsh.out)
	}
	permission()

	out := dissect(t, bin, lua, capture, port, "-T", "fields", "-E", "separator=,",
		"-e", "frame.number", "-e", "rtp.ssrc", "-e", "bridgetap.status", "-e", "bridgetap.seq", "-e", "bridgetap.tick",
		"-e", "bridgetap.m", "-e", "bridgetap.c", "-e", "bridgetap.desc.link")
	type pkt struct {
		frame, status, seq, m, c int64
		tick                     uint64
		link                     string
	}
	bySSRC := map[string][]pkt{}
	links := map[string]string{} // SSRC → link, from the descriptors
	firstDesc := map[string]int64{}
	for _, r := range rows(out, ",") {
		if len(r) != 8 {
			t.Fatalf("tshark -T fields: %q, want 8 fields", r)
		}
		var p pkt
		var errs [6]error
		p.frame, errs[0] = strconv.ParseInt(r[0], 10, 64)
		p.status, errs[1] = strconv.ParseInt(r[2], 10, 64)
		p.seq, errs[2] = strconv.ParseInt(r[3], 10, 64)
		p.tick, errs[3] = strconv.ParseUint(r[4], 10, 64)
		p.m, errs[4] = strconv.ParseInt(r[5], 10, 64)
		p.c, errs[5] = strconv.ParseInt(r[6], 10, 64)
		for _, err := range errs {
			if err != nil {
				t.Fatalf("frame %s: %v (%q): the dissector did not decode it", r[0], err, r)
			}
		}
		ssrc := r[1]
		p.link = r[7]
		if p.link != "" {
			if l, ok := links[ssrc]; ok && l != p.link {
				t.Errorf("SSRC %s names link %s, then %s", ssrc, l, p.link)
			}
			links[ssrc] = p.link
			if _, ok := firstDesc[ssrc]; !ok {
				firstDesc[ssrc] = p.frame
			}
		}
		if p.status < 0 || p.status > 5 {
			t.Errorf("frame %d: status %d, not in 0..5", p.frame, p.status)
		}
		bySSRC[ssrc] = append(bySSRC[ssrc], p)
	}
	if len(bySSRC) != 3 {
		t.Errorf("%d SSRCs in the capture, want 3 (emio, meca500, vrep)", len(bySSRC))
	}
	var names []string
	emio := ""
	for ssrc, l := range links {
		names = append(names, l)
		if l == "emio" {
			emio = ssrc
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"emio", "meca500", "vrep"}) {
		t.Errorf("the descriptors name links %v, want [emio meca500 vrep]", names)
	}
	for ssrc, ps := range bySSRC {
		increased := false
		var prev *pkt // the last with a seq
		for i := range ps {
			p := &ps[i]
			if ssrc == emio && (p.m != 7 || p.c != 4) {
				t.Errorf("emio frame %d: M %d and C %d, want 7 and 4", p.frame, p.m, p.c)
			}
			if i > 0 && p.tick <= ps[i-1].tick {
				t.Errorf("SSRC %s: tick %d after %d", ssrc, p.tick, ps[i-1].tick)
			}
			if p.seq < 0 {
				continue
			}
			// seq advances by at most one per tick; it restarts from 0 only
			// on a re-handshake (consecutive timeouts, which a loaded
			// machine may cause), at most one per tick since.
			if prev != nil && p.tick > prev.tick {
				ticks := int64(p.tick - prev.tick)
				switch {
				case p.seq > prev.seq && p.seq-prev.seq <= ticks:
					increased = true
				case p.seq <= prev.seq && p.seq <= ticks:
				default:
					t.Errorf("SSRC %s: seq %d at tick %d after seq %d at tick %d", ssrc, p.seq, p.tick, prev.seq, prev.tick)
				}
			}
			prev = p
		}
		if ssrc == emio && !increased {
			t.Errorf("emio: seq never increases over %d packets", len(ps))
		}
	}
	if emio == "" {
		t.FailNow()
	}

	// One emio packet after its first descriptor, without one of its own:
	// named from the SSRC's descriptor. One past the first exchanges if
	// there is.
	var pick int64
	for _, p := range bySSRC[emio] {
		if p.frame > firstDesc[emio] && p.link == "" && (pick == 0 || p.seq >= 10 && (p.status == 1 || p.status == 2)) {
			pick = p.frame
			if p.seq >= 10 && (p.status == 1 || p.status == 2) {
				break
			}
		}
	}
	if pick == 0 {
		t.Fatal("no emio packet after its first descriptor")
	}
	v := tapSection(dissect(t, bin, lua, capture, port, "-V", "-Y", fmt.Sprintf("frame.number == %d", pick)))
	t.Logf("tshark -V, emio frame %d:\n%s", pick, v)
	if !markersMM.MatchString(v) {
		t.Errorf("frame %d: no measurement value labelled markers … (mm)", pick)
	}
	for _, s := range []string{"Status: ", "Link state: ", "Simulink seq: ", "Deadline: ", "Measurement: 7 values", "Command: 4 values", "Applied: 4 values", "angles[3] (rad): "} {
		if !strings.Contains(v, s) {
			t.Errorf("frame %d: -V lacks %q", pick, s)
		}
	}
}

// TestTapDissectorMalformed writes a capture of its own, good and malformed
// payloads made with package tap's codec, and needs no capture permission.
func TestTapDissectorMalformed(t *testing.T) {
	bin, lua := tshark(t)
	const port = 5004
	emio := &payload.Descriptor{Link: "emio", RateHz: 50,
		Measure: []payload.Field{{Name: "markers", Unit: "mm", Len: 3}, {Name: "angles", Unit: "rad", Len: 4}},
		Command: []payload.Field{{Name: "angles", Unit: "rad", Len: 4}},
	}
	deadline := time.Date(2026, 11, 24, 12, 0, 0, 123456789, time.UTC).UnixNano()
	rec := func(seq int64, status, flags uint8) *payload.Record {
		return &payload.Record{Status: status, Flags: flags, State: 2, Seq: seq, Tick: uint64(seq + 10),
			Deadline: deadline, Sent: deadline + 12_000, Lateness: 12_000, ReplyLatency: 80_000,
			Measurement: []float64{1.5, -2.25, 300, 0.1, 0.2, 0.3, 0.4},
			Command:     []float64{0.5, 0.6, 0.7, 0.8}, Applied: []float64{0.5, 0.6, 0.7, 0.75},
			Descriptor: emio}
	}
	marshal := func(r *payload.Record) []byte {
		b := make([]byte, r.MarshalSize())
		n, err := r.MarshalTo(b)
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	type packet struct {
		ssrc    uint32
		payload []byte
		info    string // the info column, or the expert error's start
		bad     bool
	}
	first := rec(-1, 0, payload.FlagDescriptor)
	first.Sent, first.Lateness, first.ReplyLatency = 0, 0, -1
	stale := rec(42, 4, payload.FlagStale|payload.FlagLate)
	stale.Sent, stale.ReplyLatency = 0, -1
	v2 := marshal(rec(43, 2, payload.FlagDescriptor))
	v2[0] = 2
	huge := marshal(rec(44, 2, 0))[:payload.HeaderSize]
	binary.BigEndian.PutUint16(huge[4:], 5000)
	withDesc := marshal(rec(45, 2, payload.FlagDescriptor))
	other := &payload.Record{Status: 1, State: 2, Seq: 7, Tick: 9, Deadline: deadline, Sent: deadline, ReplyLatency: 1000,
		Measurement: []float64{4, 5}, Command: []float64{6}, Applied: []float64{6}}
	packets := []packet{
		{0x0a0b0c0d, marshal(first), "emio seq -1 HANDSHAKING not sent no reply", false},
		{0x0a0b0c0d, marshal(rec(41, 2, payload.FlagApplied)), "emio seq 41 OK_NO_DELAY late 12 µs rtt 80 µs", false},
		{0x0a0b0c0d, v2[:30], "unknown payload version 2", true},
		{0x0a0b0c0d, marshal(rec(44, 2, 0))[:100], "payload too short: 100 bytes", true},
		{0x0a0b0c0d, marshal(rec(44, 2, 0))[:20], "payload too short: 20 bytes", true},
		{0x0a0b0c0d, huge, "5000 measured and 4 commanded values", true},
		{0x0a0b0c0d, withDesc[:len(withDesc)-5], "descriptor says", true},
		{0x0a0b0c0d, marshal(stale), "emio seq 42 TIMEOUT not sent no reply [late reply] [stale]", false},
		{0x0000000b, marshal(other), "ssrc 0x0000000b seq 7 OK late 0 µs rtt 1 µs", false},
	}
	var pcap bytes.Buffer
	le := binary.LittleEndian
	hdr := make([]byte, 24)
	le.PutUint32(hdr[0:], 0xa1b2c3d4)
	le.PutUint16(hdr[4:], 2)
	le.PutUint16(hdr[6:], 4)
	le.PutUint32(hdr[16:], 65535)
	le.PutUint32(hdr[20:], 101) // LINKTYPE_RAW: the packet starts with its IP header
	pcap.Write(hdr)
	for i, p := range packets {
		pk := rtp.Packet{Header: rtp.Header{Version: 2, Marker: i == 0, PayloadType: 96,
			SequenceNumber: uint16(1000 + i), Timestamp: uint32(20_000 * i), SSRC: p.ssrc}, Payload: p.payload}
		b, err := pk.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		ip := ipv4UDP(40000, port, b)
		rh := make([]byte, 16)
		le.PutUint32(rh[0:], uint32(1_795_000_000+i))
		le.PutUint32(rh[8:], uint32(len(ip)))
		le.PutUint32(rh[12:], uint32(len(ip)))
		pcap.Write(rh)
		pcap.Write(ip)
	}
	capture := filepath.Join(t.TempDir(), "tap.pcap")
	if err := os.WriteFile(capture, pcap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	out := dissect(t, bin, lua, capture, port, "-T", "fields", "-E", "separator=/t",
		"-e", "frame.number", "-e", "_ws.col.Protocol", "-e", "_ws.col.Info", "-e", "_ws.expert.severity", "-e", "_ws.expert.message",
		"-e", "bridgetap.measurement", "-e", "bridgetap.command", "-e", "bridgetap.applied")
	rs := rows(out, "\t")
	if len(rs) != len(packets) {
		t.Fatalf("tshark read %d packets, want %d:\n%s", len(rs), len(packets), out)
	}
	for i, r := range rs {
		p := packets[i]
		if len(r) != 8 {
			t.Fatalf("frame %d: %q, want 8 fields", i+1, r)
		}
		proto, info, severity, msg := r[1], r[2], r[3], r[4]
		if proto != "BRIDGETAP" {
			t.Errorf("frame %d: protocol %q, want BRIDGETAP", i+1, proto)
		}
		if p.bad {
			// Severity: PI_ERROR, 0x00800000 (epan/proto.h).
			if severity != "8388608" || !strings.Contains(msg, p.info) {
				t.Errorf("frame %d: expert %q %q, want an error saying %q", i+1, severity, msg, p.info)
			}
			continue
		}
		if info != p.info || severity != "" {
			t.Errorf("frame %d: info %q, expert %q %q; want info %q and no expert info", i+1, info, severity, msg, p.info)
		}
	}
	if got, want := strings.Join(rs[1][5:], " "), "1.5,-2.25,300,0.1,0.2,0.3,0.4 0.5,0.6,0.7,0.8 0.5,0.6,0.7,0.75"; got != want {
		t.Errorf("frame 2: the vectors are %s, want %s", got, want)
	}

	// Frame 2 has no descriptor: its values are named from frame 1's, the
	// same SSRC's; frame 9's SSRC has none, so they go by index.
	v := dissect(t, bin, lua, capture, port, "-V")
	frames := strings.Split(v, "\nFrame ")
	if len(frames) != len(packets) {
		t.Fatalf("tshark -V: %d frames, want %d", len(frames), len(packets))
	}
	f2, f9 := tapSection(frames[1]), tapSection(frames[8])
	for _, s := range []string{"markers[1] (mm): -2.25", "angles[3] (rad): 0.4", "Command: 4 values", "angles[3] (rad): 0.75",
		"Simulink seq: 41", "Tick: 51", "Status: OK_NO_DELAY (2)", "Link state: running (2)", "Lateness (ns): 12000",
		"Reply latency (ns): 80000", "Deadline: Nov 24, 2026 12:00:00.123456789 UTC", "Sent: Nov 24, 2026 12:00:00.123468789 UTC",
		"= Command applied: True", "= Reply late: False"} {
		if !strings.Contains(f2, s) {
			t.Errorf("frame 2: -V lacks %q:\n%s", s, f2)
		}
	}
	for _, s := range []string{"Link: emio", "Rate (Hz): 50", "Measurement field: markers (mm) × 3", "Command field: angles (rad) × 4"} {
		if !strings.Contains(frames[0], s) {
			t.Errorf("frame 1: -V lacks %q:\n%s", s, tapSection(frames[0]))
		}
	}
	for _, s := range []string{"[0]: 4", "[1]: 5", "Reply latency (ns): 1000"} {
		if !strings.Contains(f9, s) {
			t.Errorf("frame 9: -V lacks %q:\n%s", s, f9)
		}
	}
}

// ipv4UDP wraps payload in IPv4 and UDP headers, 127.0.0.1 to itself.
func ipv4UDP(src, dst int, payload []byte) []byte {
	b := make([]byte, 28+len(payload))
	be := binary.BigEndian
	b[0] = 0x45 // IPv4, 20-byte header
	be.PutUint16(b[2:], uint16(len(b)))
	be.PutUint16(b[6:], 0x4000) // don't fragment
	b[8], b[9] = 64, 17         // TTL, UDP
	copy(b[12:], []byte{127, 0, 0, 1, 127, 0, 0, 1})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(be.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	be.PutUint16(b[10:], ^uint16(sum))
	be.PutUint16(b[20:], uint16(src))
	be.PutUint16(b[22:], uint16(dst))
	be.PutUint16(b[24:], uint16(8+len(payload))) // checksum 0: none
	copy(b[28:], payload)
	return b
}
