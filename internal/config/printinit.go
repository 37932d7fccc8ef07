package config

import (
	"bytes"
	"fmt"
	"slices"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/simulink"
)

// Hardware is what `bridge init` found for an Emio, or chose for one in
// simulation: the keys a real robot's file differs in from the default.
type Hardware struct {
	// Port is the servos' line ("sim", a path, a by-id name, "usb:…").
	Port string
	Baud int
	// IDs are the servos that answered, in order.
	IDs []int
	// Camera is "sim", "realsense" or "none"; Serial and Playback select a
	// RealSense camera or a recording of one.
	Camera, Serial, Playback string
	// NbMarkers is the Simulink model's mask value; 0 keeps the default's.
	NbMarkers int
}

// EmioFile is a bridge.toml for one Emio with hw: the embedded default's
// Emio link, hw's keys set, every key written with its comment under
// header. It returns the text with the configuration it parses to, so
// that what is written is known to pass `bridge check`.
func EmioFile(hw Hardware, header string) ([]byte, *Config, error) {
	def, err := Parse(defaultconfig.TOML())
	if err != nil {
		return nil, nil, err
	}
	i := slices.IndexFunc(def.Links, func(l LinkTable) bool { return l.Plant != nil && l.Plant.Kind() == "emio" })
	if i < 0 {
		return nil, nil, fmt.Errorf("%w: the embedded default has no emio link", ErrConfig)
	}
	c := &Config{Service: def.Service, Links: []LinkTable{def.Links[i]}}
	l := &c.Links[0]
	p := *l.Plant.(*EmioPlant) // a copy: the default stays as parsed
	l.Plant = &p
	if hw.Port != "" {
		p.Port = hw.Port
	}
	if hw.Baud != 0 {
		p.Baud = hw.Baud
	}
	if len(hw.IDs) > 0 && !slices.Equal(hw.IDs, p.IDs) {
		p.IDs = slices.Clone(hw.IDs)
		p.Min, p.Max = repeat(p.Min[0], len(p.IDs)), repeat(p.Max[0], len(p.IDs))
		// The virtual lab's model and the built-in partner are shaped for
		// the Emio's four servos: another count holds still in `bridge sim`.
		p.Y0, p.J = nil, nil
		l.Partner.Controller = simulink.ControllerSpec{Kind: "hold"}
	}
	if hw.NbMarkers > 0 && hw.NbMarkers != *p.NbMarkers {
		p.NbMarkers = &hw.NbMarkers
		p.Y0, p.J = nil, nil
		l.Partner.Controller = simulink.ControllerSpec{Kind: "hold"}
	}
	if hw.Camera != "" {
		p.Camera.Kind = hw.Camera
	}
	p.Camera.Serial, p.Camera.Playback = hw.Serial, hw.Playback
	if p.Camera.Kind == "none" {
		l.Clock = "timer"
	}
	if p.Port != "sim" || p.Camera.Kind != "sim" {
		// The virtual camera's clock error and jitter mean nothing to a
		// real one.
		p.Camera.ClockErrorPPM, p.Camera.Jitter = 0, Duration{}
	}
	var b bytes.Buffer
	if err := c.Write(&b, DefaultNotes(), header); err != nil {
		return nil, nil, err
	}
	out, err := Parse(b.Bytes())
	if err != nil {
		return nil, nil, fmt.Errorf("config: the file for this hardware is refused: %w", err)
	}
	return b.Bytes(), out, nil
}
