package zmtp

import (
	"net"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"
)

// NewConnForTest is a Conn after a handshake that did not happen.
func NewConnForTest(nc net.Conn, limit int) *Conn {
	return &Conn{nc: nc, limit: limit, buf: make([]byte, 0, 64), wbuf: make([]byte, 0, 64)}
}

// NullSecurity is zmq4's NULL mechanism, for peers built in tests.
func NullSecurity() zmq4.Security { return null.Security() }
