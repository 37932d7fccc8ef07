package loopbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/simulink"
)

// TestPeerHelper is the peer process of TestStartPeer: this test binary,
// run again. It says it is ready, waits for SIGINT, prints its report and
// exits before the testing package can print anything after it.
func TestPeerHelper(t *testing.T) {
	if os.Getenv("LOOPBENCH_TEST_PEER") == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Println("partner: listening on x")
	<-ctx.Done()
	fmt.Println("partner: stopping")
	fmt.Print(os.Getenv("LOOPBENCH_TEST_PEER"))
	os.Exit(0)
}

// A peer stopped with SIGINT prints its report last; Stop returns that line,
// terminated or not, and the same again when called twice.
func TestStartPeer(t *testing.T) {
	for _, last := range []string{`{"received":3}` + "\n", `{"received":4}`} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeerHelper$")
		cmd.Env = append(os.Environ(), "LOOPBENCH_TEST_PEER="+last)
		p, err := StartPeer(cmd, "partner: listening", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Stop()
		if err != nil || got != strings.TrimSuffix(last, "\n") {
			t.Errorf("Stop: %q, %v; want %q", got, err, last)
		}
		if again, _ := p.Stop(); again != got {
			t.Errorf("second Stop: %q", again)
		}
	}
}

func TestLineWriter(t *testing.T) {
	first := make(chan string, 1)
	w := &lineWriter{first: first}
	for _, s := range []string{"partner: lis", "tening\nsecond", " line\n", "third\n"} {
		w.Write([]byte(s))
	}
	if f := <-first; f != "partner: listening" {
		t.Errorf("first line %q", f)
	}
	if l := w.lastLine(); l != "third" {
		t.Errorf("last line %q", l)
	}
	w.Write([]byte("unterminated"))
	if l := w.lastLine(); l != "unterminated" {
		t.Errorf("last line %q", l)
	}
	w.Write([]byte(strings.Repeat("x", maxLine+10) + "\n"))
	if l := w.lastLine(); len(l) != maxLine {
		t.Errorf("a long line kept %d bytes, want %d", len(l), maxLine)
	}
}

func TestSendTimingReport(t *testing.T) {
	s := simulink.SendTimingStats{
		Clock: simulink.ClockKernel, Intervals: 300, Gaps: 2, Deviations: 299,
		P50Ns: 12_345, P99Ns: 250_000, P999Ns: 400_100, MaxNs: 1_234_567,
		MeanIntervalNs: 1e9 / 30, PeriodNs: 33_333_333.4, RateHz: 30.000000001,
	}
	r := NewSendTimingReport(s)
	want := SendTimingReport{
		Clock: "kernel", Intervals: 300, Gaps: 2, MeanIntervalUs: 33333.333, PeriodUs: 33333.333, RateHz: 30,
		DeviationUs: DeviationUS{P50: 12.345, P99: 250, P999: 400.1, Max: 1234.567},
	}
	if r != want {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	line := "send interval 33.333 ms (30.000 Hz achieved) over 300 intervals, deviation µs p50 12.3 p99 250.0 p99.9 400.1 max 1234.6 (kernel timestamps), gaps 2"
	if r.String() != line {
		t.Errorf("line\n%s\nwant\n%s", r, line)
	}
	if l := NewSendTimingReport(simulink.SendTimingStats{Clock: "user"}).String(); !strings.Contains(l, "unknown") || !strings.Contains(l, "user timestamps") {
		t.Errorf("no intervals: %q", l)
	}
	// The JSON of `bridge partner -json` reads back.
	b, err := json.Marshal(NewPartnerReport(simulink.PartnerStats{Received: 302, Replied: 302, Handshakes: 1, LastSeq: 300}, s))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"received":302`, `"last_seq":300`, `"send_timing":{"clock":"kernel"`, `"deviation_us":{"p50":12.345,"p99":250,"p99_9":400.1,"max":1234.567}`, `"rate_hz":30`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("%s lacks %s", b, key)
		}
	}
	var back PartnerReport
	if err := json.Unmarshal(b, &back); err != nil || back.SendTiming != want {
		t.Errorf("read back %+v, %v", back.SendTiming, err)
	}
}

func TestLinkReportSendTiming(t *testing.T) {
	var l LinkReport
	var text strings.Builder
	l.WriteText(&text)
	if !strings.Contains(text.String(), "run `bridge partner` as the partner") {
		t.Errorf("without the partner's view:\n%s", text.String())
	}
	b, _ := json.Marshal(l)
	if strings.Contains(string(b), "send_deviation_us") || !strings.Contains(string(b), `"send_clock":""`) {
		t.Errorf("JSON without the partner's view: %s", b)
	}
	l.SetSendTiming(SendTimingReport{Clock: "kernel", Intervals: 999, RateHz: 1000.5, DeviationUs: DeviationUS{P50: 1, P99: 2, P999: 3, Max: 4}})
	text.Reset()
	l.WriteText(&text)
	if !strings.Contains(text.String(), "partner's view  send rate 1000.500 Hz over 999 intervals, deviation µs  p50 1.0  p99 2.0  p99.9 3.0  max 4.0  (kernel timestamps), gaps 0") {
		t.Errorf("with the partner's view:\n%s", text.String())
	}
	b, _ = json.Marshal(l)
	for _, key := range []string{`"send_deviation_us":{"p50":1,"p99":2,"p99_9":3,"max":4}`, `"send_rate_hz":1000.5`, `"send_clock":"kernel"`, `"send_intervals":999`, `"send_gaps":0`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("%s lacks %s", b, key)
		}
	}
}
