//go:build !cgo || !linux

package realtime

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Without cgo there is no guard: starting one says so and how to get it,
// and a nil guard watches nothing.
func TestSpinGuardWithoutCgo(t *testing.T) {
	g, err := StartSpinGuard(SpinGuardConfig{})
	if g != nil || !errors.Is(err, ErrSpinGuard) || !strings.Contains(err.Error(), "CGO_ENABLED=1") {
		t.Fatalf("StartSpinGuard = %v, %v; want nil and ErrSpinGuard saying to rebuild with CGO_ENABLED=1", g, err)
	}
	var none *SpinGuard
	w, err := none.Watch(&Thread{got: Settings{Policy: "SCHED_FIFO", Priority: 1}}, time.Millisecond)
	if w != nil || err != nil {
		t.Fatalf("nil guard's Watch = %v, %v; want nil, nil", w, err)
	}
	w.Mark(1)
	if w.Check() || w.Breaks() != 0 {
		t.Fatal("a nil *Watched must do nothing")
	}
}
