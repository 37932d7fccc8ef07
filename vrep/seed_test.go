package vrep_test

import (
	"bufio"
	"context"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/internal/testutil"
	"github.com/labbridge/bridge/vrep"
	"github.com/labbridge/bridge/vrep/vrepsim"
)

// The seed document of the V-REP tutorial is the oracle of the AZ protocol
// (docs/vrep.md §3): its Lua server and its Python client are read from it
// at test time, never copied into the repository. It lives outside the
// repository; BRIDGE_SEEDS names its folder (.ci/run sets it).
func seedDoc(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BRIDGE_SEEDS")
	if dir == "" {
		t.Skip("the seed documents are not given: set BRIDGE_SEEDS to their folder (the project's shared/seeds) to run the seed's own V-REP code")
	}
	m, _ := filepath.Glob(filepath.Join(dir, "000_*.txt"))
	if len(m) != 1 {
		t.Skipf("no seed document 000_*.txt in BRIDGE_SEEDS=%s: the seed's own code cannot be run", dir)
	}
	abs, err := filepath.Abs(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// seedCode returns the <code lang> block of the seed that contains marker.
func seedCode(t *testing.T, doc, lang, marker string) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?s)<code `+lang+`>\n(.*?)</code>`).FindAllStringSubmatch(string(b), -1) {
		if strings.Contains(m[1], marker) {
			return m[1]
		}
	}
	t.Fatalf("no %s code with %q in %s", lang, marker, doc)
	return ""
}

// startSeedServer runs the seed's Lua server under Debian's lua5.3 with our
// stubs of sim and lpack, on a free port, until the test ends.
func startSeedServer(t *testing.T) (addr string, lines <-chan string) {
	t.Helper()
	lua, err := exec.LookPath("lua5.3")
	if err == nil {
		err = exec.Command(lua, "-e", `require("socket")`).Run()
	}
	if err != nil {
		testutil.RequirePeer(t, "lua5.3 with LuaSocket", "apt-get install lua5.3 lua-socket", err)
	}
	script := filepath.Join(t.TempDir(), "simple_robot_control.lua")
	if err := os.WriteFile(script, []byte(seedCode(t, seedDoc(t), "lua", "sysCall_threadmain")), 0o644); err != nil {
		t.Fatal(err)
	}
	harness, _ := filepath.Abs("testdata/az_harness.lua")
	cmd := exec.Command(lua, harness, script)
	cmd.Env = append(os.Environ(), "AZ_PORT=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			default: // nobody reads: drop
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-done
	})
	port := regexp.MustCompile(`server ok at 127\.0\.0\.1 on port (\d+)`)
	timeout := time.After(patience)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatal("the seed's server exited before listening")
			}
			if m := port.FindStringSubmatch(l); m != nil {
				return "127.0.0.1:" + m[1], ch
			}
		case <-timeout:
			t.Fatal("the seed's server did not say where it listens")
		}
	}
}

// The bridge's AZ client against the seed's own Lua server: the values
// arrive, the angles integrate the speeds sent, and a request with a wrong
// magic is refused by the server ("bad data") without changing the speeds.
func TestSeedLuaServer(t *testing.T) {
	addr, lines := startSeedServer(t)
	c, err := vrep.NewAZClient(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var replies []vrep.Reply
	exchange := func(req vrep.Request) {
		t.Helper()
		rep, err := c.Exchange(req)
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, rep)
	}
	// The first exchange sets the speeds: the angles start from 0 there.
	exchange(vrep.Request{Left: 1, Right: -0.5})
	for range 5 {
		time.Sleep(60 * time.Millisecond) // a step of the stub's clock
		exchange(vrep.Request{Left: 1, Right: -0.5})
	}
	first, last := replies[0], replies[len(replies)-1]
	if first.Left != 0 || first.Right != 0 {
		t.Errorf("first reply %+v: the angles start at 0", first)
	}
	for i, r := range replies {
		if i > 0 && r.Time < replies[i-1].Time {
			t.Errorf("time went back: %v then %v", replies[i-1].Time, r.Time)
		}
		// Both wheels integrate over the same time: left = -2 right.
		if math.Abs(float64(r.Left+2*r.Right)) > 1e-5 {
			t.Errorf("reply %d %+v: left is not -2 × right", i, r)
		}
	}
	// The angles are read after the time: they integrate up to the reply's
	// time or one step of the stub later.
	if span := float64(last.Time - first.Time); !(last.Left > 0 && float64(last.Left) >= span-1e-5 && float64(last.Left) <= span+0.05+1e-5) {
		t.Errorf("left angle %v after %v s at 1 rad/s", last.Left, span)
	}
	// A wrong magic: the seed's server prints "bad data", answers all the
	// same and leaves the speeds; the wheels go on at 1 and -0.5.
	raw := exchangeRaw(t, addr, []byte{'X', 'Y', 0, 0, 0x80, 0x40, 0, 0, 0x80, 0x40})
	var rep vrep.Reply
	if err := rep.Unmarshal(raw); err != nil {
		t.Fatalf("reply to a bad request: % x: %v", raw, err)
	}
	waitLine(t, lines, "bad data")
	time.Sleep(60 * time.Millisecond)
	exchange(vrep.Request{Left: 1, Right: -0.5})
	if r := replies[len(replies)-1]; math.Abs(float64(r.Left+2*r.Right)) > 1e-5 || r.Left <= last.Left {
		t.Errorf("after bad data %+v: the speeds changed", r)
	}
	// The relay plant itself, lock-free, against the same server.
	s, err := vrep.New(vrep.Config{Address: addr, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	serve(t, s.Serve)
	meas, before := make([]float64, 3), make([]float64, 3)
	tick(t, s, meas, []float64{2, 2})
	s.Measure(before)
	time.Sleep(120 * time.Millisecond)
	tick(t, s, meas, []float64{2, 2})
	s.Measure(meas)
	dl, dr := meas[1]-before[1], meas[2]-before[2]
	if !(meas[0] > before[0] && dl > 0 && math.Abs(dl-dr) < 1e-5) {
		t.Errorf("the plant's measurement %v then %v: equal speeds turn both wheels alike", before, meas)
	}
}

func exchangeRaw(t *testing.T, addr string, req []byte) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(patience))
	c.Write(req)
	b := make([]byte, vrep.ReplyLen)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func waitLine(t *testing.T, lines <-chan string, s string) {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the server exited before printing %q", s)
			}
			if strings.Contains(l, s) {
				return
			}
		case <-timeout:
			t.Fatalf("the server did not print %q", s)
		}
	}
}

// The seed's Python client against the bridge's simulated scene: good data
// every time, never "bad data".
func TestSeedPythonClient(t *testing.T) {
	doc := seedDoc(t)
	testutil.Python(t, "apt-get install python3")
	scene, addr := startAZ(t, vrepsim.AZConfig{})
	const n = 50
	r, err := loopbench.RunSeedClient(context.Background(), doc, addr, n)
	if err != nil {
		t.Fatal(err)
	}
	if r.Good != n || r.Bad != 0 || r.Other != 0 || len(r.Lines) == 0 || !strings.HasPrefix(r.Lines[0], "sockect time=") {
		t.Fatalf("the seed's client printed %d good, %d bad, %d other: %q", r.Good, r.Bad, r.Other, r.Lines)
	}
	t.Logf("the seed's client printed %q", r.Lines[:2])
	// It sends 0.5 and -0.5 (its command line): the scene turns in place.
	snap := scene.World().Snapshot()
	if snap.Speeds[0] != 0.5 || snap.Speeds[1] != -0.5 || math.Abs(snap.Angles[0]+snap.Angles[1]) > 1e-9 || snap.Angles[0] <= 0 {
		t.Errorf("scene %+v", snap)
	}
	// The scene counts a reply once written: the client may have it first.
	testutil.WaitFor(t, "the scene's count", func() bool { return scene.Stats().Exchanges == n })
	if st := scene.Stats(); st.BadData != 0 {
		t.Errorf("scene stats %+v", st)
	}
}
