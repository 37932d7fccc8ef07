package dxlsim_test

import (
	"fmt"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// The driver on Emio's simulated bus, over the in-memory port.
func Example() {
	clk := &dxlsim.ManualClock{}
	cfg := dxlsim.DefaultBusConfig() // IDs 0..3, firmware 46, at pulse 2048
	cfg.Clock = clk
	bus, err := dxlsim.NewBus(cfg)
	if err != nil {
		panic(err)
	}
	drv, err := dynamixel.NewBus(dxlsim.NewPipe(bus), dynamixel.BusConfig{Baud: 1000000, Margin: time.Second})
	if err != nil {
		panic(err)
	}
	model, fw, err := drv.Ping(3)
	fmt.Println("ping:", model, fw, err)

	drv.Write(3, dynamixel.AddrTorqueEnable, []byte{1})
	drv.Write(3, dynamixel.AddrGoalPosition, []byte{0x00, 0x0C, 0, 0}) // 3072
	clk.Advance(time.Second)
	pos := make([]byte, 4)
	drv.Read(3, dynamixel.AddrPresentPosition, pos)
	fmt.Println("position:", int32(pos[0])|int32(pos[1])<<8|int32(pos[2])<<16|int32(pos[3])<<24)
	// Output:
	// ping: 1030 46 <nil>
	// position: 3072
}

// The raw bytes: a ping of ID 1 and the servo's status.
func ExampleNewPipe() {
	bus, _ := dxlsim.NewBus(dxlsim.DefaultBusConfig())
	port := dxlsim.NewPipe(bus)
	port.Write([]byte{0xFF, 0xFF, 0xFD, 0x00, 0x01, 0x03, 0x00, 0x01, 0x19, 0x4E})
	port.SetReadTimeout(0) // the reply is ready when Write returns
	buf := make([]byte, 64)
	n, _ := port.Read(buf)
	fmt.Printf("% X\n", buf[:n])
	// Output: FF FF FD 00 01 07 00 55 00 06 04 2E 56 DD
}

// A missing servo silences the ones listed after it in a sync read.
func ExampleBus_SetMissing() {
	bus, _ := dxlsim.NewBus(dxlsim.DefaultBusConfig())
	bus.SetMissing(2, true)
	// The silent servo costs the whole timeout; the margin keeps the ones
	// before it answering in time on a busy machine.
	drv, _ := dynamixel.NewBus(dxlsim.NewPipe(bus), dynamixel.BusConfig{Baud: 1000000, Margin: time.Second})
	dst, errs := make([]byte, 16), make([]byte, 4)
	n, err := drv.SyncRead(dynamixel.AddrPresentPosition, 4, []byte{0, 1, 2, 3}, dst, errs)
	fmt.Println(n, "answered; first silent:", err.(*dynamixel.TimeoutError).ID)
	// Output: 2 answered; first silent: 2
}
