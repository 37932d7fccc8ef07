package vrepsim_test

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/labbridge/bridge/vrep/vrepsim"
)

// A simulated AZ scene answering the seed's exchange over TCP.
func ExampleAZ() {
	scene, _ := vrepsim.NewAZ(vrepsim.AZConfig{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- scene.Serve(ctx, ln) }()
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			fmt.Println(err)
			break
		}
		c.Write([]byte{'A', 'Z', 0, 0, 0x80, 0x3f, 0, 0, 0, 0xbf}) // 1, -0.5 rad/s
		reply, _ := io.ReadAll(c)
		c.Close()
		fmt.Printf("% x\n", reply)
	}
	cancel()
	<-done
	s := scene.World().Snapshot()
	fmt.Printf("time %.2f s, angles %.3f %.3f rad\n", s.Time, s.Angles[0], s.Angles[1])
	// Output:
	// 41 5a 00 00 00 00 00 00 00 00 00 00 00 00
	// 41 5a cd cc 4c 3d cd cc 4c 3d cd cc cc bc
	// time 0.10 s, angles 0.100 -0.050 rad
}
