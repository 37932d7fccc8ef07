package dxlsim_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.bug.st/serial"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/internal/testutil"
)

// statusOver sends one instruction on port and returns its status, reading
// until a whole packet is in.
func statusOver(t *testing.T, port serial.Port, id, inst byte, params []byte) dynamixel.Status {
	t.Helper()
	var pkt [64]byte
	n, err := dynamixel.MarshalInstruction(pkt[:], id, inst, params)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := port.Write(pkt[:n]); err != nil {
		t.Fatalf("write: %v", err)
	}
	port.SetReadTimeout(100 * time.Millisecond)
	var got []byte
	buf := make([]byte, 64)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := port.Read(buf)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		got = append(got, buf[:n]...)
		if s, _, err := dynamixel.ParseStatus(got); err == nil {
			return s
		}
	}
	t.Fatalf("no status for instruction 0x%02X to ID %d, got % X", inst, id, got)
	return dynamixel.Status{}
}

// silentOver pings id on port and checks that the bus took the packet in
// and sent nothing back: the bus's own counters say so, whatever the load on
// the machine.
func silentOver(t *testing.T, b *dxlsim.Bus, port serial.Port, id byte, at int) {
	t.Helper()
	before := b.Stats()
	var pkt [10]byte
	dynamixel.MarshalInstruction(pkt[:], id, dynamixel.InstPing, nil)
	if _, err := port.Write(pkt[:]); err != nil {
		t.Fatalf("write: %v", err)
	}
	testutil.WaitFor(t, "the ping to reach the bus", func() bool { return b.Stats().Packets > before.Packets })
	if st := b.Stats(); st.Replies != before.Replies {
		t.Errorf("ID %d answered at %d baud", id, at)
	}
}

// Each servo answers only a client whose line runs at its Baud Rate: the
// rate the client set on the pseudo-terminal.
func TestPTYAnswersAtTheServosBaud(t *testing.T) {
	b, _ := newBus(t)
	for _, id := range []byte{2, 3} {
		if err := b.Servo(id).SetValue(dynamixel.ItemBaudRate, 1); err != nil { // 57600
			t.Fatal(err)
		}
	}
	link := servePTY(t, b)
	port := openSerial(t, link) // 1000000
	defer port.Close()
	at := map[int][]byte{1000000: {0, 1}, 57600: {2, 3}, 115200: nil, 4500000: nil}
	for _, baud := range []int{1000000, 57600, 115200, 4500000} {
		if err := port.SetMode(&serial.Mode{BaudRate: baud}); err != nil {
			t.Fatal(err)
		}
		for id := range byte(4) {
			answers := false
			for _, a := range at[baud] {
				answers = answers || a == id
			}
			if !answers {
				silentOver(t, b, port, id, baud)
				continue
			}
			if s := statusOver(t, port, id, dynamixel.InstPing, nil); s.ID != id || s.Err != 0 {
				t.Errorf("ping of ID %d at %d baud: %+v", id, baud, s)
			}
		}
	}
	// A broadcast ping at 57600 gathers the servos at 57600 only.
	if err := port.SetMode(&serial.Mode{BaudRate: 57600}); err != nil {
		t.Fatal(err)
	}
	if s := statusOver(t, port, dynamixel.BroadcastID, dynamixel.InstPing, nil); s.ID != 2 {
		t.Errorf("first answer to a broadcast ping at 57600: ID %d, want 2", s.ID)
	}
}

// A write to Baud Rate is answered at the old rate; the servo then hears the
// new one only, as a real servo does.
func TestBaudRateWriteTakesEffectAfterTheReply(t *testing.T) {
	b, _ := newBus(t)
	link := servePTY(t, b)
	port := openSerial(t, link)
	defer port.Close()
	params := []byte{byte(dynamixel.AddrBaudRate), 0, 1} // 57600
	if s := statusOver(t, port, 1, dynamixel.InstWrite, params); s.ID != 1 || s.Err != 0 {
		t.Fatalf("write of Baud Rate: %+v", s)
	}
	silentOver(t, b, port, 1, 1000000)
	if s := statusOver(t, port, 0, dynamixel.InstPing, nil); s.ID != 0 {
		t.Errorf("ID 0 at 1000000: %+v", s)
	}
	if err := port.SetMode(&serial.Mode{BaudRate: 57600}); err != nil {
		t.Fatal(err)
	}
	if s := statusOver(t, port, 1, dynamixel.InstPing, nil); s.ID != 1 || s.Err != 0 {
		t.Errorf("ping of ID 1 at 57600: %+v", s)
	}
	silentOver(t, b, port, 0, 57600)
}

// A Pipe models no line rate unless told: then only the servos at its rate
// hear it.
func TestPipeBaud(t *testing.T) {
	b, _ := newBus(t)
	if err := b.Servo(3).SetValue(dynamixel.ItemBaudRate, 1); err != nil {
		t.Fatal(err)
	}
	p := dxlsim.NewPipe(b)
	defer p.Close()
	count := func() int { return len(statuses(t, exchange(t, p, dynamixel.BroadcastID, dynamixel.InstPing, nil))) }
	if n := count(); n != 4 {
		t.Errorf("rate not modelled: %d servos answer a broadcast ping, want 4", n)
	}
	if err := p.SetBaud(1000000); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 3 {
		t.Errorf("at 1000000: %d servos answer, want 3", n)
	}
	if err := p.SetBaud(57600); err != nil {
		t.Fatal(err)
	}
	if got := statuses(t, exchange(t, p, dynamixel.BroadcastID, dynamixel.InstPing, nil)); len(got) != 1 || got[0].ID != 3 {
		t.Errorf("at 57600: %+v, want ID 3 alone", got)
	}
	// A servo at another rate hears nothing: no write, no Bus Watchdog.
	if got := exchange(t, p, 0, dynamixel.InstWrite, addrParams(dynamixel.AddrLED, []byte{1})); len(got) != 0 {
		t.Errorf("ID 0 at 57600 answered % X", got)
	}
	if v := b.Servo(0).Value(dynamixel.ItemLED); v != 0 {
		t.Errorf("ID 0 at 57600 took a write: LED %d", v)
	}
	if err := p.SetBaud(-1); !errors.Is(err, dxlsim.ErrConfig) {
		t.Errorf("SetBaud(-1): %v, want ErrConfig", err)
	}
}

// The servos' rate at power-up: ServoConfig.Baud, else the timing model's
// rate when servos use it, else 1 Mbps.
func TestServoBaudConfig(t *testing.T) {
	for _, c := range []struct {
		servo, timing int
		want          int64
	}{{0, 0, 3}, {57600, 0, 1}, {0, 2000000, 4}, {0, 500000, 3}, {4500000, 1000000, 7}} {
		cfg := dxlsim.DefaultBusConfig()
		cfg.Servo.Baud, cfg.Timing.Baud = c.servo, c.timing
		b, err := dxlsim.NewBus(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if v := b.Servo(0).Value(dynamixel.ItemBaudRate); v != c.want {
			t.Errorf("Baud %d, timing %d: Baud Rate code %d, want %d", c.servo, c.timing, v, c.want)
		}
	}
	cfg := dxlsim.DefaultBusConfig()
	cfg.Servo.Baud = 500000
	if _, err := dxlsim.NewBus(cfg); !errors.Is(err, dxlsim.ErrConfig) {
		t.Errorf("Baud 500000: %v, want ErrConfig", err)
	}
}

// AnswerAnyBaud: every servo answers at any rate the client sets, and
// again only at its own once turned off.
func TestPTYAnswerAnyBaud(t *testing.T) {
	b, _ := newBus(t)
	link := filepath.Join(t.TempDir(), "ttyDXL")
	pt, err := dxlsim.NewPTY(b, link)
	if err != nil {
		t.Fatal(err)
	}
	pt.AnswerAnyBaud(true)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- pt.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	port, err := serial.Open(link, &serial.Mode{BaudRate: 57600})
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	if s := statusOver(t, port, 2, dynamixel.InstPing, nil); s.ID != 2 || s.Err != 0 {
		t.Errorf("ping at 57600 answering any rate: %+v", s)
	}
	pt.AnswerAnyBaud(false)
	silentOver(t, b, port, 2, 57600)
}
