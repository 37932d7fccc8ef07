package mecasim_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/labbridge/bridge/meca500/mecasim"
)

// run serves r on an ephemeral loopback port and connects to it; stop ends
// both.
func run(r *mecasim.Robot) (conn net.Conn, read func() string, stop func()) {
	ln, err := mecasim.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	conn, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	rd := bufio.NewReader(conn)
	read = func() string {
		m, _ := rd.ReadString(0)
		return strings.TrimSuffix(m, "\x00")
	}
	return conn, read, func() {
		conn.Close()
		cancel()
		<-done
		ln.Close()
	}
}

// The connect dialogue as mecademicpy opens it (docs/meca500.md §4): the
// banner, a lone NUL, silent queries.
func Example() {
	r, err := mecasim.New(mecasim.Config{Serial: "M500-0042"})
	if err != nil {
		panic(err)
	}
	conn, read, stop := run(r)
	defer stop()
	fmt.Println(read())
	fmt.Fprint(conn, "\x00-GetRobotSerial\x00-GetFwVersionFull\x00-GetMonitoringInterval\x00GetStatusRobot\x00")
	for range 4 {
		fmt.Println(read())
	}
	// Output:
	// [3000][Connected to Meca500 R3 v9.3.0.]
	// [2083][M500-0042]
	// [2082][9.3.0.0]
	// [2116][0.016666]
	// [2007][0,0,0,0,1,1,1]
}

// Activate, home, move, and learn from a checkpoint that the move is done
// (§5.2, §5.3).
func ExampleRobot_Joints() {
	r, _ := mecasim.New(mecasim.Config{})
	conn, read, stop := run(r)
	defer stop()
	read() // the banner
	fmt.Fprint(conn, "ActivateRobot\x00Home\x00")
	fmt.Println(read())
	fmt.Println(read()) // homing takes a moment: a move before it is refused
	fmt.Fprint(conn, "MoveJoints(10,20,30,0,15,0)\x00SetCheckpoint(1)\x00")
	fmt.Println(read())
	fmt.Println(r.Joints())
	// Output:
	// [2000][Motors activated.]
	// [2002][Homing done.]
	// [3030][1]
	// [10 20 30 0 15 0]
}

// A motion error refuses moves until ResetError (§8).
func ExampleRobot_MotionError() {
	r, _ := mecasim.New(mecasim.Config{})
	conn, read, stop := run(r)
	defer stop()
	read() // the banner
	fmt.Fprint(conn, "ActivateRobot\x00Home\x00")
	read()
	read()
	r.MotionError()
	fmt.Fprint(conn, "MoveJointsVel(1,0,0,0,0,0)\x00ResetError\x00")
	for range 3 {
		fmt.Println(read())
	}
	fmt.Printf("%+v\n", r.Status().Error)
	// Output:
	// [3005][Motion error.]
	// [1011][The robot is in error.]
	// [2005][The error was reset.]
	// false
}
