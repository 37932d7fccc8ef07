package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/simulink"
)

func TestDefaultConfig(t *testing.T) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatalf("bridge.toml: %v", err)
	}
	if len(c.Links) != 3 {
		t.Fatalf("%d links, want the Emio, the Meca500 and the V-REP scene", len(c.Links))
	}
	if v, ok := c.Links[2].Plant.(*VREPPlant); !ok || c.Links[2].Name != "vrep" || v.Address != "sim" || v.Protocol != "az" ||
		c.Links[2].MasterConfig().MeasureLen != 3 || c.Links[2].MasterConfig().CommandLen != 2 {
		t.Errorf("third link %+v", c.Links[2])
	}
	l := c.Links[0]
	p, ok := l.Plant.(*EmioPlant)
	if !ok {
		t.Fatalf("plant %T, want the Emio", l.Plant)
	}
	if l.Name != "emio" || l.Period() != time.Second/30 || p.Port != "sim" || len(p.IDs) != 4 || *p.NbMarkers != 1 {
		t.Errorf("link %+v plant %+v", l, p)
	}
	mc := l.MasterConfig()
	if mc.Remote.String() != "127.0.0.1:25000" || mc.Bind.Port() != 9090 || mc.Listen.Port() != 25001 ||
		mc.MeasureLen != 7 || mc.CommandLen != 4 || mc.RecvTimeout != 100*time.Millisecond {
		t.Errorf("master config %+v", mc)
	}
	cam := p.Camera
	if l.Clock != "camera" || cam.Kind != "sim" || cam.FPS != 30 || cam.Width != 640 || *cam.DepthMax != 1000 || cam.Side != "plan" || cam.Sort != "y" {
		t.Errorf("camera %+v clock %s", cam, l.Clock)
	}
	lc := l.LinkConfig()
	if lc.Apply != bridge.ApplyPrevious || lc.Halt != plant.HaltHold || len(lc.Limits) != 4 || lc.Loop.CPU != -1 {
		t.Errorf("link config %+v", lc)
	}
	if !c.Simulated() {
		t.Error("the embedded default is not all simulated")
	}
}

func TestConfigDefaultsForMinimalFile(t *testing.T) {
	c, err := Parse([]byte("[[link]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Links[0]
	p, ok := l.Plant.(*SimPlant)
	if !ok {
		t.Fatalf("plant %T, want the in-memory sim kind", l.Plant)
	}
	if l.RateHz != 30 || *p.NbMarkers != 1 || p.Motors != 4 || l.UDP.MaxTimeouts != 3 || l.UDP.MaxDesyncs != 5 || *l.Loop.CPU != -1 || l.Clock != "timer" {
		t.Errorf("defaults %+v %+v", l, p)
	}
	if mc := l.MasterConfig(); mc.MeasureLen != 7 || mc.CommandLen != 4 {
		t.Errorf("lengths %d %d", mc.MeasureLen, mc.CommandLen)
	}
}

func TestConfigErrorsNameKeyAndRange(t *testing.T) {
	const emio = "[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\n"
	cases := []struct{ doc, want string }{
		{"[[link]]\nname = \"a\"\nrate_hz = 0.5\n", `link "a".rate_hz = 0.5: want 1..10000`},
		{"[[link]]\nname = \"a\"\nrate_hz = 0\n", `link "a".rate_hz = 0: want 1..10000`},
		{"[[link]]\nname = \"a\"\nbogus = 1\n", "link.bogus unknown key; the keys of [link]: name, rate_hz, apply, halt"},
		{"[service]\nmetric = \"x\"\n[[link]]\nname = \"a\"\n", `service.metric unknown key (did you mean "metrics"?); the keys of [service]: metrics, log_level`},
		{"[[link]]\nname = \"a\"\n[link.udp]\nremote_port = 25000\n", "link.udp.remote_port unknown key; the keys of [link.udp]: remote, bind, listen"},
		{"[[link]]\nname = \"a\"\n[link.partner.controller]\nalfa = 1.0\n", `link.partner.controller.alfa unknown key (did you mean "alpha"?)`},
		{"[[link]]\nname = \"a\"\n[link.loops]\npriority = 1\n", `link.loops unknown key (did you mean "loop"?)`},
		{"[servce]\n[[link]]\nname = \"a\"\n", `servce unknown key (did you mean "service"?); the keys of the top level: service, link`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"sim\"\nnb_markers = 40\n", "plant.nb_markers = 40: want 0..16"},
		{"[[link]]\nname = \"a\"\n[link.udp]\nremote = \"0.0.0.0:25000\"\n", "udp.remote"},
		{"[[link]]\nname = \"a\"\n[link.udp]\nrecv_timeout = \"soon\"\n", "duration \"soon\""},
		{"[[link]]\nname = \"a\"\n[link.loop]\npriority = 120\n", "loop.priority = 120: want 0..99"},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"sim\"\nmin = [1.0, 0, 0, 0]\nmax = [0.0, 1, 1, 1]\n", "plant.min[0]/max[0]"},
		{"[[link]]\nname = \"a\"\nhalt = \"drop\"\n", "halt = \"drop\": want hold or torque_off"},
		{"[[link]]\nname = \"a\"\n[[link]]\nname = \"a\"\n", "used by no other link"},
		{"[service]\nlog_level = \"loud\"\n[[link]]\nname = \"a\"\n", "service.log_level"},
		{"", "no [[link]] table"},
		{"[[link]]\nname = \"a\"\n[link.partner.controller]\nkind = \"pid\"\n", "partner.controller"},
		{"[[link\n", "config: invalid configuration"},
		{"\"\r\n", "config: invalid configuration"}, // made the TOML library's error formatting panic
		{"[[link]]\nname = \"a\"\nclock = \"sundial\"\n", `clock = "sundial": want "timer" (plant kind "sim" offers no other clock here)`},
		{"[[link]]\nname = \"a\"\nclock = \"camera\"\n", `clock = "camera": want "timer" (plant kind "sim" offers no other clock here)`},
		{emio + "[link.plant.camera]\nkind = \"kinect\"\n", "plant.camera.kind = \"kinect\": want none, sim or realsense"},
		{emio + "[link.plant.camera]\nkind = \"realsense\"\nwidth = 1280\nheight = 720\n", "plant.camera.width/height = 1280x720: want 640x480 or 848x480"},
		{emio + "[link.plant.camera]\nkind = \"realsense\"\nfps = 45\n", "plant.camera.fps = 45: want 30, 60 or 90"},
		{"[[link]]\nname = \"a\"\nclock = \"camera\"\n[link.plant]\nkind = \"emio\"\n[link.plant.camera]\nkind = \"realsense\"\nfps = 60\n", "rate_hz = 30: want the camera fps (60)"},
		{emio + "[link.plant.camera]\nkind = \"realsense\"\ndepth_min = 500\ndepth_max = 100\n", "plant.camera.depth_min/depth_max = 500 100"},
		{emio + "[link.plant.camera]\nkind = \"sim\"\nserial = \"123\"\n", "plant.camera.serial = \"123\""},
		{emio + "nb_markers = 0\n[link.plant.camera]\nkind = \"sim\"\n", "plant.nb_markers = 0: want 1..16 with a camera"},
		{emio + "[link.plant.camera]\nkind = \"sim\"\n", `plant.camera.kind = "sim": want y0 and j in [link.plant]`},
		{emio + "[link.plant.camera]\nside = \"left\"\n", `plant.camera.side = "left": want top, front or plan`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"lego\"\n", `link "a".plant.kind = "lego": want "sim" or "emio"`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = 3\n", `link "a".plant.kind = 3: want a string`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nmotors = \"four\"\n", `link "a".plant`},
		{"[[link]]\nname = \"a\"\n[link.loop]\nlead = \"soon\"\n", `duration "soon": want "auto" or a number with a unit`},
		{"[[link]]\nname = \"a\"\n[link.loop]\nlead = \"600ms\"\n", `loop.lead = 600ms: want "auto", or 0 ≤ lead ≤ half the period (16.666666ms)`},
		{"[[link]]\nname = \"a\"\n[link.loop]\nspin = \"-1ms\"\n", `loop.spin = -1ms: want "auto", or 0 ≤ spin < the period`},
		{"[[link]]\nname = \"a\"\n[link.loop]\npriority = 80\nbudget = \"40ms\"\n", `loop.budget = 40ms: want "auto", "0s" (SCHED_FIFO), or a CPU time per period from 1µs up to the period (33.333333ms)`},
		{"[[link]]\nname = \"a\"\n[link.loop]\npriority = 80\ncpu = 1\nbudget = \"1ms\"\n", `loop.budget = 1ms: want "auto" or "0s" on a pinned loop`},
		{"[[link]]\nname = \"a\"\n[link.loop]\nbudget = \"1ms\"\n", `loop.budget = 1ms: want "auto" or "0s" with loop.priority = 0`},
		{"[[link]]\nname = \"a\"\n[link.loop]\nbudget = \"lots\"\n", `duration "lots": want "auto" or a number with a unit`},
		{"[[link]]\nname = \"a\"\nclock = \"frame\"\n[link.loop]\nlead = \"auto\"\n[link.plant]\nkind = \"emio\"\n[link.plant.camera]\nkind = \"realsense\"\n",
			`loop.lead = auto: want "0s" with clock = "frame"`},
		{"[[link]]\nname = \"a\"\nclock = \"frame\"\n[link.loop]\nspin = \"auto\"\n[link.plant]\nkind = \"emio\"\n[link.plant.camera]\nkind = \"realsense\"\n",
			`loop.spin = auto: want "0s" with clock = "frame"`},
		{emio + "[link.plant.camera]\nkind = \"realsense\"\npriority = 100\n", `plant.camera.priority = 100: want 0..99`},
		{emio + "[link.plant.camera]\nkind = \"realsense\"\njitter = \"1ms\"\n", `plant.camera.clock_error_ppm/jitter = 0 1ms: want 0 (a real camera has its own clock`},
		{emio + "y0 = [0.0, 0, 0]\nj = [0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n[link.plant.camera]\nkind = \"sim\"\nclock_error_ppm = 5000.0\n", `plant.camera.clock_error_ppm = 5000: want -1000..1000 ppm`},
		{emio + "y0 = [0.0, 0, 0]\nj = [0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n[link.plant.camera]\nkind = \"sim\"\njitter = \"20ms\"\n", `plant.camera.jitter = 20ms: want 0 ≤ jitter < half a frame period (16.666666ms)`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", c.doc, err, c.want)
		}
	}
}

// Each kind has its own keys: a key of another kind says which kind it
// belongs to, a typo gets the nearest key, and the message names the link.
func TestKindKeys(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"sim\"\nport = \"/dev/ttyUSB0\"\n",
			`link "a".plant.port: not a key of plant kind "sim"; it belongs to kind "emio"`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"sim\"\n[link.plant.camera]\nkind = \"sim\"\n",
			`link "a".plant.camera: not a key of plant kind "sim"; it belongs to kind "emio"`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\ntime_constant = \"1s\"\n",
			`link "a".plant.time_constant: not a key of plant kind "emio"; it belongs to kind "sim"`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\nbaudd = 57600\n",
			`link "a".plant.baudd: unknown key of plant kind "emio" (did you mean "baud"?); its keys: kind, nb_markers, port, baud`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\n[link.plant.camera]\nfsp = 60\n",
			`link "a".plant.camera.fsp: unknown key of plant kind "emio" (did you mean "camera.fps"?)`},
		{"[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\nmotors = 4\n",
			`link "a".plant.motors: the Emio has one motor per servo ID: remove motors`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", c.doc, err, c.want)
		}
	}
	// Two links of different kinds in one file: each is checked against
	// its own kind.
	doc := "[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\nport = \"sim\"\n" +
		"[[link]]\nname = \"b\"\n[link.udp]\nbind = \"0.0.0.0:9091\"\nlisten = \"0.0.0.0:25002\"\n[link.plant]\nkind = \"sim\"\nmotors = 2\n"
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if c.Links[0].Plant.Kind() != "emio" || c.Links[1].Plant.Kind() != "sim" || c.Links[1].MasterConfig().CommandLen != 2 {
		t.Errorf("kinds %s %s", c.Links[0].Plant.Kind(), c.Links[1].Plant.Kind())
	}
}

// A file of the earlier layout (the bridge.toml shipped before plant kinds
// had tables of their own) is refused with one error per move, each saying
// what to write instead; once moved, it means the same as before.
func TestEarlierLayoutSaysWhatToRename(t *testing.T) {
	old, err := os.ReadFile("testdata/bridge-0.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(old)
	if err == nil {
		t.Fatal("the earlier layout was accepted")
	}
	for _, want := range []string{
		`plant.kind = "dynamixel": this kind is now called "emio"; rename it`,
		"link.side moved: write it as side in [link.plant.camera]",
		"link.sort moved: write it as sort in [link.plant.camera]",
		"link.camera moved: the camera is the Emio's; rename the table [link.camera] to [link.plant.camera]",
		"link.udp.nb_markers moved: write it as nb_markers in [link.plant]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "link.camera moved"); n != 1 {
		t.Errorf("the moved camera table is reported %d times, want once:\n%v", n, err)
	}
}

func TestEmioPlantConfig(t *testing.T) {
	c, err := Parse([]byte("[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\nport = \"sim\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Links[0].Plant.(*EmioPlant)
	if p.Baud != 1000000 || len(p.IDs) != 4 || p.IDs[3] != 3 || p.Mode != "position" || *p.ProfileVelocity != 1000 || !*p.FastSyncRead || p.Camera.Kind != "none" {
		t.Errorf("defaults %+v", p)
	}
	if got := c.Links[0].Plant.Clocks(); len(got) != 0 {
		t.Errorf("clocks without a camera: %v", got)
	}
	for doc, want := range map[string]string{
		"baud = 12345\n":          "plant.baud = 12345",
		"ids = [0, 1, 1, 2]\n":    "plant.ids",
		"ids = []\n":              "plant.ids = []: want 1 to 16 servo IDs",
		"mode = \"velocity\"\n":   "plant.mode",
		"profile_velocity = -1\n": "profile_velocity = -1",
		"y0 = [1.0]\n":            "plant.y0 = [1]: want 3 values (3 per marker)",
	} {
		_, err := Parse([]byte("[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\n" + doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want …%s…", doc, err, want)
		}
	}
	// Three servos: every length follows.
	c, err = Parse([]byte("[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\nids = [1, 2, 3]\nnb_markers = 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if mc := c.Links[0].MasterConfig(); mc.MeasureLen != 9 || mc.CommandLen != 3 || len(c.Links[0].LinkConfig().Limits) != 3 {
		t.Errorf("3 servos, 2 markers: %d measured, %d commands", mc.MeasureLen, mc.CommandLen)
	}
}

// The partner's controllers see the plant's layout: hold commands back the
// measured angles, the Jacobian regulates the markers.
func TestDimsOfLayouts(t *testing.T) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	d := c.Links[0].Dims()
	want := simulink.Dims{MeasureLen: 7, CommandLen: 4, Hold: simulink.Span{Off: 3, Len: 4}, Feature: simulink.Span{Off: 0, Len: 3}}
	if d != want {
		t.Errorf("Emio dims %+v, want %+v", d, want)
	}
	// A velocity-commanded plant measures no commanded quantity: hold
	// commands zeros, and nothing is regulated.
	v := DimsOf(plant.Layout{
		Measure: []plant.Field{{Name: "time", Unit: "s", Len: 1}, {Name: "angles", Unit: "rad", Len: 2}},
		Command: []plant.Field{{Name: "speeds", Unit: "rad/s", Len: 2}},
	})
	if v != (simulink.Dims{MeasureLen: 3, CommandLen: 2}) {
		t.Errorf("velocity plant dims %+v", v)
	}
}

// Requirement 10: emioapi's startUDP flags, with their defaults, honoured.
func TestStartUDPFlags(t *testing.T) {
	base := func() *Config {
		c, err := Parse(defaultconfig.TOML())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := base()
	if err := c.ApplyStartUDP(StartUDP{60, 2, "front", "z", "192.168.1.5", 26000, 26001, 9091, 0.25}); err != nil {
		t.Fatal(err)
	}
	l := c.Links[0]
	p := l.Plant.(*EmioPlant)
	mc := l.MasterConfig()
	if l.RateHz != 60 || *p.NbMarkers != 2 || p.Camera.Side != "front" || p.Camera.Sort != "z" ||
		mc.Remote.String() != "192.168.1.5:26000" || mc.Listen.Port() != 26001 || mc.Bind.Port() != 9091 ||
		mc.RecvTimeout != 250*time.Millisecond || mc.MeasureLen != 10 {
		t.Errorf("flags not honoured: %+v %+v", l, mc)
	}
	if len(p.Y0) != 6 || p.Y0[4] != p.Y0[1]-40 || l.Partner.Controller.Kind != "hold" {
		t.Errorf("the virtual lab did not follow nb_markers: y0 %v, controller %q", p.Y0, l.Partner.Controller.Kind)
	}
	c = base()
	if err := c.ApplyStartUDP(DefaultStartUDP()); err != nil {
		t.Fatal(err)
	}
	if mc := c.Links[0].MasterConfig(); mc.Remote.String() != "127.0.0.1:25000" || mc.Bind.String() != "0.0.0.0:9090" || mc.Listen.String() != "0.0.0.0:25001" {
		t.Errorf("defaults: %+v", mc)
	}
	for _, bad := range []struct {
		f    func(*StartUDP)
		want string
	}{
		{func(f *StartUDP) { f.FPS = 45 }, "--fps 45"},
		{func(f *StartUDP) { f.Side = "left" }, "--side left"},
		{func(f *StartUDP) { f.Sort = "x" }, "--sort x"},
		{func(f *StartUDP) { f.RemoteIP = "simulink" }, "--remote_ip"},
		{func(f *StartUDP) { f.BindPort = 70000 }, "--bind_port 70000"},
		{func(f *StartUDP) { f.RecvTimeout = 0 }, "--recv_timeout"},
	} {
		f := DefaultStartUDP()
		bad.f(&f)
		if err := base().ApplyStartUDP(f); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", f, err, bad.want)
		}
	}
	sim, err := Parse([]byte("[[link]]\nname = \"a\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.ApplyStartUDP(DefaultStartUDP()); err == nil || !strings.Contains(err.Error(), `plant kind "emio"`) {
		t.Errorf("startUDP on a sim plant: %v", err)
	}
}

// The kinds table names every kind once, and every kind's table lists its
// keys with a TOML name.
func TestKindsTable(t *testing.T) {
	var names []string
	for _, k := range Kinds() {
		if slices.Contains(names, k[0]) {
			t.Errorf("kind %q listed twice", k[0])
		}
		names = append(names, k[0])
		if k[1] == "" {
			t.Errorf("kind %q has no description", k[0])
		}
	}
	for _, k := range kinds {
		p := k.new()
		if p.Kind() != k.name {
			t.Errorf("kind %q builds a table of kind %q", k.name, p.Kind())
		}
	}
}

// FuzzParseConfig (of Parse): any document gives a config or an error, never a panic,
// and an accepted config builds its link configurations.
func FuzzParseConfig(f *testing.F) {
	f.Add(defaultconfig.TOML())
	f.Add([]byte("[[link]]\nname = \"a\"\n"))
	f.Add([]byte("[[link]]\nname = \"a\"\n[link.plant]\nkind = \"sim\"\nnb_markers = 2\nmotors = 2\n"))
	f.Add([]byte("[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\n[link.plant.camera]\nkind = \"sim\"\n"))
	f.Add([]byte("[service]\nmetrics = \"[::1]:0\"\n"))
	f.Add(nestingBomb(2000, false))
	f.Add(nestingBomb(2000, true))
	f.Add([]byte("a = \"\"\"[[\\\"\"\"\"\" # [[\nb = '''[[''' \nc = [[1], {d = [2]}]\n"))
	if old, err := os.ReadFile("testdata/bridge-0.toml"); err == nil {
		f.Add(old)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Parse(doc)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			checkMessage(t, err)
			return
		}
		for i := range c.Links {
			l := &c.Links[i]
			_ = l.MasterConfig()
			_ = l.LinkConfig()
			if _, err := l.Controller(); err != nil {
				t.Fatalf("an accepted link has no controller: %v", err)
			}
		}
	})
}

// lead and spin take "auto" or a duration; the loop learns an "auto" one. A
// link ticking on each frame event has no deadline to send on: no lead.
func TestLeadAndSpin(t *testing.T) {
	const realsense = "[link.plant]\nkind = \"emio\"\n[link.plant.camera]\nkind = \"realsense\"\n"
	for _, tc := range []struct {
		doc                string
		autoLead, autoSpin bool
		lead, spin         time.Duration
	}{
		{"[[link]]\nname = \"a\"\n", true, false, 0, 0},
		{"[[link]]\nname = \"a\"\n[link.loop]\nlead = \"2ms\"\nspin = \"auto\"\n", false, true, 2 * time.Millisecond, 0},
		{"[[link]]\nname = \"a\"\n[link.loop]\nlead = \"0s\"\nspin = \"100us\"\n", false, false, 0, 100 * time.Microsecond},
		{"[[link]]\nname = \"a\"\nclock = \"frame\"\n" + realsense, false, false, 0, 0},
		{"[[link]]\nname = \"a\"\nclock = \"camera\"\n" + realsense, true, false, 0, 0},
	} {
		c, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		lc := c.Links[0].LinkConfig().Loop
		if lc.AutoLead != tc.autoLead || lc.AutoSpin != tc.autoSpin || lc.Lead != tc.lead || lc.Spin != tc.spin {
			t.Errorf("%q: lead %v (auto %v), spin %v (auto %v); want %v (%v), %v (%v)", tc.doc,
				lc.Lead, lc.AutoLead, lc.Spin, lc.AutoSpin, tc.lead, tc.autoLead, tc.spin, tc.autoSpin)
		}
	}
}

// gomaxprocs = 0 gives the CPUs plus one per locked thread: each link's
// loop, and with built-in partners each real-time partner's receive thread
// (never fewer than the runtime's choice); a value set below that is kept,
// with a warning that says what to set.
func TestProcs(t *testing.T) {
	c := &Config{Links: make([]LinkTable, 3)}
	c.Links[0].Loop.Priority, c.Links[1].Loop.Priority = 80, 1 // the third not real-time: its partner is on the netpoller
	// A real-time camera thread counts; one at the normal priority, or no
	// camera, does not.
	c.Links[0].Plant = &EmioPlant{Camera: CameraTable{Kind: "sim", Priority: 70}}
	c.Links[1].Plant = &EmioPlant{Camera: CameraTable{Kind: "sim"}}
	c.Links[2].Plant = &EmioPlant{Camera: CameraTable{Kind: "none", Priority: 70}}
	for _, tc := range []struct {
		set, cpus, current int
		partners           bool
		want               int
		warns              bool
		need               int
	}{
		{0, 2, 2, false, 6, false, 6},
		{0, 2, 2, true, 8, false, 8},
		{0, 2, 9, false, 9, false, 6},
		{0, 2, 9, true, 9, false, 8},
		{5, 2, 2, false, 5, true, 6},
		{6, 2, 2, false, 6, false, 6},
		{6, 2, 2, true, 6, true, 8},
		{32, 2, 2, true, 32, false, 8},
	} {
		c.Service.GOMAXPROCS = tc.set
		n, w := c.Procs(tc.cpus, tc.current, tc.partners)
		if n != tc.want || (w != "") != tc.warns {
			t.Errorf("gomaxprocs %d on %d CPUs (runtime %d, partners %v): %d, %q; want %d, warning %v", tc.set, tc.cpus, tc.current, tc.partners, n, w, tc.want, tc.warns)
		}
		if tc.warns && !strings.Contains(w, fmt.Sprintf("at least %d", tc.need)) {
			t.Errorf("warning %q does not say what to set (%d)", w, tc.need)
		}
	}
}

// A built-in partner's thread runs at its loop's priority: the runtime's
// spins between threads yield only to equal or higher priorities.
func TestPartnerPriority(t *testing.T) {
	for loop, want := range map[int]int{0: 0, 1: 1, 50: 50, 80: 80, 99: 99} {
		if got := partnerPriority(loop); got != want {
			t.Errorf("partnerPriority(%d) = %d, want %d", loop, got, want)
		}
	}
	cfg, err := Parse([]byte("[[link]]\nname = \"a\"\n[link.loop]\npriority = 70\n[link.plant]\nkind = \"sim\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Links[0].Build(testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Root may always take SCHED_FIFO; others only with an RLIMIT_RTPRIO,
	// and without one the partner waits on the netpoller (0).
	got := b.Partner.Priority()
	if got != 70 && (got != 0 || os.Geteuid() == 0) {
		t.Errorf("the built partner's priority %d, want the loop's 70", got)
	}
}

// pin_partner is on unless a file turns it off (emioapi's rule).
func TestPinPartner(t *testing.T) {
	for doc, want := range map[string]bool{
		"[[link]]\nname = \"a\"\n":                                  true,
		"[[link]]\nname = \"a\"\n[link.udp]\npin_partner = false\n": false,
	} {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Links[0].MasterConfig().PinPartner; got != want {
			t.Errorf("%q: PinPartner %v, want %v", doc, got, want)
		}
	}
}
