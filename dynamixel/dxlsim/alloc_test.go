package dxlsim_test

import (
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// One control tick on the in-memory port, a 4-servo sync read and sync
// write, allocates nothing in the simulator.
func TestTickAllocatesNothing(t *testing.T) {
	b, clk := newBus(t)
	p := dxlsim.NewPipe(b)
	for id := range byte(4) {
		mustWrite(t, p, id, dynamixel.ItemTorqueEnable, 1)
	}
	var read, write [64]byte
	nr, _ := dynamixel.MarshalInstruction(read[:], dynamixel.BroadcastID, dynamixel.InstSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3})
	nw, _ := dynamixel.MarshalInstruction(write[:], dynamixel.BroadcastID, dynamixel.InstSyncWrite,
		[]byte{116, 0, 4, 0, 0, 0, 8, 0, 0, 1, 0, 7, 0, 0, 2, 0, 9, 0, 0, 3, 0, 6, 0, 0})
	buf := make([]byte, 256)
	p.SetReadTimeout(0)
	got := 0
	tick := func() {
		clk.Advance(time.Millisecond)
		p.Write(read[:nr])
		got = 0
		for {
			n, _ := p.Read(buf[got:])
			if n == 0 {
				break
			}
			got += n
		}
		p.Write(write[:nw])
	}
	if a := testing.AllocsPerRun(500, tick); a != 0 {
		t.Errorf("%v allocations per tick", a)
	}
	if got != 4*15 {
		t.Errorf("%d reply bytes per tick, want 60", got)
	}

	// The same through the driver of package dynamixel.
	drv, err := dynamixel.NewBus(p, dynamixel.BusConfig{Baud: 1000000, Margin: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ids, dst, errs := []byte{0, 1, 2, 3}, make([]byte, 16), make([]byte, 4)
	if a := testing.AllocsPerRun(500, func() {
		clk.Advance(time.Millisecond)
		if _, err := drv.SyncRead(132, 4, ids, dst, errs); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per driver sync read", a)
	}
}

func BenchmarkSyncRead4(b *testing.B) {
	bus, clk := newBus(b)
	p := dxlsim.NewPipe(bus)
	var read [64]byte
	nr, _ := dynamixel.MarshalInstruction(read[:], dynamixel.BroadcastID, dynamixel.InstSyncRead, []byte{132, 0, 4, 0, 0, 1, 2, 3})
	buf := make([]byte, 256)
	p.SetReadTimeout(0)
	b.ReportAllocs()
	for b.Loop() {
		clk.Advance(time.Millisecond)
		p.Write(read[:nr])
		for {
			if n, _ := p.Read(buf); n == 0 {
				break
			}
		}
	}
}
