package simulink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"github.com/labbridge/bridge/realtime"
	"golang.org/x/sys/unix"
)

// partnerRT holds the sockets of a partner whose receive loop runs on a
// locked SCHED_FIFO thread (PartnerConfig.Priority): raw non-blocking
// sockets outside the netpoller, waited on with ppoll as the master's are,
// so that a measurement wakes the thread itself, at its priority, instead of
// a SCHED_OTHER netpoller thread that must then be scheduled behind every
// other runnable thread of the machine (docs/realtime.md §7.3).
type partnerRT struct {
	rx, tx  *rawSocket
	replySA unix.Sockaddr
	// wake is an eventfd that Close and Serve's cancellation write to, so
	// that the thread's ppoll returns at once; it stays open until the
	// sockets are released, after the thread has returned.
	wake int
	pfd  [2]unix.PollFd // rx, wake: receive thread only
}

// probeFIFO reports whether a thread of this process may run SCHED_FIFO at
// priority: it sets it on a throwaway locked thread, which the runtime
// discards when the goroutine exits locked, so no thread of the pool keeps
// the policy.
func probeFIFO(priority int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		_, warns := realtime.SetupThread(realtime.ThreadConfig{Priority: priority, CPU: -1})
		errc <- errors.Join(warns...)
	}()
	return <-errc
}

// bindRT opens the raw listen and reply sockets of the FIFO mode; the
// caller holds sock and no serving goroutine runs.
func (p *Partner) bindRT(listen netip.AddrPort) error {
	rx, err := openSocket(listen, listen.Addr().Is6(), true, 0)
	if err != nil {
		return fmt.Errorf("simulink: partner listen on %v: %w", listen, err)
	}
	kernel := p.kernelStamps && p.stamping(unix.SetsockoptInt(rx.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1), listen)
	to := p.replyTo.Addr().Unmap()
	wild := wildcard(to)
	tx, err := openSocket(netip.AddrPortFrom(wild, 0), to.Is6(), false, 0)
	if err != nil {
		rx.close()
		return fmt.Errorf("simulink: partner reply socket: %w", err)
	}
	src, err := replySource(p.replyTo)
	if err != nil {
		rx.close()
		tx.close()
		return err
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		rx.close()
		tx.close()
		return fmt.Errorf("simulink: partner wake-up eventfd: %w", err)
	}
	rt := &partnerRT{rx: rx, tx: tx, replySA: sockaddr(netip.AddrPortFrom(to, p.replyTo.Port()), to.Is6()), wake: wake}
	rt.pfd[0] = unix.PollFd{Fd: int32(rx.fd), Events: unix.POLLIN}
	rt.pfd[1] = unix.PollFd{Fd: int32(wake), Events: unix.POLLIN}
	bound, err := rx.localAddr()
	if err != nil {
		rt.close()
		return err
	}
	txAddr, err := tx.localAddr()
	if err != nil {
		rt.close()
		return err
	}
	p.rt, p.open = rt, true
	p.setClock(kernel)
	if !p.addr.IsValid() {
		p.addr = partnerUnmap(bound)
	}
	p.replyAddr = netip.AddrPortFrom(src, txAddr.Port())
	return nil
}

func (rt *partnerRT) close() error {
	return errors.Join(rt.rx.close(), rt.tx.close(), unix.Close(rt.wake))
}

// kick wakes the receive thread's ppoll; the thread then returns. The
// caller makes sure the eventfd is still open (it is until release).
func (rt *partnerRT) kick() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(rt.wake, one[:])
}

// replySource returns the source address the kernel picks for datagrams to
// to: a connected probe, which sends nothing, tells which one the master
// will see.
func replySource(to netip.AddrPort) (netip.Addr, error) {
	a := to.Addr().Unmap()
	family := unix.AF_INET
	if a.Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("simulink: partner ReplyTo %v: socket: %w", to, err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, sockaddr(netip.AddrPortFrom(a, to.Port()), a.Is6())); err != nil {
		return netip.Addr{}, fmt.Errorf("simulink: partner ReplyTo %v unreachable: %w", to, err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("simulink: partner ReplyTo %v: getsockname: %w", to, err)
	}
	switch s := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(s.Addr), nil
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(s.Addr).Unmap(), nil
	}
	return netip.Addr{}, fmt.Errorf("simulink: partner ReplyTo %v: unexpected source address %T", to, sa)
}

// rtLoop is the receive thread of the FIFO mode: it locks its OS thread for
// good (its scheduling changes, so the runtime must discard it with the
// goroutine), raises it to the partner's priority, and answers datagrams
// until the wake-up eventfd is written.
func (p *Partner) rtLoop() error {
	runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
	th, warns := realtime.SetupThread(realtime.ThreadConfig{
		Priority: p.priority, CPU: p.cpu, TimerSlack: time.Nanosecond,
		Budget: p.budget[0], BudgetPeriod: p.budget[1],
	})
	for _, w := range warns {
		// NewPartner's probe succeeded, so this is rare (a changed limit):
		// the loop runs with what it got.
		p.log.Warn("simulink: partner: receive thread set-up incomplete, running without it", "listen", p.addr, "err", w)
	}
	s := th.Settings()
	p.thread.Store(&s)
	p.tid.Store(int64(unix.Gettid()))
	defer func() {
		_ = th.Close()
		p.tid.Store(0)
	}()
	w, gerr := p.guard.Watch(th, realtime.GuardThreshold(p.period))
	if gerr != nil {
		p.log.Warn("simulink: partner: receive thread runs without its spin guard", "listen", p.addr, "err", gerr)
	}
	defer w.Release()
	rt := p.rt
	for {
		// The next datagram is due within a period: no look before.
		w.MarkAfter(p.period)
		w.Check()
		if _, err := unix.Ppoll(rt.pfd[:], nil, nil); err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("simulink: partner wait on %v: %w", p.addr, err)
		}
		w.MarkNow()
		w.Check()
		if rt.pfd[1].Revents != 0 {
			return nil // Close or cancellation
		}
		if rt.pfd[0].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 && rt.pfd[0].Revents&unix.POLLIN == 0 {
			return fmt.Errorf("simulink: partner wait on %v: socket error (poll events %#x)", p.addr, rt.pfd[0].Revents)
		}
		for {
			more, err := p.receiveRT()
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
	}
}

// receiveRT reads, timestamps and answers one queued datagram without
// blocking; more is false when none was queued. It allocates nothing.
func (p *Partner) receiveRT() (more bool, err error) {
	rx := p.rt.rx
	n, _, ok, err := rx.recv(p.rbuf, netip.Addr{})
	if err != nil {
		return false, fmt.Errorf("simulink: partner receive on %v: %w", p.addr, err)
	}
	if !ok {
		return false, nil
	}
	var ns int64
	timed := true
	if p.kernelClock {
		ns, timed = kernelTimestamp(rx.control())
	} else {
		ns = p.monoNow()
	}
	// MSG_TRUNC reports an oversized datagram's real length; the buffer
	// holds one byte more than a measurement, so it shows as oversized.
	m := p.processAt(p.rbuf[:min(n, len(p.rbuf))], rx.fromAddrPort(), p.wbuf, ns, timed)
	if m == 0 {
		return true, nil
	}
	if p.faults == nil {
		p.write(p.wbuf[:m])
	} else {
		p.emitFaulty(p.wbuf[:m])
	}
	return true, nil
}

// fromAddrPort returns the source of the datagram recv read last, without
// allocating.
func (s *rawSocket) fromAddrPort() netip.AddrPort {
	switch s.from.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&s.from))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), s.fromPort())
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&s.from))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), s.fromPort())
	}
	return netip.AddrPort{}
}

// ThreadSettings returns the scheduling the receive loop runs with: what
// the FIFO mode's thread got in the current or last Serve, SCHED_OTHER on
// the netpoller (PartnerConfig.Priority 0, or not permitted) or before the
// first Serve.
func (p *Partner) ThreadSettings() realtime.Settings {
	if s := p.thread.Load(); s != nil {
		return *s
	}
	return realtime.Settings{Policy: "SCHED_OTHER", CPU: -1}
}

// threadID returns the kernel id of the FIFO mode's receive thread while it
// runs, 0 otherwise.
func (p *Partner) threadID() int { return int(p.tid.Load()) }
