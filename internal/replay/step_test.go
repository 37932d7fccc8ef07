package replay

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// A held player answers nothing and keeps the plant's time until it is
// allowed ticks; then it plays them in order, the held ticks not counted.
func TestPlayerHolds(t *testing.T) {
	tr := &Track{
		Seq: []int64{-1, 4, 5, 6}, Tick: []int64{0, 1, 2, 3}, At: []int64{0, 10, 30, 40},
		Meas: [][]float64{{0}, {1}, {2}, {3}}, Cmd: [][]float64{{0}, {10}, {20}, {30}}, Applied: [][]float64{{0}, {10}, {20}, {30}},
		AppliedOn: []bool{false, true, true, true}, Columns: []string{"meas_x", "cmd_u", "applied_u"},
	}
	p := NewPlayer(tr, Applied)
	p.Hold()
	u := []float64{-1}
	seq := int64(-1)
	step := func() { p.Step(seq, []float64{float64(100 + seq)}, u); seq++ }
	step() // the handshake
	for range 5 {
		step()
		if u[0] != -1 || p.Time(0) != 10 || p.Played() != 0 {
			t.Fatalf("held: answered %v, time %d, played %d; want nothing, 10, 0", u[0], p.Time(0), p.Played())
		}
	}
	if row, _ := p.Answered(); row != -1 {
		t.Fatalf("answered row %d while held", row)
	}
	p.Allow(1)
	step()
	if u[0] != 10 || p.Time(0) != 30 || p.Played() != 1 || p.replayed[1][0] != 105 {
		t.Fatalf("one allowed: answered %v, time %d, played %d, replayed %v", u[0], p.Time(0), p.Played(), p.replayed[1])
	}
	_, woken := p.Answered()
	select {
	case <-woken:
	default:
		t.Error("no wake-up after the allowed tick")
	}
	if row, _ := p.Answered(); row != 1 {
		t.Errorf("answered row %d, want 1", row)
	}
	step()
	if u[0] != 10 || p.Time(0) != 30 || p.Played() != 1 {
		t.Fatalf("held again: answered %v, time %d, played %d", u[0], p.Time(0), p.Played())
	}
	p.Allow(-1)
	step()
	step()
	if u[0] != 30 || p.Played() != 3 {
		t.Fatalf("the rest: answered %v, played %d", u[0], p.Played())
	}
	select {
	case <-p.Done():
	default:
		t.Error("not done after the last recorded tick")
	}
	a := testing.AllocsPerRun(100, func() { p.Step(seq, []float64{0}, u) })
	if a != 0 {
		t.Errorf("a held Step allocates %v times", a)
	}
}

// bridge replay -step: the recording of the in-memory plant, played a tick
// at a time as a person types: nothing moves between the lines, each tick
// is said, and the whole replay is as exact as one played straight.
func TestReplaySteps(t *testing.T) {
	cfg, file := recordArm(t, 60)
	track, err := Open(file, "")
	if err != nil {
		t.Fatal(err)
	}
	in, typed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer typed.Close()
	said := &testutil.SyncBuffer{}
	type result struct {
		r   *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Run(t.Context(), cfg, "arm", track, Options{Step: in, StepOut: said})
		done <- result{r, err}
	}()
	testutil.WaitFor(t, "the stepper to wait", func() bool { return said.Contains("paused before the first tick") })
	time.Sleep(200 * time.Millisecond) // the link runs; nothing is played
	if n := count(said, "tick "); n != 0 {
		t.Fatalf("%d ticks said before any was asked for", n)
	}
	typed.WriteString("\n")
	testutil.WaitFor(t, "one tick said", func() bool { return count(said, "tick ") >= 1 })
	time.Sleep(200 * time.Millisecond)
	if n := count(said, "tick "); n != 1 {
		t.Fatalf("%d ticks said after one was asked for:\n%s", n, said)
	}
	typed.WriteString("x\n3\n")
	testutil.WaitFor(t, "four ticks said", func() bool { return count(said, "tick ") >= 4 })
	testutil.WaitFor(t, "the stepper to say what it takes", func() bool { return count(said, `"x": Enter plays one tick`) == 1 })
	time.Sleep(200 * time.Millisecond)
	if n := count(said, "tick "); n != 4 {
		t.Fatalf("%d ticks said after four were asked for:\n%s", n, said)
	}
	typed.WriteString("c\n")
	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the replay did not end within 2 minutes of c")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	if why := disturbedRecording(track); why != "" {
		t.Logf("the recording itself was disturbed (the machine is loaded: %s): exactness not checked", why)
		return
	}
	if res.r.Played != track.Rows()-countHandshake(track) {
		t.Errorf("played %d of %d running ticks", res.r.Played, track.Rows()-countHandshake(track))
	}
	if res.r.Disturbed != 0 {
		t.Logf("a disturbed run (the machine is loaded): exactness not checked")
		return
	}
	for _, f := range res.r.Fields {
		if f.MaxAbs != 0 {
			t.Errorf("%s: replayed a tick at a time differs from recorded by up to %g at row %d", f.Column, f.MaxAbs, f.AtRow)
		}
	}
}

// Stepping needs a plant told the recorded times; a host's answers are
// not stepped.
func TestStepRefused(t *testing.T) {
	cfg, file := recordArm(t, 20)
	track, err := Open(file, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunHost(t.Context(), cfg, "arm", track, Options{Step: os.Stdin}); !errors.Is(err, ErrStep) {
		t.Errorf("RunHost -step: %v, want ErrStep", err)
	}
}

// disturbedRecording says what, if anything, disturbed the recording's
// own link: a reply lost, a re-handshake (its seq started again), a pause
// that skipped periods. A replay is compared with such a recording, but
// not for exactness.
func disturbedRecording(t *Track) string {
	last := int64(-1)
	for i, s := range t.Seq {
		switch {
		case s < 0:
			continue
		case last >= 0 && s != last+1:
			return fmt.Sprintf("seq %d after %d at row %d", s, last, i)
		case !t.Answered[i]:
			return fmt.Sprintf("no reply at row %d", i)
		case t.Overran[i]:
			return fmt.Sprintf("periods skipped before row %d", i)
		}
		last = s
	}
	return ""
}

func countHandshake(t *Track) int {
	n := 0
	for _, s := range t.Seq {
		if s < 0 {
			n++
		}
	}
	return n
}

// count is how many lines of what the stepper said begin with prefix.
func count(said *testutil.SyncBuffer, prefix string) int {
	n := 0
	for s := range strings.Lines(said.String()) {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}
