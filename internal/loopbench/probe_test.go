package loopbench

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/plant"
)

// slowPlant measures by advancing nothing: its cost is whatever the test
// makes it; Measure fails when told to.
type slowPlant struct {
	fail  error
	reads int
}

func (p *slowPlant) MeasureLen() int { return 2 }
func (p *slowPlant) CommandLen() int { return 1 }
func (p *slowPlant) Measure(dst []float64) error {
	p.reads++
	return p.fail
}
func (p *slowPlant) Command([]float64) error     { return nil }
func (p *slowPlant) Halt(plant.HaltPolicy) error { return nil }

func TestCapacity(t *testing.T) {
	c := Capacity{Reads: 20, Median: 2 * time.Millisecond}
	if got := c.MaxRateHz(); got != 250 {
		t.Fatalf("MaxRateHz = %v, want 250 (the read in half a period)", got)
	}
	if msg := c.Exceeded("emio", 200); msg != "" {
		t.Fatalf("200 Hz: %q, want nothing to say", msg)
	}
	msg := c.Exceeded("emio", 1000)
	for _, want := range []string{"emio plant", "2ms", "1000 Hz", "250 Hz", "-plant"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if (Capacity{}).Exceeded("sim", 1e6) != "" {
		t.Fatal("an unprobed capacity says something")
	}
}

func TestProbePlant(t *testing.T) {
	p := &slowPlant{}
	c, err := ProbePlant(p, 7)
	if err != nil || c.Reads != 7 || p.reads != 7 || c.Median > c.Max {
		t.Fatalf("probe %+v, %v after %d reads", c, err, p.reads)
	}
	broken := errors.New("unplugged")
	if _, err := ProbePlant(&slowPlant{fail: broken}, 3); !errors.Is(err, broken) {
		t.Fatalf("a failing plant: %v, want its error", err)
	}
	if _, err := ProbePlant(p, 0); err == nil {
		t.Fatal("0 reads accepted")
	}
}
