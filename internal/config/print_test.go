package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	defaultconfig "github.com/labbridge/bridge"
)

// What Write writes reads back to the same configuration, for the default
// (three kinds of plant, three controllers) and for each example.
func TestWriteReadsBack(t *testing.T) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	if back, text := writeRead(t, c); !reflect.DeepEqual(c, back) {
		t.Errorf("read back differs:\n%+v\n%+v\n%s", c, back, text)
	}
}

// writeRead writes c and parses what it wrote.
func writeRead(t *testing.T, c *Config) (*Config, string) {
	t.Helper()
	var b bytes.Buffer
	if err := c.Write(&b, DefaultNotes(), "the effective configuration"); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b.Bytes())
	if err != nil {
		t.Fatalf("written configuration refused: %v\n%s", err, b.String())
	}
	return back, b.String()
}

// writtenSamples are configurations of every plant kind, protocol and
// controller, in a few keys each: the rest are defaults Write fills in.
var writtenSamples = map[string]string{
	"sim kind": `[[link]]
name = "a"`,
	"vrep over zmq": `[[link]]
name = "scene"
rate_hz = 50
[link.plant]
kind = "vrep"
protocol = "zmq"
joints = ["/L", "/R"]
mode = "position"
[link.partner.controller]
kind = "constant"
u = [0.5, -0.5]`,
	"emio on a realsense": `[service]
metrics = ""
[[link]]
name = "emio"
[link.plant]
kind = "emio"
port = "/dev/serial/by-id/usb-FTDI_USB__-__Serial_Converter_FT66WCAW-if00-port0"
[link.plant.camera]
kind = "realsense"
serial = "123456789012"`,
	"meca500 robot": `[[link]]
name = "arm"
rate_hz = 250
[link.plant]
kind = "meca500"
address = "192.168.0.100"
watchdog = "0s"`,
}

// Each sample, written, reads back to the configuration it was parsed to,
// and writing that again gives the same bytes.
func TestWriteSamplesReadBack(t *testing.T) {
	for name, text := range writtenSamples {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			back, written := writeRead(t, c)
			if diff := configDiff(forgetKeysSet(c), forgetKeysSet(back)); diff != "" {
				t.Errorf("read back differs: %s\n%s", diff, written)
			}
			if _, again := writeRead(t, back); again != written {
				t.Errorf("written twice, different:\n%s\n----\n%s", written, again)
			}
		})
	}
}

// Any configuration Parse accepts, Write writes and Parse reads
// back to the same configuration.
func FuzzWriteReadsBack(f *testing.F) {
	f.Add(defaultconfig.TOML())
	for _, s := range writtenSamples {
		f.Add([]byte(s))
	}
	notes := DefaultNotes()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := c.Write(&b, notes, "fuzz"); err != nil {
			t.Fatalf("cannot write an accepted configuration: %v", err)
		}
		back, err := Parse(b.Bytes())
		if err != nil {
			t.Fatalf("written configuration refused: %v\n%s", err, b.String())
		}
		if diff := configDiff(forgetKeysSet(c), forgetKeysSet(back)); diff != "" {
			t.Fatalf("read back differs: %s\n%s", diff, b.String())
		}
	})
}

// forgetKeysSet clears, in place, what a configuration records of which
// keys its file set rather than of the values it holds: the written file
// sets every key, so these records legitimately differ after a read-back
// (a link without loop.priority warns that it runs at normal priority; the
// written priority = 0 is the same priority, without the warning). They
// are cleared on both sides so that every value is still compared.
func forgetKeysSet(c *Config) *Config {
	for i := range c.Links {
		c.Links[i].priorityUnset = false
		if p, ok := c.Links[i].Plant.(*VREPPlant); ok {
			p.zmqKeys = nil
		}
	}
	return c
}

// configDiff names the first value in which want and got differ, "" when
// they are the same configuration.
func configDiff(want, got *Config) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	if d := valueDiff("service", reflect.ValueOf(want.Service), reflect.ValueOf(got.Service)); d != "" {
		return d
	}
	if len(want.Links) != len(got.Links) {
		return fmt.Sprintf("%d links, want %d", len(got.Links), len(want.Links))
	}
	for i := range want.Links {
		if d := valueDiff(fmt.Sprintf("link[%d]", i), reflect.ValueOf(want.Links[i]), reflect.ValueOf(got.Links[i])); d != "" {
			return d
		}
	}
	return fmt.Sprintf("%+v\n%+v", want, got)
}

// valueDiff walks two values of one type to the first field that differs.
func valueDiff(path string, want, got reflect.Value) string {
	for want.Kind() == reflect.Pointer || want.Kind() == reflect.Interface {
		if want.IsNil() || got.IsNil() || want.Type() != got.Type() {
			break
		}
		want, got = want.Elem(), got.Elem()
	}
	if want.Kind() == reflect.Struct {
		for i := range want.NumField() {
			name := path + "." + want.Type().Field(i).Name
			if d := valueDiff(name, want.Field(i), got.Field(i)); d != "" {
				return d
			}
		}
		return ""
	}
	if !want.CanInterface() {
		// An unexported field: compare it without reaching into it.
		if fmt.Sprint(want) == fmt.Sprint(got) {
			return ""
		}
		return fmt.Sprintf("%s = %v, want %v", path, got, want)
	}
	if reflect.DeepEqual(want.Interface(), got.Interface()) {
		return ""
	}
	return fmt.Sprintf("%s = %#v, want %#v", path, got.Interface(), want.Interface())
}

// A key's comment and the lines indented under it follow the key.
func TestParseNotes(t *testing.T) {
	n := DefaultNotes()
	for key, want := range map[string]string{
		"service.metrics":                    "/metrics and /healthz",
		"link.plant@emio.port":               `"sim": simulated servos`,
		"link.plant@emio.camera.kind":        "",
		"link.plant.camera.kind":             `"sim": the virtual lab's camera`,
		"link.plant@meca500.address":         "a simulated Meca500",
		"link.partner.controller@jacobian.r": "target marker offset",
		"link.udp.remote":                    "Simulink's UDP Receive",
	} {
		got := strings.Join(n[key], " ")
		if want == "" {
			if got != "" {
				t.Errorf("%s: %q, want no note", key, got)
			}
			continue
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q in it", key, got, want)
		}
	}
	if got := n["link.plant@emio.port"]; len(got) < 3 {
		t.Errorf("port's note has %d lines, want its continuation lines too: %q", len(got), got)
	}
}

// The file of an Emio found on a serial adapter with a RealSense camera
// parses to what was found; another servo count and a second marker give
// a file that passes too.
func TestEmioFile(t *testing.T) {
	for _, hw := range []Hardware{
		{Port: "/dev/serial/by-id/usb-FTDI_USB__-__Serial_Converter_FT66WCAW-if00-port0", Baud: 1000000, IDs: []int{0, 1, 2, 3}, Camera: "realsense", Serial: "123456789012"},
		{Port: "usb:0403:6014:FT66WCAW", Baud: 57600, IDs: []int{1, 2, 5}, Camera: "realsense", Playback: "/tmp/emio.bag", NbMarkers: 2},
		{Port: "auto", Camera: "none"},
		{Port: "sim", Camera: "sim"},
	} {
		text, c, err := EmioFile(hw, "written by a test\n\nfor hardware")
		if err != nil {
			t.Fatalf("%+v: %v", hw, err)
		}
		if len(c.Links) != 1 {
			t.Fatalf("%d links, want the Emio's only", len(c.Links))
		}
		p := c.Links[0].Plant.(*EmioPlant)
		if p.Port != hw.Port || (hw.Baud != 0 && p.Baud != hw.Baud) || (hw.IDs != nil && !reflect.DeepEqual(p.IDs, hw.IDs)) ||
			p.Camera.Kind != hw.Camera || p.Camera.Serial != hw.Serial || p.Camera.Playback != hw.Playback {
			t.Errorf("%+v: parsed to %+v", hw, p)
		}
		if len(p.Min) != len(p.IDs) || len(p.Max) != len(p.IDs) {
			t.Errorf("%+v: min %v max %v for %d servos", hw, p.Min, p.Max, len(p.IDs))
		}
		if !strings.HasPrefix(string(text), "# written by a test\n#\n# for hardware\n") {
			t.Errorf("header:\n%s", text)
		}
		if !strings.Contains(string(text), `port = `+strconvQuote(hw.Port)) {
			t.Errorf("no port line for %q:\n%s", hw.Port, text)
		}
	}
}

func strconvQuote(s string) string { v, _ := encodeValue(s); return v }
