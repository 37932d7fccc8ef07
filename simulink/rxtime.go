package simulink

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Control-message layout of this platform (<sys/socket.h>): a header of a
// size_t length and two ints, each message and its data aligned to
// sizeof(long).
const (
	cmsgAlign   = int(unsafe.Sizeof(uintptr(0)))
	cmsgLenSize = int(unsafe.Sizeof(unix.Cmsghdr{}.Len))
	cmsgHdrLen  = int(unsafe.Sizeof(unix.Cmsghdr{}))
	// timespecLen is the old struct timespec of SCM_TIMESTAMPNS: two longs.
	timespecLen = int(unsafe.Sizeof(unix.Timespec{}))
	// kernelTimespecLen is struct __kernel_timespec of SO_TIMESTAMPNS_NEW:
	// two 64-bit values on every platform.
	kernelTimespecLen = 16
	// rxOOBLen holds one timestamp or drop-count message with room to
	// spare, should the kernel add another (it reports MSG_CTRUNC and we
	// lose only that one).
	rxOOBLen = 64
)

func cmsgAlignUp(n int) int { return (n + cmsgAlign - 1) &^ (cmsgAlign - 1) }

// enableKernelTimestamps asks the kernel to stamp every datagram received on
// c with its arrival time (SO_TIMESTAMPNS).
func enableKernelTimestamps(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("simulink: SO_TIMESTAMPNS: %w", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return fmt.Errorf("simulink: SO_TIMESTAMPNS: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("simulink: SO_TIMESTAMPNS: %w", serr)
	}
	return nil
}

// kernelTimestamp returns the arrival time, in ns since the Unix epoch
// (CLOCK_REALTIME), carried by the first SCM_TIMESTAMPNS message of oob, the
// control data of one recvmsg. ok is false if there is none, or if it or a
// message before it is malformed. It allocates nothing and reads oob byte
// by byte, so that it accepts any alignment and any garbage.
func kernelTimestamp(oob []byte) (ns int64, ok bool) {
	typ, data, ok := socketCmsg(oob, unix.SO_TIMESTAMPNS_OLD, unix.SO_TIMESTAMPNS_NEW)
	switch {
	case !ok:
		return 0, false
	case typ == unix.SO_TIMESTAMPNS_OLD: // SCM_TIMESTAMPNS: struct timespec
		return timespecNs(data, timespecLen/2)
	}
	return timespecNs(data, kernelTimespecLen/2)
}

// rxqOverflow returns the socket's drop count carried by the first
// SO_RXQ_OVFL message of oob: a native uint32 the kernel stamps on each
// datagram as it queues it, counting every datagram it has dropped on that
// socket so far (socket(7)). The kernel sends none while the count is 0. ok
// is false if there is none, or if it or a message before it is malformed.
// It allocates nothing and accepts any alignment and any garbage.
func rxqOverflow(oob []byte) (drops uint32, ok bool) {
	_, data, ok := socketCmsg(oob, unix.SO_RXQ_OVFL, unix.SO_RXQ_OVFL)
	if !ok || len(data) < 4 {
		return 0, false
	}
	return binary.NativeEndian.Uint32(data), true
}

// socketCmsg walks oob, the control data of one recvmsg, to the first
// SOL_SOCKET message of type t1 or t2 and returns its type and data. ok is
// false if there is none, or if it or a message before it is malformed.
func socketCmsg(oob []byte, t1, t2 int32) (typ int32, data []byte, ok bool) {
	for len(oob) >= cmsgHdrLen {
		var l uint64
		if cmsgLenSize == 8 {
			l = binary.NativeEndian.Uint64(oob)
		} else {
			l = uint64(binary.NativeEndian.Uint32(oob))
		}
		if l < uint64(cmsgHdrLen) || l > uint64(len(oob)) {
			return 0, nil, false
		}
		level := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize+4:]))
		if level == unix.SOL_SOCKET && (typ == t1 || typ == t2) {
			return typ, oob[cmsgAlignUp(cmsgHdrLen):l], true
		}
		next := cmsgAlignUp(int(l))
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return 0, nil, false
}

// timespecNs decodes a timespec of two native integers of size bytes each.
func timespecNs(b []byte, size int) (int64, bool) {
	if len(b) < 2*size {
		return 0, false
	}
	var sec, nsec int64
	if size == 8 {
		sec, nsec = int64(binary.NativeEndian.Uint64(b)), int64(binary.NativeEndian.Uint64(b[8:]))
	} else {
		sec, nsec = int64(int32(binary.NativeEndian.Uint32(b))), int64(int32(binary.NativeEndian.Uint32(b[4:])))
	}
	const maxSec = (math.MaxInt64 - 999_999_999) / 1_000_000_000 // sec·1e9 + nsec fits
	if sec < 0 || sec > maxSec || nsec < 0 || nsec >= 1e9 {
		return 0, false
	}
	return sec*1e9 + nsec, true
}
