package config

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// Every count and array length of a plant is checked against its range
// before anything is made from it: a huge value is refused with its key and
// its range, and the parse allocates no more than the file's size asks.
func TestHugeCountsAllocateNothing(t *testing.T) {
	const link = "[[link]]\nname = \"x\"\n[link.plant]\n"
	long := func(v string, n int) string { return "[" + strings.Repeat(v+", ", n-1) + v + "]" }
	cases := []struct{ doc, want string }{
		{link + "kind = \"sim\"\nmotors = 2000000000\n", `link "x".plant.motors = 2000000000: want 1..16`},
		{link + "kind = \"sim\"\nmotors = -2000000000\n", `link "x".plant.motors = -2000000000: want 1..16`},
		{link + "kind = \"sim\"\nnb_markers = 2000000000\n", `link "x".plant.nb_markers = 2000000000: want 0..16`},
		{link + "kind = \"sim\"\nmotors = 2000000000\nnb_markers = 2000000000\n", `link "x".plant.motors = 2000000000: want 1..16`},
		{link + "kind = \"emio\"\nport = \"sim\"\nnb_markers = 2000000000\n", `link "x".plant.nb_markers = 2000000000: want 0..16`},
		{link + "kind = \"emio\"\nport = \"sim\"\nids = " + long("1", 50000) + "\n", `link "x".plant.ids = [1 1 1`},
		{link + "kind = \"vrep\"\naddress = \"sim\"\nprotocol = \"zmq\"\njoints = " + long(`"/j"`, 50000) + "\n", `link "x".plant.joints = 50000: want 1..64 object paths`},
		{link + "kind = \"vrep\"\naddress = \"sim\"\nmeasure = " + long(`"sim_time"`, 50000) + "\n", `link "x".plant.measure = ["sim_time" "sim_time"`},
		{link + "kind = \"vrep\"\naddress = \"sim\"\ncommand = " + long(`"left_speed"`, 50000) + "\n", `link "x".plant.command = ["left_speed" "left_speed"`},
		{link + "kind = \"meca500\"\naddress = \"sim\"\n[link.plant.sim]\ninitial = " + long("0.0", 50000) + "\n", `plant.sim.initial`},
	}
	for _, c := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ParseConfig([]byte(c.doc))
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", show(c.doc), err, c.want)
		}
		// The decoder's own work on a file of up to a few hundred KB,
		// not gigabytes made from a count.
		if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
			t.Errorf("%s: parsing allocated %d MB", show(c.doc), n>>20)
		}
	}
}
