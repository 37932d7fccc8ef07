package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/realsense"
)

// Finding is what `bridge init` looks for and how.
type Finding struct {
	// Port is the servos' line: "auto" (the only U2D2 among Ports), a path,
	// a /dev/serial/by-id name or "usb:VID:PID[:SERIAL]".
	Port string
	// IDs and Bauds are the servo IDs to ping and the baud rates to try,
	// as their flags give them ("0-15", "1000000,57600").
	IDs, Bauds string
	// Camera is "auto" (the first RealSense camera), "none" or a serial;
	// Playback a recording to use instead.
	Camera, Playback string
	// Latency is the adapter's latency timer; 0 reads it from sysfs.
	Latency time.Duration
	// Ports lists the serial ports (dynamixel.ListPorts).
	Ports func() ([]dynamixel.PortInfo, error)
}

// FindEmio looks for an Emio's servos and camera, saying on w what it does
// and sees, and returns the hardware to write (EmioFile) with what it found
// and what it did not. An error is a bad IDs or Bauds value; what cannot
// be found is in missing.
func FindEmio(ctx context.Context, f Finding, w io.Writer) (hw Hardware, found, missing []string, err error) {
	ids, err := dynamixel.ParseIDs(f.IDs)
	if err != nil {
		return hw, nil, nil, err
	}
	rates, err := dynamixel.ParseBauds(f.Bauds)
	if err != nil {
		return hw, nil, nil, err
	}
	def := emio.DefaultConfig()
	// The servos' line.
	hw.Port = f.Port
	if f.Port == "auto" {
		ports, _ := f.Ports() // none listed: ChooseU2D2 says there is no U2D2
		if u, err := dynamixel.ChooseU2D2(ports); err != nil {
			fmt.Fprintf(w, "servos: %v\n", err)
			missing = append(missing, "the U2D2")
		} else {
			hw.Port = u.Port.Spec()
			fmt.Fprintf(w, "servos: %s\n", u)
		}
	}
	if hw.Port != "auto" {
		hw.Baud, hw.IDs = pingServos(ctx, hw.Port, rates, ids, f.Latency, w)
		switch {
		case len(hw.IDs) == 0:
			missing = append(missing, "the servos")
		case hw.Baud != def.Bus.Baud:
			code, _ := dynamixel.BaudCode(def.Bus.Baud) // a baud of the table: the driver's default
			fmt.Fprintf(w, "servos: found at %d baud; the Emio's servos run at %d (set Baud Rate, address %d, to %d with Dynamixel Wizard), or keep baud = %d\n",
				hw.Baud, def.Bus.Baud, dynamixel.AddrBaudRate, code, hw.Baud)
		}
		if len(hw.IDs) > 0 {
			found = append(found, fmt.Sprintf("servos %s at %d baud on %s", idList(hw.IDs), hw.Baud, hw.Port))
			if len(hw.IDs) != len(def.IDs) {
				fmt.Fprintf(w, "servos: the Emio has %d servos (IDs %s); found %d: check the daisy chain and the power supply\n", len(def.IDs), idList(def.IDs), len(hw.IDs))
			}
		}
	}
	// The camera.
	hw.Camera = "realsense"
	switch {
	case f.Camera == "none":
		hw.Camera = "none"
		fmt.Fprintln(w, "camera: none (-camera none): the markers are zeros; the Simulink model gets no feedback")
	case f.Playback != "":
		desc, err := realsense.Probe(ctx, f.Playback)
		if err != nil {
			fmt.Fprintf(w, "camera: the recording %s cannot be played: %v\n", f.Playback, err)
			missing = append(missing, "a playable recording")
		} else {
			abs, _ := filepath.Abs(f.Playback)
			hw.Playback = abs
			fmt.Fprintf(w, "camera: the recording %s, %s\n", abs, desc)
			found = append(found, "the recording "+abs)
		}
	default:
		serial, ok := findCamera(ctx, f.Camera, w)
		hw.Serial = serial
		if ok {
			found = append(found, "RealSense camera "+serial)
		} else {
			missing = append(missing, "a RealSense camera")
		}
	}
	return hw, found, missing, nil
}

// pingServos finds the baud at which ids answer (dynamixel.FindBaud),
// saying what each baud gave.
func pingServos(ctx context.Context, spec string, rates []int, ids []byte, latency time.Duration, w io.Writer) (int, []int) {
	open := func(baud int) (*dynamixel.Bus, func(), error) {
		bus, closePort, advice, err := dynamixel.OpenBus(spec, dynamixel.BusConfig{Baud: baud, LatencyTimer: latency,
			ReturnDelay: 500 * time.Microsecond, Margin: 3 * time.Millisecond})
		if advice != "" {
			fmt.Fprintln(w, "servos: "+advice)
		}
		return bus, closePort, err
	}
	baud, present, err := dynamixel.FindBaud(ctx, open, rates, ids, func(baud int, replies []dynamixel.Found) {
		for _, f := range replies {
			l := fmt.Sprintf("servo %d: %s (model %d), firmware %d, at %d baud", f.ID, dynamixel.ModelName(f.Model), f.Model, f.Firmware, baud)
			switch {
			case !f.Present():
				l = fmt.Sprintf("servo %d at %d baud answered badly: %v", f.ID, baud, f.Err)
			case f.Err != nil:
				l += "; ALERT: " + f.Err.Error()
			}
			fmt.Fprintln(w, "servos: "+l)
		}
		if !slices.ContainsFunc(replies, dynamixel.Found.Present) {
			fmt.Fprintf(w, "servos: none of IDs %s answered at %d baud\n", idList(ids), baud)
		}
	})
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		fmt.Fprintf(w, "servos: scan stopped: %v\n", err)
	case err != nil:
		fmt.Fprintf(w, "servos: cannot open %s: %v\n", spec, err)
		if errors.Is(err, os.ErrPermission) {
			fmt.Fprintln(w, "  add yourself to the dialout group (sudo usermod -aG dialout $USER, then log in again)")
		}
	case baud == 0:
		fmt.Fprintln(w, "servos: no servo answered: check the Emio's power supply (12 V), the cable to the U2D2, and -ids")
	}
	out := make([]int, len(present))
	for i, id := range present {
		out[i] = int(id)
	}
	return baud, out
}

// findCamera looks for a RealSense camera (realsense.Find), saying what it
// sees and what to do when it finds none.
func findCamera(ctx context.Context, want string, w io.Writer) (serial string, ok bool) {
	serial, seen, err := realsense.Find(ctx, want)
	if serial == "" && want != "auto" {
		serial = want // written as asked, for a camera plugged in later
	}
	for _, d := range seen {
		fmt.Fprintf(w, "camera: %s, serial %s, firmware %s\n", d.Name, d.Serial, d.Firmware)
	}
	switch {
	case err == nil:
		return serial, true
	case seen == nil && !errors.Is(err, realsense.ErrNoCamera):
		fmt.Fprintf(w, "camera: cannot look for a RealSense camera: %v\n", err)
		fmt.Fprintln(w, "  install librealsense2 (pip install pyrealsense2), then run bridge init again")
	default:
		fmt.Fprintf(w, "camera: %v\n", err)
	}
	return serial, false
}

// InitHeader is the comment at the top of a file `bridge init` writes at
// now: simulated, or what it found and did not.
func InitHeader(now time.Time, simulated bool, found, missing []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bridge.toml for an Emio, written by bridge init on %s.\n", now.Format("2006-01-02 15:04"))
	if simulated {
		b.WriteString("Simulated: servos on a pseudo-terminal and the virtual camera (bridge init -sim).\nFor the robot, run bridge init with the U2D2 and the camera connected.\n")
	} else {
		for _, f := range found {
			b.WriteString("Found: " + f + ".\n")
		}
		for _, m := range missing {
			b.WriteString("Not found: " + m + ": connect it and run bridge init again, or edit the keys below.\n")
		}
	}
	b.WriteString("\nEvery key is documented below; bridge check -config FILE validates the file\nand bridge config -print shows what the bridge runs with.")
	return b.String()
}

// idList writes IDs as "0,1,2,3".
func idList[T byte | int](ids []T) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
