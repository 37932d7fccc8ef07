package meca500

import (
	"errors"
	"net"
	"testing"
	"time"
)

// canMove says what readyErr says, for every kind of state that matters.
func TestCanMoveIsReadyErr(t *testing.T) {
	lost := errors.New("lost")
	for mask := range 1 << 6 {
		for slot := -1; slot < 16; slot++ {
			st := state{connected: mask&1 != 0, lost: lost,
				status: Status{Activated: mask&2 != 0, Homed: mask&4 != 0, Error: mask&8 != 0, Paused: mask&16 != 0, EOB: mask&32 != 0}}
			if slot >= 0 {
				st.safety[slot] = 1
			}
			if got, want := st.canMove(), st.readyErr() == nil; got != want {
				t.Errorf("mask %06b safety slot %d: canMove %v, readyErr %v", mask, slot, got, st.readyErr())
			}
		}
	}
}

// A tick reads the arm without its mutex: Measure, Latch and Command return
// while another goroutine holds it (the reader preempted mid-cycle), and the
// next release publishes what changed under it.
func TestTickDoesNotWaitForTheMutex(t *testing.T) {
	ln := sink(t)
	a, err := New(Config{Address: ln.Addr().String(), Pose: true, WriteTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	a.mu.Lock()
	a.conn = conn
	a.st.connected = true
	a.st.status = Status{Activated: true, Homed: true}
	a.unlock()
	a.framer.Feed([]byte("[2200][123456,1.5,2,3,4,5,6]\x00[2201][123456,190,0,308,0,90,0]\x00[2007][1,1,0,0,0,1,1]\x00[2230][123456]\x00"), a.onMsg)

	m := make([]float64, a.MeasureLen())
	a.mu.Lock()
	done := make(chan error, 1)
	go func() {
		err := a.Measure(m)
		a.Latch(m)
		done <- errors.Join(err, a.Command([]float64{1, 2, 3, 4, 5, 6}))
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("tick under a held mutex: %v", err)
		}
	case <-time.After(30 * time.Second): // a hang, not a slow machine
		t.Fatal("the tick waited for the arm's mutex")
	}
	if m[0] != 1.5 || m[6] != 190 {
		t.Errorf("measurement %v", m)
	}
	// A robot error arrives under the mutex: the release publishes it and
	// the next command is refused.
	a.st.status.Error, a.st.lastError = true, 1005
	a.unlock()
	var re *RobotError
	if err := a.Command([]float64{1, 2, 3, 4, 5, 6}); !errors.As(err, &re) || re.Code != 1005 {
		t.Errorf("command after a robot error: %v, want RobotError 1005", err)
	}
	if a.Measure(m); m[len(m)-2] != 1005 {
		t.Errorf("error field %v, want 1005", m[len(m)-2])
	}
}
