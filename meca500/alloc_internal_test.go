package meca500

import (
	"io"
	"net"
	"testing"
	"time"
)

// sink is a loopback TCP port that reads and discards what each
// connection sends, closed when the test ends.
func sink(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP port: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	return ln
}

// A tick of a Meca500 link allocates nothing: the reader parsing a
// monitoring cycle, Measure, Command writing one motion command and the
// watchdog refresh to a real socket, Idle refreshing the watchdog, and Age
// while the device is down.
func TestTickAllocatesNothing(t *testing.T) {
	ln := sink(t)
	for _, mode := range []Mode{JointVelocity, CartesianVelocity, JointPosition} {
		a, err := New(Config{Address: ln.Addr().String(), Mode: mode, Pose: true, Watchdog: 1e9, WriteTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		a.conn = conn
		a.st.connected = true
		a.st.status = Status{Activated: true, Homed: true}
		cycle := []byte("[2200][123456,1.5,2,3,4,5,6]\x00[2201][123456,190,0,308,0,90,0]\x00[2007][1,1,0,0,0,1,1]\x00[2230][123456]\x00")
		m := make([]float64, a.MeasureLen())
		u := []float64{1, -2, 3, -4, 5, -6}
		tick := func() {
			a.framer.Feed(cycle, a.onMsg)
			if err := a.Measure(m); err != nil {
				t.Fatal(err)
			}
			if err := a.Command(u); err != nil {
				t.Fatal(err)
			}
			if err := a.Idle(); err != nil {
				t.Fatal(err)
			}
		}
		tick()
		if n := testing.AllocsPerRun(200, tick); n != 0 {
			t.Errorf("%v: %.1f allocations per tick", mode, n)
		}
		// A tick while the device is down: Age on the stale measurement.
		age := func() { a.Age(m) }
		if n := testing.AllocsPerRun(200, age); n != 0 {
			t.Errorf("%v: %.1f allocations per Age", mode, n)
		}
		if m[0] != 1.5 || m[6] != 190 || m[12] != 1 {
			t.Errorf("%v: measurement %v", mode, m)
		}
		conn.Close()
	}
}
