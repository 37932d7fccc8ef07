package simulink

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
)

// A master bound on port 0 first, then a partner told where the master
// listens, then the master pointed at the partner's bound port: the two
// exchange, and no port was ever released between choosing and binding it.
func TestSetRemoteBindsBeforeThePartnerKnows(t *testing.T) {
	// A placeholder remote on a port nothing listens on; nothing is sent
	// before SetRemote.
	cfg := testConfig(netip.MustParseAddrPort("127.0.0.1:25000"))
	clock := newMonoClock()
	m, err := NewMaster(cfg, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	listen, err := m.ListenAddr()
	if err != nil {
		t.Fatal(err)
	}
	from, err := m.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPartner(PartnerConfig{Listen: netip.AddrPortFrom(loopback, 0), Accept: from, ReplyTo: listen,
		MeasureLen: cfg.MeasureLen, CommandLen: cfg.CommandLen, Controller: constant{0.25}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := m.SetRemote(p.Addr()); err != nil {
		t.Fatal(err)
	}
	if got := m.Config().Remote; got != p.Addr() {
		t.Errorf("Config().Remote = %v, want the partner's %v", got, p.Addr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.Serve(ctx) })
	defer func() { cancel(); wg.Wait() }()
	r := &rig{t: t, m: m, clock: clock, meas: make([]float64, cfg.MeasureLen), cmd: make([]float64, cfg.CommandLen)}
	for i := 0; !m.Synced(); i++ {
		if i == 50 {
			t.Fatal("no handshake with the partner in 50 ticks")
		}
		r.tick(replyWait)
	}
	for i := 0; ; i++ {
		if s := r.tick(replyWait); s.Success() && r.cmd[0] == 0.25 {
			break
		}
		if i == 50 {
			t.Fatalf("no command from the partner in 50 ticks: %v", r.cmd)
		}
	}
	if st := p.Stats(); st.Dropped != 0 {
		t.Errorf("the partner dropped %d measurements: its Accept is the master's bound source", st.Dropped)
	}
}

// SetRemote on a synchronised master sends to the new partner only and
// handshakes with it.
func TestSetRemoteHandshakesAgain(t *testing.T) {
	r := newRig(t, echo(1, 1, 1, 1), nil)
	r.sync()
	if s := r.tick(replyWait); !s.Success() || r.cmd[0] != 1 {
		t.Fatalf("first partner: %v %v", s, r.cmd)
	}
	r.drain()
	sentToFirst := r.m.Stats().Sent
	second := newScriptPeer(t, "127.0.0.1:0", echo(2, 2, 2, 2))
	la, err := r.m.ListenAddr()
	if err != nil {
		t.Fatal(err)
	}
	second.start(la)
	defer second.close()
	if err := r.m.SetRemote(second.addr()); err != nil {
		t.Fatal(err)
	}
	if r.m.Synced() {
		t.Error("still synchronised after SetRemote, want a handshake with the new partner")
	}
	for i := 0; ; i++ {
		if s := r.tick(replyWait); s.Success() && r.cmd[0] == 2 {
			break
		}
		if i == 50 {
			t.Fatalf("no command from the second partner in 50 ticks: %v", r.cmd)
		}
	}
	if got := r.peer.waitReceived(sentToFirst); uint64(len(got)) != sentToFirst {
		t.Errorf("the first partner read %d datagrams, want the %d sent before SetRemote", len(got), sentToFirst)
	}
}

func TestSetRemoteErrors(t *testing.T) {
	m, err := NewMaster(testConfig(netip.MustParseAddrPort("127.0.0.1:25000")), newMonoClock(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, bad := range []string{"0.0.0.0:25000", "127.0.0.1:0", "[::1]:25000"} {
		if err := m.SetRemote(netip.MustParseAddrPort(bad)); !errors.Is(err, ErrMasterConfig) {
			t.Errorf("SetRemote(%s): err %v, want ErrMasterConfig", bad, err)
		}
	}
	if err := m.SetRemote(netip.AddrPort{}); !errors.Is(err, ErrMasterConfig) {
		t.Errorf("SetRemote(zero): err %v, want ErrMasterConfig", err)
	}
	if got := m.Config().Remote.String(); got != "127.0.0.1:25000" {
		t.Errorf("a refused SetRemote changed the remote to %s", got)
	}
}

// constant commands the same value on every output.
type constant struct{ v float64 }

func (constant) Reset() {}
func (c constant) Step(_ int64, _, u []float64) {
	for i := range u {
		u[i] = c.v
	}
}
