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
	// rxOOBLen holds one timestamp message with room to spare, should the
	// kernel add another (it reports MSG_CTRUNC and we lose only that one).
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
	for len(oob) >= cmsgHdrLen {
		var l uint64
		if cmsgLenSize == 8 {
			l = binary.NativeEndian.Uint64(oob)
		} else {
			l = uint64(binary.NativeEndian.Uint32(oob))
		}
		if l < uint64(cmsgHdrLen) || l > uint64(len(oob)) {
			return 0, false
		}
		level := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize+4:]))
		if level == unix.SOL_SOCKET {
			data := oob[cmsgAlignUp(cmsgHdrLen):l]
			switch typ {
			case unix.SO_TIMESTAMPNS_OLD: // SCM_TIMESTAMPNS: struct timespec
				return timespecNs(data, timespecLen/2)
			case unix.SO_TIMESTAMPNS_NEW:
				return timespecNs(data, kernelTimespecLen/2)
			}
		}
		next := cmsgAlignUp(int(l))
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return 0, false
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
