package emio

import (
	"fmt"
	"strings"
	"testing"

	"github.com/labbridge/bridge/dynamixel"
)

// The status reads' schedule: an alert's error first, once at its onset
// and again each round while it lasts; each servo's limit once, then the
// temperatures in turn.
func TestStatusSchedule(t *testing.T) {
	m, err := New(Config{IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, Port: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[uint16]string{dynamixel.AddrHardwareErrorStatus: "E", dynamixel.AddrTemperatureLimit: "L", dynamixel.AddrPresentTemperature: "T"}
	next := func(n int) string {
		var s []string
		for range n {
			i, addr := m.nextStatus()
			if addr == dynamixel.AddrTemperatureLimit {
				m.limitRead[i] = true // as a read that succeeds
			}
			s = append(s, fmt.Sprintf("%s%d", names[addr], m.cfg.IDs[i]))
		}
		return strings.Join(s, " ")
	}
	m.noteReply(2, dynamixel.AlertBit) // servo 2's alert begins
	if got, want := next(14), "E2 L0 T0 L1 T1 L2 T2 L3 T3 E2 T0 T1 T2 T3"; got != want {
		t.Errorf("alert onset:\n got %s\nwant %s", got, want)
	}
	m.noteReply(2, 0) // it ends
	m.noteReply(0, dynamixel.AlertBit|4)
	if got, want := next(10), "E0 T0 T1 T2 T3 E0 T0 T1 T2 T3"; got != want {
		t.Errorf("alert moved:\n got %s\nwant %s", got, want)
	}
	if m.servos[2].alerts.Load() != 1 || m.servos[0].alerts.Load() != 1 || m.servos[2].alerting.Load() || !m.servos[0].alerting.Load() {
		t.Errorf("alerts %d %d", m.servos[0].alerts.Load(), m.servos[2].alerts.Load())
	}
}

func TestStatusEveryDefault(t *testing.T) {
	for _, c := range []struct {
		ids  []byte
		want int
	}{{[]byte{0, 1, 2, 3}, 7}, {[]byte{0}, 30}, {make16(), 1}} {
		m, err := New(Config{IDs: c.ids, Mode: dynamixel.ModePosition, Port: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		if m.statusEvery != c.want {
			t.Errorf("%d servos: status every %d ticks, want %d", len(c.ids), m.statusEvery, c.want)
		}
	}
}

func make16() []byte {
	ids := make([]byte, 16)
	for i := range ids {
		ids[i] = byte(i)
	}
	return ids
}
