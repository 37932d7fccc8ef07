package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	defaultconfig "github.com/labbridge/bridge"
	"github.com/labbridge/bridge/emio"
)

// rejoin_speed: the embedded default documents it at the driver's default,
// an absent key takes that default, and a value out of range (0 among
// them: there is no off) is refused naming the key and the range.
func TestEmioRejoinSpeed(t *testing.T) {
	c, err := Parse(defaultconfig.TOML())
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Links[0].Plant.(*EmioPlant); *p.RejoinSpeed != emio.DefaultRejoinSpeed {
		t.Errorf("the embedded default's rejoin_speed is %v, want the driver's %v", *p.RejoinSpeed, emio.DefaultRejoinSpeed)
	}
	if _, ok := DefaultNotes()["link.plant@emio.rejoin_speed"]; !ok {
		t.Error("bridge.toml does not document rejoin_speed")
	}
	const emioLink = "[[link]]\nname = \"a\"\n[link.plant]\nkind = \"emio\"\n"
	c, err = Parse([]byte(emioLink))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Links[0].Plant.(*EmioPlant); *p.RejoinSpeed != emio.DefaultRejoinSpeed {
		t.Errorf("rejoin_speed %v without the key, want %v", *p.RejoinSpeed, emio.DefaultRejoinSpeed)
	}
	c, err = Parse([]byte(emioLink + "rejoin_speed = 2.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Links[0].Plant.(*EmioPlant); *p.RejoinSpeed != 2.5 {
		t.Errorf("rejoin_speed %v, want 2.5", *p.RejoinSpeed)
	}
	for _, doc := range []string{"rejoin_speed = 0.0\n", "rejoin_speed = -1.0\n", "rejoin_speed = 11.0\n"} {
		_, err := Parse([]byte(emioLink + doc))
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "plant.rejoin_speed = ") ||
			!strings.Contains(err.Error(), "want 0.05..10 rad/s") || !strings.Contains(err.Error(), "there is no off") {
			t.Errorf("%q: %v, want the key and its range", doc, err)
		}
	}
	if _, err := Parse([]byte("[[link]]\nname = \"a\"\n[link.plant]\nkind = \"sim\"\nrejoin_speed = 1.0\n")); err == nil ||
		!strings.Contains(err.Error(), `it belongs to kind "emio"`) {
		t.Errorf("rejoin_speed in a sim plant: %v", err)
	}
}

// A file that sets no key gets the driver's defaults: config owns no default
// of its own for the servos (the link's period and the status reads follow
// the link's rate).
func TestEmioDefaultsAreTheDrivers(t *testing.T) {
	c, err := Parse([]byte("[[link]]\nname = \"a\"\nrate_hz = 30\n[link.plant]\nkind = \"emio\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := &c.Links[0]
	p := l.Plant.(*EmioPlant)
	got, want := p.servoConfig(l), emio.DefaultConfig()
	if !reflect.DeepEqual(got.IDs, want.IDs) || got.Mode != want.Mode || got.ProfileVelocity != want.ProfileVelocity ||
		got.Markers != want.Markers || got.Fast != want.Fast || got.Bus.Baud != want.Bus.Baud || got.Port != want.Port ||
		got.RejoinSpeed != want.RejoinSpeed || got.Period != want.Period {
		t.Errorf("config %+v\ndriver %+v", got, want)
	}
	if p.Min[0] != emio.DefaultMin || p.Max[3] != emio.DefaultMax {
		t.Errorf("limits %v..%v, want the driver's %v..%v", p.Min, p.Max, emio.DefaultMin, emio.DefaultMax)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}
