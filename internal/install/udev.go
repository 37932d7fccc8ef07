package install

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/labbridge/bridge/deploy"
	"github.com/labbridge/bridge/dynamixel"
)

var (
	// ErrNoAdapter is no U2D2 among the serial ports.
	ErrNoAdapter = errors.New("install: no U2D2 adapter (USB " + dynamixel.FTDIVendorID + ":" + dynamixel.U2D2Product + ") found")
	// ErrManyAdapters is more than one U2D2 and no serial number to choose.
	ErrManyAdapters = errors.New("install: more than one U2D2 adapter")
	// ErrSerial is a serial number a udev rule cannot match.
	ErrSerial = errors.New("install: bad adapter serial number")
)

// CheckSerial says whether serial can go in a udev rule's ATTRS{serial}.
func CheckSerial(serial string) error {
	ok := serial != ""
	for _, c := range serial {
		ok = ok && c > ' ' && c < 0x7f && c != '"' && c != '\\' && c != '*' && c != '?' && c != '[' && c != '|'
	}
	if !ok {
		return fmt.Errorf("%w %q: want the adapter's printable serial, as `bridge scan -list` shows it", ErrSerial, serial)
	}
	return nil
}

// AdapterSerial is serial when given, else the serial number of the one
// U2D2 among the ports list returns.
func AdapterSerial(serial string, list func() ([]dynamixel.PortInfo, error)) (string, error) {
	if serial != "" {
		return serial, CheckSerial(serial)
	}
	if list == nil {
		return "", fmt.Errorf("%w: no serial port list; give -serial", ErrNoAdapter)
	}
	ports, err := list()
	if err != nil {
		return "", fmt.Errorf("install: list the serial ports: %w", err)
	}
	var found []dynamixel.PortInfo
	for _, p := range ports {
		if p.IsU2D2() { // the driver's own test: "403" is "0403"
			found = append(found, p)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w among %d serial port(s): plug it in (`bridge scan -list` lists the ports) or give -serial", ErrNoAdapter, len(ports))
	case 1:
		if found[0].Serial == "" {
			return "", fmt.Errorf("%w: %s reports none; give -serial", ErrSerial, found[0].Path)
		}
		return found[0].Serial, CheckSerial(found[0].Serial)
	}
	var all []string
	for _, p := range found {
		all = append(all, p.Path+" serial "+p.Serial)
	}
	return "", fmt.Errorf("%w (%s): give -serial with the robot's own", ErrManyAdapters, strings.Join(all, ", "))
}

// PrintUdev writes the udev rule line of robot name's adapter to w: the
// serial given, else the one U2D2's among the ports list returns.
func PrintUdev(w io.Writer, name, serial string, list func() ([]dynamixel.PortInfo, error)) error {
	if err := CheckName(name); err != nil {
		return err
	}
	s, err := AdapterSerial(serial, list)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, deploy.AdapterRule(name, s))
	return err
}

// adapterRules is the file AdapterRulesPath holds.
func adapterRules(name, serial string) []byte {
	return []byte("# The U2D2 adapter of robot " + name + ", written by bridge install\n" +
		"# (deploy/99-bridge-u2d2.rules): /dev/robot-" + name + ", and bridge@" + name + " started when it appears.\n" +
		deploy.AdapterRule(name, serial) + "\n")
}

// installAdapterRule writes the adapter's rule when an adapter is found or
// named; without one the unit runs all the same, and the rule can follow.
func installAdapterRule(o Options, dst string, t *txn) error {
	if exists(dst) && !o.Force {
		t.note("kept existing %s (-force overwrites it)", dst)
		return nil
	}
	serial, err := AdapterSerial(o.Serial, o.Ports)
	switch {
	case errors.Is(err, ErrNoAdapter) || errors.Is(err, ErrManyAdapters):
		t.note("no adapter rule written: %v; later: bridge install -print-udev -name %s > %s", err, o.Name, AdapterRulesPath(o.Name))
		return nil
	case err != nil:
		return err
	}
	t.write(dst, adapterRules(o.Name, serial), 0o644, fmt.Sprintf("wrote %s (adapter serial %s, /dev/robot-%s)", dst, serial, o.Name))
	return nil
}
