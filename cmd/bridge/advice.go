package main

import (
	"github.com/labbridge/bridge/internal/config"
)

// commands are the first words run accepts, for "did you mean".
var commands = [...]string{"run", "sim", "partner", "init", "check", "config", "scan", "ping", "bench", "track", "cameras", "record", "report", "replay", "resume", "install", "startUDP", "version", "help"}

// suggestCommand is the known command closest to cmd, or "" when none is
// close enough to be a typo.
func suggestCommand(cmd string) string { return config.Closest(cmd, commands[:]) }

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
