package config

import (
	"errors"
	"strings"
	"testing"
)

// A person injects faults into the simulated devices of `bridge sim` by the
// link's name: the words reach the device (what the simulator now does), and
// words no device understands say what is understood.
func TestControlReachesTheSimulatedDevices(t *testing.T) {
	b, err := parseDefault(t, nil).Links[0].Build(testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	arm := buildMeca500(t, testEnv(t), nil)
	scene := buildVREP(t, testEnv(t), nil)
	links := []*Built{b, arm, scene}
	emio, meca, vrep := b.Link.Name(), arm.Link.Name(), scene.Link.Name()

	for _, tc := range []struct {
		words string
		check func() bool
	}{
		{emio + " camera unplug", func() bool { return b.LabCamera.Unplugged() }},
		{emio + " camera plug", func() bool { return !b.LabCamera.Unplugged() }},
		{emio + " servos unplug", func() bool { return b.Simulated.Unplugged() }},
		{emio + " servos plug", func() bool { return !b.Simulated.Unplugged() }},
		{meca + " estop", func() bool { return arm.Meca500.Status().EStop }},
	} {
		out, err := Control(links, strings.Fields(tc.words))
		if err != nil || out == "" {
			t.Errorf("%q: %q, %v", tc.words, out, err)
		}
		if !tc.check() {
			t.Errorf("%q: the device did not do it", tc.words)
		}
	}
	st, err := Control(links, []string{"status"})
	if err != nil || !strings.Contains(st, emio+": virtual camera plugged in, servo adapter plugged in") ||
		!strings.Contains(st, meca+": ") || !strings.Contains(st, vrep+": ") {
		t.Errorf("status: %q, %v", st, err)
	}
	for _, tc := range []struct{ words, want string }{
		{"", "want a link's name (" + emio + ", " + meca + ", " + vrep + ")"},
		{"robot camera unplug", `no link "robot"`},
		{emio + " camera", "want camera unplug|plug or servos unplug|plug"},
		{emio + " lidar unplug", `"lidar" for link ` + emio + ": want camera or servos"},
		{vrep + " explode", "explode"},
	} {
		_, err := Control(links, strings.Fields(tc.words))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.words, err, tc.want)
		}
	}
	if _, err := Control(links, []string{"robot", "x"}); !errors.Is(err, ErrControl) {
		t.Errorf("an unknown link: %v, want ErrControl", err)
	}
}
