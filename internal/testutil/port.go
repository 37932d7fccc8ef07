package testutil

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// ClosedTCPPort reserves a loopback TCP port that refuses connections (a
// socket bound but not listening: connects get RST) until listen is
// called, which starts listening on that very port. A test of "the peer
// is not there yet" so never closes a port and binds it again, which
// another program could take in between.
func ClosedTCPPort(t testing.TB) (addr string, listen func() net.Listener) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("testutil: a TCP socket: %v", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatalf("testutil: binding 127.0.0.1:0: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatalf("testutil: the bound port: %v", err)
	}
	addr = fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	f := os.NewFile(uintptr(fd), "tcp "+addr)
	t.Cleanup(func() { f.Close() })
	return addr, func() net.Listener {
		t.Helper()
		if err := syscall.Listen(fd, syscall.SOMAXCONN); err != nil {
			t.Fatalf("testutil: listening on %s: %v", addr, err)
		}
		ln, err := net.FileListener(f) // a dup: the listener owns its own descriptor
		if err != nil {
			t.Fatalf("testutil: a listener on %s: %v", addr, err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln
	}
}

// ClosedUDPPort returns a loopback UDP socket whose port takes no datagram
// (the sender gets "port unreachable", as if nobody were there) until open
// is called; from then on it receives what is sent to it. It is connected
// to 127.0.0.1:1, which sends nothing, so the kernel finds no socket for
// other senders; open dissolves that association (connect(2), AF_UNSPEC).
// The port is bound by number (through a first socket bound to port 0 and
// shared with SO_REUSEPORT), so that the disconnect keeps it.
func ClosedUDPPort(t testing.TB) (conn *net.UDPConn, open func()) {
	t.Helper()
	lo := [4]byte{127, 0, 0, 1}
	sock := func(port int) int {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
		if err == nil {
			err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soReusePort, 1)
			if err == nil {
				err = syscall.Bind(fd, &syscall.SockaddrInet4{Addr: lo, Port: port})
			}
			if err == nil {
				err = syscall.Connect(fd, &syscall.SockaddrInet4{Addr: lo, Port: 1})
			}
			if err != nil {
				syscall.Close(fd)
			}
		}
		if err != nil {
			t.Fatalf("testutil: a UDP socket on 127.0.0.1:%d: %v", port, err)
		}
		return fd
	}
	first := sock(0)
	sa, err := syscall.Getsockname(first)
	if err != nil {
		syscall.Close(first)
		t.Fatalf("testutil: the bound port: %v", err)
	}
	fd := sock(sa.(*syscall.SockaddrInet4).Port)
	syscall.Close(first)
	f := os.NewFile(uintptr(fd), "udp")
	defer f.Close()
	pc, err := net.FilePacketConn(f)
	if err != nil {
		t.Fatalf("testutil: a UDP conn: %v", err)
	}
	conn = pc.(*net.UDPConn)
	t.Cleanup(func() { conn.Close() })
	return conn, func() {
		t.Helper()
		rc, err := conn.SyscallConn()
		if err != nil {
			t.Fatalf("testutil: opening %v: %v", conn.LocalAddr(), err)
		}
		var errno syscall.Errno
		if err := rc.Control(func(fd uintptr) {
			var unspec [16]byte // a sockaddr whose family is AF_UNSPEC (0)
			_, _, errno = syscall.Syscall(syscall.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&unspec)), uintptr(len(unspec)))
		}); err != nil || errno != 0 {
			t.Fatalf("testutil: opening %v: %v %v", conn.LocalAddr(), err, errno)
		}
	}
}

// soReusePort is SO_REUSEPORT on Linux, which package syscall lacks.
const soReusePort = 0xf
