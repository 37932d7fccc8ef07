// Package pty opens Linux pseudo-terminal pairs, the stand-in for a USB
// serial adapter in tests and simulators (docs/dynamixel.md §15): a program
// that opens the slave path with a serial library goes through the real
// termios path, while the master side plays the device.
package pty

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ptmx is the Unix 98 pseudo-terminal multiplexer.
const ptmx = "/dev/ptmx"

// Open creates a pseudo-terminal pair and returns its master side and the
// path of its slave side (/dev/pts/N). The slave starts in raw mode (8 bits,
// no echo, no line editing), so bytes pass unchanged whoever opens it.
//
// Nothing but the master stays open. Closing the master hangs up the slave,
// which is how a test stands in for an unplugged adapter. While no one has
// the slave open, reading the master fails with EIO; a simulator that must
// outlive its clients' close and reopen keeps its own descriptor of the slave.
func Open() (master *os.File, slavePath string, err error) {
	// O_NOCTTY: the pair must never become this process's controlling terminal.
	m, err := os.OpenFile(ptmx, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, "", fmt.Errorf("pty: open %s: %w", ptmx, err)
	}
	// SyscallConn rather than Fd, which would put the master in blocking mode
	// and disable its deadlines.
	rc, err := m.SyscallConn()
	if err != nil {
		m.Close()
		return nil, "", fmt.Errorf("pty: %s: %w", ptmx, err)
	}
	var n uint32
	var opErr error
	err = rc.Control(func(fd uintptr) {
		opErr = setup(int(fd), &n)
	})
	if err == nil {
		err = opErr
	}
	if err != nil {
		m.Close()
		return nil, "", err
	}
	return m, "/dev/pts/" + strconv.FormatUint(uint64(n), 10), nil
}

// setup unlocks the slave (unlockpt), reads its number (ptsname) and makes it
// raw. Termios requests on a master act on its slave.
func setup(fd int, n *uint32) error {
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return fmt.Errorf("pty: unlock slave: %w", err)
	}
	num, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		return fmt.Errorf("pty: slave number: %w", err)
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("pty: /dev/pts/%d: get termios: %w", num, err)
	}
	makeRaw(t)
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return fmt.Errorf("pty: /dev/pts/%d: set raw mode: %w", num, err)
	}
	*n = num
	return nil
}

// makeRaw is cfmakeraw(3).
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

// ErrNotLink is a link path that exists and is not a symbolic link; Link
// never replaces a real file.
var ErrNotLink = errors.New("pty: path exists and is not a symbolic link")

// Link makes linkPath a symbolic link to slavePath, a stable name for a
// client's configuration (like /dev/serial/by-id for a real adapter). An
// existing symbolic link at linkPath is replaced atomically, so a restarted
// simulator takes its name back without a moment where it is missing.
func Link(slavePath, linkPath string) error {
	if fi, err := os.Lstat(linkPath); err == nil && fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("%w: %s", ErrNotLink, linkPath)
	}
	tmp := filepath.Join(filepath.Dir(linkPath), "."+filepath.Base(linkPath)+".tmp"+strconv.Itoa(os.Getpid()))
	os.Remove(tmp) // left over by a crashed process of the same pid, if any
	if err := os.Symlink(slavePath, tmp); err != nil {
		return fmt.Errorf("pty: link %s -> %s: %w", linkPath, slavePath, err)
	}
	if err := os.Rename(tmp, linkPath); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pty: link %s -> %s: %w", linkPath, slavePath, err)
	}
	return nil
}

// Baud returns the line rate the client last set on the slave (its output
// speed, bit/s), read through the master: a pseudo-terminal keeps the rate a
// client sets, though nothing paces its bytes, so a simulator can answer
// only at the rate its devices use. TCGETS2 gives the rate as a number,
// standard (B1000000) or not (BOTHER, 4500000) alike.
func Baud(master *os.File) (int, error) {
	rc, err := master.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("pty: %s: %w", master.Name(), err)
	}
	var t *unix.Termios
	var opErr error
	if err := rc.Control(func(fd uintptr) {
		t, opErr = unix.IoctlGetTermios(int(fd), unix.TCGETS2)
	}); err != nil {
		// Control fails only on a closed file; say so as Read does.
		return 0, fmt.Errorf("pty: %s: %w", master.Name(), os.ErrClosed)
	}
	if opErr != nil {
		return 0, fmt.Errorf("pty: %s: get line rate: %w", master.Name(), opErr)
	}
	return int(t.Ospeed), nil
}
