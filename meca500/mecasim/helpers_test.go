package mecasim_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/meca500/mecasim"
)

// patience bounds every wait: a condition that holds ends it at once, and a
// loaded machine gets seconds.
const patience = 20 * time.Second

// serve starts a robot on an ephemeral loopback port and stops it at the end
// of the test, checking that Serve returns nil.
func serve(t testing.TB, cfg mecasim.Config) (*mecasim.Robot, string) {
	t.Helper()
	r, err := mecasim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := mecasim.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(patience):
			t.Errorf("Serve did not return within %v of its context's end", patience)
		}
		ln.Close()
	})
	return r, ln.Addr().String()
}

// serveMonitoring serves r's monitoring port on an ephemeral loopback port
// until the end of the test.
func serveMonitoring(t testing.TB, r *mecasim.Robot) string {
	t.Helper()
	ln, err := mecasim.Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.ServeMonitoring(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeMonitoring: %v", err)
		}
		ln.Close()
	})
	return ln.Addr().String()
}

// client is a raw control-port client.
type client struct {
	t    testing.TB
	conn net.Conn
	rd   *bufio.Reader
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, conn: c, rd: bufio.NewReader(c)}
}

// connect dials and reads the banner.
func connect(t testing.TB, addr string) *client {
	t.Helper()
	c := dial(t, addr)
	if m := c.next(); !strings.HasPrefix(m, "[3000][") {
		t.Fatalf("banner: got %q", m)
	}
	return c
}

// send writes raw bytes.
func (c *client) send(s string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(s)); err != nil {
		c.t.Fatalf("write %q: %v", s, err)
	}
}

// cmd sends a NUL-terminated command.
func (c *client) cmd(s string) { c.t.Helper(); c.send(s + "\x00") }

// raw reads one message with its NUL.
func (c *client) raw() (string, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(patience))
	return c.rd.ReadString(0)
}

// next reads the next message, without its NUL.
func (c *client) next() string {
	c.t.Helper()
	m, err := c.raw()
	if err != nil {
		c.t.Fatalf("read: %v (after %q)", err, m)
	}
	return strings.TrimSuffix(m, "\x00")
}

// periodic tells the monitoring cycle's messages (§7) from the rest.
func periodic(m string) bool {
	return strings.HasPrefix(m, "[22")
}

// nextEvent reads the next message that is not part of a monitoring cycle.
func (c *client) nextEvent() string {
	c.t.Helper()
	for {
		if m := c.next(); !periodic(m) {
			return m
		}
	}
}

// expect reads messages until one starts with prefix, and returns it.
func (c *client) expect(prefix string) string {
	c.t.Helper()
	for {
		m := c.next()
		if strings.HasPrefix(m, prefix) {
			return m
		}
	}
}

// sync proves that nothing but the monitoring cycles came before: a fence
// command's reply must be the next event.
func (c *client) sync() {
	c.t.Helper()
	c.cmd("SyncCmdQueue(4242)")
	if m := c.nextEvent(); m != "[2097][4242]" {
		c.t.Fatalf("unexpected message before the fence: %q", m)
	}
}

// closed waits for the robot to close the connection, reading what comes
// before.
func (c *client) closed() {
	c.t.Helper()
	for {
		m, err := c.raw()
		switch {
		case err == nil:
		case isTimeout(err):
			c.t.Fatalf("connection still open after %v (last %q)", patience, m)
		default:
			return // EOF, or a reset
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ready activates and homes the robot on c, with monitoring on the control
// port, and reads what that sends.
func ready(c *client) {
	c.t.Helper()
	c.cmd("SetCtrlPortMonitoring(1)")
	c.expect("[2096]")
	c.expect("[2007]")
	c.cmd("ActivateRobot")
	c.expect("[2000]")
	c.cmd("Home")
	c.expect("[2002]")
	c.expect("[2007][1,1,")
}
