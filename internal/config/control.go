package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/labbridge/bridge/vrep/vrepsim"
)

// ErrControl is a control command that no simulated device of the run
// understands; the message says which are.
var ErrControl = errors.New("config: unknown control command")

// ControlHelp lists the words Control understands, for a person at the
// console of `bridge sim`.
const ControlHelp = `LINK camera unplug|plug        the Emio's virtual camera stops or resumes delivering frames
LINK servos unplug|plug        the Emio's simulated servo adapter is pulled out or put back
LINK estop [release|reset]     the simulated Meca500's emergency stop (and the other words of bridge sim meca500)
LINK stop|play|drop|delay S    the simulated scene (and the other words of bridge sim vrep)
status                         each simulated device's state`

// Control applies a person's words to the simulated devices of the run's
// links, as a lab would unplug a camera or press an emergency stop:
// "emio camera unplug", "meca500 estop", "vrep stop". It returns what to
// tell the person. Only simulated devices are controlled; a link whose
// device is real says so.
func Control(links []*Built, words []string) (string, error) {
	if len(words) == 1 && strings.EqualFold(words[0], "status") {
		var b strings.Builder
		for _, l := range links {
			fmt.Fprintf(&b, "%s: %s\n", l.Link.Name(), l.simStatus())
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	}
	names := make([]string, len(links))
	for i, l := range links {
		names[i] = l.Link.Name()
	}
	if len(words) < 2 {
		return "", fmt.Errorf("%w %q: want a link's name (%s) and what to do to its device, or status", ErrControl, strings.Join(words, " "), strings.Join(names, ", "))
	}
	i := slices.Index(names, words[0])
	if i < 0 {
		return "", fmt.Errorf("%w: no link %q (the links are %s)", ErrControl, words[0], strings.Join(names, ", "))
	}
	return links[i].control(words[1:])
}

// control applies words to the link's simulated device.
func (b *Built) control(words []string) (string, error) {
	name := b.Link.Name()
	switch {
	case b.Meca500 != nil:
		return b.Meca500.Control(words)
	case b.VREP != nil && b.VREP.ZMQ != nil:
		return vrepsim.Control(b.VREP.ZMQ, words)
	case b.VREP != nil && b.VREP.AZ != nil:
		return vrepsim.Control(b.VREP.AZ, words)
	}
	part, verb := strings.ToLower(words[0]), ""
	if len(words) == 2 {
		verb = strings.ToLower(words[1])
	}
	if verb != "unplug" && verb != "plug" {
		return "", fmt.Errorf("%w %q for link %s: want camera unplug|plug or servos unplug|plug", ErrControl, strings.Join(words, " "), name)
	}
	switch part {
	case "camera":
		if b.LabCamera == nil {
			return "", fmt.Errorf("%w: link %s has no virtual camera (its camera is real, or none)", ErrControl, name)
		}
		if verb == "unplug" {
			b.LabCamera.Unplug()
			return name + ": the virtual camera is unplugged: no frames until `" + name + " camera plug`", nil
		}
		b.LabCamera.Plug()
		return name + ": the virtual camera is plugged in", nil
	case "servos":
		if b.Simulated == nil {
			return "", fmt.Errorf("%w: link %s has no simulated servo bus (its port is real)", ErrControl, name)
		}
		if verb == "unplug" {
			b.Simulated.Unplug()
			return name + ": the simulated servo adapter is unplugged", nil
		}
		b.Simulated.Plug()
		return name + ": the simulated servo adapter is plugged in", nil
	}
	return "", fmt.Errorf("%w %q for link %s: want camera or servos", ErrControl, words[0], name)
}

// simStatus says the state of the link's simulated device.
func (b *Built) simStatus() string {
	switch {
	case b.Meca500 != nil:
		return b.Meca500.StateLine()
	case b.VREP != nil && b.VREP.ZMQ != nil:
		return b.VREP.ZMQ.Status()
	case b.VREP != nil && b.VREP.AZ != nil:
		return b.VREP.AZ.Status()
	}
	var parts []string
	if b.LabCamera != nil {
		parts = append(parts, "virtual camera "+plugged(!b.LabCamera.Unplugged()))
	}
	if b.Simulated != nil {
		parts = append(parts, "servo adapter "+plugged(!b.Simulated.Unplugged()))
	}
	if len(parts) == 0 {
		return "no simulated device"
	}
	return strings.Join(parts, ", ")
}

func plugged(in bool) string {
	if in {
		return "plugged in"
	}
	return "unplugged"
}
