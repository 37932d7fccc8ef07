//go:build !cgo || !linux

package realtime

import (
	"fmt"
	"time"
)

// SpinGuardBuilt reports whether this build has the spin guard (it needs
// cgo).
const SpinGuardBuilt = false

const (
	slotFree = iota
	slotWatched
	slotDemoting
	slotDemoted
)

// guardC is the C side of a SpinGuard, absent from a build without cgo.
type guardC struct{}

func startGuardC(SpinGuardConfig) (guardC, error) {
	return guardC{}, fmt.Errorf("%w: this binary was built without cgo (the guard is a C thread); rebuild with CGO_ENABLED=1", ErrSpinGuard)
}

func (guardC) refused() error         { return nil }
func (guardC) halt()                  {}
func (guardC) free()                  {}
func (guardC) passes() uint64         { return 0 }
func (guardC) priority() int          { return 0 }
func (guardC) cpuTime() time.Duration { return -1 }
func (guardC) slot(int) *slotC        { return nil }
