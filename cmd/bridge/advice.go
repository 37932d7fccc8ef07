package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/labbridge/bridge/config"
)

// commands are the first words run accepts, for "did you mean".
var commands = [...]string{"run", "sim", "partner", "init", "check", "config", "scan", "ping", "bench", "track", "cameras", "record", "report", "install", "startUDP", "version", "help"}

// suggestCommand is the known command closest to cmd, or "" when none is
// close enough to be a typo.
func suggestCommand(cmd string) string { return config.Closest(cmd, commands[:]) }

// checkDuration refuses a negative -duration, and 0 unless zeroOK (where 0
// means "until SIGINT/SIGTERM").
func checkDuration(cmd, name string, d time.Duration, zeroOK bool) error {
	switch {
	case zeroOK && d < 0:
		return fmt.Errorf("bridge %s: -%s %v: want 0 (run until Ctrl-C or SIGTERM) or a positive duration, like 10s", cmd, name, d)
	case !zeroOK && d <= 0:
		return fmt.Errorf("bridge %s: -%s %v: want a positive duration, like 10s", cmd, name, d)
	}
	return nil
}

// checkRange refuses NaN, ±Inf and a value outside [lo, hi]; want says the
// range in words for the message.
func checkRange(cmd, name string, v, lo, hi float64, want string) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return fmt.Errorf("bridge %s: -%s %s: want %s", cmd, name, strconv.FormatFloat(v, 'g', -1, 64), want)
	}
	return nil
}

// checkRate refuses a tick rate that is not above 0 Hz.
func checkRate(cmd, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("bridge %s: -%s %s: want a rate above 0 Hz, like 30", cmd, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

// partnerControllers are the values of bridge partner's -controller.
var partnerControllers = [...]string{"hold", "constant", "sine", "jacobian"}

func checkController(kind string) error {
	if slices.Contains(partnerControllers[:], kind) {
		return nil
	}
	return fmt.Errorf("bridge partner: -controller %q: want hold, constant, sine or jacobian (jacobian with -config)", kind)
}

// metricsFlag is -metrics: unset means the configuration's [service]
// metrics; "" turns the server off. Its String is "" so that -help shows
// no odd default.
type metricsFlag struct {
	addr string
	set  bool
}

func (m *metricsFlag) String() string { return m.addr }

func (m *metricsFlag) Set(s string) error {
	m.addr, m.set = s, true
	return nil
}

// resolve is the address to listen on, given the configuration's.
func (m *metricsFlag) resolve(configured string) string {
	if m == nil || !m.set {
		return configured
	}
	return m.addr
}

// addrInUse adds advice to a bind failure of bridge run or sim: which
// configured UDP ports another program holds, and what to do. Other errors
// come back unchanged.
func addrInUse(cmd string, cfg *config.Config, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	var held []string
	for i := range cfg.Links {
		mc := cfg.Links[i].MasterConfig()
		for _, ap := range []netip.AddrPort{mc.Listen, mc.Bind} {
			if ap.Port() != 0 && portHeld(ap) {
				held = append(held, strconv.Itoa(int(ap.Port())))
			}
		}
	}
	ports := "a configured port"
	grep := "PORT"
	if len(held) > 0 {
		ports = "UDP port " + strings.Join(held, ", ")
		grep = held[0]
	}
	if cmd == "sim" {
		return fmt.Errorf("bridge sim: %w\n%s is held by another program (often Simulink on this PC, or another bridge): "+
			"run \"bridge sim -ephemeral\" to use free loopback ports, or stop the other program", err, ports)
	}
	return fmt.Errorf("bridge run: %w\n%s is held by another program (a Simulink model already running on this PC, "+
		"emioapi's bridge, or another bridge): find it with \"ss -lunp | grep %s\", stop it, then start the bridge again", err, ports, grep)
}

// portHeld reports whether binding ap fails because the address is in use.
func portHeld(ap netip.AddrPort) bool {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
	if err != nil {
		return errors.Is(err, syscall.EADDRINUSE)
	}
	c.Close()
	return false
}
