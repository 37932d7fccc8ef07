package dynamixel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.bug.st/serial"
	"go.bug.st/serial/enumerator"
)

// Finding and opening the USB serial adapter (docs/dynamixel.md §11, §13,
// §14).

var (
	// ErrNoPort is a port spec that matches no serial port.
	ErrNoPort = errors.New("dynamixel: no such serial port")
	// ErrAmbiguousPort is a port spec that matches more than one port.
	ErrAmbiguousPort = errors.New("dynamixel: ambiguous serial port")
	// ErrPortSpec is a port spec that cannot be parsed.
	ErrPortSpec = errors.New("dynamixel: bad serial port spec")
	// ErrLatencyTimer is a latency_timer file that does not hold a number.
	ErrLatencyTimer = errors.New("dynamixel: unreadable latency timer")
)

// USB IDs of the U2D2's FTDI FT232H.
const (
	FTDIVendorID = "0403"
	U2D2Product  = "6014"
)

// ByIDDir holds the udev symlinks that name a USB serial adapter by its
// vendor, product and serial number; they survive re-enumeration, while
// ttyUSB0 may come back as ttyUSB1 (docs/dynamixel.md §13).
const ByIDDir = "/dev/serial/by-id"

// sysRoot is where sysfs is mounted.
const sysRoot = "/sys"

// PortInfo describes a serial port.
type PortInfo struct {
	Path         string // /dev/ttyUSB0
	VID, PID     string // hex as the system reports them ("0403"), "" if not USB
	Serial       string // USB serial number ("FT66WCAW")
	Manufacturer string // USB manufacturer string ("FTDI")
	Product      string // USB product string
	IsUSB        bool
	ByID         string // the /dev/serial/by-id symlink to Path, "" if none
}

func (p PortInfo) String() string {
	if !p.IsUSB {
		return p.Path
	}
	s := p.Path + " (" + strings.ToLower(p.VID) + ":" + strings.ToLower(p.PID)
	if p.Serial != "" {
		s += " serial " + p.Serial
	}
	return s + ")"
}

// IsU2D2 reports whether p is a U2D2: a USB port with the FT232H's IDs,
// compared by value, so that "403" is "0403" whichever case the system
// reports them in.
func (p PortInfo) IsU2D2() bool {
	return p.IsUSB && hexEqual(p.VID, FTDIVendorID) && hexEqual(p.PID, U2D2Product)
}

// Spec names p for a configuration file: its /dev/serial/by-id link, which
// survives re-plugging and re-enumeration, else usb:VID:PID:SERIAL, else
// its path.
func (p PortInfo) Spec() string {
	switch {
	case p.ByID != "":
		return p.ByID
	case p.IsUSB && p.Serial != "" && isHexID(p.VID) && isHexID(p.PID):
		vid, _ := strconv.ParseUint(p.VID, 16, 16)
		pid, _ := strconv.ParseUint(p.PID, 16, 16)
		return fmt.Sprintf("usb:%04x:%04x:%s", vid, pid, p.Serial)
	}
	return p.Path
}

// U2D2Choice is the U2D2 chosen among the serial ports connected.
type U2D2Choice struct {
	// Port is the first U2D2.
	Port PortInfo
	// All is every U2D2 connected, in the order of the ports, Port first.
	All []PortInfo
}

// String says which U2D2 is used and under what name, and, when several
// are connected, which.
func (c U2D2Choice) String() string {
	s := "U2D2 " + c.Port.String() + " as " + c.Port.Spec()
	if len(c.All) > 1 {
		s += fmt.Sprintf("; the first of %d U2D2 adapters (%s): to use another, give its port instead of auto", len(c.All), listPorts(c.All))
	}
	return s
}

// ChooseU2D2 finds the U2D2s among ports (a list from ListPorts, sorted by
// path) and chooses the first: the servos' line for a configuration file,
// written as Port.Spec(). No U2D2 is ErrNoPort, naming the serial ports
// there are.
func ChooseU2D2(ports []PortInfo) (U2D2Choice, error) {
	var c U2D2Choice
	for _, p := range ports {
		if p.IsU2D2() {
			c.All = append(c.All, p)
		}
	}
	if len(c.All) == 0 {
		return c, fmt.Errorf("%w: no U2D2 (USB %s:%s) among %s: plug it in, or name the servos' port",
			ErrNoPort, FTDIVendorID, U2D2Product, listPorts(ports))
	}
	c.Port = c.All[0]
	return c, nil
}

// ListPorts lists the serial ports with their USB details, sorted by path.
// It scans /dev and sysfs, so a control loop must never call it per tick.
func ListPorts() ([]PortInfo, error) {
	details, err := enumerator.GetDetailedPortsList()
	if err != nil {
		return nil, fmt.Errorf("dynamixel: list serial ports: %w", err)
	}
	return portInfos(details, ByIDDir), nil
}

// portInfos converts the enumerator's list and adds the by-id names found in
// byIDDir.
func portInfos(details []*enumerator.PortDetails, byIDDir string) []PortInfo {
	links := byIDLinks(byIDDir)
	ports := make([]PortInfo, 0, len(details))
	for _, d := range details {
		// The enumerator returns an empty entry for a tty without a sysfs
		// device; there is nothing to open under it.
		if d == nil || d.Name == "" {
			continue
		}
		p := PortInfo{
			Path: d.Name, VID: d.VID, PID: d.PID, Serial: d.SerialNumber,
			Manufacturer: d.Manufacturer, Product: d.Product, IsUSB: d.IsUSB,
		}
		if real, err := filepath.EvalSymlinks(d.Name); err == nil {
			p.ByID = links[real]
		}
		ports = append(ports, p)
	}
	slices.SortFunc(ports, func(a, b PortInfo) int { return strings.Compare(a.Path, b.Path) })
	return ports
}

// byIDLinks maps each device in dir to its symlink there (the first by name
// when several point to one device); empty when dir does not exist.
func byIDLinks(dir string) map[string]string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	links := make(map[string]string, len(entries))
	for _, e := range entries { // sorted by name
		link := filepath.Join(dir, e.Name())
		real, err := filepath.EvalSymlinks(link)
		if err != nil {
			continue // dangling: the device is gone
		}
		if _, dup := links[real]; !dup {
			links[real] = link
		}
	}
	return links
}

// Resolve turns a port spec into a path to open. spec is one of:
//
//   - a path containing "/": /dev/ttyUSB0, /dev/serial/by-id/…, a pty such as
//     /dev/pts/3, or any other existing file;
//   - a name in /dev/serial/by-id: usb-FTDI_USB__-__Serial_Converter_FT66WCAW-if00-port0;
//   - usb:VID:PID or usb:VID:PID:SERIAL, hex, case-insensitive
//     (usb:0403:6014:FT66WCAW): the one USB port in ports that matches;
//   - auto: the one FTDI 0403:6014 (U2D2) port in ports.
//
// ports is a list from ListPorts, needed only for usb: and auto. A spec that
// matches nothing is ErrNoPort, one that matches several ErrAmbiguousPort;
// both errors list the candidates. Resolve is meant for start-up and for
// reconnecting after an unplug, not for every tick.
func Resolve(spec string, ports []PortInfo) (string, error) {
	return resolve(spec, ports, ByIDDir)
}

// resolve is Resolve with the by-id directory as a parameter, for tests.
func resolve(spec string, ports []PortInfo, byIDDir string) (string, error) {
	switch {
	case spec == "":
		return "", fmt.Errorf("%w: empty (want a path, a %s name, usb:VID:PID[:SERIAL] or auto)", ErrPortSpec, ByIDDir)
	case strings.EqualFold(spec, "auto"):
		return pick(spec, ports, PortInfo.IsU2D2, "FTDI "+FTDIVendorID+":"+U2D2Product+" (U2D2) port")
	case len(spec) >= 4 && strings.EqualFold(spec[:4], "usb:"):
		f := strings.Split(spec[4:], ":")
		if len(f) < 2 || len(f) > 3 || !isHexID(f[0]) || !isHexID(f[1]) || (len(f) == 3 && f[2] == "") {
			return "", fmt.Errorf("%w: %q (want usb:VID:PID or usb:VID:PID:SERIAL, VID and PID in hex)", ErrPortSpec, spec)
		}
		return pick(spec, ports, func(p PortInfo) bool {
			return p.IsUSB && hexEqual(p.VID, f[0]) && hexEqual(p.PID, f[1]) &&
				(len(f) == 2 || strings.EqualFold(p.Serial, f[2]))
		}, "USB port "+strings.ToLower(f[0])+":"+strings.ToLower(f[1]))
	case strings.ContainsRune(spec, '/'):
		fi, err := os.Stat(spec)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %w", ErrNoPort, spec, err)
		}
		if fi.IsDir() {
			return "", fmt.Errorf("%w: %q is a directory", ErrNoPort, spec)
		}
		return spec, nil
	default:
		path := filepath.Join(byIDDir, spec)
		if fi, err := os.Stat(path); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%w: %q is not in %s (%s)", ErrNoPort, spec, byIDDir, byIDNames(byIDDir))
		}
		return path, nil
	}
}

// pick returns the path of the only port that matches.
func pick(spec string, ports []PortInfo, match func(PortInfo) bool, what string) (string, error) {
	var found []PortInfo
	for _, p := range ports {
		if match(p) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0].Path, nil
	case 0:
		return "", fmt.Errorf("%w: %q: no %s among %s", ErrNoPort, spec, what, listPorts(ports))
	}
	return "", fmt.Errorf("%w: %q: %d of them, %s; name one by serial number (usb:VID:PID:SERIAL) or path",
		ErrAmbiguousPort, spec, len(found), listPorts(found))
}

func listPorts(ports []PortInfo) string {
	if len(ports) == 0 {
		return "no serial ports"
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

func byIDNames(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return "no adapters there"
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return "there: " + strings.Join(names, ", ")
}

// isHexID accepts a USB vendor or product ID: 1 to 4 hex digits.
func isHexID(s string) bool {
	_, err := strconv.ParseUint(s, 16, 16)
	return err == nil
}

// hexEqual compares two hex IDs by value, so "403" matches "0403".
func hexEqual(a, b string) bool {
	x, errA := strconv.ParseUint(a, 16, 16)
	y, errB := strconv.ParseUint(b, 16, 16)
	return errA == nil && errB == nil && x == y
}

// LatencyTimer reads the FTDI latency timer of a USB serial tty, in ms, from
// /sys/bus/usb-serial/devices/<ttyUSBn>/latency_timer. ttyPath may be a
// symlink (/dev/serial/by-id/…). ok is false when the tty has no latency
// timer, as for a pty or a non-FTDI adapter. Above 1 ms every read waits for
// the timer (docs/dynamixel.md §11); see LatencyAdvice.
func LatencyTimer(ttyPath string) (ms int, ok bool, err error) {
	return latencyTimer(ttyPath, sysRoot)
}

// latencyTimer is LatencyTimer with the sysfs root as a parameter, for tests.
func latencyTimer(ttyPath, sys string) (int, bool, error) {
	real, err := filepath.EvalSymlinks(ttyPath)
	if err != nil {
		return 0, false, fmt.Errorf("dynamixel: latency timer of %s: %w", ttyPath, err)
	}
	file := filepath.Join(sys, "bus", "usb-serial", "devices", filepath.Base(real), "latency_timer")
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("dynamixel: latency timer of %s: %w", ttyPath, err)
	}
	ms, err := parseLatencyTimer(b)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %s holds %q", ErrLatencyTimer, file, b)
	}
	return ms, true, nil
}

// parseLatencyTimer decodes the file: a decimal 0..255 and a newline.
func parseLatencyTimer(b []byte) (int, error) {
	ms, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 8)
	if err != nil {
		return 0, err
	}
	return int(ms), nil
}

// LatencyAdvice returns a warning with the fix when the latency timer of
// ttyPath, ms, is above 1 ms, and "" otherwise.
func LatencyAdvice(ttyPath string, ms int) string {
	if ms <= 1 {
		return ""
	}
	name := filepath.Base(ttyPath)
	if real, err := filepath.EvalSymlinks(ttyPath); err == nil {
		name = filepath.Base(real)
	}
	return fmt.Sprintf("dynamixel: %s: the FTDI latency timer is %d ms, so every read waits up to %d ms "+
		"and the servo loop runs at about %d Hz at most; set it to 1 ms (docs/dynamixel.md §11).\n"+
		"Now, until the adapter is replugged:\n"+
		"  echo 1 | sudo tee /sys/bus/usb-serial/devices/%s/latency_timer\n"+
		"For good, with a udev rule (shipped as deploy/99-bridge.rules; bridge install places it):\n"+
		"  ACTION==\"add\", SUBSYSTEM==\"usb-serial\", DRIVER==\"ftdi_sio\", ATTR{latency_timer}=\"1\"",
		ttyPath, ms, ms, 1000/ms, name)
}

// OpenSerial opens a serial port at baud, 8N1, for a Bus. It leaves the modem
// lines alone: setting them fails on a pty, and the U2D2 does not use them
// (docs/dynamixel.md §14). The port has no read timeout until the caller
// sets one; then Read returns (0, nil) when it expires.
func OpenSerial(path string, baud int) (serial.Port, error) {
	if baud <= 0 {
		// go.bug.st/serial would silently take 0 as 9600.
		return nil, fmt.Errorf("%w: open %s at %d baud", ErrBaud, path, baud)
	}
	p, err := serial.Open(path, &serial.Mode{
		BaudRate: baud,
		DataBits: 8,
		Parity:   serial.NoParity,
		StopBits: serial.OneStopBit,
	})
	if err != nil {
		return nil, fmt.Errorf("dynamixel: open %s at %d baud: %w", path, baud, err)
	}
	return p, nil
}

// IsDisconnect reports whether err means the adapter is gone (unplugged or
// re-enumerated): go.bug.st/serial's PortClosed, or EIO, ENXIO, ENODEV,
// ENOENT or EBADF (docs/dynamixel.md §13, §14). The cure is to close the
// port, Resolve the spec again and reopen.
func IsDisconnect(err error) bool {
	if err == nil {
		return false
	}
	var pe *serial.PortError
	if errors.As(err, &pe) && pe.Code() == serial.PortClosed {
		return true
	}
	var pv serial.PortError
	if errors.As(err, &pv) && pv.Code() == serial.PortClosed {
		return true
	}
	for _, errno := range [...]syscall.Errno{syscall.EIO, syscall.ENXIO, syscall.ENODEV, syscall.ENOENT, syscall.EBADF} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// go.bug.st/serial's ports are what a Bus talks on.
var _ Port = serial.Port(nil)

// Opened is a serial port opened from a spec by OpenSpec.
type Opened struct {
	Port serial.Port
	// Path is what the spec resolved to (/dev/ttyUSB0, a by-id link, a pty).
	Path string
	// LatencyTimer is the adapter's FTDI latency timer; 0 when it has none
	// (a pty, another adapter) or it could not be read.
	LatencyTimer time.Duration
}

// OpenSpec resolves spec among the ports present now (see Resolve), reads
// the adapter's latency timer and opens the port at baud. It is the one way
// the bridge opens a servo line: at start-up, for `bridge scan` and `bridge
// ping`, and again after an unplug, so that an adapter that comes back under
// another name is found. A spec that matches no port is ErrNoPort.
func OpenSpec(spec string, baud int) (Opened, error) {
	ports, _ := ListPorts() // an empty list only affects usb: and auto, which then say what they found
	path, err := Resolve(spec, ports)
	if err != nil {
		return Opened{}, err
	}
	o := Opened{Path: path}
	if ms, ok, err := LatencyTimer(path); err == nil && ok {
		o.LatencyTimer = time.Duration(ms) * time.Millisecond
	}
	if o.Port, err = OpenSerial(path, baud); err != nil {
		return Opened{}, err
	}
	return o, nil
}

// Timing returns bc with the line's latency timer filled in when bc leaves
// it 0: the adapter's (at least 1 ms), else 16 ms, the FTDI default, which a
// timeout must allow for when the adapter does not say (docs/dynamixel.md
// §11).
func (o Opened) Timing(bc BusConfig) BusConfig {
	if bc.LatencyTimer == 0 {
		bc.LatencyTimer = 16 * time.Millisecond
		if o.LatencyTimer > 0 {
			bc.LatencyTimer = max(o.LatencyTimer, time.Millisecond)
		}
	}
	return bc
}

// Advice is LatencyAdvice for the opened port: "" when its latency timer is
// 1 ms or less, or unknown.
func (o Opened) Advice() string {
	return LatencyAdvice(o.Path, int(o.LatencyTimer/time.Millisecond))
}

// OpenBus opens the servo line spec at cfg.Baud (OpenSpec) and makes a bus
// on it, timed for the adapter (Opened.Timing: a LatencyTimer of 0 is the
// adapter's own). It returns the advice of the opened port (Advice: "" when
// there is none to give) and how to close it.
func OpenBus(spec string, cfg BusConfig) (bus *Bus, closePort func(), advice string, err error) {
	o, err := OpenSpec(spec, cfg.Baud)
	if err != nil {
		return nil, nil, "", err
	}
	bus, err = NewBus(o.Port, o.Timing(cfg))
	if err != nil {
		o.Port.Close()
		return nil, nil, "", err
	}
	return bus, func() { o.Port.Close() }, o.Advice(), nil
}
