package simulink

import (
	"errors"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawSocket is a non-blocking UDP socket driven by direct system calls, so that
// the loop thread waits with ppoll and reads with recvmsg without the Go
// netpoller hand-off (≈10–15 µs, docs/realtime.md §7) and without allocating:
// the message header, the source address and the control data live here.
type rawSocket struct {
	fd   int
	v6   bool
	pfd  [1]unix.PollFd
	ts   unix.Timespec
	from unix.RawSockaddrAny
	msg  unix.Msghdr
	iov  unix.Iovec
	oob  [rxOOBLen]byte
	oobn int // control bytes of the last datagram read

	// What the kernel granted, read back once at open.
	rcvbuf  int  // SO_RCVBUF as getsockopt reports it
	forced  bool // the buffer was set with SO_RCVBUFFORCE
	rxqOvfl bool // SO_RXQ_OVFL is on: datagrams carry the drop count
}

// openSocket opens a UDP socket bound to bind. A receiving socket
// (recv) asks for a receive buffer of rcvbuf bytes (0 keeps the system's)
// and for the kernel's drop count on each datagram (SO_RXQ_OVFL).
func openSocket(bind netip.AddrPort, v6, recv bool, rcvbuf int) (*rawSocket, error) {
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
	s.msg.Name = (*byte)(unsafe.Pointer(&s.from))
	s.msg.Iov = &s.iov
	s.msg.Iovlen = 1
	s.msg.Control = &s.oob[0]
	if recv {
		if err := s.setupReceive(rcvbuf); err != nil {
			s.close()
			return nil, err
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

// setupReceive sizes the receive buffer and asks for the drop count.
func (s *rawSocket) setupReceive(rcvbuf int) error {
	if rcvbuf > 0 {
		// SO_RCVBUFFORCE passes net.core.rmem_max but needs CAP_NET_ADMIN
		// (docs/realtime.md §7.2); without it SO_RCVBUF takes what the
		// kernel allows. The kernel doubles either for its bookkeeping.
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf); err == nil {
			s.forced = true
		} else if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); err != nil {
			return fmt.Errorf("simulink: receive buffer of %d bytes (SO_RCVBUF): %w", rcvbuf, err)
		}
	}
	got, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return fmt.Errorf("simulink: read back the receive buffer (SO_RCVBUF): %w", err)
	}
	s.rcvbuf = got
	// Without it, datagrams the kernel drops on a full buffer are counted
	// nowhere but in /proc; a kernel that refuses it costs only that count.
	s.rxqOvfl = unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1) == nil
	return nil
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
// queued. The datagram's control data is then in control().
func (s *rawSocket) recv(b []byte, want netip.Addr) (n int, match, ok bool, err error) {
	for {
		s.iov.Base = unsafe.SliceData(b)
		s.iov.SetLen(len(b))
		s.msg.Namelen = uint32(unsafe.Sizeof(s.from))
		s.msg.SetControllen(len(s.oob))
		s.msg.Flags = 0
		r, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.msg)),
			uintptr(unix.MSG_DONTWAIT|unix.MSG_TRUNC))
		switch errno {
		case 0:
			s.oobn = int(s.msg.Controllen)
			return int(r), s.fromMatches(want), true, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			s.oobn = 0
			return 0, false, false, nil
		default:
			s.oobn = 0
			return 0, false, false, errno
		}
	}
}

// control returns the control data of the datagram recv read last.
func (s *rawSocket) control() []byte { return s.oob[:min(s.oobn, len(s.oob))] }

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
