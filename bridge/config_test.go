package bridge

import (
	"errors"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
)

func TestDefaultConfig(t *testing.T) {
	c, err := ParseConfig(defaultconfig.TOML())
	if err != nil {
		t.Fatalf("bridge.toml: %v", err)
	}
	if len(c.Links) != 1 {
		t.Fatalf("%d links", len(c.Links))
	}
	l := c.Links[0]
	if l.Name != "emio" || l.Period() != time.Second/30 || l.Plant.Kind != "dynamixel" || l.Plant.Port != "sim" || len(l.Plant.IDs) != 4 {
		t.Errorf("link %+v", l)
	}
	mc := l.MasterConfig(l.Plant.Motors)
	if mc.Remote.String() != "127.0.0.1:25000" || mc.Bind.Port() != 9090 || mc.Listen.Port() != 25001 ||
		mc.MeasureLen != 7 || mc.CommandLen != 4 || mc.RecvTimeout != 100*time.Millisecond {
		t.Errorf("master config %+v", mc)
	}
	if l.Clock != "camera" || l.Camera.Kind != "sim" || l.Camera.FPS != 30 || l.Camera.Width != 640 || *l.Camera.DepthMax != 1000 || l.Side != "plan" || l.Sort != "y" {
		t.Errorf("camera %+v clock %s", l.Camera, l.Clock)
	}
	lc := l.LinkConfig()
	if lc.Apply != ApplyPrevious || lc.Halt != HaltHold || len(lc.Limits) != 4 || lc.Loop.CPU != -1 {
		t.Errorf("link config %+v", lc)
	}
}

func TestConfigDefaultsForMinimalFile(t *testing.T) {
	c, err := ParseConfig([]byte("[[link]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Links[0]
	if l.RateHz != 30 || *l.UDP.NbMarkers != 1 || l.UDP.MaxTimeouts != 3 || l.UDP.MaxDesyncs != 5 || *l.Loop.CPU != -1 ||
		l.Clock != "timer" || l.Camera.Kind != "none" {
		t.Errorf("defaults %+v", l)
	}
}

func TestConfigErrorsNameKeyAndRange(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[[link]]\nname = \"a\"\nrate_hz = 0.5\n", "rate_hz = 0.5: want 1..10000"},
		{"[[link]]\nname = \"a\"\nbogus = 1\n", "unknown key link.bogus"},
		{"[service]\nmetric = \"x\"\n[[link]]\nname = \"a\"\n", "unknown key service.metric"},
		{"[[link]]\nname = \"a\"\n[link.udp]\nnb_markers = 40\n", "udp.nb_markers = 40: want 0..16"},
		{"[[link]]\nname = \"a\"\n[link.udp]\nremote = \"0.0.0.0:25000\"\n", "udp.remote"},
		{"[[link]]\nname = \"a\"\n[link.udp]\nrecv_timeout = \"soon\"\n", "duration \"soon\""},
		{"[[link]]\nname = \"a\"\n[link.loop]\npriority = 120\n", "loop.priority = 120: want 0..99"},
		{"[[link]]\nname = \"a\"\n[link.plant]\nmin = [1.0, 0, 0, 0]\nmax = [0.0, 1, 1, 1]\n", "plant.min[0]/max[0]"},
		{"[[link]]\nname = \"a\"\nhalt = \"drop\"\n", "halt = \"drop\": want hold or torque_off"},
		{"[[link]]\nname = \"a\"\n[[link]]\nname = \"a\"\n", "used by no other link"},
		{"[service]\nlog_level = \"loud\"\n[[link]]\nname = \"a\"\n", "service.log_level"},
		{"", "no [[link]] table"},
		{"[[link]]\nname = \"a\"\n[link.partner.controller]\nkind = \"pid\"\n", "partner.controller"},
		{"[[link\n", "bridge: invalid configuration"},
		{"\"\r\n", "bridge: invalid configuration"}, // made the TOML library's error formatting panic
		{"[[link]]\nname = \"a\"\nclock = \"sundial\"\n", "clock = \"sundial\": want timer or camera"},
		{"[[link]]\nname = \"a\"\nclock = \"camera\"\n", "clock = \"camera\": want \"timer\" when camera.kind = \"none\""},
		{"[[link]]\nname = \"a\"\n[link.camera]\nkind = \"kinect\"\n", "camera.kind = \"kinect\": want none, sim or realsense"},
		{"[[link]]\nname = \"a\"\n[link.camera]\nkind = \"sim\"\n", "camera.kind = \"sim\": want \"none\" unless plant.kind = \"dynamixel\""},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"dynamixel\"\n[link.camera]\nkind = \"realsense\"\nwidth = 1280\nheight = 720\n", "camera.width/height = 1280x720: want 640x480 or 848x480"},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"dynamixel\"\n[link.camera]\nkind = \"realsense\"\nfps = 45\n", "camera.fps = 45: want 30, 60 or 90"},
		{"[[link]]\nname = \"a\"\nclock = \"camera\"\n[link.plant]\nkind = \"dynamixel\"\n[link.camera]\nkind = \"realsense\"\nfps = 60\n", "rate_hz = 30: want the camera fps (60)"},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"dynamixel\"\n[link.camera]\nkind = \"realsense\"\ndepth_min = 500\ndepth_max = 100\n", "camera.depth_min/depth_max = 500 100"},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"dynamixel\"\n[link.camera]\nkind = \"sim\"\nserial = \"123\"\n", "camera.serial = \"123\""},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"dynamixel\"\n[link.udp]\nnb_markers = 0\n[link.camera]\nkind = \"sim\"\n", "udp.nb_markers = 0: want 1..16 with a camera"},
	}
	for _, c := range cases {
		_, err := ParseConfig([]byte(c.doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", c.doc, err, c.want)
		}
	}
}

// FuzzParseConfig: any document gives a config or an error, never a panic,
// and an accepted config is valid.
func FuzzParseConfig(f *testing.F) {
	f.Add(defaultconfig.TOML())
	f.Add([]byte("[[link]]\nname = \"a\"\n"))
	f.Add([]byte("[[link]]\nname = \"a\"\n[link.udp]\nnb_markers = 2\n[link.plant]\nmotors = 2\n"))
	f.Add([]byte("[service]\nmetrics = \"[::1]:0\"\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := ParseConfig(doc)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		for i := range c.Links {
			l := &c.Links[i]
			_ = l.MasterConfig(l.Plant.Motors)
			_ = l.LinkConfig()
		}
	})
}

func TestDynamixelPlantConfig(t *testing.T) {
	c, err := ParseConfig([]byte("[[link]]\nname = \"a\"\n[link.plant]\nkind = \"dynamixel\"\nport = \"sim\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Links[0].Plant
	if p.Baud != 1000000 || len(p.IDs) != 4 || p.IDs[3] != 3 || p.Mode != "position" || *p.ProfileVelocity != 1000 || !*p.FastSyncRead {
		t.Errorf("defaults %+v", p)
	}
	for doc, want := range map[string]string{
		"[link.plant]\nkind = \"dynamixel\"\nbaud = 12345\n":          "plant.baud = 12345",
		"[link.plant]\nkind = \"dynamixel\"\nids = [0, 1, 1, 2]\n":    "plant.ids",
		"[link.plant]\nkind = \"dynamixel\"\nmode = \"velocity\"\n":   "plant.mode",
		"[link.plant]\nkind = \"sim\"\nport = \"/dev/ttyUSB0\"\n":     `kind = "dynamixel" for port`,
		"[link.plant]\nkind = \"dynamixel\"\nprofile_velocity = -1\n": "profile_velocity = -1",
	} {
		_, err := ParseConfig([]byte("[[link]]\nname = \"a\"\n" + doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want …%s…", doc, err, want)
		}
	}
}
