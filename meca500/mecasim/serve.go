package mecasim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Connection handling.
const (
	// maxOutbox bounds the messages waiting for a client that does not
	// read; beyond it the client is disconnected.
	maxOutbox = 100000
	// lingerTime bounds how long a connection closed by the robot after a
	// last message ([3001], [3086]) waits for the client's end, so that the
	// message is not lost to a reset.
	lingerTime = 2 * time.Second
)

// Listen listens on a TCP address, such as "127.0.0.1:0" for an ephemeral
// port or ":10000" for the robot's own. The listener can be served, and
// served again after Serve returns; the caller closes it.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mecasim: listen %q: %w", addr, err)
	}
	return ln, nil
}

// Serve serves the control port (docs/meca500.md §1, port 10000) on ln until
// ctx is done, then closes the connections it accepted, waits for its
// goroutines and returns nil. It returns an error if accepting fails (ln
// closed by its owner), and ErrServing while another Serve runs.
//
// One control client is served at a time: it gets the banner
// "[3000][Connected to Meca500 R3 v<fw>.]"; any other gets
// "[3001][Another user is already connected, closing connection.]" and is
// closed, while the first stays connected.
//
// The caller owns ln. A listener with a SetDeadline method (a
// *net.TCPListener, such as Listen returns) is left open, its deadline
// restored, and may be served again; any other listener is closed when ctx
// is done, as nothing else interrupts its Accept. The robot's state lives on
// between Serves; the motion is simulated only while the robot is served.
func (r *Robot) Serve(ctx context.Context, ln net.Listener) error {
	if !r.serving.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: control port, on %s", ErrServing, ln.Addr())
	}
	defer r.serving.Store(false)
	return r.serve(ctx, ln, true)
}

// ServeMonitoring serves the monitoring port (§1, §7, port 10001) on ln as
// Serve does the control port. Any number of clients may connect: each gets
// the banner and a 2007 status, then every status change and monitoring
// cycle. What they send is ignored.
func (r *Robot) ServeMonitoring(ctx context.Context, ln net.Listener) error {
	if !r.monServe.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: monitoring port, on %s", ErrServing, ln.Addr())
	}
	defer r.monServe.Store(false)
	return r.serve(ctx, ln, false)
}

func (r *Robot) serve(ctx context.Context, ln net.Listener, control bool) error {
	port := "monitoring"
	if control {
		port = "control"
	}
	r.acquireEngine()
	defer r.releaseEngine()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	restore := unblockAccept(ctx, ln)
	r.log.Info("mecasim: serving", "port", port, "addr", ln.Addr().String())
	var wg sync.WaitGroup
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("mecasim: accept on %s (%s port): %w", ln.Addr(), port, aerr)
			}
			break
		}
		if ctx.Err() != nil {
			c.Close()
			break
		}
		r.accept(ctx, c, control, &wg)
	}
	cancel()
	r.mu.Lock()
	var open []*session
	for s := range r.live {
		if s.control == control {
			open = append(open, s)
		}
	}
	r.mu.Unlock()
	for _, s := range open {
		s.closeNow()
	}
	wg.Wait()
	restore()
	r.log.Info("mecasim: stopped serving", "port", port, "addr", ln.Addr().String())
	return err
}

// unblockAccept makes ln's Accept return once ctx is done: by a deadline in
// the past, or by closing a listener that has no deadline. restore, called
// after the accept loop, waits for that and clears the deadline.
func unblockAccept(ctx context.Context, ln net.Listener) (restore func()) {
	type deadliner interface{ SetDeadline(time.Time) error }
	d, ok := ln.(deadliner)
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		if ok {
			_ = d.SetDeadline(time.Unix(1, 0))
		} else {
			_ = ln.Close()
		}
	})
	return func() {
		if !stop() {
			<-done
		}
		if ok {
			_ = d.SetDeadline(time.Time{})
		}
	}
}

// accept starts serving a new connection, or refuses it with [3001] when the
// control port is taken.
func (r *Robot) accept(ctx context.Context, c net.Conn, control bool, wg *sync.WaitGroup) {
	r.mu.Lock()
	if control && r.ctrl != nil {
		delay := r.st.replyDelay
		r.mu.Unlock()
		r.log.Info("mecasim: refusing a second control client", "remote", c.RemoteAddr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			refuse(ctx, c, delay)
		}()
		return
	}
	now := r.now()
	s := newSession(c, control)
	r.live[s] = struct{}{}
	r.sync(now)
	if control {
		r.ctrl = s
		r.log.Info("mecasim: control client connected", "remote", c.RemoteAddr().String())
		r.send(s, message(false, 3000, r.banner))
		// The stop that holds the robot, so that the client knows why it
		// is deactivated.
		if r.st.estop != stopInactive {
			r.send(s, message(false, codeEStop, strconv.Itoa(r.st.estop)))
		}
		if r.st.pstop1 != stopInactive {
			r.send(s, message(false, codePStop1, strconv.Itoa(r.st.pstop1)))
		}
	} else {
		// Newer firmware sends the banner on the monitoring port too, then
		// the state (§4).
		s.monitoring = true
		r.mons[s] = struct{}{}
		r.send(s, message(false, 3000, r.banner))
		r.send(s, message(false, 2007, statusPayload(r.st.flags())))
	}
	r.mu.Unlock()
	r.wake()
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.readLoop(s)
	}()
	go func() {
		defer wg.Done()
		r.writeLoop(s)
	}()
}

// refuse tells a second control client the port is taken and closes it
// (§1).
func refuse(ctx context.Context, c net.Conn, delay time.Duration) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	_ = c.SetWriteDeadline(time.Now().Add(lingerTime))
	if _, err := c.Write(message(false, 3001, "Another user is already connected, closing connection.")); err != nil {
		return
	}
	lingerClose(c)
}

// lingerClose ends our side of c and reads what the client still sends until
// it closes too (or lingerTime): closing with unread input would reset the
// connection and could destroy the last message before the client reads it.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.Copy(io.Discard, c)
}

// session is one client connection.
type session struct {
	conn       net.Conn // nil in the package's own tests
	control    bool
	monitoring bool        // receives status events and monitoring cycles; Robot.mu
	gone       atomic.Bool // no longer the control client: its frames are dropped
	out        outbox
	closed     chan struct{}
	closeOnce  sync.Once
	// Owned by the reading goroutine.
	fr   framer
	args []float64
}

func newSession(c net.Conn, control bool) *session {
	return &session{conn: c, control: control, closed: make(chan struct{}), out: outbox{notify: make(chan struct{}, 1)}}
}

// closeNow closes the connection at once.
func (s *session) closeNow() {
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.conn != nil {
			s.conn.Close()
		}
	})
}

// numbers returns the frame's arguments as numbers for OnCommand, NaN for
// one that is not a number; the slice is reused.
func (s *session) numbers(raw []string) []float64 {
	s.args = s.args[:0]
	for _, a := range raw {
		v, ok := parseNumber(a)
		if !ok {
			v = math.NaN()
		}
		s.args = append(s.args, v)
	}
	return s.args
}

// outbox holds a connection's outgoing messages until they are due (the
// reply delay) and written.
type outbox struct {
	mu       sync.Mutex
	q        []outMsg
	finished bool          // end the connection once q is written
	notify   chan struct{} // capacity 1
}

type outMsg struct {
	due time.Duration // on the robot's clock
	b   []byte
}

// push queues b, due at due; it returns false when the client has not been
// reading for too long.
func (o *outbox) push(due time.Duration, b []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.finished {
		return true
	}
	if len(o.q) >= maxOutbox {
		return false
	}
	o.q = append(o.q, outMsg{due, b})
	select {
	case o.notify <- struct{}{}:
	default:
	}
	return true
}

// finish makes the writer end the connection after what is queued.
func (o *outbox) finish() {
	o.mu.Lock()
	o.finished = true
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// take appends the messages due at now to buf. wait is the time until the
// next one (0: none queued); done means the outbox is finished and empty.
func (o *outbox) take(now time.Duration, buf []byte) (out []byte, wait time.Duration, done bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for n < len(o.q) && o.q[n].due <= now {
		buf = append(buf, o.q[n].b...)
		n++
	}
	o.q = o.q[n:]
	if len(o.q) == 0 {
		o.q = nil
	} else {
		wait = o.q[0].due - now
	}
	return buf, wait, o.finished && len(o.q) == 0
}

// writeLoop writes the session's messages as they fall due. When the outbox
// is finished it ends the connection gracefully; the reader closes it.
func (r *Robot) writeLoop(s *session) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var buf []byte
	for {
		var wait time.Duration
		var done bool
		buf, wait, done = s.out.take(r.now(), buf[:0])
		if len(buf) > 0 {
			if _, err := s.conn.Write(buf); err != nil {
				s.closeNow()
				return
			}
			continue
		}
		if done {
			if cw, ok := s.conn.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
				_ = s.conn.SetReadDeadline(time.Now().Add(lingerTime))
			} else {
				s.closeNow()
			}
			return
		}
		var due <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			due = timer.C
		}
		select {
		case <-s.out.notify:
		case <-due:
		case <-s.closed:
			return
		}
		timer.Stop()
	}
}

// readLoop feeds what the client sends to the robot until the connection
// ends, then tells the robot the client is gone.
func (r *Robot) readLoop(s *session) {
	defer s.closeNow()
	buf := make([]byte, 4096)
	for {
		n, err := s.conn.Read(buf)
		if n > 0 && s.control {
			r.feed(s, buf[:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				r.log.Debug("mecasim: read", "remote", s.conn.RemoteAddr().String(), "err", err)
			}
			r.mu.Lock()
			delete(r.live, s)
			if s.control {
				if r.ctrl == s {
					r.log.Info("mecasim: control client disconnected", "remote", s.conn.RemoteAddr().String())
					r.sync(r.now())
					r.lostClient(s)
					r.publish()
				}
			} else {
				delete(r.mons, s)
			}
			r.mu.Unlock()
			r.wake()
			return
		}
	}
}

// feed splits data into frames and executes them.
func (r *Robot) feed(s *session, data []byte) {
	s.fr.feed(data, func(frame []byte) { r.handleFrame(s, frame) }, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.ctrl == s {
			r.send(s, message(false, 3003, "Command too long or missing NUL terminator."))
		}
	})
}

// handleFrame parses and executes one frame of the control client s.
func (r *Robot) handleFrame(s *session, frame []byte) {
	if s.gone.Load() {
		return // a connection the robot dropped, still draining
	}
	cmd, ok, cerr := parseCommand(frame)
	if !ok && cerr == nil {
		return // an empty frame (§2.1)
	}
	if ok && r.cfg.OnCommand != nil {
		r.cfg.OnCommand(cmd.name, s.numbers(cmd.args))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctrl != s {
		return // a connection the robot already dropped
	}
	now := r.now()
	r.sync(now)
	rq := request{s: s, silent: cmd.silent}
	if cerr != nil {
		r.reply(rq, cerr.code, cerr.text)
	} else {
		r.execute(rq, cmd, now)
		r.advance(now)
	}
	r.publish()
	r.wake()
}

// request is whom a reply goes to, and how.
type request struct {
	s      *session
	silent bool
}

// send queues b for s, after the reply delay; r.mu is held. A client that
// stopped reading long ago is disconnected.
func (r *Robot) send(s *session, b []byte) {
	if s == nil {
		return
	}
	if s.out.push(r.now()+r.st.replyDelay, b) {
		return
	}
	r.log.Warn("mecasim: client does not read: disconnecting it", "queued", maxOutbox)
	if s == r.ctrl {
		r.lostClient(s)
	}
	delete(r.mons, s)
	s.closeNow()
}

// reply answers a request.
func (r *Robot) reply(rq request, code int, payload string) {
	r.send(rq.s, message(r.cfg.PrefixReplies && rq.silent, code, payload))
}

// event sends an unsolicited control-port message to the control client and,
// with alsoMonitoring, to the monitoring clients.
func (r *Robot) event(alsoMonitoring bool, code int, payload string) {
	b := message(false, code, payload)
	r.send(r.ctrl, b)
	if alsoMonitoring {
		for m := range r.mons {
			r.send(m, b)
		}
	}
}

// monitor sends a monitoring message (status change or cycle, §7) to the
// monitoring clients and to the control client if it asked for them.
func (r *Robot) monitor(code int, payload string) {
	b := message(false, code, payload)
	if r.ctrl != nil && r.ctrl.monitoring {
		r.send(r.ctrl, b)
	}
	for m := range r.mons {
		r.send(m, b)
	}
}

// engineRef counts the Serves that need the engine; Robot.mu guards it.
type engineRef struct {
	users  int
	cancel context.CancelFunc
	done   chan struct{}
}

// acquireEngine starts the engine for the first Serve.
func (r *Robot) acquireEngine() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.engine.users++
	if r.engine.users > 1 {
		return
	}
	// The time nobody served is not simulated.
	now := r.now()
	r.st.last, r.st.nextMon = now, now
	if r.st.vel.active {
		r.st.vel.until = now
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r.engine.cancel, r.engine.done = cancel, done
	go func() {
		defer close(done)
		r.run(ctx)
	}()
}

// releaseEngine stops the engine after the last Serve, and waits for it.
func (r *Robot) releaseEngine() {
	r.mu.Lock()
	r.engine.users--
	var cancel context.CancelFunc
	var done chan struct{}
	if r.engine.users == 0 {
		cancel, done = r.engine.cancel, r.engine.done
		r.engine.cancel, r.engine.done = nil, nil
	}
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// sync steps the simulation to now if it runs (r.mu held): the fault
// injectors and commands see the robot where it is.
func (r *Robot) sync(now time.Duration) {
	if r.engine.users > 0 {
		r.step(now)
	}
}

// run is the engine: it steps the simulation every millisecond while the
// robot moves, and otherwise when the next monitoring cycle, the end of a
// homing or Delay, or the watchdog's deadline falls due.
func (r *Robot) run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-r.kick:
		}
		r.mu.Lock()
		now := r.now()
		r.step(now)
		next := r.nextWake(now)
		r.mu.Unlock()
		timer.Reset(next)
	}
}

// nextWake is how long the engine may sleep after stepping at now.
func (r *Robot) nextWake(now time.Duration) time.Duration {
	s := &r.st
	d := time.Second
	if s.moving() {
		d = substep
	}
	if s.delaying {
		d = min(d, s.delayUntil-now)
	}
	if s.homing {
		d = min(d, s.homingDone-now)
	}
	if s.wdTimeout > 0 {
		d = min(d, s.wdDeadline-now)
	}
	if r.ctrl != nil && r.ctrl.monitoring || len(r.mons) > 0 {
		d = min(d, s.nextMon-now)
	}
	return max(d, 0)
}
