package simulink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labbridge/bridge/plant"
	"github.com/labbridge/bridge/realtime"
)

// PartnerConfig configures a Partner. The defaults of the protocol are a
// Listen of 127.0.0.1:25000, an Accept of 127.0.0.1:9090 and a ReplyTo of
// 127.0.0.1:25001; the lengths are the plant's (7 and 4 on the Emio with one
// marker).
type PartnerConfig struct {
	// Listen is where measurements arrive; port 0 picks an ephemeral port.
	Listen netip.AddrPort
	// Accept filters measurements by source, like the model's UDP Receive
	// block: the zero AddrPort accepts any source, port 0 any port of the
	// address.
	Accept netip.AddrPort
	// ReplyTo is where replies go. They are sent from an ephemeral port, as
	// Simulink's UDP Send does.
	ReplyTo netip.AddrPort
	// MeasureLen is the number of payload values per measurement.
	MeasureLen int
	// CommandLen is the number of payload values per reply.
	CommandLen int
	// Delay selects the one-tick-delay mode: seq k is answered with
	// [k−1, u computed from measurement k−1] (status OK at the master). The
	// default echo mode answers [seq if seq > 0 else −1, u] (OK_NO_DELAY), as
	// the shipped models' Switch does. Delay mode is a one-step delay line: if
	// a measurement went missing the reply carries the seq last received, and
	// a handshake empties the line (the next reply is [−1, held u]).
	Delay bool
	// Controller computes the command; nil commands zeros (a model whose
	// output is not wired, which is all a partner knows without the plant's
	// Dims).
	Controller Controller
	// Faults injects faults into the replies; nil injects none.
	Faults *Faults
	// Logger receives start and stop messages; nil discards them.
	Logger *slog.Logger
	// Priority, 1..99, runs the receive loop on a locked OS thread at this
	// SCHED_FIFO priority, waiting with ppoll on raw sockets, as the
	// master's loop does; a built-in partner takes its link loop's. 0, or a
	// process not permitted SCHED_FIFO (NewPartner warns once), receives on
	// a goroutine through the netpoller, whose wake-up waits behind every
	// runnable thread of a busy machine (docs/realtime.md §7.3).
	Priority int
	// Pin, with Priority, pins the receive thread to CPU, as a link pins
	// its loop (a built-in partner takes its loop's CPU); false leaves the
	// thread's affinity alone.
	Pin bool
	CPU int
	// Budget, with Priority and not Pin, runs the receive thread under
	// SCHED_DEADLINE with Budget of CPU time every BudgetPeriod, as a
	// link runs its loop (realtime.ThreadConfig.Budget; a built-in partner
	// takes its loop's), falling back to SCHED_FIFO Priority when the
	// kernel refuses. 0 is SCHED_FIFO.
	Budget, BudgetPeriod time.Duration
	// Guard, with Priority, watches the receive thread as a link's loop is
	// watched (bridge.LoopConfig.Guard): demoted while it runs past
	// realtime.GuardThreshold(Period) outside its own code, restored after
	// its next datagram. Period is the link's: a datagram is due within it,
	// so the guard looks at a thread waiting for one only after it. nil:
	// no guard.
	Guard  *realtime.SpinGuard
	Period time.Duration
}

// PartnerStats are a Partner's counters since NewPartner.
type PartnerStats struct {
	Received   uint64 // datagrams read, whatever became of them
	Replied    uint64 // reply datagrams sent (a duplicate counts twice)
	Handshakes uint64 // accepted datagrams with seq < 0
	Dropped    uint64 // wrong size, wrong source, NaN/±Inf or seq beyond ±2^53
	Faulted    uint64 // datagrams affected by fault injection or discarded while paused
	SendErrors uint64 // replies the socket refused
	LastSeq    int64  // seq of the last accepted datagram; −1 before the first
}

var (
	// ErrPartnerConfig reports an invalid PartnerConfig; the error is a
	// *PartnerConfigError naming the field.
	ErrPartnerConfig = errors.New("simulink: invalid partner config")
	// ErrPartnerClosed reports a Serve after Close. It wraps
	// plant.ErrPermanent: a supervisor does not retry it.
	ErrPartnerClosed = fmt.Errorf("simulink: partner closed (%w)", plant.ErrPermanent)
	// ErrPartnerServing reports a Serve while another Serve runs.
	ErrPartnerServing = errors.New("simulink: partner already serving")
)

// PartnerConfigError names the bad PartnerConfig field and the allowed values.
type PartnerConfigError struct {
	Field  string // e.g. "MeasureLen" or "Faults.Drop"
	Reason string
}

func (e *PartnerConfigError) Error() string { return "simulink: partner " + e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrPartnerConfig) hold.
func (e *PartnerConfigError) Unwrap() error { return ErrPartnerConfig }

// partnerMaxLen bounds MeasureLen and CommandLen so that a datagram, plus the
// extra value of a WrongSize fault, fits the largest UDP payload (65507 B).
const partnerMaxLen = 65507/ValueSize - 2

// Partner plays the host side of the protocol: what a shipped Simulink model
// does at the other end of the emioapi bridge (docs/simulink-udp.md §9.1). It
// answers each measurement with one command, without allocating.
type Partner struct {
	measureLen            int
	acceptAny, acceptPort bool
	accept                netip.AddrPort // unmapped
	replyTo               netip.AddrPort
	delay                 bool
	log                   *slog.Logger
	epoch                 time.Time
	// priority > 0 is the FIFO mode: rt's raw sockets, served by rtLoop.
	// Never a locked goroutine on the netpoller: the hand-off to a locked
	// thread costs more than it saves (docs/realtime.md §7).
	priority int
	cpu      int                               // the receive thread's CPU; -1 none
	budget   [2]time.Duration                  // the receive thread's SCHED_DEADLINE budget and period; 0 none
	guard    *realtime.SpinGuard               // watches the receive thread; nil none
	period   time.Duration                     // the link's, with guard
	thread   atomic.Pointer[realtime.Settings] // what rtLoop's thread got
	tid      atomic.Int64                      // rtLoop's thread while it runs

	// sock guards the sockets' lifecycle: bound by NewPartner, closed when
	// Serve returns, bound again on the same address by the next Serve,
	// closed for good by Close. The serving goroutines read rx and tx
	// without it: they are set only while none runs.
	sock   sync.Mutex
	rx, tx *net.UDPConn // netpoller mode
	rt     *partnerRT   // FIFO mode
	open   bool
	// released is closed by a FIFO-mode Serve once it has released the
	// sockets, for a Close that stopped it; nil while none serves.
	released  chan struct{}
	closed    bool
	addr      netip.AddrPort // fixed by NewPartner, kept across Serves
	replyAddr netip.AddrPort

	rbuf, wbuf []byte // receive goroutine only
	oob        []byte // receive goroutine only: the control data of one read

	// kernelStamps asks bind for kernel receive timestamps; only tests turn
	// it off, to exercise the fallback. kernelClock says whether bind got
	// them; like rx, it is set only while no serving goroutine runs.
	kernelStamps, kernelClock bool
	timing                    SendTiming

	// mu guards the model state against Restart and Command, which run on
	// other goroutines; uncontended, it costs a few ns per datagram.
	mu      sync.Mutex
	ctl     Controller
	y       []float64 // the last accepted payload
	u       []float64 // controller output
	ubak    []float64 // u before Step, restored if a controller yields NaN
	sent    []float64 // payload of the last reply; what the model outputs
	prevU   []float64 // delay mode: the output computed for prevSeq
	prevSeq int64
	hasPrev bool

	faults *faultInjector // nil without Faults

	received, replied, handshakes, dropped, faulted, sendErrors atomic.Uint64
	lastSeq                                                     atomic.Int64

	serving atomic.Bool
}

// zeros is the controller of a partner given none: it commands zeros.
type zeros struct{}

func (zeros) Reset()                       {}
func (zeros) Step(_ int64, _, u []float64) { clear(u) }

// dimsController is implemented by the controllers of this package, so that a
// size mismatch is an error at start-up rather than a silent hold.
type dimsController interface {
	Dims() (measureLen, commandLen int)
}

// NewPartner validates cfg and binds both sockets, so that Addr and ReplyAddr
// are known before Serve.
func NewPartner(cfg PartnerConfig) (*Partner, error) { return newPartner(cfg, true) }

// newPartner is NewPartner; kernelStamps false times the master's sends with
// the user-space clock, as when the kernel refuses SO_TIMESTAMPNS.
func newPartner(cfg PartnerConfig, kernelStamps bool) (*Partner, error) {
	return newPartnerProbe(cfg, kernelStamps, probeFIFO)
}

// newPartnerProbe is newPartner with the check that SCHED_FIFO at a
// priority is permitted (tests refuse it, as an unprivileged process is).
func newPartnerProbe(cfg PartnerConfig, kernelStamps bool, probe func(priority int) error) (*Partner, error) {
	if err := validatePartnerConfig(&cfg); err != nil {
		return nil, err
	}
	p := &Partner{
		cpu:        -1,
		measureLen: cfg.MeasureLen,
		acceptAny:  !cfg.Accept.Addr().IsValid(),
		acceptPort: cfg.Accept.Port() != 0,
		accept:     netip.AddrPortFrom(cfg.Accept.Addr().Unmap(), cfg.Accept.Port()),
		replyTo:    cfg.ReplyTo,
		delay:      cfg.Delay,
		log:        cfg.Logger,
		epoch:      time.Now(),
		rbuf:       make([]byte, DatagramSize(cfg.MeasureLen)+1), // +1: an oversized datagram shows, not truncated to fit
		wbuf:       make([]byte, DatagramSize(cfg.CommandLen+1)), // +1 value: WrongSize's long reply
		oob:        make([]byte, rxOOBLen),
		ctl:        cfg.Controller,
		y:          make([]float64, cfg.MeasureLen),
		u:          make([]float64, cfg.CommandLen),
		ubak:       make([]float64, cfg.CommandLen),
		sent:       make([]float64, cfg.CommandLen),
		prevU:      make([]float64, cfg.CommandLen),
	}
	p.kernelStamps = kernelStamps
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.ctl == nil {
		p.ctl = zeros{}
	}
	p.lastSeq.Store(-1)
	if cfg.Faults != nil {
		p.faults = newFaultInjector(cfg.Faults, len(p.wbuf))
	}
	if cfg.Priority > 0 {
		if err := probe(cfg.Priority); err != nil {
			p.log.Warn("simulink: partner: SCHED_FIFO not permitted, the receive loop waits on the netpoller; grant LimitRTPRIO or CAP_SYS_NICE for replies within a 1 kHz window on a busy machine",
				"listen", cfg.Listen, "priority", cfg.Priority, "err", err.Error())
		} else {
			p.priority = cfg.Priority
			if cfg.Pin {
				p.cpu = cfg.CPU
			} else {
				p.budget = [2]time.Duration{cfg.Budget, cfg.BudgetPeriod}
			}
			if cfg.Period > 0 {
				p.guard, p.period = cfg.Guard, cfg.Period
			}
		}
	}
	if err := p.bind(cfg.Listen); err != nil {
		return nil, err
	}
	return p, nil
}

func validatePartnerConfig(cfg *PartnerConfig) error {
	bad := func(field, format string, args ...any) error {
		return &PartnerConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if cfg.MeasureLen < 1 || cfg.MeasureLen > partnerMaxLen {
		return bad("MeasureLen", "%d, want 1..%d (the plant's measurement length)", cfg.MeasureLen, partnerMaxLen)
	}
	if cfg.CommandLen < 1 || cfg.CommandLen > partnerMaxLen {
		return bad("CommandLen", "%d, want 1..%d (the plant's command length)", cfg.CommandLen, partnerMaxLen)
	}
	if !cfg.Listen.Addr().IsValid() {
		return bad("Listen", "%v is not set, want an address such as 127.0.0.1:25000", cfg.Listen)
	}
	if !cfg.Accept.Addr().IsValid() && cfg.Accept.Port() != 0 {
		return bad("Accept", "port %d without an address, want host:port, host:0 or unset", cfg.Accept.Port())
	}
	if !cfg.ReplyTo.Addr().IsValid() || cfg.ReplyTo.Addr().IsUnspecified() || cfg.ReplyTo.Port() == 0 {
		return bad("ReplyTo", "%v, want a host and a non-zero port such as 127.0.0.1:25001", cfg.ReplyTo)
	}
	if cfg.Priority < 0 || cfg.Priority > realtime.MaxPriority {
		return bad("Priority", "%d, want 0 (a goroutine on the netpoller) or 1..%d (SCHED_FIFO)", cfg.Priority, realtime.MaxPriority)
	}
	if cfg.Pin && (cfg.CPU < 0 || cfg.CPU >= realtime.MaxCPUs) {
		return bad("CPU", "%d, want a CPU number from 0 to %d", cfg.CPU, realtime.MaxCPUs-1)
	}
	if b := cfg.Budget; b != 0 {
		rt := realtime.ThreadConfig{Priority: cfg.Priority, CPU: -1, Budget: b, BudgetPeriod: cfg.BudgetPeriod}
		if cfg.Pin {
			rt.CPU = cfg.CPU
		}
		if err := rt.Validate(); err != nil {
			return bad("Budget", "%v every %v: %v", b, cfg.BudgetPeriod, err)
		}
	}
	if cfg.Faults != nil {
		if err := cfg.Faults.validate(); err != nil {
			return err
		}
	}
	if d, ok := cfg.Controller.(dimsController); ok {
		m, c := d.Dims()
		if (m != 0 && m != cfg.MeasureLen) || c != cfg.CommandLen {
			return bad("Controller", "built for %d measured and %d command values, config has MeasureLen %d and CommandLen %d", m, c, cfg.MeasureLen, cfg.CommandLen)
		}
	}
	return nil
}

// bind opens the listen socket and the reply socket.
func (p *Partner) bind(listen netip.AddrPort) error {
	listen = netip.AddrPortFrom(listen.Addr().Unmap(), listen.Port())
	if p.priority > 0 {
		return p.bindRT(listen)
	}
	rx, err := net.ListenUDP(partnerNetwork(listen.Addr()), net.UDPAddrFromAddrPort(listen))
	if err != nil {
		return fmt.Errorf("simulink: partner listen on %v: %w", listen, err)
	}
	// The kernel's arrival time of each measurement is free of the
	// receiving goroutine's wake-up delay: the master's send timing, not ours.
	kernel := p.kernelStamps && p.stamping(enableKernelTimestamps(rx), listen)
	// Like Simulink's UDP Send (LocalAddress 0.0.0.0, LocalPort −1): the
	// wildcard address and an ephemeral port.
	to := p.replyTo.Addr().Unmap()
	wild := wildcard(to)
	tx, err := net.ListenUDP(partnerNetwork(to), net.UDPAddrFromAddrPort(netip.AddrPortFrom(wild, 0)))
	if err != nil {
		rx.Close()
		return fmt.Errorf("simulink: partner reply socket: %w", err)
	}
	// The kernel picks the source address per datagram; a connected probe
	// (which sends nothing) tells which one the master will see.
	src, err := net.DialUDP(partnerNetwork(to), nil, net.UDPAddrFromAddrPort(p.replyTo))
	if err != nil {
		rx.Close()
		tx.Close()
		return fmt.Errorf("simulink: partner ReplyTo %v unreachable: %w", p.replyTo, err)
	}
	srcAddr := src.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	src.Close()
	p.rx, p.tx, p.open = rx, tx, true
	p.setClock(kernel)
	if !p.addr.IsValid() { // the first bind fixes the port; rebinds reuse it
		p.addr = partnerUnmap(rx.LocalAddr().(*net.UDPAddr).AddrPort())
	}
	p.replyAddr = netip.AddrPortFrom(srcAddr, tx.LocalAddr().(*net.UDPAddr).AddrPort().Port())
	return nil
}

// setClock records whether the sends are timed by the kernel.
func (p *Partner) setClock(kernel bool) {
	p.kernelClock = kernel
	if kernel {
		p.timing.SetClock(ClockKernel)
	} else {
		p.timing.SetClock(ClockUser)
	}
}

// release closes the sockets if they are open; the caller holds sock. In
// the FIFO mode no serving goroutine may use them any more.
// stamping reports whether kernel receive timestamps were turned on (err
// nil), warning once that send timing falls back to the user-space clock.
func (p *Partner) stamping(err error, listen netip.AddrPort) bool {
	if err != nil {
		p.log.Warn("simulink: partner: no kernel receive timestamps, send timing uses the user-space clock", "listen", listen, "err", err.Error())
		return false
	}
	return true
}

// wildcard is the unspecified address of to's family.
func wildcard(to netip.Addr) netip.Addr {
	if to.Is6() {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}

func (p *Partner) release() error {
	if !p.open {
		return nil
	}
	p.open = false
	if p.priority > 0 {
		return p.rt.close()
	}
	return errors.Join(p.rx.Close(), p.tx.Close())
}

func partnerNetwork(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "udp4"
	}
	return "udp6"
}

func partnerUnmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Addr returns the bound listen address.
func (p *Partner) Addr() netip.AddrPort { return p.addr }

// Priority returns the SCHED_FIFO priority its receive loop runs at: the
// configured one, or 0 (the netpoller) when none was asked for or the
// system refused it.
func (p *Partner) Priority() int { return p.priority }

// ReplyAddr returns the source address of the replies, as the master sees it.
// A Serve after a failure may change its port (Simulink's UDP Send uses an
// ephemeral one too; the master accepts any).
func (p *Partner) ReplyAddr() netip.AddrPort {
	p.sock.Lock()
	defer p.sock.Unlock()
	return p.replyAddr
}

// Stats returns the counters.
func (p *Partner) Stats() PartnerStats {
	return PartnerStats{
		Received:   p.received.Load(),
		Replied:    p.replied.Load(),
		Handshakes: p.handshakes.Load(),
		Dropped:    p.dropped.Load(),
		Faulted:    p.faulted.Load(),
		SendErrors: p.sendErrors.Load(),
		LastSeq:    p.lastSeq.Load(),
	}
}

// SendTiming returns the timing of the master's sends as this partner
// received them, over its whole life (Serves, restarts and handshakes only
// break the chain of consecutive seq). Safe while Serve runs.
func (p *Partner) SendTiming() SendTimingStats { return p.timing.Snapshot() }

// Command copies the payload of the last reply built (before fault
// injection) into dst, up to len(dst) values.
func (p *Partner) Command(dst []float64) {
	p.mu.Lock()
	copy(dst, p.sent)
	p.mu.Unlock()
}

// Restart puts the model back in its start-up state, as stopping and
// starting the Simulink model does: the controller is Reset, the command and
// the one-tick delay go back to zeros. Safe while Serve runs.
func (p *Partner) Restart() {
	p.mu.Lock()
	p.ctl.Reset()
	clear(p.u)
	clear(p.sent)
	clear(p.prevU)
	p.hasPrev = false
	p.mu.Unlock()
	// A stopped model sees no measurements: what follows is a new run.
	p.timing.Break()
}

// Close closes both sockets for good, which stops a running Serve.
// Idempotent; a later Serve returns ErrPartnerClosed.
func (p *Partner) Close() error {
	p.sock.Lock()
	p.closed = true
	if released := p.released; released != nil {
		// FIFO mode: the sockets are closed only once the receive thread
		// and the delay sender have returned, so that no descriptor is
		// closed (and perhaps reused) under a system call; Serve does it.
		p.rt.kick()
		p.sock.Unlock()
		<-released
		return nil
	}
	defer p.sock.Unlock()
	return p.release()
}

// Serve answers measurements until ctx is done or Close is called, then
// closes the sockets and returns nil. A socket failure ends it with an
// error. Serve may be called again after it returned (the supervisor's
// restart): it binds the same listen address again. After Close it returns
// ErrPartnerClosed.
func (p *Partner) Serve(ctx context.Context) error {
	if !p.serving.CompareAndSwap(false, true) {
		return fmt.Errorf("simulink: partner on %v: %w", p.addr, ErrPartnerServing)
	}
	defer p.serving.Store(false)
	if err := p.reopen(); err != nil {
		return err
	}
	p.log.Info("simulink: partner serving", "listen", p.addr, "reply_from", p.ReplyAddr(), "reply_to", p.replyTo, "delay_mode", p.delay)
	stop := make(chan struct{})
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	if p.priority > 0 {
		err := p.serveRT(ctx, stop, errc, &wg)
		p.logStopped(err)
		return err
	}
	wg.Go(func() { errc <- p.receiveLoop() })
	if p.faults != nil && p.faults.delay > 0 {
		wg.Go(func() { p.delayLoop(stop) })
	}
	var err error
	select {
	case <-ctx.Done():
		close(stop)
		p.stopServing() // unblocks the read
		err = <-errc
	case err = <-errc: // Close, or a socket error
		close(stop)
		p.stopServing()
	}
	wg.Wait()
	p.logStopped(err)
	return err
}

// serveRT is Serve in the FIFO mode: the receive thread and the delay
// sender stop first, then the sockets are released, so that no descriptor
// is closed under a system call.
func (p *Partner) serveRT(ctx context.Context, stop chan struct{}, errc chan error, wg *sync.WaitGroup) error {
	released := make(chan struct{})
	p.sock.Lock()
	if p.closed { // a Close between reopen and here released the sockets
		p.sock.Unlock()
		return fmt.Errorf("simulink: partner on %v: Serve after Close: %w", p.addr, ErrPartnerClosed)
	}
	p.released = released
	p.sock.Unlock()
	wg.Go(func() { errc <- p.rtLoop() })
	if p.faults != nil && p.faults.delay > 0 {
		wg.Go(func() { p.delayLoop(stop) })
	}
	var err error
	select {
	case <-ctx.Done():
		p.rt.kick() // the eventfd stays open until the release below
		err = <-errc
	case err = <-errc: // Close, or a socket error
	}
	close(stop)
	wg.Wait()
	p.sock.Lock()
	if rerr := p.release(); err == nil && rerr != nil {
		err = fmt.Errorf("simulink: partner on %v: close: %w", p.addr, rerr)
	}
	p.released = nil
	close(released)
	p.sock.Unlock()
	return err
}

// logStopped says that Serve returned, with the counters.
func (p *Partner) logStopped(err error) {
	s := p.Stats()
	attrs := []any{"listen", p.addr, "received", s.Received, "replied", s.Replied, "dropped", s.Dropped, "faulted", s.Faulted, "send_errors", s.SendErrors}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	p.log.Info("simulink: partner stopped", attrs...)
}

// reopen binds the sockets again if a previous Serve released them.
func (p *Partner) reopen() error {
	p.sock.Lock()
	defer p.sock.Unlock()
	if p.closed {
		return fmt.Errorf("simulink: partner on %v: Serve after Close: %w", p.addr, ErrPartnerClosed)
	}
	if p.open {
		return nil
	}
	return p.bind(p.addr)
}

func (p *Partner) stopServing() {
	p.sock.Lock()
	defer p.sock.Unlock()
	_ = p.release()
}

// receiveLoop reads and answers datagrams until the socket is closed.
func (p *Partner) receiveLoop() error {
	for {
		if err := p.receiveOne(); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

// receiveOne reads, timestamps and answers one datagram. It allocates
// nothing.
func (p *Partner) receiveOne() error {
	n, oobn, _, src, err := p.rx.ReadMsgUDPAddrPort(p.rbuf, p.oob)
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return err
		}
		return fmt.Errorf("simulink: partner receive on %v: %w", p.addr, err)
	}
	var ns int64
	timed := true
	if p.kernelClock {
		ns, timed = kernelTimestamp(p.oob[:oobn])
	} else {
		ns = p.monoNow()
	}
	m := p.processAt(p.rbuf[:n], src, p.wbuf, ns, timed)
	if m == 0 {
		return nil
	}
	if p.faults == nil {
		p.write(p.wbuf[:m])
	} else {
		p.emitFaulty(p.wbuf[:m])
	}
	return nil
}

// process is processAt for a datagram without a receive time (tests feed
// datagrams to the model directly).
func (p *Partner) process(in []byte, src netip.AddrPort, out []byte) int {
	return p.processAt(in, src, out, 0, false)
}

// processAt applies the model to one datagram in from src (§9.1), received at
// ns if timed, and writes the reply into out, which must hold
// DatagramSize(CommandLen) bytes. It returns the reply's length, 0 when there
// is no reply.
func (p *Partner) processAt(in []byte, src netip.AddrPort, out []byte, ns int64, timed bool) int {
	p.received.Add(1)
	if p.faults != nil && p.faults.cfg.Paused() {
		p.faulted.Add(1)
		return 0
	}
	if !p.accepts(src) || len(in) != DatagramSize(p.measureLen) {
		p.dropped.Add(1)
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	seq, err := Unmarshal(in, p.y)
	if err != nil {
		p.dropped.Add(1)
		return 0
	}
	p.lastSeq.Store(seq)
	replySeq := int64(HandshakeSeq)
	switch {
	case seq < 0:
		// The enabled subsystem is off during the handshake: nothing is
		// computed and the output holds. A handshake also restarts the
		// master's seq, so the delay line forgets what it held.
		p.handshakes.Add(1)
		p.hasPrev = false
		p.timing.Break()
	case p.delay:
		p.time(seq, ns, timed)
		p.step(seq)
		if p.hasPrev {
			replySeq = p.prevSeq
			copy(p.sent, p.prevU)
		}
		copy(p.prevU, p.u)
		p.prevSeq, p.hasPrev = seq, true
	default:
		p.time(seq, ns, timed)
		p.step(seq)
		if seq > 0 { // the Switch: seq if seq > 0, else −1
			replySeq = seq
		}
		copy(p.sent, p.u)
	}
	n, err := MarshalTo(out, replySeq, p.sent)
	if err != nil {
		return 0
	}
	return n
}

// time records the arrival of measurement seq in the send timing.
func (p *Partner) time(seq, ns int64, timed bool) {
	if timed {
		p.timing.Record(seq, ns)
	} else {
		p.timing.Missed()
	}
}

// step runs the controller; a NaN or ±Inf output is undone, so that no
// controller can make the partner send one.
func (p *Partner) step(seq int64) {
	copy(p.ubak, p.u)
	p.ctl.Step(seq, p.y, p.u)
	if !ctlFinite(p.u) {
		copy(p.u, p.ubak)
	}
}

func (p *Partner) accepts(src netip.AddrPort) bool {
	if p.acceptAny {
		return true
	}
	return src.Addr().Unmap() == p.accept.Addr() && (!p.acceptPort || src.Port() == p.accept.Port())
}

func (p *Partner) write(b []byte) {
	if p.priority > 0 {
		if err := p.rt.tx.send(b, p.rt.replySA); err != nil {
			p.sendErrors.Add(1)
			return
		}
		p.replied.Add(1)
		return
	}
	if _, err := p.tx.WriteToUDPAddrPort(b, p.replyTo); err != nil {
		if !errors.Is(err, net.ErrClosed) {
			p.sendErrors.Add(1)
		}
		return
	}
	p.replied.Add(1)
}

// monoNow returns the monotonic time since the partner's epoch, in ns.
func (p *Partner) monoNow() int64 { return int64(time.Since(p.epoch)) }
