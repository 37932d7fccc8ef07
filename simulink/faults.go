package simulink

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Faults makes a Partner misbehave the way networks and stalled Simulink models
// do, reproducibly: the same Seed and the same datagrams give the same faults.
//
// The probabilities apply to each reply independently. Drop sends nothing;
// WrongSize sends the reply one float64 short, then one long, alternately;
// Duplicate sends it twice; Reorder holds it and sends it after the next reply.
// Delay sends every reply that much later, in order, without holding up the
// receipt of later datagrams.
//
// NewPartner validates and copies the fields; change them only through a new
// Partner. Pause and Resume may be called at any time, from any goroutine.
type Faults struct {
	Drop, Duplicate, Reorder, WrongSize float64 // probabilities in [0, 1]
	Delay                               time.Duration
	Seed                                uint64

	paused atomic.Bool
}

// Pause makes the partner discard everything it receives, without stepping
// its controller or replying, as a stopped Simulink model does. Discarded
// datagrams count as Received and Faulted.
func (f *Faults) Pause() { f.paused.Store(true) }

// Resume undoes Pause; the model state is kept (see Partner.Restart for a
// model started again from scratch).
func (f *Faults) Resume() { f.paused.Store(false) }

// TogglePause pauses a running partner or resumes a paused one (the SIGUSR1
// of `bridge partner`), and reports whether it is now paused.
func (f *Faults) TogglePause() bool {
	for {
		p := f.paused.Load()
		if f.paused.CompareAndSwap(p, !p) {
			return !p
		}
	}
}

// Paused reports whether the partner is paused; a nil Faults never is.
func (f *Faults) Paused() bool { return f != nil && f.paused.Load() }

const (
	// faultMaxDelay bounds Delay: longer than any receive window of the
	// protocol (0.1 s), short enough for the ring to make sense.
	faultMaxDelay = 10 * time.Second
	// faultRingSlots is how many delayed replies may be pending (a power of
	// two); at 1 kHz it covers a Delay of about 0.5 s with every reply
	// duplicated. Replies beyond it are dropped and counted as Faulted.
	faultRingSlots = 1024
)

func (f *Faults) validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Drop", f.Drop}, {"Duplicate", f.Duplicate}, {"Reorder", f.Reorder}, {"WrongSize", f.WrongSize}} {
		if !(p.v >= 0 && p.v <= 1) { // also rejects NaN
			return &PartnerConfigError{Field: "Faults." + p.name, Reason: fmt.Sprintf("%v, want a probability in 0..1", p.v)}
		}
	}
	if f.Delay < 0 || f.Delay > faultMaxDelay {
		return &PartnerConfigError{Field: "Faults.Delay", Reason: fmt.Sprintf("%v, want 0..%v", f.Delay, faultMaxDelay)}
	}
	return nil
}

// faultInjector is a partner's fault state. The receive goroutine owns all of
// it except ring, which it shares with the delay sender.
type faultInjector struct {
	cfg                           *Faults // for Paused only
	drop, dup, reorder, wrongSize float64
	delay                         int64 // ns
	rng                           *rand.Rand
	long                          bool   // the next WrongSize reply is one value long
	held                          []byte // a reply held back by Reorder
	heldLen, heldCopies           int
	ring                          faultRing
}

func newFaultInjector(f *Faults, maxReply int) *faultInjector {
	fi := &faultInjector{
		cfg: f, drop: f.Drop, dup: f.Duplicate, reorder: f.Reorder, wrongSize: f.WrongSize,
		delay: int64(f.Delay),
		// The second PCG word is fixed so that Seed alone picks the stream.
		rng:  rand.New(rand.NewPCG(f.Seed, 0x9e3779b97f4a7c15)),
		held: make([]byte, maxReply),
	}
	if f.Delay > 0 {
		fi.ring = faultRing{
			slot: maxReply,
			data: make([]byte, faultRingSlots*maxReply),
			n:    make([]int, faultRingSlots),
			due:  make([]int64, faultRingSlots),
			kick: make(chan struct{}, 1),
		}
	}
	return fi
}

// faultRing is a single-producer single-consumer queue of delayed replies.
// The atomic indices order the slot contents between the two goroutines.
type faultRing struct {
	slot       int // bytes per slot
	data       []byte
	n          []int
	due        []int64 // send time, ns since the partner's epoch
	head, tail atomic.Uint64
	kick       chan struct{} // wakes the sender after a push to an empty ring
}

// push queues b for sending at due; false when the ring is full.
func (r *faultRing) push(b []byte, due int64) bool {
	t := r.tail.Load()
	if t-r.head.Load() == faultRingSlots {
		return false
	}
	i := int(t % faultRingSlots)
	r.n[i] = copy(r.data[i*r.slot:(i+1)*r.slot], b)
	r.due[i] = due
	r.tail.Store(t + 1)
	select {
	case r.kick <- struct{}{}:
	default: // a wake-up is already pending
	}
	return true
}

// front returns the oldest pending reply, if any.
func (r *faultRing) front() (b []byte, due int64, ok bool) {
	h := r.head.Load()
	if h == r.tail.Load() {
		return nil, 0, false
	}
	i := int(h % faultRingSlots)
	return r.data[i*r.slot : i*r.slot+r.n[i]], r.due[i], true
}

func (r *faultRing) pop() { r.head.Add(1) }

// faultDraw is the fate of one reply.
type faultDraw struct{ drop, wrongSize, duplicate, reorder bool }

func (d faultDraw) any() bool { return d.drop || d.wrongSize || d.duplicate || d.reorder }

// roll draws the fate of the next reply. It always makes four draws, so that
// each fault's pattern depends only on Seed and the reply's index, not on the
// other probabilities.
func (f *faultInjector) roll() faultDraw {
	return faultDraw{
		drop:      f.rng.Float64() < f.drop,
		wrongSize: f.rng.Float64() < f.wrongSize,
		duplicate: f.rng.Float64() < f.dup,
		reorder:   f.rng.Float64() < f.reorder,
	}
}

// emitFaulty sends the reply b (whose capacity has room for one more value)
// through the fault injector. Receive goroutine only.
func (p *Partner) emitFaulty(b []byte) {
	f := p.faults
	d := f.roll()
	if d.any() {
		p.faulted.Add(1)
	}
	if d.drop {
		return
	}
	if d.wrongSize {
		if f.long {
			b = b[:len(b)+ValueSize] // the extra value is the buffer's zero tail
		} else {
			b = b[:len(b)-ValueSize]
		}
		f.long = !f.long
	}
	copies := 1
	if d.duplicate {
		copies = 2
	}
	if d.reorder && f.heldLen == 0 {
		f.heldLen = copy(f.held, b)
		f.heldCopies = copies
		return
	}
	var due int64
	if f.delay > 0 {
		due = p.monoNow() + f.delay
	}
	for range copies {
		p.sendOrQueue(b, due)
	}
	if f.heldLen > 0 {
		for range f.heldCopies {
			p.sendOrQueue(f.held[:f.heldLen], due)
		}
		f.heldLen = 0
	}
}

func (p *Partner) sendOrQueue(b []byte, due int64) {
	if p.faults.delay == 0 {
		p.write(b)
		return
	}
	if !p.faults.ring.push(b, due) {
		p.faulted.Add(1)
	}
}

// delayLoop sends the queued replies at their due time until stop is closed.
// Serve owns it; pending replies are discarded on stop.
func (p *Partner) delayLoop(stop <-chan struct{}) {
	r := &p.faults.ring
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		b, due, ok := r.front()
		if !ok {
			select {
			case <-r.kick:
				continue
			case <-stop:
				return
			}
		}
		if wait := due - p.monoNow(); wait > 0 {
			t.Reset(time.Duration(wait))
			select {
			case <-t.C:
			case <-stop:
				return
			}
		}
		p.write(b)
		r.pop()
	}
}
