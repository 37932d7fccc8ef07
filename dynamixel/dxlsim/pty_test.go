package dxlsim_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.bug.st/serial"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/internal/testutil"
)

// servePTY serves b on a pseudo-terminal linked in a temporary directory
// and returns the link; the PTY stops when the test ends.
func servePTY(t *testing.T, b *dxlsim.Bus) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "ttyDXL")
	pt, err := dxlsim.NewPTY(b, link)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- pt.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("link left behind: %v", err)
		}
	})
	return link
}

func openSerial(t *testing.T, path string) serial.Port {
	t.Helper()
	port, err := serial.Open(path, &serial.Mode{BaudRate: 1000000})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return port
}

// pingOver sends a ping to id on port and returns the status, reading until
// a whole packet is in.
func pingOver(t *testing.T, port serial.Port, id byte) dynamixel.Status {
	t.Helper()
	return statusOver(t, port, id, dynamixel.InstPing, nil)
}

// The simulator on a pseudo-terminal, through go.bug.st/serial: ping,
// close and reopen, then an unplug and a replug at the same path.
func TestPTYSerial(t *testing.T) {
	b, _ := newBus(t)
	link := servePTY(t, b)

	port := openSerial(t, link)
	if s := pingOver(t, port, 2); s.ID != 2 || s.Err != 0 || len(s.Data) != 3 || s.Data[0] != 0x06 || s.Data[1] != 0x04 {
		t.Errorf("ping: %+v", s)
	}
	// The driver over the real serial stack.
	drv, err := dynamixel.NewBus(port, dynamixel.BusConfig{Baud: 1000000, LatencyTimer: time.Millisecond, Margin: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dst, errs := make([]byte, 16), make([]byte, 4)
	if n, err := drv.SyncRead(132, 4, []byte{0, 1, 2, 3}, dst, errs); n != 4 || err != nil || dst[1] != 0x08 {
		t.Errorf("SyncRead: %d %v % X", n, err, dst)
	}
	// A client closing and reopening does not disturb the simulator.
	port.Close()
	port = openSerial(t, link)
	if s := pingOver(t, port, 3); s.ID != 3 {
		t.Errorf("ping after reopen: %+v", s)
	}

	// Unplug: the client's Read fails and the path is gone.
	b.Unplug()
	port.SetReadTimeout(50 * time.Millisecond)
	buf := make([]byte, 16)
	var readErr error
	testutil.WaitFor(t, "Read to fail after unplug", func() bool {
		_, readErr = port.Read(buf)
		return readErr != nil
	})
	t.Logf("Read after unplug: %v", readErr)
	// go.bug.st/serial reports PortClosed or EIO (docs/dynamixel.md §14).
	var pe *serial.PortError
	if !(errors.As(readErr, &pe) && pe.Code() == serial.PortClosed) && !errors.Is(readErr, syscall.EIO) {
		t.Errorf("Read after unplug: %v, want PortClosed or EIO", readErr)
	}
	port.Close()
	testutil.WaitFor(t, "the link to go", func() bool {
		_, err := os.Lstat(link)
		return errors.Is(err, os.ErrNotExist)
	})
	if p, err := serial.Open(link, &serial.Mode{BaudRate: 1000000}); err == nil {
		p.Close()
		t.Error("opened the port while unplugged")
	}

	// Plug back: a new pair at the same path.
	b.Plug()
	testutil.WaitFor(t, "the link to come back", func() bool {
		_, err := os.Stat(link)
		return err == nil
	})
	port = openSerial(t, link)
	defer port.Close()
	if s := pingOver(t, port, 0); s.ID != 0 {
		t.Errorf("ping after replug: %+v", s)
	}
}
