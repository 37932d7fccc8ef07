package config

import (
	"flag"
	"fmt"
	"net/netip"
	"time"

	"github.com/labbridge/bridge/simulink"
)

// StartUDP are the flags of emioapi's `python -m emioapi startUDP`
// (docs/simulink-udp.md §11), which `bridge startUDP` honours; their zero
// values are not emioapi's defaults, DefaultStartUDP is.
type StartUDP struct {
	FPS, NbMarkers                  int
	Side, Sort, RemoteIP            string
	RemotePort, LocalPort, BindPort int
	RecvTimeout                     float64 // seconds
}

// DefaultStartUDP are emioapi's defaults.
func DefaultStartUDP() StartUDP {
	return StartUDP{30, 1, "plan", "y", "127.0.0.1", simulink.DefaultRemotePort, simulink.DefaultLocalPort, simulink.DefaultBindPort, 0.1}
}

// Declare declares emioapi's startUDP flags on fs, with f's values as their
// defaults.
func (f *StartUDP) Declare(fs *flag.FlagSet) {
	fs.IntVar(&f.FPS, "fps", f.FPS, "frames (ticks) per second: 30, 60 or 90, as the camera accepts")
	fs.IntVar(&f.NbMarkers, "nb_markers", f.NbMarkers, "markers tracked; must equal the Simulink model's mask value")
	fs.StringVar(&f.Side, "side", f.Side, "marker frame: top, front or plan")
	fs.StringVar(&f.Sort, "sort", f.Sort, "marker order: y or z")
	fs.StringVar(&f.RemoteIP, "remote_ip", f.RemoteIP, "Simulink host")
	fs.IntVar(&f.RemotePort, "remote_port", f.RemotePort, "Simulink's UDP Receive port")
	fs.IntVar(&f.LocalPort, "local_port", f.LocalPort, "port replies arrive on")
	fs.IntVar(&f.BindPort, "bind_port", f.BindPort, "source port of measurements (the models accept only 9090)")
	fs.Float64Var(&f.RecvTimeout, "recv_timeout", f.RecvTimeout, "reply timeout in seconds")
}

// ApplyStartUDP sets the first link, which must drive an Emio, from
// emioapi's flags, and validates the result. Every bad flag is an error that
// names it as emioapi spells it.
func (c *Config) ApplyStartUDP(f StartUDP) error {
	bad := func(flag string, v any, want string) error {
		return fmt.Errorf("bridge startUDP: --%s %v: want %s", flag, v, want)
	}
	switch {
	case f.FPS != 30 && f.FPS != 60 && f.FPS != 90:
		return bad("fps", f.FPS, "30, 60 or 90 (the RealSense modes emioapi uses)")
	case f.NbMarkers < 1 || f.NbMarkers > 16:
		return bad("nb_markers", f.NbMarkers, "1..16")
	case f.Side != "top" && f.Side != "front" && f.Side != "plan":
		return bad("side", f.Side, "top, front or plan")
	case f.Sort != "y" && f.Sort != "z":
		return bad("sort", f.Sort, "y or z")
	case !(f.RecvTimeout > 0 && f.RecvTimeout <= 10):
		return bad("recv_timeout", f.RecvTimeout, "seconds, 0 < t ≤ 10")
	}
	ip, err := netip.ParseAddr(f.RemoteIP)
	if err != nil {
		return bad("remote_ip", f.RemoteIP, "a numeric IP address")
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"remote_port", f.RemotePort}, {"local_port", f.LocalPort}, {"bind_port", f.BindPort}} {
		if p.v < 1 || p.v > 65535 {
			return bad(p.name, p.v, "1..65535")
		}
	}
	if len(c.Links) == 0 {
		return fmt.Errorf("bridge startUDP: the configuration has no link")
	}
	l := &c.Links[0]
	p, ok := l.Plant.(*EmioPlant)
	if !ok {
		return fmt.Errorf("bridge startUDP: link %q drives a plant of kind %q; startUDP drives an Emio (plant kind \"emio\")", l.Name, l.Plant.Kind())
	}
	l.RateHz = float64(f.FPS)
	if p.Camera.Kind != "none" {
		p.Camera.FPS = f.FPS
	}
	p.Camera.Side, p.Camera.Sort = f.Side, f.Sort
	l.UDP.Remote = netip.AddrPortFrom(ip, uint16(f.RemotePort)).String()
	l.UDP.Listen = netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(f.LocalPort)).String()
	l.UDP.Bind = netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(f.BindPort)).String()
	l.UDP.RecvTimeout.Duration = time.Duration(f.RecvTimeout * float64(time.Second))
	p.setMarkers(l, f.NbMarkers)
	return c.Validate()
}

// setMarkers changes nb_markers, and the virtual lab with it: more markers
// hang below the first, 40 mm apart, and move with it. The built-in partner
// then holds, since its controller was tuned for the configured markers.
func (p *EmioPlant) setMarkers(l *LinkTable, n int) {
	old := *p.NbMarkers
	if n == old {
		return
	}
	*p.NbMarkers = n
	motors := len(p.IDs)
	if old > 0 && len(p.Y0) == 3*old && len(p.J) == 3*old*motors {
		y0, j := p.Y0[:3], p.J[:3*motors]
		p.Y0, p.J = nil, nil
		for i := range n {
			p.Y0 = append(p.Y0, y0[0], y0[1]-40*float64(i), y0[2])
			p.J = append(p.J, j...)
		}
	} else {
		p.Y0, p.J = nil, nil
	}
	l.Partner.Controller = simulink.ControllerSpec{Kind: "hold"}
}
