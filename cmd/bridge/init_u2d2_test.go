package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/testutil"
)

// bridge init's -port auto takes the U2D2 of the serial ports listed, the
// first of two, and writes it by its /dev/serial/by-id name, where the
// servos answer; without a U2D2 it says so and keeps "auto".
func TestInitAutoChoosesTheU2D2(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "serial", "by-id", "usb-FTDI_USB__-__Serial_Converter_FT66WCAW-if00-port0")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	simServosAt(t, link, "0,1,2,3")
	serial := dynamixel.PortInfo{Path: "/dev/ttyS0"}
	latency, err := time.ParseDuration(simulatedLatency)
	if err != nil {
		t.Fatal(err)
	}
	find := func(ports ...dynamixel.PortInfo) (string, []string, []string, string) {
		t.Helper()
		var out testutil.SyncBuffer
		hw, found, missing, err := config.FindEmio(context.Background(), config.Finding{
			Port: "auto", IDs: "0-3", Bauds: "1000000", Camera: "none", Latency: latency,
			Ports: func() ([]dynamixel.PortInfo, error) { return ports, nil },
		}, &out)
		if err != nil {
			t.Fatal(err)
		}
		return hw.Port, found, missing, out.String()
	}

	port, found, missing, out := find(serial,
		dynamixel.PortInfo{Path: "/dev/ttyUSB0", VID: "403", PID: "6014", Serial: "FT66WCAW", IsUSB: true, ByID: link},
		dynamixel.PortInfo{Path: "/dev/ttyUSB1", VID: "0403", PID: "6014", Serial: "FT99ZZZZ", IsUSB: true})
	if port != link || len(found) != 1 || !strings.Contains(found[0], "servos 0,1,2,3") || slices.Contains(missing, "the U2D2") {
		t.Errorf("port %q, found %q, missing %q: want the first U2D2 by its by-id name, its four servos", port, found, missing)
	}
	for _, want := range []string{"servos: U2D2 /dev/ttyUSB0", "as " + link, "2 U2D2 adapters", "FT99ZZZZ"} {
		if !strings.Contains(out, want) {
			t.Errorf("init said no %q:\n%s", want, out)
		}
	}

	port, _, missing, out = find(serial, dynamixel.PortInfo{Path: "/dev/ttyUSB2", VID: "10c4", PID: "ea60", IsUSB: true})
	if port != "auto" || !slices.Contains(missing, "the U2D2") || !strings.Contains(out, "no U2D2 (USB 0403:6014) among /dev/ttyS0, /dev/ttyUSB2 (10c4:ea60)") {
		t.Errorf("without a U2D2: port %q, missing %q:\n%s", port, missing, out)
	}
}
