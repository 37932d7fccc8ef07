package plant_test

import (
	"errors"
	"fmt"
	"slices"
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

// FieldErrors finds every field error, alone, joined or wrapped, in order,
// and errors.Is reaches the driver's sentinel through each.
func TestFieldErrors(t *testing.T) {
	errBad := errors.New("drv: invalid configuration")
	a := &plant.FieldError{Err: errBad, Field: "a", Value: 1, Want: "0"}
	b := &plant.FieldError{Err: errBad, Field: "b[2]", Value: `"x"`, Want: "one of y, z", Allowed: []string{"y", "z"}}
	for _, c := range []struct {
		err  error
		want []*plant.FieldError
	}{
		{nil, nil},
		{errors.New("other"), nil},
		{a, []*plant.FieldError{a}},
		{errors.Join(a, errors.New("other"), b), []*plant.FieldError{a, b}},
		{fmt.Errorf("wrapped: %w", errors.Join(a, b)), []*plant.FieldError{a, b}},
	} {
		if got := plant.FieldErrors(c.err); !slices.Equal(got, c.want) {
			t.Errorf("FieldErrors(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if !errors.Is(b, errBad) || b.Error() != `drv: invalid configuration: b[2] = "x": want one of y, z` {
		t.Errorf("%v", b)
	}
}
