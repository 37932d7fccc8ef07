package simulink

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// ptU is the command of the faults tests (a Constant controller).
var ptU = []float64{0.5, -0.25, 1, 0}

func ptFaultRig(t *testing.T, f *Faults) *ptRig {
	t.Helper()
	c, err := NewConstant(ptU)
	if err != nil {
		t.Fatal(err)
	}
	return ptNewRig(t, func(cfg *PartnerConfig) { cfg.Faults = f; cfg.Controller = c })
}

func ptMeasure(seq float64) []byte { return ptDatagram(seq, 0, 0, 0, 0, 0, 0, 0) }

func ptReply(seq float64) []byte { return ptDatagram(seq, ptU...) }

func (r *ptRig) expect(want []byte) {
	r.t.Helper()
	if got := r.recv(); !slices.Equal(got, want) {
		r.t.Fatalf("got % x\nwant % x", got, want)
	}
}

func TestFaultDrop(t *testing.T) {
	r := ptFaultRig(t, &Faults{Drop: 1})
	for i := range 3 {
		r.send(ptMeasure(float64(i + 1)))
	}
	r.waitStats("3 faulted", func(s PartnerStats) bool { return s.Faulted == 3 })
	r.quiet()
	if st := r.p.Stats(); st.Replied != 0 || st.Received != 3 || st.LastSeq != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestFaultDuplicate(t *testing.T) {
	r := ptFaultRig(t, &Faults{Duplicate: 1})
	for seq := 1.0; seq <= 2; seq++ {
		r.send(ptMeasure(seq))
		r.expect(ptReply(seq))
		r.expect(ptReply(seq))
	}
	r.waitStats("4 replied, 2 faulted", func(s PartnerStats) bool { return s.Replied == 4 && s.Faulted == 2 })
}

func TestFaultReorder(t *testing.T) {
	r := ptFaultRig(t, &Faults{Reorder: 1})
	for seq := 1.0; seq <= 4; seq += 2 {
		r.send(ptMeasure(seq))
		r.send(ptMeasure(seq + 1))
		r.expect(ptReply(seq + 1))
		r.expect(ptReply(seq))
	}
	r.waitStats("4 replied, 4 faulted", func(s PartnerStats) bool { return s.Replied == 4 && s.Faulted == 4 })
}

func TestFaultWrongSize(t *testing.T) {
	r := ptFaultRig(t, &Faults{WrongSize: 1})
	r.send(ptMeasure(1))
	r.expect(ptDatagram(1, 0.5, -0.25, 1)) // one value short
	r.send(ptMeasure(2))
	r.expect(ptDatagram(2, 0.5, -0.25, 1, 0, 0)) // one value long
	r.send(ptMeasure(3))
	r.expect(ptDatagram(3, 0.5, -0.25, 1))
}

// TestFaultDelay: replies come in order and no sooner than Delay after the
// measurement was sent.
func TestFaultDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	r := ptFaultRig(t, &Faults{Delay: delay})
	var sent [3]time.Time
	for i := range sent {
		sent[i] = time.Now()
		r.send(ptMeasure(float64(i + 1)))
	}
	for i := range sent {
		r.expect(ptReply(float64(i + 1)))
		if d := time.Since(sent[i]); d < delay {
			t.Errorf("reply %d after %v, want ≥ %v", i+1, d, delay)
		}
	}
	r.waitStats("3 replied, none faulted", func(s PartnerStats) bool { return s.Replied == 3 && s.Faulted == 0 })
}

// TestFaultDelayQueues: with Delay, handling a datagram only queues its
// reply, so later datagrams are never held up; the sender then sends the
// queue in order. No Serve: the test drives both halves.
func TestFaultDelayQueues(t *testing.T) {
	master, replies := ptListen(t), ptListen(t)
	c, err := NewConstant(ptU)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ptConfig(master, replies)
	cfg.Controller, cfg.Faults = c, &Faults{Delay: time.Millisecond, Duplicate: 0}
	p, err := NewPartner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 5 {
		n := p.process(ptMeasure(float64(i+1)), ptAddr(master), p.wbuf)
		p.emitFaulty(p.wbuf[:n])
	}
	r := &p.faults.ring
	if q := r.tail.Load() - r.head.Load(); q != 5 || p.Stats().Replied != 0 {
		t.Fatalf("%d queued, %d replied; want 5 queued, none sent", q, p.Stats().Replied)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.delayLoop(stop)
	}()
	rig := &ptRig{t: t, master: master, replies: replies, p: p, buf: make([]byte, 64)}
	for i := range 5 {
		rig.expect(ptReply(float64(i + 1)))
	}
	close(stop)
	wg.Wait()
}

func TestFaultDelayRingFull(t *testing.T) {
	master, replies := ptListen(t), ptListen(t)
	cfg := ptConfig(master, replies)
	cfg.Faults = &Faults{Delay: time.Second}
	p, err := NewPartner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range faultRingSlots + 3 {
		n := p.process(ptMeasure(float64(i)), ptAddr(master), p.wbuf)
		p.emitFaulty(p.wbuf[:n])
	}
	if st := p.Stats(); st.Faulted != 3 {
		t.Fatalf("stats %+v, want 3 faulted by the full ring", st)
	}
}

func TestFaultPause(t *testing.T) {
	f := &Faults{}
	r := ptFaultRig(t, f)
	if f.Paused() {
		t.Fatal("paused at start")
	}
	f.Pause()
	if !f.Paused() {
		t.Fatal("not paused after Pause")
	}
	r.send(ptMeasure(1))
	r.waitStats("the paused datagram", func(s PartnerStats) bool { return s.Received == 1 && s.Faulted == 1 })
	f.Resume()
	if f.Paused() {
		t.Fatal("paused after Resume")
	}
	r.send(ptMeasure(2))
	r.expect(ptReply(2)) // nothing was sent for seq 1
	r.waitStats("1 replied, last seq 2", func(s PartnerStats) bool { return s.Replied == 1 && s.LastSeq == 2 })
	var none *Faults
	if none.Paused() {
		t.Error("a nil Faults is paused")
	}
}

// TestFaultDeterminism: the same Seed gives the same faults; each fault's
// pattern does not depend on the other probabilities; rates match.
func TestFaultDeterminism(t *testing.T) {
	const n = 10000
	draws := func(f *Faults) []faultDraw {
		fi := newFaultInjector(f, 48)
		d := make([]faultDraw, n)
		for i := range d {
			d[i] = fi.roll()
		}
		return d
	}
	a := draws(&Faults{Drop: 0.1, Duplicate: 0.2, Reorder: 0.3, WrongSize: 0.4, Seed: 7})
	if b := draws(&Faults{Drop: 0.1, Duplicate: 0.2, Reorder: 0.3, WrongSize: 0.4, Seed: 7}); !slices.Equal(a, b) {
		t.Fatal("same seed, different faults")
	}
	if b := draws(&Faults{Drop: 0.1, Duplicate: 0.2, Reorder: 0.3, WrongSize: 0.4, Seed: 8}); slices.Equal(a, b) {
		t.Fatal("different seeds, same faults")
	}
	onlyDrop := draws(&Faults{Drop: 0.1, Seed: 7})
	var count [4]int
	for i, d := range a {
		if d.drop != onlyDrop[i].drop {
			t.Fatalf("reply %d: the drop pattern depends on the other probabilities", i)
		}
		for k, v := range []bool{d.drop, d.duplicate, d.reorder, d.wrongSize} {
			if v {
				count[k]++
			}
		}
	}
	// Deterministic for this seed; the bounds are ±5 standard deviations.
	for k, p := range []float64{0.1, 0.2, 0.3, 0.4} {
		if got, want := float64(count[k])/n, p; got < want-0.025 || got > want+0.025 {
			t.Errorf("fault %d: rate %.3f, want %.1f", k, got, want)
		}
	}
}

func TestFaultsValidate(t *testing.T) {
	for _, tc := range []struct {
		f     *Faults
		field string
	}{
		{&Faults{Drop: -0.1}, "Faults.Drop"},
		{&Faults{Duplicate: 2}, "Faults.Duplicate"},
		{&Faults{WrongSize: 1.0001}, "Faults.WrongSize"},
		{&Faults{Delay: time.Minute}, "Faults.Delay"},
	} {
		err := tc.f.validate()
		var pe *PartnerConfigError
		if !errors.Is(err, ErrPartnerConfig) || !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("%+v: got %v, want an error on %s", tc.f, err, tc.field)
		}
	}
	ok := &Faults{Drop: 1, Duplicate: 0, Reorder: 0.5, WrongSize: 1, Delay: time.Second, Seed: 1}
	if err := ok.validate(); err != nil {
		t.Errorf("%+v: %v", ok, err)
	}
}

// TestFaultAllocs: the fault path allocates nothing, with the delay ring.
func TestFaultAllocs(t *testing.T) {
	master, replies := ptListen(t), ptListen(t)
	cfg := ptConfig(master, replies)
	cfg.Faults = &Faults{Drop: 0.2, Duplicate: 0.2, Reorder: 0.2, WrongSize: 0.2, Delay: time.Second, Seed: 3}
	p, err := NewPartner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	in, src := ptMeasure(1), ptAddr(master)
	allocs := testing.AllocsPerRun(200, func() {
		n := p.process(in, src, p.wbuf)
		p.emitFaulty(p.wbuf[:n])
		p.faults.ring.head.Store(p.faults.ring.tail.Load()) // keep the ring from filling
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per datagram, want 0", allocs)
	}
}

// TogglePause is SIGUSR1 of bridge partner: pause, then resume.
func TestFaultsTogglePause(t *testing.T) {
	f := &Faults{}
	if !f.TogglePause() || !f.Paused() {
		t.Fatal("the first toggle did not pause")
	}
	if f.TogglePause() || f.Paused() {
		t.Fatal("the second toggle did not resume")
	}
}
