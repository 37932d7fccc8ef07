package testutil

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
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
