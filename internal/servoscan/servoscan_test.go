package servoscan

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// Servos on a pseudo-terminal: a scan finds each once at their baud and
// none at another; a ping names the one that is not there.
func TestScanAndPing(t *testing.T) {
	bc := dxlsim.DefaultBusConfig()
	bc.IDs = []byte{1, 2}
	bus, err := dxlsim.NewBus(bc)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := dxlsim.NewPTY(bus, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- pt.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	var advice strings.Builder
	line := &Line{Port: pt.SlavePath(), LatencyTimer: time.Millisecond, Advice: &advice}
	var out, progress strings.Builder
	if err := Scan(t.Context(), line, []int{1000000}, []byte{0, 1, 2, 3}, &out, &progress, false); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); strings.Count(got, "baud 1000000  model 1030 (XM430-W210)") != 2 || !strings.HasSuffix(got, "2 servo(s) found\n") || progress.Len() != 0 {
		t.Errorf("scan:\n%s(progress %q)", got, progress.String())
	}
	out.Reset()
	err = Ping(line, 1000000, []byte{1, 3}, &out)
	var missing *MissingError
	if !errors.As(err, &missing) || missing.Missing != 1 || missing.Of != 2 || !strings.Contains(out.String(), "ID   1: model 1030") || !strings.Contains(out.String(), "ID   3: ") {
		t.Errorf("ping: %v\n%s", err, out.String())
	}
}
