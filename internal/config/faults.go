package config

import (
	"fmt"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/fault"
	"github.com/labbridge/bridge/simulink"
)

// noPartnerAfter is how long a link may wait for its Simulink host before
// that is a fault: longer than a handshake takes, shorter than a person
// waits before wondering.
const noPartnerAfter = 3 * time.Second

// dropped reads the master's count of datagrams dropped for the reasons
// given.
func dropped(m *simulink.Master, reasons ...simulink.DropReason) func() uint64 {
	return func() uint64 {
		st := m.Stats()
		var n uint64
		for _, r := range reasons {
			n += st.Dropped[r]
		}
		return n
	}
}

// linkProbes are the faults every link can have: its Simulink host, the
// datagrams it receives, its loop, its device.
func linkProbes(l *bridge.Link, m *simulink.Master) []fault.Probe {
	mc := m.Config()
	listen, _ := m.ListenAddr()
	replyBytes := simulink.DatagramSize(mc.CommandLen)
	return []fault.Probe{
		// What explains the link's state comes first: /healthz puts the
		// first fault on the state's line.
		{
			Name: "device_down", Title: "the robot's device is down; the bridge keeps trying to reopen it",
			Advice: "check the cable and the power; the link resumes by itself when the device answers",
			After:  time.Second,
			Level: func() (bool, string) {
				return l.State() == bridge.Degraded && !l.Latched() && l.Lack() == nil, errText(l.DeviceErr())
			},
		},
		{
			// The plant's own words (plant.Lacker) say what is missing and
			// what to do: a library to install is not a cable to check.
			Name: "no_measurement", Title: "no fresh measurement to send; the last command is held",
			Advice: "do what the detail says; the link runs again by itself once the measurement is whole",
			Level:  func() (bool, string) { err := l.Lack(); return err != nil, errText(err) },
			// At the start, a camera's first frame and the ticks' lock
			// take a moment; later the link's hold has already passed.
			After: bridge.DefaultHold,
		},
		{
			// Not a device to reconnect: a stop only a person ends.
			Name: "stopped", Title: "the robot is stopped and waits for a person",
			Advice: fmt.Sprintf("check the robot and what stopped it, then run `bridge resume %s` (or POST /links/%s/resume); the bridge starts nothing by itself", l.Name(), l.Name()),
			Level:  func() (bool, string) { return l.Latched(), errText(l.DeviceErr()) },
		},
		{
			Name: "motion_not_stopped", Title: "the link is degraded and the robot's motion could not be stopped",
			Advice: "the robot may still move at its last command: stop it at the robot (its own stop, or stop the simulation)",
			Level:  func() (bool, string) { err := l.StopErr(); return err != nil, errText(err) },
		},
		{
			Name: "no_partner", Title: "no Simulink host answers", After: noPartnerAfter,
			Advice: fmt.Sprintf("start the Simulink model; its UDP Receive must listen on %v and its UDP Send must send to port %d", mc.Remote, listen.Port()),
			Level: func() (bool, string) {
				return l.State() == bridge.Handshaking, fmt.Sprintf("sending to %v, no reply on %v", mc.Remote, listen)
			},
		},
		{
			Name: "wrong_size", Title: "replies of the wrong size from the Simulink host were ignored",
			Advice: fmt.Sprintf("a reply is [seq, %d commands] as doubles, %d bytes: check the model's command vector and its mask (nb_markers)", mc.CommandLen, replyBytes),
			Events: dropped(m, simulink.DropSize),
			Detail: func() string { return fmt.Sprintf("want %d bytes", replyBytes) },
		},
		{
			Name: "foreign", Title: "datagrams from a sender other than the Simulink host were ignored",
			Advice: fmt.Sprintf("another program sends to port %d; stop it (replies count only from the host and port that completed the handshake)", listen.Port()),
			Events: dropped(m, simulink.DropSource, simulink.DropForeign),
		},
		{
			Name: "nonfinite", Title: "replies holding NaN or infinity were ignored; the last good command is held",
			Advice: "the model's controller output is not finite: check it (saturation, division by zero)",
			Events: dropped(m, simulink.DropNonFinite),
		},
		{
			Name: "kernel_drops", Title: "datagrams were lost in the receive buffer before the bridge read them",
			Advice: "a sender floods the reply port faster than one reply per tick; stop it, or raise net.core.rmem_max",
			Events: dropped(m, simulink.DropKernel),
		},
		{
			Name: "overruns", Title: "the loop overran its period",
			Advice: "a tick's work takes longer than the period: lower rate_hz, or measure with `bridge bench link`",
			Events: l.Overruns,
			// A rate: a few overruns a minute are a busy machine, not a
			// failed link; /healthz should not flap on them.
			Window: overrunWindow, Allow: overrunsAllowed,
		},
	}
}

// More than overrunsAllowed overruns within overrunWindow are a fault.
const (
	overrunWindow   = time.Minute
	overrunsAllowed = 10
)

// errText is an error's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
