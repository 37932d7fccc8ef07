package replay

import (
	"math"
	"sync"
	"sync/atomic"
)

// Source is which recorded command a replay plays.
type Source int

const (
	// Applied plays the commands as the link accepted them (clamped to
	// its limits): a tick whose reply was lost or late replays the one
	// before, which the link held.
	Applied Source = iota
	// Received plays the commands as the Simulink host sent them.
	Received
)

func (s Source) String() string {
	if s == Received {
		return "received"
	}
	return "applied"
}

// Player is the built-in partner's controller during a replay
// (simulink.Controller): it answers the measurement of each seq with the
// command recorded on the tick of the same seq, counted from the first
// running seq of each, and keeps the measurement it was given beside the
// recorded one. Step runs on the partner's thread and allocates nothing;
// the results are read after the partner has stopped.
type Player struct {
	t   *Track
	src Source
	// row is the recorded row of each running seq (≥ 0; the handshake's
	// is −1), its first occurrence; s0 the recording's first running seq,
	// first the replay's (−1 until it comes).
	row       map[int64]int
	s0, first int64
	// replayed is each row's measurement now, got whether it came.
	replayed [][]float64
	got      []bool
	played   atomic.Int64
	// at is the recorded time of the tick the link runs next (Time): the
	// row after the last seq answered.
	at   atomic.Int64
	last int // the row whose answer ends the replay
	done chan struct{}
	once sync.Once

	// Stepping (Hold, Allow): allow is the last recorded seq the replay
	// may answer; a tick past it is held, the plant kept at its time, and
	// counted in held so that the next seq maps to the same recorded one.
	// answered is the last row answered, woken each time.
	stepping bool
	allow    atomic.Int64
	held     int64
	answered atomic.Int64
	woken    chan struct{}
}

// NewPlayer prepares t's replay with the commands of src.
func NewPlayer(t *Track, src Source) *Player {
	p := &Player{t: t, src: src, row: make(map[int64]int, t.Rows()), got: make([]bool, t.Rows()), s0: -1, first: -1, last: -1, done: make(chan struct{})}
	for i, s := range t.Seq {
		if s < 0 {
			continue
		}
		if _, ok := p.row[s]; !ok {
			p.row[s] = i
			if p.s0 < 0 {
				p.s0 = s
			}
			p.last = i
		}
	}
	m := 0
	if t.Rows() > 0 {
		m = len(t.Meas[0])
	}
	flat := make([]float64, t.Rows()*m)
	p.replayed = make([][]float64, t.Rows())
	for i := range p.replayed {
		p.replayed[i] = flat[i*m : (i+1)*m : (i+1)*m]
	}
	if p.last < 0 {
		close(p.done) // nothing to play
	} else {
		p.at.Store(t.At[p.row[p.s0]])
	}
	return p
}

// Reset implements simulink.Controller: a partner restarted goes on where
// the recording is, by seq.
func (p *Player) Reset() {}

// Step implements simulink.Controller.
func (p *Player) Step(seq int64, y []float64, u []float64) {
	if seq < 0 {
		return // the handshake: hold
	}
	if p.first < 0 {
		p.first = seq
	}
	k := seq - p.first - p.held + p.s0
	if p.stepping && k > p.allow.Load() {
		// Not yet asked for: the link's command and the plant's time are
		// held, and this seq's tick is played again by the next.
		p.held++
		return
	}
	i, ok := p.row[k]
	if !ok {
		return // past the recording, or a seq it skipped: hold
	}
	if !p.got[i] {
		copy(p.replayed[i], y)
		p.got[i] = true
		p.played.Add(1)
	}
	// The reply of this tick: what the link accepted from it then (its
	// applied column: clamped to the limits, and applied on this tick or,
	// in emioapi's order, the next), or what the host sent.
	if p.src == Received {
		copy(u, p.t.Cmd[i])
	} else {
		copy(u, p.t.Applied[i])
	}
	if j, ok := p.row[k+1]; ok {
		p.at.Store(p.t.At[j])
	}
	if p.stepping {
		p.answered.Store(int64(i))
		select {
		case p.woken <- struct{}{}:
		default: // a wake-up is pending: it reads the newest row
		}
	}
	if i == p.last {
		p.once.Do(func() { close(p.done) })
	}
}

// Hold makes the replay wait before its first recorded tick until Allow
// lets it play more: a replay a tick at a time. Call it before the partner
// runs.
func (p *Player) Hold() {
	p.stepping = true
	p.allow.Store(p.s0 - 1)
	p.answered.Store(-1)
	p.woken = make(chan struct{}, 1)
}

// Allow lets a held replay play n more recorded ticks (seqs), or all of
// them with n < 0.
func (p *Player) Allow(n int64) {
	if n < 0 || p.allow.Load() > math.MaxInt64-n {
		p.allow.Store(math.MaxInt64)
		return
	}
	p.allow.Add(n)
}

// Answered is the last row a held replay answered (−1 before the first),
// and a channel that receives once a row is answered after it is read.
func (p *Player) Answered() (int, <-chan struct{}) {
	return int(p.answered.Load()), p.woken
}

// Time is bridge.LinkConfig.PlantTime for a stepped plant: the recorded
// time of the tick the link runs next, so that the plant moves as it did
// then, a period the recording skipped included, at any replay speed. A
// reply that came after its tick leaves the time of the tick before (the
// replay counts it as disturbed).
func (p *Player) Time(int64) int64 { return p.at.Load() }

// Done is closed once the last recorded tick has been answered.
func (p *Player) Done() <-chan struct{} { return p.done }

// Played is how many recorded ticks have been replayed so far.
func (p *Player) Played() int { return int(p.played.Load()) }
