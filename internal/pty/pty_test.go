package pty

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.bug.st/serial"
	"golang.org/x/sys/unix"
)

// guard bounds a blocking read so that a broken pty fails the test instead
// of hanging it; no test asserts on elapsed time.
const guard = 10 * time.Second

func openPair(t *testing.T) (master, slave *os.File, path string) {
	t.Helper()
	master, path, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	slave, err = os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open slave %s: %v", path, err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave, path
}

func readN(t *testing.T, f *os.File, n int) []byte {
	t.Helper()
	if err := f.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatalf("SetReadDeadline: %v", err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

func TestOpenSlaveIsRaw(t *testing.T) {
	_, slave, path := openPair(t)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s: %v, mode %v", path, err, fi.Mode())
	}
	rc, err := slave.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var tio *unix.Termios
	var tioErr error
	if err := rc.Control(func(fd uintptr) { tio, tioErr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil || tioErr != nil {
		t.Fatalf("termios: %v %v", err, tioErr)
	}
	if tio.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG|unix.IEXTEN) != 0 {
		t.Errorf("lflag %#x: echo, canonical mode or signals left on", tio.Lflag)
	}
	if tio.Iflag&(unix.ICRNL|unix.IXON|unix.ISTRIP) != 0 || tio.Oflag&unix.OPOST != 0 {
		t.Errorf("iflag %#x oflag %#x: input or output translation left on", tio.Iflag, tio.Oflag)
	}
	if tio.Cflag&unix.CSIZE != unix.CS8 || tio.Cflag&unix.PARENB != 0 {
		t.Errorf("cflag %#x: want 8 bits, no parity", tio.Cflag)
	}
}

func TestBytesPassUnchanged(t *testing.T) {
	master, slave, _ := openPair(t)
	// CR, LF, ^C, ^D, ^S/^Q, DEL, a Dynamixel header and a stuffed FD: bytes a
	// cooked terminal would translate, swallow or act on.
	data := []byte{0xFF, 0xFF, 0xFD, 0x00, 0x0D, 0x0A, 0x03, 0x04, 0x13, 0x11, 0x7F, 0xFD, 0x00, 0x80}
	tests := []struct {
		name     string
		from, to *os.File
	}{
		{"master to slave", master, slave},
		{"slave to master", slave, master},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.from.Write(data); err != nil {
				t.Fatalf("write: %v", err)
			}
			if got := readN(t, tt.to, len(data)); !bytes.Equal(got, data) {
				t.Errorf("read % X, want % X", got, data)
			}
		})
	}
}

func TestOpenKeepsOnlyTheMaster(t *testing.T) {
	count := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(fds)
	}
	before := count()
	master, _, err := Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got := count(); got != before+1 {
		t.Errorf("%d descriptors open after Open, want %d (the master only)", got, before+1)
	}
	master.Close()
	if got := count(); got != before {
		t.Errorf("%d descriptors open after closing the master, want %d", got, before)
	}
}

func TestClosingMasterHangsUpSlave(t *testing.T) {
	master, slave, path := openPair(t)
	master.Close()
	if err := slave.SetReadDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	if n, err := slave.Read(make([]byte, 8)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("slave read after hang-up = %d, %v; want EOF or EIO", n, err)
	}
	if _, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0); err == nil {
		t.Errorf("reopening %s after the master closed succeeded", path)
	}
}

func TestTwoPairsAreDistinct(t *testing.T) {
	_, _, a := openPair(t)
	_, _, b := openPair(t)
	if a == b {
		t.Errorf("two pairs share the slave %s", a)
	}
}

func TestLink(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		target string
		link   string
		err    error // nil: success; errAny: some error
	}{
		{"create", "/dev/pts/7", filepath.Join(dir, "emio"), nil},
		{"replace a link", "/dev/pts/8", filepath.Join(dir, "emio"), nil},
		{"refuse a file", "/dev/pts/9", file, ErrNotLink},
		{"refuse a directory", "/dev/pts/9", dir, ErrNotLink},
		{"missing directory", "/dev/pts/9", filepath.Join(dir, "nope", "emio"), errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Link(tt.target, tt.link)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("Link: %v", err)
			case tt.err == errAny && err == nil, tt.err != nil && tt.err != errAny && !errors.Is(err, tt.err):
				t.Fatalf("Link error = %v, want %v", err, tt.err)
			}
			if tt.err != nil {
				return
			}
			if got, err := os.Readlink(tt.link); err != nil || got != tt.target {
				t.Errorf("Readlink = %q, %v; want %q", got, err, tt.target)
			}
		})
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep" {
		t.Errorf("file changed: %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary links left behind: %v", left)
	}
}

// errAny marks a test case that expects some error.
var errAny = errors.New("any error")

func Example() {
	master, slave, err := Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer master.Close()
	dir, _ := os.MkdirTemp("", "pty-example")
	defer os.RemoveAll(dir)
	link := filepath.Join(dir, "robot")
	if err := Link(slave, link); err != nil {
		fmt.Println(err)
		return
	}
	// The client opens the stable name; the master plays the device.
	client, err := os.OpenFile(link, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	client.Write([]byte{0xFF, 0xFF, 0xFD, 0x00, 0x0A})
	buf := make([]byte, 5)
	io.ReadFull(master, buf)
	fmt.Printf("% X\n", buf)
	// Output: FF FF FD 00 0A
}

// TestBaudIsWhatTheClientSet: the master reads the rate a serial library set
// on the slave, standard or not, and again after the client changes it.
func TestBaudIsWhatTheClientSet(t *testing.T) {
	master, _, path := openPair(t)
	for _, want := range []int{1000000, 57600, 4500000, 9600} {
		port, err := serial.Open(path, &serial.Mode{BaudRate: want})
		if err != nil {
			t.Fatalf("serial.Open %s at %d: %v", path, want, err)
		}
		got, err := Baud(master)
		port.Close()
		if err != nil {
			t.Fatalf("Baud: %v", err)
		}
		if got != want {
			t.Errorf("Baud = %d after the client set %d", got, want)
		}
	}
	port, err := serial.Open(path, &serial.Mode{BaudRate: 57600})
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	if err := port.SetMode(&serial.Mode{BaudRate: 2000000}); err != nil {
		t.Fatal(err)
	}
	if got, err := Baud(master); err != nil || got != 2000000 {
		t.Errorf("Baud = %d, %v after SetMode 2000000", got, err)
	}
}

func TestBaudOfAClosedMaster(t *testing.T) {
	master, _, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	master.Close()
	if _, err := Baud(master); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Baud of a closed master: %v, want os.ErrClosed", err)
	}
}
