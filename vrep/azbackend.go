package vrep

import (
	"context"

	"github.com/labbridge/bridge/plant"
)

// azBackend is the seed's exchange: one connection per tick.
type azBackend struct{ c *AZClient }

func (b *azBackend) open(context.Context, bool) error { return nil }
func (b *azBackend) close() error                     { return nil }
func (b *azBackend) restarted() error                 { return nil }

func (b *azBackend) step(_ bool, targets []float64, _ bool, s *sample) error {
	var req Request
	var err error
	if req.Left, err = Narrow(targets[0]); err != nil {
		return err
	}
	if req.Right, err = Narrow(targets[1]); err != nil {
		return err
	}
	rep, err := b.c.Exchange(req)
	if err != nil {
		return err
	}
	s.time, s.q[0], s.q[1] = float64(rep.Time), float64(rep.Left), float64(rep.Right)
	return nil
}

// haltTries is how many exchanges a halt makes before it gives up: a halt is
// not bound to a tick, and one late reply from a busy scene must not leave
// the robot on its last velocities. Setting the same targets again is
// harmless.
const haltTries = 3

// halt sets zero speeds, whatever the policy: the seed's script has no
// torque to release.
func (b *azBackend) halt(ctx context.Context, _ plant.HaltPolicy, _ []float64) error {
	return b.stopMotion(ctx)
}

// stopMotion makes one exchange with zero speeds (up to haltTries).
func (b *azBackend) stopMotion(ctx context.Context) error {
	s := sample{q: make([]float64, 2)}
	var zero [2]float64
	var err error
	for range haltTries {
		if err = b.step(true, zero[:], false, &s); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return &UnreachableError{Addr: b.c.Addr(), Err: err}
}
