package plant_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/labbridge/bridge/plant"
)

// A layout names the values of a measurement: the Emio's markers then its
// angles.
func ExampleLayout() {
	l := plant.Layout{
		Measure: []plant.Field{{Name: "markers", Unit: "mm", Len: 3}, {Name: "angles", Unit: "rad", Len: 4}},
		Command: []plant.Field{{Name: "angles", Unit: "rad", Len: 4}},
	}
	off, n, _ := l.Find("angles")
	fmt.Println(l.MeasureLen(), l.CommandLen(), off, n)
	// Output: 7 4 3 4
}

func TestLayoutFindMissing(t *testing.T) {
	var l plant.Layout
	if _, _, ok := l.Find("markers"); ok || l.MeasureLen() != 0 || l.CommandLen() != 0 {
		t.Error("an empty layout found a field")
	}
}

func TestHaltPolicy(t *testing.T) {
	for _, s := range []string{"hold", "torque_off"} {
		p, err := plant.ParseHaltPolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("%q: %v %v", s, p, err)
		}
	}
	if _, err := plant.ParseHaltPolicy("drop"); !errors.Is(err, plant.ErrHaltPolicy) {
		t.Errorf("drop: %v", err)
	}
	if plant.HaltPolicy(9).String() != "unknown" {
		t.Error("an unknown policy has a name")
	}
}
