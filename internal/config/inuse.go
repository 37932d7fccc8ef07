package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// AddrInUse adds advice to a bind failure of `bridge run` or `bridge sim`
// (cmd): which of c's UDP ports another program holds, and what to do.
// Other errors come back unchanged.
func (c *Config) AddrInUse(cmd string, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	var held []string
	for i := range c.Links {
		mc := c.Links[i].MasterConfig()
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
	return fmt.Errorf("bridge %s: %w\n%s is held by another program (a Simulink model already running on this PC, "+
		"emioapi's bridge, or another bridge): find it with \"ss -lunp | grep %s\", stop it, then start the bridge again", cmd, err, ports, grep)
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
