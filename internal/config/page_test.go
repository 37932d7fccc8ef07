package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/internal/testutil"
)

// A running Emio link's page: its name, kind and state, the counters of
// its exchanges, the command and the measurement by the layout's fields,
// the servos with their angles, and the camera with its thumbnail's path.
func TestPageOfARunningLink(t *testing.T) {
	env, _ := envWithRegistry(t)
	b, err := parseDefault(t, nil).Links[0].Build(env)
	if err != nil {
		t.Fatal(err)
	}
	serveBuilt(t, b)
	testutil.WaitFor(t, "running with OK exchanges and the servos read", func() bool {
		l := b.Page()
		return l.State == bridge.Running.String() && l.Counts.OK+l.Counts.OKNoDelay > 10 && len(l.Servos) == 4 && l.Servos[0].AngleRad != nil
	})
	l := b.Page()
	if l.Name != "emio" || l.Kind != "emio" || l.RateHz != b.Config.RateHz || l.StateSince.IsZero() {
		t.Errorf("name %q kind %q rate %v since %v", l.Name, l.Kind, l.RateHz, l.StateSince)
	}
	if l.Exchanges < l.Counts.OK+l.Counts.OKNoDelay || !(l.OKPct > 0 && l.OKPct <= 100) {
		t.Errorf("exchanges %d, counts %+v, ok %v%%", l.Exchanges, l.Counts, l.OKPct)
	}
	if len(l.Command) != len(b.Layout.Command) || len(l.Measurement) != len(b.Layout.Measure) {
		t.Fatalf("command %d fields, measurement %d; the layout has %d and %d", len(l.Command), len(l.Measurement), len(b.Layout.Command), len(b.Layout.Measure))
	}
	for i, f := range b.Layout.Measure {
		if m := l.Measurement[i]; m.Name != f.Name || m.Unit != f.Unit || len(m.Values) != f.Len {
			t.Errorf("measurement field %d: %q %q %d values, want %q %q %d", i, m.Name, m.Unit, len(m.Values), f.Name, f.Unit, f.Len)
		}
	}
	if l.Camera == nil || l.Camera.Thumbnail != "camera/emio.jpg" {
		t.Errorf("camera %+v", l.Camera)
	}
	if !slices.ContainsFunc(l.Status, func(s string) bool { return s != "" }) {
		t.Errorf("no part's status: %q", l.Status)
	}
	if s := ServiceStatus([]*Built{b}); !strings.HasPrefix(s, "emio: running") {
		t.Errorf("STATUS= %q, want the link's state first", s)
	}
}

// A link without a camera has no thumbnail, nor has an unknown link.
func TestThumbnailsWithoutCamera(t *testing.T) {
	th := Thumbnails([]*Built{{Config: &LinkTable{Name: "meca"}}})
	for _, link := range []string{"meca", "nolink"} {
		if img, found := th(link, 320); found || img != nil {
			t.Errorf("thumbnail of %q: %v %v, want not found", link, img, found)
		}
	}
}
