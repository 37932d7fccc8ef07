package vrep

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/go-zeromq/zmq4"

	"github.com/labbridge/bridge/vrep/zmtp"
)

// The ZMQ remote API (docs/vrep.md §4): a REQ socket, CBOR requests
// {func, args, uuid, argsL} and replies {ret} or {err}; the first request of
// a client also carries ver, lang and timeout.
const (
	// DefaultZMQAddress is the remote API's default port on this host.
	DefaultZMQAddress = "127.0.0.1:23000"
	// ProtocolVersion is the remote API protocol this client speaks
	// (CoppeliaSim ≥ 4.6).
	ProtocolVersion = 2
	// maxWaits bounds the _*wait*_ replies one call follows: a sim.step
	// against a simulation that never advances ends in an error instead of
	// looping for ever.
	maxWaits = 100000
)

var (
	// ErrVersion: the server speaks another protocol version.
	ErrVersion = errors.New("vrep: remote API protocol version mismatch")
	// ErrNotRunning: the simulation is stopped and the configuration does
	// not start it.
	ErrNotRunning = errors.New("vrep: the simulation is stopped")
)

// RemoteError is an error the remote API returned for a call.
type RemoteError struct {
	Func string
	Msg  string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("vrep: CoppeliaSim refused %s: %s", e.Func, e.Msg)
}

// decMode decodes what CoppeliaSim's Lua encoder sends: a Lua string may
// come as a byte string, and its UTF-8 is not checked. Built once; the
// options are constant, so it cannot fail.
var decMode, _ = cbor.DecOptions{
	ByteStringToString: cbor.ByteStringToStringAllowed,
	UTF8:               cbor.UTF8DecodeInvalid,
	MaxArrayElements:   1 << 16,
	MaxMapPairs:        1 << 16,
}.DecMode()

// request is one remote API request.
type request struct {
	Func    string `cbor:"func"`
	Args    []any  `cbor:"args"`
	UUID    string `cbor:"uuid"`
	Ver     int    `cbor:"ver,omitempty"`
	Lang    string `cbor:"lang,omitempty"`
	Timeout int    `cbor:"timeout,omitempty"`
	ArgsL   int    `cbor:"argsL"`
}

// response is one remote API reply: the return values, an error, or a
// function the server asks the client to run (_*wait*_, _*repeat*_, a
// callback). Success and Error are what a server of protocol version 1
// sends to a client it cannot serve.
type response struct {
	Ret     cbor.RawMessage `cbor:"ret"`
	Err     cbor.RawMessage `cbor:"err"`
	Func    string          `cbor:"func"`
	Success *bool           `cbor:"success"`
	Error   string          `cbor:"error"`
}

// Remote is a client of CoppeliaSim's ZMQ remote API. The server knows a
// client by its UUID, not by its connection: its stepping and its timeout
// belong to the UUID, so a Remote keeps its UUID across Redial, and the
// server sees one client, never a new one beside a stale one that still
// holds the simulation in lock step (docs/vrep.md §4.1).
//
// A call whose reply does not come in time is a timeout, but the
// connection stays: the reply is owed, and the next call first reads it
// (and throws it away) within its own deadline. Only a connection whose
// stream broke, or whose owed reply has not come within maxOwed call
// timeouts, is dropped. Not safe for concurrent use.
type Remote struct {
	cfg     RemoteConfig
	addr    string
	conn    *zmtp.Conn
	uuid    string
	sent    int // requests on this connection
	last    time.Time
	timeout time.Duration // per call
	linger  int           // seconds the server keeps an idle client
	// owed: a call timed out and its reply is still to come; lastFn is
	// the last request sent, late counts the call timeouts since the
	// owed reply's call.
	owed   bool
	lastFn string
	late   int
	// Late counts replies read after their call had timed out.
	Late uint64
	req  request
	args [4]any
	out  []byte
	ret  []cbor.RawMessage
}

// maxOwed bounds the call timeouts an owed reply may take before the
// connection is dropped: a scene that answers late answers; one that
// never does is not there.
const maxOwed = 3

// ErrDropped: a call on a connection the client dropped after a broken
// stream or a reply owed too long; Redial makes a new one.
var ErrDropped = errors.New("vrep: the connection to the remote API was dropped")

// RemoteConfig configures a Remote.
type RemoteConfig struct {
	// Address is host:port of the remote API (DefaultZMQAddress).
	Address string
	// CallTimeout bounds one call, waits included.
	CallTimeout time.Duration
	// ClientTimeout is how long the server keeps this client's state
	// (its stepping) once it stops calling; whole seconds, at least 1.
	ClientTimeout time.Duration
	// UUID names the client to the server (NewUUID); empty: a fresh one.
	// A client that comes back passes the one it had.
	UUID string
	// Dial connects; nil uses a net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewUUID returns a version 4 UUID, as the official clients send.
func NewUUID() string {
	var id [16]byte
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:])
}

// DialRemote connects to the remote API and greets it. A server that does
// not listen is a *ExchangeError of ReasonRefused.
func DialRemote(ctx context.Context, cfg RemoteConfig) (*Remote, error) {
	if cfg.Address == "" {
		cfg.Address = DefaultZMQAddress
	}
	if cfg.CallTimeout <= 0 {
		return nil, fmt.Errorf("%w: call timeout %v: want > 0", ErrConfig, cfg.CallTimeout)
	}
	if cfg.Dial == nil {
		var d net.Dialer
		cfg.Dial = d.DialContext
	}
	if cfg.UUID == "" {
		cfg.UUID = NewUUID()
	}
	r := &Remote{cfg: cfg, addr: cfg.Address, timeout: cfg.CallTimeout, uuid: cfg.UUID,
		linger: max(int(cfg.ClientTimeout/time.Second), 1), out: make([]byte, 0, 256)}
	if err := r.Redial(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Redial drops the connection, if any, without telling the server (the
// client stays, its stepping with it) and connects again under the same
// UUID.
func (r *Remote) Redial(ctx context.Context) error {
	r.Drop()
	dctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	nc, err := r.cfg.Dial(dctx, "tcp", r.addr)
	if err != nil {
		return classify(r.addr, r.timeout, err)
	}
	deadline := time.Now().Add(r.timeout)
	if d, ok := dctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	zc, err := zmtp.Handshake(nc, zmq4.Req, zmtp.DefaultLimit, deadline)
	if err != nil {
		nc.Close()
		e := classify(r.addr, r.timeout, err)
		if e.Reason == ReasonOther {
			e.Reason = ReasonProtocol
		}
		return e
	}
	if zc.Peer != "" && zc.Peer != string(zmq4.Rep) && zc.Peer != string(zmq4.Router) {
		nc.Close()
		return &ExchangeError{Addr: r.addr, Reason: ReasonProtocol,
			Err: fmt.Errorf("the peer is a ZeroMQ %s socket, not the remote API's REP", zc.Peer)}
	}
	r.conn, r.sent, r.owed, r.late = zc, 0, false, 0
	return nil
}

// Addr is the server's address.
func (r *Remote) Addr() string { return r.addr }

// UUID is the client's name at the server.
func (r *Remote) UUID() string { return r.uuid }

// Connected reports whether the client has a connection (it may owe a
// reply).
func (r *Remote) Connected() bool { return r.conn != nil }

// Drop closes the connection without telling the server: the client's
// state, its stepping included, stays until Redial or its timeout.
func (r *Remote) Drop() {
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
	r.owed = false
}

// Close tells the server that this client leaves (its stepping ends with
// it), within a short deadline, and closes the connection.
func (r *Remote) Close() error {
	if r.conn == nil {
		return nil
	}
	if r.sent > 0 {
		deadline := time.Now().Add(min(r.timeout, 200*time.Millisecond))
		r.conn.SetDeadline(deadline)
		if (!r.owed || r.settle() == nil) && r.send("_*end*_", nil) == nil {
			r.conn.Recv()
		}
	}
	var err error
	if r.conn != nil {
		err = r.conn.Close()
		r.conn = nil
	}
	return err
}

// Call calls fn with args and returns its return values, valid until the
// next call. It follows _*wait*_ (the server holds the call until a
// simulation step is done) and _*repeat*_; callbacks are answered empty.
func (r *Remote) Call(fn string, args ...any) ([]cbor.RawMessage, error) {
	if r.conn == nil {
		return nil, &ExchangeError{Addr: r.addr, Reason: ReasonDropped, Err: ErrDropped}
	}
	deadline := time.Now().Add(r.timeout)
	if err := r.conn.SetDeadline(deadline); err != nil {
		return nil, r.fail(err)
	}
	if r.owed {
		if err := r.settle(); err != nil {
			return nil, err
		}
	}
	if err := r.send(fn, args); err != nil {
		return nil, err
	}
	for waits := 0; ; waits++ {
		body, err := r.conn.Recv()
		if err != nil {
			return nil, r.fail(err)
		}
		var resp response
		if err := decMode.Unmarshal(body, &resp); err != nil {
			return nil, r.fail(fmt.Errorf("%w: a reply to %s is not CBOR: %w", zmtp.ErrProtocol, fn, err))
		}
		switch {
		case resp.Success != nil && !*resp.Success:
			return nil, &ExchangeError{Addr: r.addr, Reason: ReasonProtocol,
				Err: fmt.Errorf("%w: the server says %q; this client speaks protocol version %d (CoppeliaSim 4.6 or newer)", ErrVersion, resp.Error, ProtocolVersion)}
		case resp.Func == "":
		case waits >= maxWaits:
			return nil, r.fail(fmt.Errorf("%w: %s still waiting after %d steps of the server", zmtp.ErrProtocol, fn, waits))
		case resp.Func == "_*repeat*_":
			// As the official client: the last request again.
			if r.lastFn == "_*executed*_" {
				err = r.send("_*executed*_", nil)
			} else {
				err = r.send(fn, args)
			}
			if err != nil {
				return nil, err
			}
			continue
		default: // _*wait*_, or a callback this client does not have
			if err := r.send("_*executed*_", nil); err != nil {
				return nil, err
			}
			continue
		}
		r.late = 0
		if len(resp.Err) > 0 {
			var msg string
			if decMode.Unmarshal(resp.Err, &msg) != nil {
				msg = fmt.Sprintf("%x", []byte(resp.Err))
			}
			// The server escapes line breaks so that they survive Python.
			msg = strings.NewReplacer("_=NL=_", "\n", "_=TB=_", "\t").Replace(msg)
			return nil, &ExchangeError{Addr: r.addr, Reason: ReasonRemote, Err: &RemoteError{Func: fn, Msg: msg}}
		}
		r.ret = r.ret[:0]
		// An empty Lua table may come as an empty map.
		if len(resp.Ret) > 0 && resp.Ret[0] != 0xa0 {
			if err := decMode.Unmarshal(resp.Ret, &r.ret); err != nil {
				return nil, r.fail(fmt.Errorf("%w: the values %s returned are not an array: %w", zmtp.ErrProtocol, fn, err))
			}
		}
		return r.ret, nil
	}
}

// settle reads the reply a timed-out call still owes, within the deadline
// already set, and throws it away: the call it answers is over for the
// caller. A _*wait*_ is answered as usual (a late sim.step completes); a
// _*repeat*_ of the owed call itself is not obeyed: that call is not run
// late.
func (r *Remote) settle() error {
	for waits := 0; ; waits++ {
		body, err := r.conn.Recv()
		if err != nil {
			return r.fail(err)
		}
		var resp response
		if err := decMode.Unmarshal(body, &resp); err != nil {
			return r.fail(fmt.Errorf("%w: a late reply is not CBOR: %w", zmtp.ErrProtocol, err))
		}
		switch {
		case resp.Func == "" || resp.Func == "_*repeat*_" && r.lastFn != "_*executed*_":
			r.owed = false
			r.Late++
			return nil
		case waits >= maxWaits:
			return r.fail(fmt.Errorf("%w: a late reply still waiting after %d steps of the server", zmtp.ErrProtocol, waits))
		}
		if err := r.send("_*executed*_", nil); err != nil {
			return err
		}
	}
}

func (r *Remote) send(fn string, args []any) error {
	r.req = request{Func: fn, Args: args, UUID: r.uuid, ArgsL: len(args)}
	if r.req.Args == nil {
		r.req.Args = r.args[:0]
	}
	now := time.Now()
	// The first request of a connection, or after a pause in which the
	// server may have forgotten the client, says who it is and how long to
	// keep it: a client registered again without its timeout would hold a
	// lock-stepped simulation for the server's default ten minutes.
	if r.sent == 0 || now.Sub(r.last) > time.Duration(r.linger)*time.Second/2 {
		r.req.Ver, r.req.Lang, r.req.Timeout = ProtocolVersion, "go", r.linger
	}
	b, err := cbor.Marshal(&r.req)
	if err != nil {
		return fmt.Errorf("vrep: encoding a call of %s: %w", fn, err)
	}
	if err := r.conn.Send(b); err != nil {
		return r.fail(err)
	}
	r.sent++
	r.last = now
	r.lastFn = fn
	return nil
}

// fail classifies an I/O error. A timeout before a reply's first byte keeps
// the connection, the reply owed (up to maxOwed timeouts in a row); any
// other failure drops it: a REQ socket whose stream broke cannot be used
// again.
func (r *Remote) fail(err error) error {
	e := classify(r.addr, r.timeout, err)
	if e.Reason == ReasonOther && (errors.Is(err, zmtp.ErrProtocol) || errors.Is(err, zmtp.ErrTooLarge)) {
		e.Reason = ReasonProtocol
	}
	if e.Reason == ReasonTimeout && r.conn != nil && !r.conn.Torn() {
		r.late++
		if r.late < maxOwed {
			r.owed = true
			return e
		}
	}
	r.Drop()
	return e
}

// Number decodes a returned value that is a number, integer or float.
func Number(raw cbor.RawMessage) (float64, error) {
	var v any
	if err := decMode.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("%w: %w", zmtp.ErrProtocol, err)
	}
	switch x := v.(type) {
	case uint64:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return math.NaN(), fmt.Errorf("%w: %T where a number was expected", zmtp.ErrProtocol, v)
}

// Float calls fn and returns its first return value as a number.
func (r *Remote) Float(fn string, args ...any) (float64, error) {
	ret, err := r.Call(fn, args...)
	if err != nil {
		return math.NaN(), err
	}
	if len(ret) == 0 {
		return math.NaN(), r.fail(fmt.Errorf("%w: %s returned nothing", zmtp.ErrProtocol, fn))
	}
	x, err := Number(ret[0])
	if err != nil {
		return math.NaN(), r.fail(fmt.Errorf("%s: %w", fn, err))
	}
	return x, nil
}
