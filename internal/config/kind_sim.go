package config

import (
	"fmt"
	"math"
	"time"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/emio/sim"
	"github.com/labbridge/bridge/plant"
)

// SimPlant is [link.plant] of kind "sim": in-memory first-order motors with
// a linear marker model (sim.Motors), Emio-shaped, with no device and no
// serial line: the plant of benchmarks and of a link tried without hardware.
type SimPlant struct {
	KindName     string    `toml:"kind"`
	Motors       int       `toml:"motors"`
	NbMarkers    *int      `toml:"nb_markers"`
	TimeConstant Duration  `toml:"time_constant"`
	Initial      []float64 `toml:"initial"`
	// Min and Max bound each command (rad); the link clamps to them.
	Min []float64 `toml:"min"`
	Max []float64 `toml:"max"`
	// Y0 and J are the marker model: markers = Y0 + J·q (mm), J of
	// (3·nb_markers)×motors, row major; absent = zeros.
	Y0 []float64 `toml:"y0"`
	J  []float64 `toml:"j"`
}

// Kind implements Plant.
func (p *SimPlant) Kind() string { return "sim" }

func (p *SimPlant) defaults(*LinkTable) {
	if p.KindName == "" {
		p.KindName = "sim"
	}
	if p.Motors == 0 {
		p.Motors = 4
	}
	if p.NbMarkers == nil {
		p.NbMarkers = new(1)
	}
	if p.TimeConstant.Duration == 0 {
		p.TimeConstant.Duration = 60 * time.Millisecond
	}
	// A count out of its range allocates nothing: validate refuses it
	// (motors = 2000000000 once asked for 16 GB here).
	if p.Motors < 1 || p.Motors > simMaxMotors {
		return
	}
	if p.Min == nil {
		p.Min = repeat(-math.Pi/2, p.Motors)
	}
	if p.Max == nil {
		p.Max = repeat(math.Pi/2, p.Motors)
	}
}

// The counts of the Emio-shaped simulated plant are the Emio's.
const (
	simMaxMotors = emio.MaxServos
	maxMarkers   = emio.MaxMarkers
)

func (p *SimPlant) validate(_ *LinkTable, v *validator) {
	if p.Motors < 1 || p.Motors > simMaxMotors {
		v.bad("plant.motors", p.Motors, fmt.Sprintf("1..%d", simMaxMotors))
		return
	}
	if n := *p.NbMarkers; n < 0 || n > maxMarkers {
		v.bad("plant.nb_markers", n, fmt.Sprintf("0..%d", maxMarkers))
		return
	}
	if d := p.TimeConstant.Duration; d < 0 || d > time.Minute {
		v.bad("plant.time_constant", d, "0..1m")
	}
	if p.Initial != nil && len(p.Initial) != p.Motors {
		v.bad("plant.initial", p.Initial, fmt.Sprintf("%d values, one per motor", p.Motors))
	}
	validateLimits(v, p.Min, p.Max, p.Motors)
	validateMarkerModel(v, p.Y0, p.J, *p.NbMarkers, p.Motors)
	validateFinite(v, "plant.initial", p.Initial)
}

// Layout implements Plant: the Emio's.
func (p *SimPlant) Layout() plant.Layout { return emio.Layout(*p.NbMarkers, p.Motors) }

// Limits implements Plant.
func (p *SimPlant) Limits() []bridge.Limit { return limits(p.Min, p.Max) }

// Clocks implements Plant: a timer only.
func (p *SimPlant) Clocks() []string { return nil }

// Simulated implements Plant.
func (p *SimPlant) Simulated() bool { return true }

// Summary implements Plant.
func (p *SimPlant) Summary() string {
	return fmt.Sprintf("sim plant: %d in-memory motor(s), %d marker(s) from a linear model", p.Motors, *p.NbMarkers)
}

func (p *SimPlant) build(b *builder) (*parts, error) {
	m, err := sim.NewMotors(p.motorsConfig(), b.env.Clock)
	if err != nil {
		return nil, err
	}
	b.motors = m
	return &parts{plant: m}, nil
}

// motorsConfig is the motors of the table.
func (p *SimPlant) motorsConfig() sim.MotorsConfig {
	c := sim.MotorsConfig{
		Motors: p.Motors, TimeConstant: p.TimeConstant.Duration, Initial: p.Initial,
		Markers: *p.NbMarkers, Y0: p.Y0, J: p.J,
	}
	lay := p.Layout()
	_, nm, _ := lay.Find("markers")
	if c.Y0 == nil {
		c.Y0 = make([]float64, nm)
	}
	if c.J == nil {
		c.J = make([]float64, nm*p.Motors)
	}
	return c
}

// The checks and conversions the Emio-shaped kinds share.

func repeat(v float64, n int) []float64 {
	s := make([]float64, max(n, 0))
	for i := range s {
		s[i] = v
	}
	return s
}

func limits(lo, hi []float64) []bridge.Limit {
	l := make([]bridge.Limit, len(lo))
	for i := range l {
		l[i] = bridge.Limit{Min: lo[i], Max: hi[i]}
	}
	return l
}

func validateLimits(v *validator, lo, hi []float64, motors int) {
	if len(lo) != motors || len(hi) != motors {
		v.bad("plant.min/max", fmt.Sprint(lo, hi), fmt.Sprintf("%d values each, one per motor", motors))
		return
	}
	for j := range lo {
		if !(lo[j] <= hi[j]) || math.IsInf(lo[j], 0) || math.IsInf(hi[j], 0) {
			v.bad(fmt.Sprintf("plant.min[%d]/max[%d]", j, j), fmt.Sprint(lo[j], " ", hi[j]), "finite values with min ≤ max (rad)")
		}
	}
}

// validateMarkerModel checks y0 (3 values per marker) and j (3 per marker
// per motor), which may be absent.
func validateMarkerModel(v *validator, y0, j []float64, markers, motors int) {
	_, coords, _ := emio.Layout(markers, motors).Find("markers")
	if y0 != nil && len(y0) != coords {
		v.bad("plant.y0", y0, fmt.Sprintf("%d values (3 per marker)", coords))
	}
	if j != nil && len(j) != coords*motors {
		v.bad("plant.j", fmt.Sprintf("%d values", len(j)), fmt.Sprintf("%d values (3·nb_markers rows × motors columns)", coords*motors))
	}
	validateFinite(v, "plant.y0", y0)
	validateFinite(v, "plant.j", j)
}

func validateFinite(v *validator, key string, vs []float64) {
	for i, x := range vs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			v.bad(fmt.Sprintf("%s[%d]", key, i), x, "a finite number")
			return
		}
	}
}

// twinThresholds implements twinned: the Emio's.
func (p *SimPlant) twinThresholds() map[string]float64 { return emio.TwinThresholds(*p.NbMarkers > 0) }

// twin implements twinned: the same motors, in memory.
func (p *SimPlant) twin(b *builder) (twinSpec, error) {
	m, err := sim.NewMotors(p.motorsConfig(), b.env.Clock)
	if err != nil {
		return twinSpec{}, err
	}
	return twinSpec{model: m, words: emioWords(nil)}, nil
}
