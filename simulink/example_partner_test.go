package simulink_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/labbridge/bridge/simulink"
)

// A Partner running the jacobian model's closed loop answers one measurement
// from a socket that plays the bridge's port 9090.
func ExamplePartner() {
	loopback := netip.MustParseAddrPort("127.0.0.1:0")
	master, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(loopback)) // the bridge's 9090
	if err != nil {
		fmt.Println(err)
		return
	}
	defer master.Close()
	replies, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(loopback)) // the bridge's 25001
	if err != nil {
		fmt.Println(err)
		return
	}
	defer replies.Close()

	ctl, err := simulink.NewController(simulink.ControllerSpec{
		Kind:  "jacobian",
		Alpha: 0.05,
		Jinv: []float64{
			0.01, 0, 0,
			0, 0.01, 0,
			0, 0, 0.01,
			0.01, 0.01, 0.01,
		},
		R:  []float64{0.979, 1.948, -0.636},
		Y0: []float64{2, -141, -6},
	}, simulink.Dims{
		MeasureLen: 7, CommandLen: 4, // one marker (x, y, z), four motor angles
		Feature: simulink.Span{Off: 0, Len: 3},
		Hold:    simulink.Span{Off: 3, Len: 4},
	}, 30)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := simulink.NewPartner(simulink.PartnerConfig{
		Listen:     loopback,
		Accept:     master.LocalAddr().(*net.UDPAddr).AddrPort(),
		ReplyTo:    replies.LocalAddr().(*net.UDPAddr).AddrPort(),
		MeasureLen: 7, // one marker
		CommandLen: 4,
		Controller: ctl,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Println(err)
		}
	}()

	buf := make([]byte, 128)
	u := make([]float64, 4)
	for seq := range int64(2) {
		n, _ := simulink.MarshalTo(buf, seq, []float64{2.5, -140, -6.2, 0, 0, 0, 0})
		if _, err := master.WriteToUDPAddrPort(buf[:n], p.Addr()); err != nil {
			fmt.Println(err)
			return
		}
		_ = replies.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := replies.ReadFromUDPAddrPort(buf)
		if err != nil {
			fmt.Println(err)
			return
		}
		back, err := simulink.Unmarshal(buf[:n], u)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("seq %d → reply seq %d, u %.6f\n", seq, back, u)
	}
	// Output:
	// seq 0 → reply seq -1, u [0.000240 0.000474 -0.000218 0.000496]
	// seq 1 → reply seq 1, u [0.000479 0.000948 -0.000436 0.000991]
}
