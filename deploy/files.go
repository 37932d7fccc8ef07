// Package deploy holds the deployment files of the bridge: the systemd
// template unit, the udev rules, the sysusers.d entry, the Prometheus and
// Grafana files, and the Wireshark dissector of the telemetry tap. The files
// `bridge install` places are embedded here, so the installed files are the
// ones the tests check.
package deploy

import (
	"fmt"

	_ "embed"

	"github.com/labbridge/bridge/dynamixel"
)

// The files `bridge install` places. Strings: they cannot be changed
// through what the accessors return.
var (
	//go:embed bridge@.service
	unit string
	//go:embed 99-bridge.rules
	rules string
	//go:embed bridge.sysusers
	sysusers string
	// Not installed yet: embedded so that install can ship it as tested.
	//go:embed bridge-tap.lua
	tapDissector string
)

// Unit returns bridge@.service, the template unit.
func Unit() []byte { return []byte(unit) }

// Rules returns 99-bridge.rules, the udev rules of every instance's devices
// but the adapter.
func Rules() []byte { return []byte(rules) }

// Sysusers returns bridge.sysusers, the sysusers.d entry of the user bridge.
func Sysusers() []byte { return []byte(sysusers) }

// TapDissector returns bridge-tap.lua, the Wireshark Lua dissector of the
// telemetry tap's payload (docs/tap.md §6).
func TapDissector() []byte { return []byte(tapDissector) }

// AdapterRule is the udev rule of robot name's U2D2 adapter, the one with
// USB serial number serial: the symlink /dev/robot-NAME the configuration
// names, and bridge@NAME.service started when it appears. It is one line
// with no newline; 99-bridge-u2d2.rules holds AdapterRule("a", "FT66WCAW").
func AdapterRule(name, serial string) string {
	return fmt.Sprintf(`SUBSYSTEM=="tty", ATTRS{idVendor}=="%s", ATTRS{idProduct}=="%s", ATTRS{serial}=="%s", `+
		`SYMLINK+="robot-%s", GROUP="dialout", MODE="0660", ENV{ID_MM_DEVICE_IGNORE}="1", `+
		`ATTR{device/latency_timer}="1", TAG+="systemd", ENV{SYSTEMD_WANTS}+="bridge@%s.service"`,
		dynamixel.FTDIVendorID, dynamixel.U2D2Product, serial, name, name)
}
