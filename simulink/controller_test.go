package simulink

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// ctlStep is one controller step: the input and the exact expected command.
type ctlStep struct {
	seq   int64
	y     []float64
	want  []float64
	reset bool // Reset before this step
}

func runCtlSteps(t *testing.T, c Controller, u []float64, steps []ctlStep) {
	t.Helper()
	for i, s := range steps {
		if s.reset {
			c.Reset()
		}
		c.Step(s.seq, s.y, u)
		if !slices.Equal(u, s.want) {
			t.Fatalf("step %d (seq %d, y %v): u = %v, want %v", i, s.seq, s.y, u, s.want)
		}
	}
}

var ctlNaN = math.NaN()

func TestHold(t *testing.T) {
	h, err := NewHold(Dims{MeasureLen: 5, CommandLen: 2, Hold: Span{3, 2}}) // y = [x y z q0 q1]
	if err != nil {
		t.Fatal(err)
	}
	runCtlSteps(t, h, []float64{9, 9}, []ctlStep{
		{seq: 0, y: []float64{1, 2, 3, ctlNaN, 0.5}, want: []float64{9, 9}},         // no finite angles yet: u holds
		{seq: 1, y: []float64{1, 2, 3, 0.25, 0.5}, want: []float64{0.25, 0.5}},      // captured
		{seq: 2, y: []float64{1, 2, 3, 1, 1}, want: []float64{0.25, 0.5}},           // held
		{seq: 3, y: []float64{1, 2, 3, 1}, want: []float64{0.25, 0.5}},              // wrong length: held
		{seq: 4, y: []float64{1, 2, 3, 1, -1}, want: []float64{1, -1}, reset: true}, // captured again
	})
	if m, c := h.Dims(); m != 5 || c != 2 {
		t.Errorf("Dims = %d, %d", m, c)
	}
}

func TestConstant(t *testing.T) {
	src := []float64{0.2133, -0.0957, -0.0414, -0.1127} // the jacobian model's u_ol
	c, err := NewConstant(src)
	if err != nil {
		t.Fatal(err)
	}
	src[0] = 3 // NewConstant copies
	runCtlSteps(t, c, make([]float64, 4), []ctlStep{
		{seq: 0, y: []float64{ctlNaN}, want: []float64{0.2133, -0.0957, -0.0414, -0.1127}},
		{seq: 9, y: nil, want: []float64{0.2133, -0.0957, -0.0414, -0.1127}, reset: true},
	})
}

func TestSine(t *testing.T) {
	// rate 4 Hz, frequency 1 Hz: seq k is a quarter turn, sin ∈ {0, 1, 0, −1}.
	s, err := NewSine([]float64{0.5, 0}, []float64{0.25, 1}, []float64{1, 0}, 4)
	if err != nil {
		t.Fatal(err)
	}
	runCtlSteps(t, s, make([]float64, 2), []ctlStep{
		{seq: 0, want: []float64{0.5, 0}},
		{seq: 1, want: []float64{0.75, 0}},
		{seq: 2, want: []float64{0.5, 0}}, // 0.25·sin(π) ≈ 3e-17 vanishes next to 0.5
		{seq: 3, want: []float64{0.25, 0}},
		{seq: 1, y: []float64{ctlNaN}, want: []float64{0.75, 0}, reset: true}, // depends on seq only
	})
}

// TestJacobian: exact values with dyadic parameters. Sat 1, step 0.5 rad
// (RateLimit 2 rad/s at 4 Hz), Alpha 0.5, Jinv [[1 0 0] [0 1 1]], R [1 2 3].
func TestJacobian(t *testing.T) {
	j, err := NewJacobian(JacobianParams{
		Dims: Dims{MeasureLen: 5, CommandLen: 2, Feature: Span{0, 3}}, Rate: 4, Alpha: 0.5,
		Jinv: []float64{1, 0, 0, 0, 1, 1}, R: []float64{1, 2, 3}, Sat: 1, RateLimit: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	q := []float64{0.1, 0.2} // motor angles: not used by the law
	y := func(m ...float64) []float64 { return append(m, q...) }
	runCtlSteps(t, j, []float64{7, 7}, []ctlStep{
		// e = [1 2 3], Jinv·e = [1 5], x = sat([0.5 2.5]) = [0.5 1], u = 0 + clamp(x, ±0.5)
		{seq: 0, y: y(0, 0, 0), want: []float64{0.5, 0.5}},
		// x = sat([1 3.5]) = [1 1], u = [0.5 0.5] + [0.5 0.5]
		{seq: 1, y: y(0, 0, 0), want: []float64{1, 1}},
		// e = [−2 0 0], x = [1−1 1] = [0 1], u = [1−0.5 1]
		{seq: 2, y: y(3, 2, 3), want: []float64{0.5, 1}},
		// NaN measurement: u and the state hold
		{seq: 3, y: y(ctlNaN, 2, 3), want: []float64{0.5, 1}},
		{seq: 4, y: y(3, math.Inf(1), 3), want: []float64{0.5, 1}},
		// wrong length: hold
		{seq: 5, y: []float64{1, 2, 3}, want: []float64{0.5, 1}},
		// e = 0: x stays [0 1]; u = [0.5−0.5 1]
		{seq: 6, y: y(1, 2, 3), want: []float64{0, 1}},
		// Reset: back to the first step's answer
		{seq: 7, y: y(0, 0, 0), want: []float64{0.5, 0.5}, reset: true},
		// a huge error saturates at −1 and the limiter walks there
		{seq: 8, y: y(1e300, 0, 0), want: []float64{0, 1}},
		{seq: 9, y: y(1e300, 0, 0), want: []float64{-0.5, 1}},
		{seq: 10, y: y(1e300, 0, 0), want: []float64{-1, 1}},
		{seq: 11, y: y(1e300, 0, 0), want: []float64{-1, 1}},
	})
}

// TestJacobianY0: the error is taken from markers − markers_init.
func TestJacobianY0(t *testing.T) {
	j, err := NewJacobian(JacobianParams{
		Dims: Dims{MeasureLen: 4, CommandLen: 1, Feature: Span{0, 3}}, Rate: 1, Alpha: 1,
		Jinv: []float64{1, 1, 1}, R: []float64{0.125, 0, 0}, Y0: []float64{2, -141, -6},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtlSteps(t, j, []float64{0}, []ctlStep{
		{seq: 0, y: []float64{2, -141, -6, 0}, want: []float64{0.125}},
		{seq: 1, y: []float64{2, -141, -6, 0}, want: []float64{0.25}},
		{seq: 2, y: []float64{2.25, -141, -6, 0}, want: []float64{0.125}},
	})
}

// TestJacobianDefaults: zero Sat and RateLimit take the model's values.
func TestJacobianDefaults(t *testing.T) {
	j, err := NewJacobian(JacobianParams{Dims: Dims{MeasureLen: 4, CommandLen: 1, Feature: Span{0, 3}}, Rate: 30, Alpha: 1, Jinv: []float64{1, 0, 0}, R: []float64{100, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if j.sat != JacobianDefaultSat || j.lim != JacobianDefaultRateLimit/30 {
		t.Fatalf("sat %v, step %v", j.sat, j.lim)
	}
	u := []float64{0}
	for range 10 {
		j.Step(0, []float64{0, 0, 0, 0}, u)
	}
	if u[0] != JacobianDefaultSat {
		t.Fatalf("u = %v, want the saturation %v", u[0], JacobianDefaultSat)
	}
}

func TestNewController(t *testing.T) {
	for _, tc := range []struct {
		spec ControllerSpec
		want string // Go type
	}{
		{ControllerSpec{}, "*simulink.Hold"},
		{ControllerSpec{Kind: "hold"}, "*simulink.Hold"},
		{ControllerSpec{Kind: "constant", U: []float64{0, 0, 0, 0}}, "*simulink.Constant"},
		{ControllerSpec{Kind: "sine", Amplitude: []float64{0.1, 0.1, 0.1, 0.1}, Frequency: []float64{1, 1, 1, 1}}, "*simulink.Sine"},
		{ControllerSpec{Kind: "jacobian", Alpha: 0.05, R: []float64{0.979, 1.948, -0.636}, Y0: []float64{2, -141, -6}}, "*simulink.Jacobian"},
	} {
		c, err := NewController(tc.spec, emioDims(1, 4), 30)
		if err != nil {
			t.Errorf("%+v: %v", tc.spec, err)
			continue
		}
		if got := typeName(c); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.spec, got, tc.want)
		}
		d, ok := c.(interface{ Dims() (int, int) })
		if !ok {
			t.Errorf("%s has no Dims", tc.want)
			continue
		}
		if m, n := d.Dims(); (m != 0 && m != 7) || n != 4 {
			t.Errorf("%s: Dims = %d, %d", tc.want, m, n)
		}
	}
}

func typeName(c Controller) string {
	switch c.(type) {
	case *Hold:
		return "*simulink.Hold"
	case *Constant:
		return "*simulink.Constant"
	case *Sine:
		return "*simulink.Sine"
	case *Jacobian:
		return "*simulink.Jacobian"
	}
	return "?"
}

func TestNewControllerErrors(t *testing.T) {
	four := []float64{0, 0, 0, 0}
	for _, tc := range []struct {
		spec             ControllerSpec
		d                Dims
		rate             float64
		field, inMessage string
	}{
		{ControllerSpec{Kind: "pid"}, emioDims(1, 4), 30, "kind", "hold, constant, sine, jacobian or proportional"},
		{ControllerSpec{Kind: "hold", U: four}, emioDims(1, 4), 30, "u", "kind \"hold\" does not use it"},
		{ControllerSpec{Alpha: 1}, emioDims(1, 4), 30, "alpha", "does not use it"},
		{ControllerSpec{Kind: "hold"}, Dims{MeasureLen: 7, CommandLen: 4, Hold: Span{5, 4}}, 30, "hold", "values 5..8, want within the 7 measured values"},
		{ControllerSpec{Kind: "hold"}, Dims{MeasureLen: 7, CommandLen: 4, Hold: Span{3, 2}}, 30, "hold", "2 measured values for 4 commands"},
		{ControllerSpec{Kind: "hold"}, Dims{MeasureLen: 7, CommandLen: 0}, 30, "command_len", "want 1..1000"},
		{ControllerSpec{Kind: "hold"}, Dims{MeasureLen: -1, CommandLen: 4}, 30, "measure_len", "want 0..1000"},
		{ControllerSpec{Kind: "constant", U: []float64{0, 0}}, emioDims(1, 4), 30, "u", "has 2 values, want 4"},
		{ControllerSpec{Kind: "constant", U: []float64{0, 0, 4, 0}}, emioDims(1, 4), 30, "u[2]", "within ±3.14"},
		{ControllerSpec{Kind: "constant", U: []float64{0, ctlNaN, 0, 0}}, emioDims(1, 4), 30, "u[1]", "finite"},
		{ControllerSpec{Kind: "sine", Amplitude: []float64{0.1}, Frequency: four}, emioDims(1, 4), 30, "amplitude", "has 1 values, want 4"},
		{ControllerSpec{Kind: "sine", Amplitude: four, Frequency: []float64{1}}, emioDims(1, 4), 30, "frequency", "has 1 values, want 4"},
		{ControllerSpec{Kind: "sine", Amplitude: four, Frequency: four, Offset: []float64{1}}, emioDims(1, 4), 30, "offset", "has 1 values, want 4"},
		{ControllerSpec{Kind: "sine", Amplitude: []float64{0, -1, 0, 0}, Frequency: four}, emioDims(1, 4), 30, "amplitude[1]", "want ≥ 0"},
		{ControllerSpec{Kind: "sine", Amplitude: []float64{3, 0, 0, 0}, Offset: []float64{1, 0, 0, 0}, Frequency: four}, emioDims(1, 4), 30, "amplitude[0]", "want ≤ π"},
		{ControllerSpec{Kind: "sine", Amplitude: four, Frequency: []float64{0, 0, 16, 0}}, emioDims(1, 4), 30, "frequency[2]", "0..15"},
		{ControllerSpec{Kind: "sine", Amplitude: four, Frequency: four}, emioDims(1, 4), 0, "rate", "want > 0"},
		{ControllerSpec{Kind: "jacobian"}, Dims{MeasureLen: 4, CommandLen: 4, Hold: Span{0, 4}}, 30, "feature", "want at least 1"},
		{ControllerSpec{Kind: "jacobian"}, Dims{MeasureLen: 7, CommandLen: 4, Feature: Span{6, 3}}, 30, "feature", "want within the 7 measured values"},
		{ControllerSpec{Kind: "jacobian"}, emioDims(1, 4), ctlNaN, "rate", "want > 0"},
		{ControllerSpec{Kind: "jacobian", Alpha: math.Inf(1)}, emioDims(1, 4), 30, "alpha", "finite"},
		{ControllerSpec{Kind: "jacobian", Jinv: make([]float64, 11)}, emioDims(1, 4), 30, "jinv", "has 11 values, want 12"},
		{ControllerSpec{Kind: "jacobian", Jinv: []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, ctlNaN}}, emioDims(1, 4), 30, "jinv[11]", "finite"},
		{ControllerSpec{Kind: "jacobian", R: []float64{1, 2}}, emioDims(1, 4), 30, "r", "has 2 values, want 3"},
		{ControllerSpec{Kind: "jacobian", Y0: []float64{1, 2, 3, 4}}, emioDims(1, 4), 30, "y0", "has 4 values, want 3"},
		{ControllerSpec{Kind: "jacobian", Sat: -1}, emioDims(1, 4), 30, "sat", "want > 0 and ≤ π"},
		{ControllerSpec{Kind: "jacobian", Sat: 4}, emioDims(1, 4), 30, "sat", "want > 0 and ≤ π"},
		{ControllerSpec{Kind: "jacobian", RateLimit: -2}, emioDims(1, 4), 30, "rate_limit", "want > 0"},
		{ControllerSpec{Kind: "jacobian", RateLimit: math.Inf(1)}, emioDims(1, 4), 30, "rate_limit", "finite"},
	} {
		_, err := NewController(tc.spec, tc.d, tc.rate)
		var ce *ControllerError
		if !errors.Is(err, ErrController) || !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: got %v, want an error on %s", tc.spec, err, tc.field)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "simulink: controller "+tc.field+": ") || !strings.Contains(msg, tc.inMessage) {
			t.Errorf("%+v: message %q, want it to contain %q", tc.spec, msg, tc.inMessage)
		}
	}
}

func TestControllerAllocs(t *testing.T) {
	jac, err := NewJacobian(JacobianParams{Dims: emioDims(2, 4), Rate: 30, Alpha: 0.05, Jinv: make([]float64, 24)})
	if err != nil {
		t.Fatal(err)
	}
	hold, err := NewHold(emioDims(2, 4))
	if err != nil {
		t.Fatal(err)
	}
	cst, err := NewConstant([]float64{0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	sine, err := NewSine([]float64{0, 0, 0, 0}, []float64{0.1, 0.1, 0.1, 0.1}, []float64{1, 1, 1, 1}, 30)
	if err != nil {
		t.Fatal(err)
	}
	y, u := make([]float64, 10), make([]float64, 4)
	for _, c := range []Controller{jac, hold, cst, sine} {
		var seq int64
		if a := testing.AllocsPerRun(100, func() { seq++; c.Step(seq, y, u) }); a != 0 {
			t.Errorf("%s: %v allocations per step", typeName(c), a)
		}
	}
}

func BenchmarkJacobianStep(b *testing.B) {
	jac, err := NewJacobian(JacobianParams{Dims: emioDims(2, 4), Rate: 1000, Alpha: 0.05, Jinv: make([]float64, 24)})
	if err != nil {
		b.Fatal(err)
	}
	y, u := make([]float64, 10), make([]float64, 4)
	b.ReportAllocs()
	for i := range b.N {
		jac.Step(int64(i), y, u)
	}
}

// emioDims is the Emio's shape, as its plant describes it: nb markers (3
// coordinates each), then one angle per motor.
func emioDims(nb, motors int) Dims {
	return Dims{MeasureLen: 3*nb + motors, CommandLen: motors, Hold: Span{3 * nb, motors}, Feature: Span{0, 3 * nb}}
}

// The proportional law of a velocity-commanded arm: u = clamp(kp·(r − y)),
// zeros on a NaN measurement (which stops the robot).
func TestProportional(t *testing.T) {
	d := Dims{MeasureLen: 4, CommandLen: 2, Feature: Span{1, 2}} // y = [t q0 q1 age]
	p, err := NewProportional(d, 2, []float64{10, -10}, 5)
	if err != nil {
		t.Fatal(err)
	}
	runCtlSteps(t, p, []float64{9, 9}, []ctlStep{
		{seq: 0, y: []float64{0, 9, -9, 0}, want: []float64{2, -2}},
		{seq: 1, y: []float64{0, 0, 0, 0}, want: []float64{5, -5}},                // saturated
		{seq: 2, y: []float64{0, 20, -10, ctlNaN}, want: []float64{-5, 0}},        // NaN outside the feature
		{seq: 3, y: []float64{0, ctlNaN, 0, 0}, want: []float64{0, 0}},            // NaN in it: stop
		{seq: 4, y: []float64{0, 10, -10, 0}, want: []float64{0, 0}, reset: true}, // at the target
	})
	for _, bad := range []struct {
		kp, sat float64
		r       []float64
		field   string
	}{
		{0, 5, []float64{0, 0}, "kp"},
		{1, 0, []float64{0, 0}, "sat"},
		{1, 5, []float64{0}, "r"},
		{1, 5, []float64{0, ctlNaN}, "r[1]"},
	} {
		var ce *ControllerError
		if _, err := NewProportional(d, bad.kp, bad.r, bad.sat); !errors.As(err, &ce) || ce.Field != bad.field {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := NewProportional(Dims{MeasureLen: 4, CommandLen: 2, Feature: Span{1, 3}}, 1, []float64{0, 0, 0}, 1); err == nil {
		t.Error("a feature longer than the command was accepted")
	}
}
