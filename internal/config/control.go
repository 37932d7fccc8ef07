package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
LINK servo N stall|free        a simulated servo (ID N; motor N of a sim plant) jams where it stands, or moves again
LINK marker N hide|show        the virtual camera no longer sees marker N (something in front of it), or sees it again
LINK shadow resync             the shadow twin starts again from the robot's state
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
	switch strings.ToLower(words[0]) {
	case "shadow":
		if b.Shadow == nil {
			return "", fmt.Errorf("%w: link %s runs no shadow twin ([link.shadow] enabled = false)", ErrControl, name)
		}
		if len(words) != 2 || !strings.EqualFold(words[1], "resync") {
			return "", fmt.Errorf("%w %q for link %s: want shadow resync", ErrControl, strings.Join(words, " "), name)
		}
		b.Shadow.Resync()
		return name + ": the shadow twin starts again from the robot's state", nil
	case "servo", "marker":
		return b.jam(words)
	}
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

// jam stalls a simulated servo or hides a marker from the virtual camera:
// faults a shadow twin cannot see coming.
func (b *Built) jam(words []string) (string, error) {
	name := b.Link.Name()
	part := strings.ToLower(words[0])
	usage := map[string]string{"servo": "servo N stall|free", "marker": "marker N hide|show"}[part]
	n, err := 0, error(nil)
	if len(words) == 3 {
		n, err = strconv.Atoi(words[1])
	}
	verb := ""
	if len(words) == 3 {
		verb = strings.ToLower(words[2])
	}
	if len(words) != 3 || err != nil {
		return "", fmt.Errorf("%w %q for link %s: want %s", ErrControl, strings.Join(words, " "), name, usage)
	}
	switch {
	case part == "servo" && (verb == "stall" || verb == "free"):
		on := verb == "stall"
		switch {
		case b.Simulated != nil:
			if n < 0 || n > 252 {
				return "", fmt.Errorf("%w: servo %d: want a servo ID of the link", ErrControl, n)
			}
			if err := b.Simulated.SetStalled(byte(n), on); err != nil {
				return "", fmt.Errorf("%w: %w", ErrControl, err)
			}
		case b.Motors != nil:
			if err := b.Motors.Stick(n-1, on); err != nil {
				return "", fmt.Errorf("%w: %w", ErrControl, err)
			}
		default:
			return "", fmt.Errorf("%w: link %s has no simulated servos (its port is real)", ErrControl, name)
		}
		if on {
			return fmt.Sprintf("%s: servo %d is jammed: it stays where it stands until `%s servo %d free`", name, n, name, n), nil
		}
		return fmt.Sprintf("%s: servo %d moves again", name, n), nil
	case part == "marker" && (verb == "hide" || verb == "show"):
		if b.LabCamera == nil {
			return "", fmt.Errorf("%w: link %s has no virtual camera (its camera is real, or none)", ErrControl, name)
		}
		if err := b.LabCamera.Occlude(n, verb == "hide"); err != nil {
			return "", fmt.Errorf("%w: %w", ErrControl, err)
		}
		if verb == "hide" {
			return fmt.Sprintf("%s: marker %d is hidden from the virtual camera until `%s marker %d show`", name, n, name, n), nil
		}
		return fmt.Sprintf("%s: marker %d is in view again", name, n), nil
	}
	return "", fmt.Errorf("%w %q for link %s: want %s", ErrControl, strings.Join(words, " "), name, usage)
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
