package replay

import (
	"sync"
	"sync/atomic"

	"github.com/labbridge/bridge/bridge"
	"github.com/labbridge/bridge/plant"
)

// Feed stands in for a link's plant while a recording's measurements are
// played to a Simulink host (RunHost): each running tick measures the next
// recorded measurement, in order, and the command the host answered on that
// tick is kept beside the one recorded. It is the link's plant and its tick
// recorder (bridge.TickRecorder); both run on the loop thread, and Measure
// allocates nothing.
type Feed struct {
	t *Track
	// rows are the recorded running ticks (seq ≥ 0), in order; next is the
	// one the next Measure gives, sent when that tick carries a seq.
	rows []int
	next int
	// answer is the host's command per recorded row, got whether it came
	// on a tick with a fresh reply.
	answer [][]float64
	got    []bool
	played atomic.Int64
	done   chan struct{}
	once   sync.Once
}

// NewFeed prepares the measurements of t for a host.
func NewFeed(t *Track) *Feed {
	f := &Feed{t: t, got: make([]bool, t.Rows()), done: make(chan struct{})}
	for i, s := range t.Seq {
		if s >= 0 {
			f.rows = append(f.rows, i)
		}
	}
	c := len(t.Cmd[0])
	flat := make([]float64, t.Rows()*c)
	f.answer = make([][]float64, t.Rows())
	for i := range f.answer {
		f.answer[i] = flat[i*c : (i+1)*c : (i+1)*c]
	}
	if len(f.rows) == 0 {
		close(f.done)
	}
	return f
}

// MeasureLen implements plant.Plant.
func (f *Feed) MeasureLen() int { return len(f.t.Meas[0]) }

// CommandLen implements plant.Plant.
func (f *Feed) CommandLen() int { return len(f.t.Cmd[0]) }

// Measure implements plant.Plant: the next recorded measurement; the last
// again once all were sent.
func (f *Feed) Measure(dst []float64) error {
	copy(dst, f.t.Meas[f.rows[min(f.next, len(f.rows)-1)]])
	return nil
}

// Command implements plant.Plant: what the host answers is taken from the
// tick's record (RecordTick), where it is matched with its measurement.
func (f *Feed) Command([]float64) error { return nil }

// Halt implements plant.Plant: nothing moves.
func (f *Feed) Halt(plant.HaltPolicy) error { return nil }

// RecordTick implements bridge.TickRecorder: a tick that carried a seq sent
// the measurement of rows[next]; the command it got back (with a fresh
// reply) is that row's answer.
func (f *Feed) RecordTick(r *bridge.TickRecord) {
	if r.Seq < 0 || f.next >= len(f.rows) {
		return
	}
	i := f.rows[f.next]
	f.next++
	if r.Status.Success() {
		copy(f.answer[i], r.Command)
		f.got[i] = true
		f.played.Add(1)
	}
	if f.next == len(f.rows) {
		f.once.Do(func() { close(f.done) })
	}
}

// Done is closed once the last recorded measurement has been sent.
func (f *Feed) Done() <-chan struct{} { return f.done }
