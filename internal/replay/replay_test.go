package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/record"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/realtime"
	"github.com/labbridge/bridge/simulink"
)

// armDoc is a link of the in-memory plant, driven by a sine, tapped to tap.
func armDoc(rate float64, tap string) string {
	return fmt.Sprintf(`
[[link]]
name = "arm"
rate_hz = %g
[link.loop]
priority = 0
[link.plant]
kind = "sim"
motors = 2
nb_markers = 1
time_constant = "50ms"
y0 = [0.0, 0.0, 250.0]
j = [10.0, 0.0, 0.0, 10.0, 1.0, 1.0]
[link.partner.controller]
kind = "sine"
amplitude = [0.5, 0.3]
frequency = [2.0, 3.0]
[link.tap]
address = %q
`, rate, tap)
}

// recordArm runs the arm link with its built-in partner until bridge
// record has written rows of it, and returns the configuration and the
// link's CSV.
func recordArm(t *testing.T, rows int) (*config.Config, string) {
	t.Helper()
	conn, err := record.Listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("no loopback UDP port for the tap: %v", err)
	}
	defer conn.Close()
	tap := conn.LocalAddr().String()
	cfg, err := config.Parse([]byte(armDoc(100, tap)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec, err := record.New(record.Config{Out: filepath.Join(dir, "run.csv")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	recDone := make(chan error, 1)
	go func() { recDone <- rec.Serve(ctx, conn, nil) }()
	sup := bridge.NewSupervisor(bridge.SupervisorConfig{})
	built, err := cfg.Supervise(config.Env{Clock: realtime.NewClock(), Partner: true, Ephemeral: true}, sup)
	if err != nil {
		t.Fatal(err)
	}
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Serve(ctx) }()
	testutil.WaitFor(t, fmt.Sprintf("%d recorded rows", rows), func() bool {
		st, _ := rec.Streams()
		return len(st) == 1 && st[0].Rows >= uint64(rows)
	})
	cancel()
	<-supDone
	<-recDone
	for _, b := range built {
		b.Close()
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg, filepath.Join(dir, "run.arm.csv")
}

// A session of the in-memory plant, recorded, then replayed into the same
// configuration, at the recorded rate and five times faster: every
// recorded tick is answered, and the plant, which moves on the tick grid
// (plant.Stepped) and is told the recorded times, measures what was
// recorded, bit for bit, when the replay lost no reply and got none late
// (a loaded machine's), which the result says.
func TestReplayReproduces(t *testing.T) {
	cfg, file := recordArm(t, 150)
	for _, speed := range []float64{1, 5} {
		t.Run(fmt.Sprintf("%g×", speed), func(t *testing.T) { replayArm(t, cfg, file, speed) })
	}
}

func replayArm(t *testing.T, cfg *config.Config, file string, speed float64) {
	track, err := Open(file, "")
	if err != nil {
		t.Fatal(err)
	}
	if track.Period != 10*time.Millisecond || len(track.Meas[0]) != 5 || len(track.Cmd[0]) != 2 {
		t.Fatalf("track: period %v, %d measured and %d commanded values", track.Period, len(track.Meas[0]), len(track.Cmd[0]))
	}
	res, err := Run(t.Context(), cfg, "arm", track, Options{Speed: speed})
	if err != nil {
		t.Fatal(err)
	}
	if res.Played == 0 || len(res.Fields) != 5 {
		t.Fatalf("played %d ticks, %d fields", res.Played, len(res.Fields))
	}
	moved := false
	for i := range track.Rows() {
		moved = moved || track.Meas[i][3] != track.Meas[0][3]
	}
	if !moved {
		t.Fatal("the recorded arm never moved: nothing to reproduce")
	}
	// A pause of the machine that skipped periods of the recording is
	// replayed (the plant is told the recorded times); a reply the replay
	// lost or got late is not.
	var text strings.Builder
	res.WriteText(&text)
	if why := disturbedRecording(track); why != "" {
		t.Logf("the recording itself was disturbed (the machine is loaded: %s): exactness not checked", why)
		return
	}
	if res.Disturbed != 0 {
		t.Logf("a disturbed run (the machine is loaded): exactness not checked\n%s", text.String())
		return
	}
	for _, f := range res.Fields {
		if f.MaxAbs != 0 {
			t.Errorf("%s: replayed differs from recorded by up to %g at row %d\n%s", f.Column, f.MaxAbs, f.AtRow, text.String())
		}
	}
}

// The player answers each running seq with the command of the tick of
// the same seq, counted from the first, holds on the handshake and past
// the recording, and keeps the measurement it was given.
func TestPlayer(t *testing.T) {
	tr := &Track{
		Seq:       []int64{-1, 4, 5, 6},
		Tick:      []int64{0, 1, 2, 3},
		At:        []int64{0, 10, 30, 40},
		Meas:      [][]float64{{0}, {1}, {2}, {3}},
		Cmd:       [][]float64{{0}, {10}, {20}, {99}},
		Applied:   [][]float64{{0}, {10}, {20}, {30}},
		AppliedOn: []bool{false, false, true, true},
		Columns:   []string{"meas_x", "cmd_u", "applied_u"},
	}
	for _, tc := range []struct {
		src  Source
		want []float64 // the replies to seq −1 (handshake), 0, 1, 2, 3
	}{
		{Received, []float64{-1, 10, 20, 99, 99}},
		{Applied, []float64{-1, 10, 20, 30, 30}},
	} {
		p := NewPlayer(tr, tc.src)
		u := []float64{-1}
		wantAt := []int64{10, 30, 40, 40, 40} // the recorded time of the tick after each seq
		if got := p.Time(0); got != 10 {
			t.Errorf("%v: before the first seq, time %d, want 10 (the first running tick's)", tc.src, got)
		}
		for seq := int64(-1); seq <= 3; seq++ {
			p.Step(seq, []float64{float64(100 + seq)}, u)
			if u[0] != tc.want[seq+1] {
				t.Errorf("%v: seq %d answered %v, want %v", tc.src, seq, u[0], tc.want[seq+1])
			}
			if got := p.Time(0); got != wantAt[seq+1] {
				t.Errorf("%v: after seq %d, time %d, want %d", tc.src, seq, got, wantAt[seq+1])
			}
		}
		select {
		case <-p.Done():
		default:
			t.Errorf("%v: not done after the last recorded tick", tc.src)
		}
		if p.Played() != 3 || !p.got[1] || p.replayed[3][0] != 102 || p.got[0] {
			t.Errorf("%v: played %d, got %v, replayed %v", tc.src, p.Played(), p.got, p.replayed)
		}
	}
}

// Step is the partner's hot path: it allocates nothing.
func TestPlayerStepAllocatesNothing(t *testing.T) {
	n := 1000
	tr := &Track{Seq: make([]int64, n), Tick: make([]int64, n), At: make([]int64, n), Meas: make([][]float64, n), Cmd: make([][]float64, n),
		Applied: make([][]float64, n), AppliedOn: make([]bool, n)}
	for i := range n {
		tr.Seq[i], tr.Tick[i] = int64(i), int64(i)
		tr.Meas[i], tr.Cmd[i], tr.Applied[i] = []float64{0, 0}, []float64{1}, []float64{1}
	}
	p := NewPlayer(tr, Applied)
	y, u := []float64{1, 2}, []float64{0}
	seq := int64(-1)
	if a := testing.AllocsPerRun(500, func() { seq++; p.Step(seq, y, u) }); a != 0 {
		t.Errorf("Step allocates %v times", a)
	}
}

// A recording that does not fit the link is refused before anything runs:
// other columns, another rate, a real robot not asked for.
func TestRefused(t *testing.T) {
	cfg, file := recordArm(t, 20)
	track, err := Open(file, "arm")
	if err != nil {
		t.Fatal(err)
	}
	three := strings.NewReplacer("motors = 2", "motors = 3", "j = [10.0, 0.0, 0.0, 10.0, 1.0, 1.0]", "j = [10.0, 0.0, 0.0, 0.0, 10.0, 0.0, 1.0, 1.0, 1.0]",
		"amplitude = [0.5, 0.3]", "amplitude = [0.5, 0.3, 0.1]", "frequency = [2.0, 3.0]", "frequency = [2.0, 3.0, 1.0]")
	other, err := config.Parse([]byte(three.Replace(armDoc(100, ""))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), other, "arm", track, Options{}); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "cmd_angles_3_rad") {
		t.Errorf("3 motors: %v", err)
	}
	fast, err := config.Parse([]byte(armDoc(200, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), fast, "arm", track, Options{}); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "recorded every 10ms") {
		t.Errorf("200 Hz: %v", err)
	}
	handshake := *track
	handshake.Seq = make([]int64, track.Rows())
	for i := range handshake.Seq {
		handshake.Seq[i] = -1
	}
	if _, err := Run(t.Context(), cfg, "arm", &handshake, Options{}); !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "nothing to replay") {
		t.Errorf("only the handshake: %v", err)
	}
	if _, err := Run(t.Context(), cfg, "hand", track, Options{}); err == nil || !strings.Contains(err.Error(), `no link "hand"`) {
		t.Errorf("no such link: %v", err)
	}
	if _, err := Open(filepath.Join(filepath.Dir(file), "run.csv"), "leg"); err == nil || !strings.Contains(err.Error(), `no link "leg"`) {
		t.Errorf("Open leg: %v", err)
	}

	if _, err := Run(t.Context(), cfg, "arm", track, Options{Speed: 0.5}); !errors.Is(err, ErrSpeed) {
		t.Errorf("half speed: %v", err)
	}
	// A real arm: refused without -real, whatever the track.
	real, err := config.Parse([]byte("[[link]]\nname = \"meca\"\nrate_hz = 100\n[link.loop]\npriority = 0\n[link.plant]\nkind = \"meca500\"\naddress = \"192.168.0.100\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := real.Links[0].Descriptor()
	cols := record.Columns(&d, 0, 0)[len(record.Columns(nil, 0, 0)):]
	arm := &Track{Link: "meca", File: "meca.csv", Seq: []int64{0}, Tick: []int64{0}, At: []int64{0}, Columns: cols, AppliedOn: []bool{true},
		Meas: [][]float64{make([]float64, d.Measure[0].Len)}, Cmd: [][]float64{{0}}, Applied: [][]float64{{0}}}
	if _, err := Run(t.Context(), real, "meca", arm, Options{}); !errors.Is(err, ErrReal) || !strings.Contains(err.Error(), "pass -real") {
		t.Errorf("a real arm: %v", err)
	}
	// A simulated arm keeps its own time: only at the recorded rate.
	simArm, err := config.Parse([]byte("[[link]]\nname = \"meca\"\nrate_hz = 100\n[link.loop]\npriority = 0\n[link.plant]\nkind = \"meca500\"\naddress = \"sim\"\nmonitoring_interval = \"4ms\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), simArm, "meca", arm, Options{Speed: 2}); !errors.Is(err, ErrSpeed) || !strings.Contains(err.Error(), "keeps its own time") {
		t.Errorf("a simulated arm at 2×: %v", err)
	}
}

// freePort is a loopback UDP port free a moment ago (the link binds its
// reply port by number); the test skips when it is taken by then.
func freePort(t *testing.T) string {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback UDP port: %v", err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// The recorded measurements played to a host that runs the recorded
// session's model (the same sine, which counts seqs): it answers each
// measurement as it did then, tick for tick.
func TestReplayToHost(t *testing.T) {
	cfg, file := recordArm(t, 120)
	track, err := Open(file, "arm")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := cfg.Links[0].Controller()
	if err != nil {
		t.Fatal(err)
	}
	listen := freePort(t)
	host, err := simulink.NewPartner(simulink.PartnerConfig{Listen: netip.MustParseAddrPort("127.0.0.1:0"), ReplyTo: netip.MustParseAddrPort(listen),
		MeasureLen: 5, CommandLen: 2, Controller: ctl})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ctx, cancel := context.WithCancel(t.Context())
	hostDone := make(chan error, 1)
	go func() { hostDone <- host.Serve(ctx) }()
	defer func() { cancel(); <-hostDone }()
	doc := armDoc(100, "") + fmt.Sprintf("[link.udp]\nremote = %q\nlisten = %q\nbind = \"127.0.0.1:0\"\n", host.Addr().String(), listen)
	hcfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunHost(t.Context(), hcfg, "arm", track, Options{})
	if err != nil {
		if strings.Contains(err.Error(), "address already in use") {
			t.Skipf("port %s taken meanwhile: %v", listen, err)
		}
		t.Fatal(err)
	}
	if res.Played == 0 || len(res.Fields) != 2 || !strings.HasPrefix(res.Fields[0].Column, "cmd_angles_1") {
		t.Fatalf("played %d, fields %+v", res.Played, res.Fields)
	}
	var text strings.Builder
	res.WriteText(&text)
	if res.Disturbed > 0 {
		t.Logf("a disturbed run (the machine is loaded): exactness not checked\n%s", text.String())
		return
	}
	for _, f := range res.Fields {
		if f.MaxAbs != 0 {
			t.Errorf("%s: the host answered differently by up to %g at row %d\n%s", f.Column, f.MaxAbs, f.AtRow, text.String())
		}
	}
}
