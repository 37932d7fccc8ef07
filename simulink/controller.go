package simulink

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Controller is the model a Partner runs between a measurement and its reply,
// in the place of the shipped Simulink controllers (docs/simulink-udp.md §9.2).
//
// Step computes the command u (CommandLen values, owned by the caller and
// holding the previous command on entry) from the measurement y (MeasureLen
// values, laid out as the plant's Dims say).
// Step runs once per datagram and must not allocate. When y holds a NaN or
// ±Inf, or has the wrong length, Step leaves u unchanged: a bad measurement
// holds the robot rather than producing a NaN command.
//
// Reset returns the controller to its state at start-up, as when the Simulink
// model is stopped and started again.
type Controller interface {
	Reset()
	Step(seq int64, y []float64, u []float64)
}

// ErrController reports an invalid controller parameter; every error returned
// by the controller constructors matches it with errors.Is.
var ErrController = errors.New("simulink: invalid controller")

// ControllerError names the bad controller parameter and the allowed values.
type ControllerError struct {
	Field  string // the TOML key of ControllerSpec, e.g. "rate_limit" or "jinv[5]"
	Reason string // the bad value and what is allowed
}

func (e *ControllerError) Error() string { return "simulink: controller " + e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrController) hold.
func (e *ControllerError) Unwrap() error { return ErrController }

func ctlErr(field, format string, args ...any) error {
	return &ControllerError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Defaults of the shipped jacobian model (docs/simulink-udp.md §9.2).
const (
	// JacobianDefaultSat is the integrator saturation, in rad.
	JacobianDefaultSat = 1.57
	// JacobianDefaultRateLimit is the output rate limit, in rad/s.
	JacobianDefaultRateLimit = 7.906
)

// Bounds that keep configurations sane; a servo angle lies in (−π, π]
// (pulse = 2048 − K·rad over 0..4095).
const (
	ctlMaxAngle = math.Pi
	ctlMaxLen   = 1000
	ctlMaxRate  = 1e6
)

// Span is a run of values in a vector: Len values from Off.
type Span struct{ Off, Len int }

func (s Span) end() int { return s.Off + s.Len }

// Dims is the shape a controller works on. Every length comes from the
// plant; this package knows no robot.
type Dims struct {
	// MeasureLen and CommandLen are the payload lengths of a measurement and
	// of a command.
	MeasureLen, CommandLen int
	// Hold is where the measurement carries the commanded quantity, such as
	// the motor angles of a position-commanded robot: the hold controller
	// commands it back, so the robot stays where it is. Len 0 means the
	// plant measures no such thing (a velocity-commanded robot): hold
	// commands zeros, which stops it.
	Hold Span
	// Feature is what the Jacobian controller regulates, such as the Emio's
	// marker coordinates (mm).
	Feature Span
}

// check validates the lengths and that both spans lie in the measurement.
func (d Dims) check() error {
	if d.MeasureLen < 0 || d.MeasureLen > ctlMaxLen {
		return ctlErr("measure_len", "%d, want 0..%d", d.MeasureLen, ctlMaxLen)
	}
	if err := ctlCheckCommandLen(d.CommandLen); err != nil {
		return err
	}
	for _, s := range []struct {
		name string
		s    Span
	}{{"hold", d.Hold}, {"feature", d.Feature}} {
		if s.s.Off < 0 || s.s.Len < 0 || s.s.end() > d.MeasureLen {
			return ctlErr(s.name, "values %d..%d, want within the %d measured values", s.s.Off, s.s.end()-1, d.MeasureLen)
		}
	}
	if d.Hold.Len != 0 && d.Hold.Len != d.CommandLen {
		return ctlErr("hold", "%d measured values for %d commands, want as many", d.Hold.Len, d.CommandLen)
	}
	return nil
}

// ControllerSpec is the configuration form of a Controller (a TOML table).
// Kind selects the implementation; only the fields of that kind may be set.
type ControllerSpec struct {
	Kind      string    `toml:"kind"`       // hold (default), constant, sine, jacobian or proportional
	U         []float64 `toml:"u"`          // constant: the command, rad
	Amplitude []float64 `toml:"amplitude"`  // sine: per motor, rad
	Frequency []float64 `toml:"frequency"`  // sine: per motor, Hz
	Offset    []float64 `toml:"offset"`     // sine: per motor, rad (empty = zeros)
	Alpha     float64   `toml:"alpha"`      // jacobian: integrator gain
	Jinv      []float64 `toml:"jinv"`       // jacobian: row-major CommandLen × Feature.Len (empty = zeros)
	R         []float64 `toml:"r"`          // jacobian: reference, Feature.Len values (empty = zeros)
	Y0        []float64 `toml:"y0"`         // jacobian: markers_init, Feature.Len values (empty = zeros)
	Sat       float64   `toml:"sat"`        // jacobian: saturation, rad (0 = 1.57)
	RateLimit float64   `toml:"rate_limit"` // jacobian: rad/s (0 = 7.906)
	Kp        float64   `toml:"kp"`         // proportional: gain, command units per regulated unit
}

// NewController builds the controller spec describes, for vectors of shape d
// exchanged at rate Hz. An empty Kind means hold. Every bad value is a
// *ControllerError.
func NewController(spec ControllerSpec, d Dims, rate float64) (Controller, error) {
	kind := spec.Kind
	if kind == "" {
		kind = "hold"
	}
	allowed := map[string][]string{
		"hold":         nil,
		"constant":     {"u"},
		"sine":         {"amplitude", "frequency", "offset"},
		"jacobian":     {"alpha", "jinv", "r", "y0", "sat", "rate_limit"},
		"proportional": {"kp", "r", "sat"},
	}
	fields, ok := allowed[kind]
	if !ok {
		return nil, ctlErr("kind", "%q, want hold, constant, sine, jacobian or proportional", spec.Kind)
	}
	for _, f := range spec.setFields() {
		if !ctlContains(fields, f) {
			return nil, ctlErr(f, "is set but kind %q does not use it (it uses: %s)", kind, ctlUses(fields))
		}
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	commandLen := d.CommandLen
	switch kind {
	case "constant":
		if len(spec.U) != commandLen {
			return nil, ctlErr("u", "has %d values, want %d (one per motor)", len(spec.U), commandLen)
		}
		return NewConstant(spec.U)
	case "sine":
		off := spec.Offset
		if len(off) == 0 {
			off = make([]float64, commandLen)
		}
		if len(spec.Amplitude) != commandLen {
			return nil, ctlErr("amplitude", "has %d values, want %d (one per motor)", len(spec.Amplitude), commandLen)
		}
		return NewSine(off, spec.Amplitude, spec.Frequency, rate)
	case "jacobian":
		return NewJacobian(JacobianParams{
			Dims: d, Rate: rate,
			Alpha: spec.Alpha, Jinv: spec.Jinv, R: spec.R, Y0: spec.Y0,
			Sat: spec.Sat, RateLimit: spec.RateLimit,
		})
	case "proportional":
		return NewProportional(d, spec.Kp, spec.R, spec.Sat)
	}
	return NewHold(d)
}

// setFields lists the TOML keys of the non-zero parameters.
func (s *ControllerSpec) setFields() []string {
	var f []string
	add := func(name string, set bool) {
		if set {
			f = append(f, name)
		}
	}
	add("u", len(s.U) > 0)
	add("amplitude", len(s.Amplitude) > 0)
	add("frequency", len(s.Frequency) > 0)
	add("offset", len(s.Offset) > 0)
	add("alpha", s.Alpha != 0)
	add("jinv", len(s.Jinv) > 0)
	add("r", len(s.R) > 0)
	add("y0", len(s.Y0) > 0)
	add("sat", s.Sat != 0)
	add("rate_limit", s.RateLimit != 0)
	add("kp", s.Kp != 0)
	return f
}

func ctlContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func ctlUses(fields []string) string {
	if len(fields) == 0 {
		return "nothing"
	}
	return strings.Join(fields, ", ")
}

func ctlCheckCommandLen(n int) error {
	if n < 1 || n > ctlMaxLen {
		return ctlErr("command_len", "%d, want 1..%d", n, ctlMaxLen)
	}
	return nil
}

func ctlCheckRate(rate float64) error {
	if !(rate > 0 && rate <= ctlMaxRate) { // also rejects NaN
		return ctlErr("rate", "%v Hz, want > 0 and ≤ %g", rate, float64(ctlMaxRate))
	}
	return nil
}

// ctlCheckVec checks that v has n finite values within ±limit (limit 0 = no bound).
func ctlCheckVec(field string, v []float64, n int, limit float64) error {
	if len(v) != n {
		return ctlErr(field, "has %d values, want %d", len(v), n)
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ctlErr(fmt.Sprintf("%s[%d]", field, i), "%v, want a finite number", x)
		}
		if limit > 0 && math.Abs(x) > limit {
			return ctlErr(fmt.Sprintf("%s[%d]", field, i), "%v, want within ±%g", x, limit)
		}
	}
	return nil
}

// ctlFinite reports whether every value of v is neither NaN nor ±Inf.
func ctlFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Hold keeps the commanded quantity measured at the first step after Reset
// (Dims.Hold: the motor angles), so the robot stays where it is; a plant
// that measures no such quantity is commanded zeros.
type Hold struct {
	d       Dims
	q       []float64
	started bool
}

// NewHold returns a Hold for vectors of shape d.
func NewHold(d Dims) (*Hold, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return &Hold{d: d, q: make([]float64, d.CommandLen)}, nil
}

// Dims returns the measurement and command lengths Hold expects.
func (h *Hold) Dims() (measureLen, commandLen int) { return h.d.MeasureLen, h.d.CommandLen }

// Reset forgets the held values; the next step captures them again.
func (h *Hold) Reset() { h.started = false }

// Step implements Controller.
func (h *Hold) Step(_ int64, y, u []float64) {
	if len(y) != h.d.MeasureLen || len(u) != h.d.CommandLen {
		return
	}
	if !h.started {
		if h.d.Hold.Len > 0 {
			q := y[h.d.Hold.Off:h.d.Hold.end()]
			if !ctlFinite(q) {
				return
			}
			copy(h.q, q)
		}
		h.started = true
	}
	copy(u, h.q)
}

// Constant commands a fixed vector.
type Constant struct {
	u []float64
}

// NewConstant returns a Constant commanding a copy of u (finite, within ±π rad).
func NewConstant(u []float64) (*Constant, error) {
	if err := ctlCheckCommandLen(len(u)); err != nil {
		return nil, err
	}
	if err := ctlCheckVec("u", u, len(u), ctlMaxAngle); err != nil {
		return nil, err
	}
	return &Constant{u: append([]float64(nil), u...)}, nil
}

// Dims returns the command length; any measurement length is accepted.
func (c *Constant) Dims() (measureLen, commandLen int) { return 0, len(c.u) }

// Reset implements Controller; Constant has no state.
func (c *Constant) Reset() {}

// Step implements Controller.
func (c *Constant) Step(_ int64, _, u []float64) {
	if len(u) == len(c.u) {
		copy(u, c.u)
	}
}

// Sine commands u_i = offset_i + amplitude_i·sin(2π·frequency_i·t) with
// t = seq/rate, so the trajectory depends only on seq and is reproducible.
type Sine struct {
	off, amp, w []float64 // w = 2π·frequency, rad/s
	dt          float64
}

// NewSine returns a Sine over len(amplitude) motors; offset, amplitude and
// frequency have one value per motor, |offset|+amplitude ≤ π rad, 0 ≤
// frequency ≤ rate/2 (Nyquist).
func NewSine(offset, amplitude, frequency []float64, rate float64) (*Sine, error) {
	n := len(amplitude)
	if err := ctlCheckCommandLen(n); err != nil {
		return nil, err
	}
	if err := ctlCheckRate(rate); err != nil {
		return nil, err
	}
	if err := ctlCheckVec("offset", offset, n, ctlMaxAngle); err != nil {
		return nil, err
	}
	if err := ctlCheckVec("amplitude", amplitude, n, ctlMaxAngle); err != nil {
		return nil, err
	}
	if err := ctlCheckVec("frequency", frequency, n, 0); err != nil {
		return nil, err
	}
	s := &Sine{off: make([]float64, n), amp: make([]float64, n), w: make([]float64, n), dt: 1 / rate}
	for i := range n {
		if amplitude[i] < 0 {
			return nil, ctlErr(fmt.Sprintf("amplitude[%d]", i), "%v, want ≥ 0", amplitude[i])
		}
		if math.Abs(offset[i])+amplitude[i] > ctlMaxAngle {
			return nil, ctlErr(fmt.Sprintf("amplitude[%d]", i), "|offset|+amplitude = %v, want ≤ π", math.Abs(offset[i])+amplitude[i])
		}
		if frequency[i] < 0 || frequency[i] > rate/2 {
			return nil, ctlErr(fmt.Sprintf("frequency[%d]", i), "%v Hz, want 0..%v (half the rate)", frequency[i], rate/2)
		}
		s.off[i], s.amp[i], s.w[i] = offset[i], amplitude[i], 2*math.Pi*frequency[i]
	}
	return s, nil
}

// Dims returns the command length; any measurement length is accepted.
func (s *Sine) Dims() (measureLen, commandLen int) { return 0, len(s.amp) }

// Reset implements Controller; Sine depends on seq only.
func (s *Sine) Reset() {}

// Step implements Controller.
func (s *Sine) Step(seq int64, _, u []float64) {
	if len(u) != len(s.amp) {
		return
	}
	t := float64(seq) * s.dt
	for i := range u {
		u[i] = s.off[i] + s.amp[i]*math.Sin(s.w[i]*t)
	}
}

// JacobianParams configures a Jacobian; see ControllerSpec for the meaning of
// the fields. Zero Sat and RateLimit take the shipped model's defaults.
type JacobianParams struct {
	Dims                   // the regulated values are Dims.Feature
	Rate           float64 // Hz; the step is 1/Rate
	Alpha          float64
	Jinv, R, Y0    []float64
	Sat, RateLimit float64
}

// Jacobian is the closed-loop integrator of the shipped jacobian model
// (docs/simulink-udp.md §9.2):
//
//	x_k = sat±Sat(x_{k−1} + Alpha·Jinv·(R − (y_feature − Y0)))
//	u_k = u_{k−1} + clamp(x_k − u_{k−1}, ±RateLimit/Rate)
//
// with x (the Delay) and u (the Rate Limiter) starting at zeros after Reset.
type Jacobian struct {
	d               Dims
	m, c            int // regulated values, commands
	alpha, sat, lim float64
	jinv, r, y0     []float64
	e, x, next, out []float64 // error, integrator, scratch, limiter output
}

// NewJacobian validates p and returns a Jacobian in its reset state.
func NewJacobian(p JacobianParams) (*Jacobian, error) {
	if err := p.Dims.check(); err != nil {
		return nil, err
	}
	if p.Feature.Len < 1 {
		return nil, ctlErr("feature", "no measured values to regulate, want at least 1 (the markers)")
	}
	if err := ctlCheckRate(p.Rate); err != nil {
		return nil, err
	}
	m, c := p.Feature.Len, p.CommandLen
	if math.IsNaN(p.Alpha) || math.IsInf(p.Alpha, 0) {
		return nil, ctlErr("alpha", "%v, want a finite number", p.Alpha)
	}
	orZeros := func(v []float64, n int) []float64 {
		if len(v) == 0 {
			return make([]float64, n)
		}
		return append([]float64(nil), v...)
	}
	j := &Jacobian{
		d: p.Dims, m: m, c: c, alpha: p.Alpha, sat: p.Sat,
		jinv: orZeros(p.Jinv, c*m), r: orZeros(p.R, m), y0: orZeros(p.Y0, m),
		e: make([]float64, m), x: make([]float64, c), next: make([]float64, c), out: make([]float64, c),
	}
	if len(p.Jinv) != 0 && len(p.Jinv) != c*m {
		return nil, ctlErr("jinv", "has %d values, want %d (%d rows of %d, row-major)", len(p.Jinv), c*m, c, m)
	}
	for _, v := range []struct {
		name string
		v    []float64
	}{{"jinv", j.jinv}, {"r", j.r}, {"y0", j.y0}} {
		if err := ctlCheckVec(v.name, v.v, len(v.v), 0); err != nil {
			return nil, err
		}
	}
	if len(j.r) != m {
		return nil, ctlErr("r", "has %d values, want %d (one per regulated value)", len(j.r), m)
	}
	if len(j.y0) != m {
		return nil, ctlErr("y0", "has %d values, want %d (one per regulated value)", len(j.y0), m)
	}
	if j.sat == 0 {
		j.sat = JacobianDefaultSat
	}
	if !(j.sat > 0 && j.sat <= ctlMaxAngle) {
		return nil, ctlErr("sat", "%v rad, want > 0 and ≤ π", p.Sat)
	}
	rl := p.RateLimit
	if rl == 0 {
		rl = JacobianDefaultRateLimit
	}
	if !(rl > 0) || math.IsInf(rl, 0) {
		return nil, ctlErr("rate_limit", "%v rad/s, want > 0 and finite", p.RateLimit)
	}
	j.lim = rl / p.Rate
	return j, nil
}

// Dims returns the measurement and command lengths Jacobian expects.
func (j *Jacobian) Dims() (measureLen, commandLen int) { return j.d.MeasureLen, j.c }

// Reset clears the Delay and the Rate Limiter to zeros, as enabling the
// model's subsystem does.
func (j *Jacobian) Reset() {
	clear(j.x)
	clear(j.out)
}

// Step implements Controller.
func (j *Jacobian) Step(_ int64, y, u []float64) {
	if len(y) != j.d.MeasureLen || len(u) != j.c || !ctlFinite(y) {
		return
	}
	f := y[j.d.Feature.Off:j.d.Feature.end()]
	for k := range j.e {
		j.e[k] = j.r[k] - (f[k] - j.y0[k])
	}
	for i := range j.next {
		row := j.jinv[i*j.m : (i+1)*j.m]
		s := 0.0
		for k, g := range row {
			s += g * j.e[k]
		}
		v := j.x[i] + j.alpha*s
		if math.IsNaN(v) { // ∞−∞ from huge inputs: hold rather than integrate garbage
			return
		}
		j.next[i] = math.Max(-j.sat, math.Min(j.sat, v))
	}
	copy(j.x, j.next)
	for i, x := range j.x {
		// Within the limit the output is x itself, not out+(x−out), which
		// may round differently.
		switch d := x - j.out[i]; {
		case d > j.lim:
			j.out[i] += j.lim
		case d < -j.lim:
			j.out[i] -= j.lim
		default:
			j.out[i] = x
		}
	}
	copy(u, j.out)
}

// Proportional drives the regulated values (Dims.Feature, as many as
// commands) toward a target with a saturated proportional law:
//
//	u = clamp(Kp·(R − y_feature), ±Sat)
//
// the controller of a velocity-commanded robot reaching a joint target (a
// Meca500: joints in °, command in °/s). A measurement with a NaN commands
// zeros, which stops such a robot.
type Proportional struct {
	d       Dims
	kp, sat float64
	r       []float64
}

// NewProportional validates its parameters for vectors of shape d.
func NewProportional(d Dims, kp float64, r []float64, sat float64) (*Proportional, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	if d.Feature.Len != d.CommandLen {
		return nil, ctlErr("feature", "%d regulated values for %d commands, want as many", d.Feature.Len, d.CommandLen)
	}
	if !(kp > 0) || math.IsInf(kp, 0) {
		return nil, ctlErr("kp", "%v, want > 0 and finite", kp)
	}
	if !(sat > 0) || math.IsInf(sat, 0) {
		return nil, ctlErr("sat", "%v, want > 0 and finite (the largest command)", sat)
	}
	if err := ctlCheckVec("r", r, d.Feature.Len, 0); err != nil {
		return nil, err
	}
	return &Proportional{d: d, kp: kp, sat: sat, r: append([]float64(nil), r...)}, nil
}

// Dims returns the measurement and command lengths.
func (p *Proportional) Dims() (measureLen, commandLen int) { return p.d.MeasureLen, p.d.CommandLen }

// Reset does nothing: the law has no state.
func (p *Proportional) Reset() {}

// Step implements Controller.
func (p *Proportional) Step(_ int64, y, u []float64) {
	if len(y) != p.d.MeasureLen || len(u) != p.d.CommandLen {
		return
	}
	f := y[p.d.Feature.Off:p.d.Feature.end()]
	if !ctlFinite(f) {
		clear(u)
		return
	}
	for i, x := range f {
		u[i] = math.Max(-p.sat, math.Min(p.sat, p.kp*(p.r[i]-x)))
	}
}
