package simulink

import (
	"errors"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSocket is a non-blocking UDP socket driven by direct system calls, so that
// the loop thread waits with ppoll and reads with recvfrom without the Go
// netpoller hand-off (≈10–15 µs, docs/realtime.md §7) and without allocating.
type rawSocket struct {
	fd   int
	v6   bool
	pfd  [1]unix.PollFd
	ts   unix.Timespec
	from unix.RawSockaddrAny
	flen uint32
}

func openSocket(bind netip.AddrPort, v6 bool, rcvbuf int) (*rawSocket, error) {
	family := unix.AF_INET
	if v6 {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("simulink: socket: %w", err)
	}
	s := &rawSocket{fd: fd, v6: v6}
	s.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	if rcvbuf > 0 {
		// A small buffer drops stale replies instead of queueing them (docs/realtime.md §7.2).
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); err != nil {
			s.close()
			return nil, fmt.Errorf("simulink: SO_RCVBUF %d: %w", rcvbuf, err)
		}
	}
	if err := unix.Bind(fd, sockaddr(bind, v6)); err != nil {
		s.close()
		if errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("simulink: bind %v: %w (another bridge, emioapi or Simulink already uses this port)", bind, err)
		}
		return nil, fmt.Errorf("simulink: bind %v: %w", bind, err)
	}
	return s, nil
}

func (s *rawSocket) close() error {
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// localAddr returns the bound address (the port the kernel chose for port 0).
func (s *rawSocket) localAddr() (netip.AddrPort, error) {
	sa, err := unix.Getsockname(s.fd)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("simulink: getsockname: %w", err)
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)), nil
	}
	return netip.AddrPort{}, fmt.Errorf("simulink: getsockname: unexpected address %T", sa)
}

// sockaddr converts ap for a socket of the given family; IPv4 addresses are
// mapped into IPv6 for an IPv6 socket.
func sockaddr(ap netip.AddrPort, v6 bool) unix.Sockaddr {
	if v6 {
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
}

// send writes one datagram to a prepared address. sendto on a UDP socket never
// blocks for long; EAGAIN (full send buffer) is returned to the caller.
func (s *rawSocket) send(b []byte, to unix.Sockaddr) error {
	for {
		err := unix.Sendto(s.fd, b, 0, to)
		if err != unix.EINTR {
			return err
		}
	}
}

// wait blocks until the socket is readable or timeoutNs elapses. It reports
// whether the socket is readable.
func (s *rawSocket) wait(timeoutNs int64) (bool, error) {
	if timeoutNs < 0 {
		timeoutNs = 0
	}
	s.ts = unix.NsecToTimespec(timeoutNs)
	n, err := unix.Ppoll(s.pfd[:], &s.ts, nil)
	if err == unix.EINTR {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return n > 0, nil
}

// recv reads one datagram without blocking. It returns the datagram's full
// length (MSG_TRUNC: an oversized datagram reports its real size) and whether
// its source matches want's address (any port). ok is false when nothing is
// queued.
func (s *rawSocket) recv(b []byte, want netip.Addr) (n int, match, ok bool, err error) {
	for {
		s.flen = uint32(unsafe.Sizeof(s.from))
		r, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd),
			uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)),
			uintptr(unix.MSG_DONTWAIT|unix.MSG_TRUNC),
			uintptr(unsafe.Pointer(&s.from)), uintptr(unsafe.Pointer(&s.flen)))
		switch errno {
		case 0:
			return int(r), s.fromMatches(want), true, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, false, false, nil
		default:
			return 0, false, false, errno
		}
	}
}

// fromPort returns the source port of the datagram recv read last.
func (s *rawSocket) fromPort() uint16 {
	var p [2]byte
	switch s.from.Addr.Family {
	case unix.AF_INET:
		p = *(*[2]byte)(unsafe.Pointer(&(*unix.RawSockaddrInet4)(unsafe.Pointer(&s.from)).Port))
	case unix.AF_INET6:
		p = *(*[2]byte)(unsafe.Pointer(&(*unix.RawSockaddrInet6)(unsafe.Pointer(&s.from)).Port))
	default:
		return 0
	}
	return uint16(p[0])<<8 | uint16(p[1]) // network byte order
}

func (s *rawSocket) fromMatches(want netip.Addr) bool {
	if !want.IsValid() || want.IsUnspecified() {
		return true
	}
	switch s.from.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&s.from))
		w := want.Unmap()
		return w.Is4() && w.As4() == sa.Addr
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&s.from))
		got := netip.AddrFrom16(sa.Addr).Unmap()
		return got == want.Unmap()
	}
	return false
}
