package dynamixel

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.bug.st/serial"
	"go.bug.st/serial/enumerator"

	"github.com/labbridge/bridge/internal/pty"
)

const u2d2ByID = "usb-FTDI_USB__-__Serial_Converter_FT66WCAW-if00-port0"

// fakeDev makes a /dev-like directory with the named files and a by-id
// directory of symlinks to them.
func fakeDev(t testing.TB, ttys []string, links map[string]string) (dev, byID string) {
	t.Helper()
	root := t.TempDir()
	dev, byID = filepath.Join(root, "dev"), filepath.Join(root, "by-id")
	for _, d := range []string{dev, byID} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range ttys {
		if err := os.WriteFile(filepath.Join(dev, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range links {
		if err := os.Symlink(filepath.Join(dev, target), filepath.Join(byID, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dev, byID
}

func TestResolve(t *testing.T) {
	dev, byID := fakeDev(t, []string{"ttyUSB0", "ttyUSB1", "ttyS0"}, map[string]string{
		u2d2ByID:                    "ttyUSB0",
		"usb-gone-if00-port0":       "ttyUSB9", // dangling: unplugged
		"usb-FTDI_FT232R_A1-port0":  "ttyUSB1",
		"usb-Other_Adapter-if00-p0": "ttyS0",
	})
	p := func(name string) string { return filepath.Join(dev, name) }
	u2d2 := PortInfo{Path: p("ttyUSB0"), VID: "0403", PID: "6014", Serial: "FT66WCAW", IsUSB: true}
	u2d2b := PortInfo{Path: p("ttyUSB2"), VID: "0403", PID: "6014", Serial: "FT99ZZZZ", IsUSB: true}
	ft232r := PortInfo{Path: p("ttyUSB1"), VID: "0403", PID: "6001", Serial: "A1", IsUSB: true}
	uart := PortInfo{Path: p("ttyS0")}
	one := []PortInfo{uart, u2d2, ft232r}
	two := []PortInfo{uart, u2d2, ft232r, u2d2b}

	tests := []struct {
		name  string
		spec  string
		ports []PortInfo
		want  string
		err   error
	}{
		{"path", p("ttyUSB1"), nil, p("ttyUSB1"), nil},
		{"by-id path", filepath.Join(byID, u2d2ByID), nil, filepath.Join(byID, u2d2ByID), nil},
		{"missing path", p("ttyUSB7"), one, "", ErrNoPort},
		{"directory path", dev, one, "", ErrNoPort},
		{"by-id name", u2d2ByID, nil, filepath.Join(byID, u2d2ByID), nil},
		{"by-id name of an unplugged adapter", "usb-gone-if00-port0", one, "", ErrNoPort},
		{"unknown by-id name", "usb-nope", one, "", ErrNoPort},
		{"dot dot", "..", one, "", ErrNoPort},
		{"usb vid:pid", "usb:0403:6014", one, p("ttyUSB0"), nil},
		{"usb vid:pid:serial", "usb:0403:6014:FT66WCAW", two, p("ttyUSB0"), nil},
		{"usb case-insensitive", "USB:0403:6014:ft99zzzz", two, p("ttyUSB2"), nil},
		{"usb hex without leading zero", "usb:403:6001", one, p("ttyUSB1"), nil},
		{"usb upper-case hex", "usb:0403:6014", []PortInfo{{Path: "/x", VID: "0403", PID: "6014", IsUSB: true}}, "/x", nil},
		{"usb lower-case hex", "usb:1A86:7523", []PortInfo{{Path: "/y", VID: "1a86", PID: "7523", IsUSB: true}}, "/y", nil},
		{"usb two without serial", "usb:0403:6014", two, "", ErrAmbiguousPort},
		{"usb wrong serial", "usb:0403:6014:NOPE", two, "", ErrNoPort},
		{"usb no match", "usb:1a86:7523", one, "", ErrNoPort},
		{"usb no ports", "usb:0403:6014", nil, "", ErrNoPort},
		{"usb missing pid", "usb:0403", one, "", ErrPortSpec},
		{"usb empty", "usb:", one, "", ErrPortSpec},
		{"usb not hex", "usb:04g3:6014", one, "", ErrPortSpec},
		{"usb too long", "usb:10403:6014", one, "", ErrPortSpec},
		{"usb signed", "usb:+403:6014", one, "", ErrPortSpec},
		{"usb empty serial", "usb:0403:6014:", one, "", ErrPortSpec},
		{"usb extra field", "usb:0403:6014:A:B", one, "", ErrPortSpec},
		{"auto", "auto", one, p("ttyUSB0"), nil},
		{"auto upper case", "AUTO", one, p("ttyUSB0"), nil},
		{"auto two U2D2", "auto", two, "", ErrAmbiguousPort},
		{"auto ignores FT232R and UARTs", "auto", []PortInfo{uart, ft232r}, "", ErrNoPort},
		{"auto ignores a non-USB port with FTDI IDs", "auto", []PortInfo{{Path: "/z", VID: "0403", PID: "6014"}}, "", ErrNoPort},
		{"auto no ports", "auto", nil, "", ErrNoPort},
		{"empty", "", one, "", ErrPortSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolve(tt.spec, tt.ports, byID)
			if tt.err == nil {
				if err != nil || got != tt.want {
					t.Fatalf("resolve(%q) = %q, %v; want %q", tt.spec, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.err) || got != "" {
				t.Fatalf("resolve(%q) = %q, %v; want %v", tt.spec, got, err, tt.err)
			}
			if !strings.HasPrefix(err.Error(), "dynamixel: ") || (tt.spec != "" && !strings.Contains(err.Error(), tt.spec)) {
				t.Errorf("error %q does not name the spec", err)
			}
		})
	}
}

func TestResolveErrorsListCandidates(t *testing.T) {
	ports := []PortInfo{
		{Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: "FT66WCAW", IsUSB: true},
		{Path: "/dev/ttyUSB1", VID: "0403", PID: "6014", Serial: "FT99ZZZZ", IsUSB: true},
		{Path: "/dev/ttyS0"},
	}
	_, err := resolve("auto", ports, t.TempDir())
	const amb = `dynamixel: ambiguous serial port: "auto": 2 of them, ` +
		`/dev/ttyUSB0 (0403:6014 serial FT66WCAW), /dev/ttyUSB1 (0403:6014 serial FT99ZZZZ); ` +
		`name one by serial number (usb:VID:PID:SERIAL) or path`
	if err == nil || err.Error() != amb {
		t.Errorf("ambiguous:\n got %v\nwant %s", err, amb)
	}
	_, err = resolve("auto", ports[2:], t.TempDir())
	const none = `dynamixel: no such serial port: "auto": no FTDI 0403:6014 (U2D2) port among /dev/ttyS0`
	if err == nil || err.Error() != none {
		t.Errorf("none:\n got %v\nwant %s", err, none)
	}
	_, byID := fakeDev(t, []string{"ttyUSB0"}, map[string]string{u2d2ByID: "ttyUSB0"})
	_, err = resolve("usb-other", nil, byID)
	if err == nil || !strings.Contains(err.Error(), u2d2ByID) {
		t.Errorf("unknown by-id name: %v does not list %s", err, u2d2ByID)
	}
}

func TestPortInfos(t *testing.T) {
	dev, byID := fakeDev(t, []string{"ttyUSB0", "ttyUSB1", "ttyS4"}, map[string]string{
		u2d2ByID:              "ttyUSB0",
		"usb-FTDI_FT232R_A1":  "ttyUSB1",
		"usb-gone-if00-port0": "ttyUSB9",
	})
	details := []*enumerator.PortDetails{
		{Name: filepath.Join(dev, "ttyUSB1"), IsUSB: true, VID: "0403", PID: "6001", SerialNumber: "A1", Manufacturer: "FTDI", Product: "FT232R USB UART"},
		{}, // what the enumerator returns for a tty without a sysfs device
		{Name: filepath.Join(dev, "ttyS4")},
		{Name: filepath.Join(dev, "ttyUSB0"), IsUSB: true, VID: "0403", PID: "6014", SerialNumber: "FT66WCAW", Manufacturer: "FTDI", Product: "USB <-> Serial Converter"},
		nil,
	}
	got := portInfos(details, byID)
	want := []PortInfo{
		{Path: filepath.Join(dev, "ttyS4")},
		{Path: filepath.Join(dev, "ttyUSB0"), VID: "0403", PID: "6014", Serial: "FT66WCAW", Manufacturer: "FTDI",
			Product: "USB <-> Serial Converter", IsUSB: true, ByID: filepath.Join(byID, u2d2ByID)},
		{Path: filepath.Join(dev, "ttyUSB1"), VID: "0403", PID: "6001", Serial: "A1", Manufacturer: "FTDI",
			Product: "FT232R USB UART", IsUSB: true, ByID: filepath.Join(byID, "usb-FTDI_FT232R_A1")},
	}
	if len(got) != len(want) {
		t.Fatalf("portInfos = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("port %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := portInfos(details[:1], filepath.Join(byID, "missing")); len(got) != 1 || got[0].ByID != "" {
		t.Errorf("without a by-id directory: %+v", got)
	}
}

func TestListPortsRuns(t *testing.T) {
	// The machine's ports are unknown; ListPorts must not fail on them and
	// must keep the entries well-formed.
	ports, err := ListPorts()
	if err != nil {
		t.Skipf("no serial enumeration here: %v", err)
	}
	for _, p := range ports {
		if p.Path == "" {
			t.Errorf("port without a path: %+v", p)
		}
	}
}

// fakeSys makes a sysfs tree with the given latency_timer contents per tty,
// and a dev directory holding those ttys and a by-id link to ttyUSB0.
func fakeSys(t *testing.T, timers map[string]string) (sys, dev string) {
	t.Helper()
	root := t.TempDir()
	sys, dev = filepath.Join(root, "sys"), filepath.Join(root, "dev")
	for name, content := range timers {
		d := filepath.Join(sys, "bus", "usb-serial", "devices", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "<none>" {
			if err := os.WriteFile(filepath.Join(d, "latency_timer"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dev, "serial", "by-id"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ttyUSB0", "ttyUSB1", "ttyUSB2", "ttyUSB3", "ttyUSB4", "ttyUSB5", "pts3"} {
		if err := os.WriteFile(filepath.Join(dev, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dev, "ttyUSB0"), filepath.Join(dev, "serial", "by-id", u2d2ByID)); err != nil {
		t.Fatal(err)
	}
	return sys, dev
}

func TestLatencyTimer(t *testing.T) {
	sys, dev := fakeSys(t, map[string]string{
		"ttyUSB0": "16\n",
		"ttyUSB1": "1\n",
		"ttyUSB2": "garbage\n",
		"ttyUSB3": "<none>", // a usb-serial device without the attribute (not FTDI)
		"ttyUSB4": "256\n",
		"ttyUSB5": "",
	})
	tests := []struct {
		name string
		tty  string
		ms   int
		ok   bool
		err  error
	}{
		{"default 16", filepath.Join(dev, "ttyUSB0"), 16, true, nil},
		{"tuned 1", filepath.Join(dev, "ttyUSB1"), 1, true, nil},
		{"through by-id link", filepath.Join(dev, "serial", "by-id", u2d2ByID), 16, true, nil},
		{"garbage", filepath.Join(dev, "ttyUSB2"), 0, false, ErrLatencyTimer},
		{"out of range", filepath.Join(dev, "ttyUSB4"), 0, false, ErrLatencyTimer},
		{"empty", filepath.Join(dev, "ttyUSB5"), 0, false, ErrLatencyTimer},
		{"no attribute", filepath.Join(dev, "ttyUSB3"), 0, false, nil},
		{"pty", filepath.Join(dev, "pts3"), 0, false, nil},
		{"missing tty", filepath.Join(dev, "ttyUSB9"), 0, false, fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, ok, err := latencyTimer(tt.tty, sys)
			if (tt.err == nil) != (err == nil) || (tt.err != nil && !errors.Is(err, tt.err)) {
				t.Fatalf("latencyTimer(%s) error = %v, want %v", tt.tty, err, tt.err)
			}
			if err != nil && (!strings.HasPrefix(err.Error(), "dynamixel: ") || !strings.Contains(err.Error(), filepath.Base(tt.tty))) {
				t.Errorf("error %q does not name the tty", err)
			}
			if ms != tt.ms || ok != tt.ok {
				t.Errorf("latencyTimer(%s) = %d, %v; want %d, %v", tt.tty, ms, ok, tt.ms, tt.ok)
			}
		})
	}
}

func TestLatencyTimerOfRealPty(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer master.Close()
	if ms, ok, err := LatencyTimer(slave); err != nil || ok {
		t.Errorf("LatencyTimer(%s) = %d, %v, %v; want no timer", slave, ms, ok, err)
	}
}

func TestLatencyAdvice(t *testing.T) {
	_, dev := fakeSys(t, nil)
	byID := filepath.Join(dev, "serial", "by-id", u2d2ByID)
	tests := []struct {
		tty    string
		ms     int
		advice bool
		sysfs  string // the tty named in the sysfs command
	}{
		{"/dev/ttyUSB0", 0, false, ""},
		{"/dev/ttyUSB0", 1, false, ""},
		{"/dev/ttyUSB0", 2, true, "ttyUSB0"},
		{"/dev/ttyUSB3", 16, true, "ttyUSB3"},
		{byID, 16, true, "ttyUSB0"}, // a by-id link names the tty it points to
	}
	for _, tt := range tests {
		got := LatencyAdvice(tt.tty, tt.ms)
		if !tt.advice {
			if got != "" {
				t.Errorf("LatencyAdvice(%s, %d) = %q, want none", tt.tty, tt.ms, got)
			}
			continue
		}
		for _, want := range []string{
			"dynamixel: " + tt.tty + ": ",
			fmt.Sprintf("latency timer is %d ms", tt.ms),
			"echo 1 | sudo tee /sys/bus/usb-serial/devices/" + tt.sysfs + "/latency_timer\n",
			`ACTION=="add", SUBSYSTEM=="usb-serial", DRIVER=="ftdi_sio", ATTR{latency_timer}="1"`,
			"deploy/99-bridge.rules",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("LatencyAdvice(%s, %d) lacks %q:\n%s", tt.tty, tt.ms, want, got)
			}
		}
	}
}

func TestAdviceRuleMatchesDeployedRule(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "deploy", "99-bridge.rules"))
	if err != nil {
		t.Skipf("deploy rules not found: %v", err)
	}
	const rule = `ACTION=="add", SUBSYSTEM=="usb-serial", DRIVER=="ftdi_sio", ATTR{latency_timer}="1"`
	if !strings.Contains(string(b), rule) {
		t.Errorf("deploy/99-bridge.rules lacks the rule LatencyAdvice quotes: %s", rule)
	}
}

// portClosedErr returns the error go.bug.st/serial gives for a read on a
// closed port: a *serial.PortError with code PortClosed.
func portClosedErr(t *testing.T) error {
	t.Helper()
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	defer master.Close()
	p, err := OpenSerial(slave, 1000000)
	if err != nil {
		t.Fatalf("OpenSerial: %v", err)
	}
	p.Close()
	_, err = p.Read(make([]byte, 1))
	var pe *serial.PortError
	if !errors.As(err, &pe) || pe.Code() != serial.PortClosed {
		t.Fatalf("read on a closed port = %v, want PortClosed", err)
	}
	return err
}

func TestIsDisconnect(t *testing.T) {
	closed := portClosedErr(t)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"port closed", closed, true},
		{"wrapped port closed", fmt.Errorf("dynamixel: read: %w", closed), true},
		{"other port error", &serial.PortError{}, false},
		{"port error value", serial.PortError{}, false},
		{"EIO", syscall.EIO, true},
		{"wrapped EIO", fmt.Errorf("dynamixel: write: %w", syscall.EIO), true},
		{"ENXIO", syscall.ENXIO, true},
		{"ENODEV", syscall.ENODEV, true},
		{"ENOENT on reopen", &fs.PathError{Op: "open", Path: "/dev/ttyUSB0", Err: syscall.ENOENT}, true},
		{"EBADF", syscall.EBADF, true},
		{"EAGAIN", syscall.EAGAIN, false},
		{"EACCES", &fs.PathError{Op: "open", Path: "/dev/ttyUSB0", Err: syscall.EACCES}, false},
		{"EOF", io.EOF, false},
		{"deadline", os.ErrDeadlineExceeded, false},
		{"timeout", ErrTimeout, false},
		{"plain", errors.New("dynamixel: something"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsDisconnect(tt.err); got != tt.want {
				t.Errorf("IsDisconnect(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// guardRead bounds how long a test waits for bytes that should arrive, so a
// broken pty fails instead of hanging; nothing asserts on elapsed time.
const guardRead = 10 * time.Second

func TestOpenSerialPty(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	defer master.Close()
	port, err := OpenSerial(slave, 1000000)
	if err != nil {
		t.Fatalf("OpenSerial(%s, 1000000): %v", slave, err)
	}
	defer port.Close()
	if err := port.SetReadTimeout(5 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)

	// A read timeout is (0, nil), not an error (docs/dynamixel.md §14).
	if n, err := port.Read(buf); n != 0 || err != nil {
		t.Fatalf("Read with nothing to read = %d, %v; want 0, nil", n, err)
	}

	// Device to host, byte for byte, including a header and a stuffed FD.
	status := []byte{0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x04, 0x00, 0x55, 0x00, 0xA1, 0x0C, 0x0D, 0x0A, 0x03}
	if _, err := master.Write(status); err != nil {
		t.Fatal(err)
	}
	var got []byte
	deadline := time.Now().Add(guardRead)
	for len(got) < len(status) && time.Now().Before(deadline) {
		n, err := port.Read(buf)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != string(status) {
		t.Fatalf("read % X, want % X", got, status)
	}

	// Host to device.
	ping := []byte{0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x01, 0x19, 0x4E}
	if n, err := port.Write(ping); err != nil || n != len(ping) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if err := master.SetReadDeadline(time.Now().Add(guardRead)); err != nil {
		t.Fatal(err)
	}
	echo := make([]byte, len(ping))
	if _, err := io.ReadFull(master, echo); err != nil || string(echo) != string(ping) {
		t.Fatalf("master read % X, %v; want % X", echo, err, ping)
	}
	if err := port.ResetInputBuffer(); err != nil {
		t.Errorf("ResetInputBuffer: %v", err)
	}

	// The stand-in for an unplug: the device side goes away.
	master.Close()
	var readErr error
	for deadline := time.Now().Add(guardRead); readErr == nil && time.Now().Before(deadline); {
		_, readErr = port.Read(buf)
	}
	t.Logf("Read after the unplug: %v", readErr)
	if !IsDisconnect(readErr) {
		t.Errorf("Read after the master closed: %v, not a disconnect", readErr)
	}
	_, err = port.Write(ping)
	t.Logf("Write after the unplug: %v", err)
	if !IsDisconnect(err) {
		t.Errorf("Write after the master closed: %v, not a disconnect", err)
	}
	port.Close()
	if p, err := OpenSerial(slave, 1000000); err == nil {
		p.Close()
		t.Errorf("reopening %s after the unplug succeeded", slave)
	} else {
		t.Logf("reopen after the unplug: %v", err)
		if !IsDisconnect(err) {
			t.Errorf("reopen error %v is not a disconnect", err)
		}
	}
}

func TestOpenSerialBauds(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	defer master.Close()
	for _, baud := range []int{57600, 1000000, 2000000, 3000000, 4000000, 4500000} {
		p, err := OpenSerial(slave, baud)
		if err != nil {
			t.Errorf("OpenSerial(%s, %d): %v", slave, baud, err)
			continue
		}
		p.Close()
	}
}

func TestOpenSerialErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-tty")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "ttyUSB0")
	tests := []struct {
		name string
		path string
		baud int
		want string
		is   error
	}{
		{"zero baud", "/dev/ttyUSB0", 0, "dynamixel: unsupported baud rate: open /dev/ttyUSB0 at 0 baud", ErrBaud},
		{"negative baud", "/dev/ttyUSB0", -1, "dynamixel: unsupported baud rate: open /dev/ttyUSB0 at -1 baud", ErrBaud},
		{"missing", missing, 1000000, "dynamixel: open " + missing + " at 1000000 baud: ", syscall.ENOENT},
		{"not a tty", file, 1000000, "dynamixel: open " + file + " at 1000000 baud: ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := OpenSerial(tt.path, tt.baud)
			if err == nil {
				p.Close()
				t.Fatalf("OpenSerial(%s, %d) succeeded", tt.path, tt.baud)
			}
			if !strings.HasPrefix(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("error %q, want prefix %q and %v", err, tt.want, tt.is)
			}
		})
	}
}

// OpenSpec resolves, probes and opens in one call: a pty has no latency
// timer; a path that is gone is ErrNoPort, which a reconnect can wait for.
func TestOpenSpec(t *testing.T) {
	master, slave, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	o, err := OpenSpec(slave, 1000000)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Port.Close()
	if o.Path != slave || o.LatencyTimer != 0 || o.Advice() != "" {
		t.Errorf("opened %+v advice %q, want %s with no latency timer", o, o.Advice(), slave)
	}
	if _, err := o.Port.Write([]byte{0xFF}); err != nil {
		t.Errorf("write: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "ttyUSB0")
	if _, err := OpenSpec(missing, 1000000); !errors.Is(err, ErrNoPort) || !strings.Contains(err.Error(), missing) {
		t.Errorf("OpenSpec(%s) = %v, want ErrNoPort naming it", missing, err)
	}
	if _, err := OpenSpec("usb:zz", 1000000); !errors.Is(err, ErrPortSpec) {
		t.Errorf("OpenSpec(usb:zz) = %v, want ErrPortSpec", err)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"auto", "usb:0403:6014", "usb:0403:6014:FT66WCAW", "usb::", "usb:0:0:",
		"/dev/null", u2d2ByID, "..", "", "USB:403:6014:a:b", "usb:ffff:ffff"} {
		f.Add(s)
	}
	ports := []PortInfo{
		{Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: "FT66WCAW", IsUSB: true},
		{Path: "/dev/ttyUSB1", VID: "0403", PID: "6014", Serial: "FT99ZZZZ", IsUSB: true},
		{Path: "/dev/ttyS0"},
	}
	_, byID := fakeDev(f, []string{"ttyUSB0"}, map[string]string{u2d2ByID: "ttyUSB0"})
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := resolve(spec, ports, byID)
		if err != nil {
			if got != "" || !(errors.Is(err, ErrNoPort) || errors.Is(err, ErrAmbiguousPort) || errors.Is(err, ErrPortSpec)) {
				t.Fatalf("resolve(%q) = %q, %v", spec, got, err)
			}
			return
		}
		if got == "" {
			t.Fatalf("resolve(%q) = empty path", spec)
		}
	})
}

func FuzzParseLatencyTimer(f *testing.F) {
	for _, s := range []string{"16\n", "1\n", "0", "255\n", "256\n", "garbage", "", " 7 \n", "-1", "+1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseLatencyTimer(b)
		if err != nil {
			return
		}
		v, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if perr != nil || ms < 0 || ms > 255 || int64(ms) != v {
			t.Fatalf("parseLatencyTimer(%q) = %d", b, ms)
		}
	})
}

func ExampleResolve() {
	// As ListPorts reports them: a PC UART, the U2D2 and another FTDI chip.
	ports := []PortInfo{
		{Path: "/dev/ttyS0"},
		{Path: "/dev/ttyUSB0", VID: "0403", PID: "6014", Serial: "FT66WCAW", IsUSB: true},
		{Path: "/dev/ttyUSB1", VID: "0403", PID: "6001", Serial: "A10K3XYZ", IsUSB: true},
	}
	for _, spec := range []string{"auto", "usb:0403:6001", "usb:0403:6014:ft66wcaw", "usb:1a86:7523"} {
		path, err := Resolve(spec, ports)
		fmt.Println(path, err)
	}
	// Output:
	// /dev/ttyUSB0 <nil>
	// /dev/ttyUSB1 <nil>
	// /dev/ttyUSB0 <nil>
	//  dynamixel: no such serial port: "usb:1a86:7523": no USB port 1a86:7523 among /dev/ttyS0, /dev/ttyUSB0 (0403:6014 serial FT66WCAW), /dev/ttyUSB1 (0403:6001 serial A10K3XYZ)
}

func ExampleLatencyAdvice() {
	fmt.Println(LatencyAdvice("/dev/ttyUSB7", 16))
	fmt.Printf("%q\n", LatencyAdvice("/dev/ttyUSB7", 1))
	// Output:
	// dynamixel: /dev/ttyUSB7: the FTDI latency timer is 16 ms, so every read waits up to 16 ms and the servo loop runs at about 62 Hz at most; set it to 1 ms (docs/dynamixel.md §11).
	// Now, until the adapter is replugged:
	//   echo 1 | sudo tee /sys/bus/usb-serial/devices/ttyUSB7/latency_timer
	// For good, with a udev rule (shipped as deploy/99-bridge.rules; bridge install places it):
	//   ACTION=="add", SUBSYSTEM=="usb-serial", DRIVER=="ftdi_sio", ATTR{latency_timer}="1"
	// ""
}
