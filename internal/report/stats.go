package report

import (
	"math"
	"slices"
)

// Dist summarizes a distribution. Percentiles are nearest-rank: P99 of n
// values is the ⌈0.99·n⌉-th smallest, so P50 of 1…100 is 50 and P99 is 99.
type Dist struct {
	N             int
	Min, P50, P99 float64
	Max           float64
	// Sorted holds the values in increasing order (for the histogram).
	Sorted []float64
}

// newDist takes the finite values of vs (NaN and ±Inf ignored).
func newDist(vs []float64) Dist {
	s := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	d := Dist{N: len(s), Sorted: s}
	if len(s) > 0 {
		d.Min, d.Max = s[0], s[len(s)-1]
		d.P50, d.P99 = Percentile(s, 0.50), Percentile(s, 0.99)
	}
	return d
}

// Percentile is the nearest-rank percentile q (0 < q ≤ 1) of sorted values;
// NaN when there are none.
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	// Rounding first: 0.99·100 is 99.00000000000001 in binary.
	r := int(math.Ceil(math.Round(q*float64(n)*1e9) / 1e9))
	return sorted[min(max(r, 1), n)-1]
}

// A Gap is a run of RTP sequence numbers never received: ticks lost on the
// way (the tap's ring full, the network).
type Gap struct {
	First, Last int64   // the first and last rtp_seq missing
	Lost        int64   // Last − First + 1
	Time        float64 // time_s of the last tick received before it
	Span        float64 // s without data: to the first tick received after it
}

// A StateChange is a row whose state differs from the row before.
type StateChange struct {
	Time     float64
	Row      int
	From, To uint8
}

// Stats are a link's figures.
type Stats struct {
	Rows     int
	Duration float64 // s, from the first to the last tick's deadline
	// FirstTick and LastTick are the loop's tick indexes; Ticks is the
	// span they cover.
	FirstTick, LastTick, Ticks int64
	// PeriodUs is the tick period, the median deadline step per tick, and
	// RateHz its inverse.
	PeriodUs, RateHz float64

	// Status counts the rows by status, indexed like StatusNames; a status
	// beyond them is counted in OtherStatus.
	Status      []int
	OtherStatus int
	// Late, Applied, Stale and Overrun count the rows with each flag.
	Late, Applied, Stale, Overrun int
	StateChanges                  []StateChange

	Lateness Dist // µs, the rows that sent a datagram
	Reply    Dist // µs, the rows with a reply

	// Send-interval deviation: Intervals are the differences of successive
	// send times (deadline + lateness) of consecutive rtp_seq and ticks, IntervalUs
	// their median (the nominal period), and Deviation the absolute values
	// of their differences from it. DevTime and DevUs are the signed
	// deviations over time, for the plot.
	IntervalUs float64
	Deviation  Dist
	DevTime    []float64
	DevUs      []float64

	// Lost counts the rtp_seq between the first and last received that
	// never arrived; Gaps says where, in rtp_seq order.
	Lost int64
	Gaps []Gap
	// Reordered counts rows whose rtp_seq is below the previous row's;
	// Duplicates rows whose rtp_seq was received before.
	Reordered, Duplicates int
}

// Analyze computes a link's statistics.
func Analyze(l *LinkFile) *Stats {
	n := l.Rows()
	s := &Stats{Rows: n, Status: make([]int, len(StatusNames))}
	if n == 0 {
		return s
	}
	s.Duration = slices.Max(l.Time) - slices.Min(l.Time)
	s.FirstTick, s.LastTick = slices.Min(l.Tick), slices.Max(l.Tick)
	s.Ticks = s.LastTick - s.FirstTick + 1

	for i := range n {
		if int(l.Status[i]) < len(s.Status) {
			s.Status[l.Status[i]]++
		} else {
			s.OtherStatus++
		}
		f := l.Flags[i]
		s.Late += int(f & FlagLate)
		s.Applied += int(f&FlagApplied) >> 1
		s.Stale += int(f&FlagStale) >> 2
		s.Overrun += int(f&FlagOverrun) >> 3
		if i > 0 && l.State[i] != l.State[i-1] {
			s.StateChanges = append(s.StateChanges, StateChange{Time: l.Time[i], Row: i, From: l.State[i-1], To: l.State[i]})
		}
	}

	// The period: deadline steps per tick, µs (the deadlines are written
	// to the µs, so the steps are whole µs).
	var steps []float64
	for i := 1; i < n; i++ {
		if dt := l.Tick[i] - l.Tick[i-1]; dt > 0 {
			steps = append(steps, math.Round((l.Deadline[i]-l.Deadline[i-1])*1e6)/float64(dt))
		}
	}
	if len(steps) > 0 {
		slices.Sort(steps)
		s.PeriodUs = Percentile(steps, 0.5)
		if s.PeriodUs > 0 {
			s.RateHz = 1e6 / s.PeriodUs
		}
	}

	s.Lateness = newDist(l.Lateness)
	s.Reply = newDist(l.Reply)

	// Send intervals between consecutive rtp_seq of consecutive ticks that
	// both sent: a tick that exchanged nothing (an Emio waiting for its
	// camera's first frame) sends no packet, and the gap it leaves is no
	// send interval.
	var iv []float64
	for i := 1; i < n; i++ {
		if l.RTPSeq[i] != l.RTPSeq[i-1]+1 || l.Tick[i] != l.Tick[i-1]+1 || math.IsNaN(l.Lateness[i]) || math.IsNaN(l.Lateness[i-1]) {
			continue
		}
		d := math.Round((l.Deadline[i]-l.Deadline[i-1])*1e6) + l.Lateness[i] - l.Lateness[i-1]
		iv = append(iv, d)
		s.DevTime = append(s.DevTime, l.Time[i])
	}
	if len(iv) > 0 {
		sorted := slices.Sorted(slices.Values(iv))
		s.IntervalUs = Percentile(sorted, 0.5)
		abs := make([]float64, len(iv))
		for i, d := range iv {
			iv[i] = d - s.IntervalUs
			abs[i] = math.Abs(iv[i])
		}
		s.DevUs = iv
		s.Deviation = newDist(abs)
	}

	// Losses, duplicates and reorderings from rtp_seq.
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		x, y := l.RTPSeq[a], l.RTPSeq[b]
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	for k := 1; k < n; k++ {
		prev, cur := order[k-1], order[k]
		switch d := l.RTPSeq[cur] - l.RTPSeq[prev]; {
		case d == 0:
			s.Duplicates++
		case d > 1:
			g := Gap{First: l.RTPSeq[prev] + 1, Last: l.RTPSeq[cur] - 1, Lost: d - 1,
				Time: l.Time[prev], Span: l.Time[cur] - l.Time[prev]}
			s.Lost += g.Lost
			s.Gaps = append(s.Gaps, g)
		}
	}
	for i := 1; i < n; i++ {
		if l.RTPSeq[i] < l.RTPSeq[i-1] {
			s.Reordered++
		}
	}
	return s
}

// LargestGaps are the k gaps that lost the most ticks, largest first (the
// earlier first among equals).
func (s *Stats) LargestGaps(k int) []Gap {
	g := slices.Clone(s.Gaps)
	slices.SortStableFunc(g, func(a, b Gap) int {
		switch {
		case a.Lost > b.Lost:
			return -1
		case a.Lost < b.Lost:
			return 1
		}
		return 0
	})
	return g[:min(k, len(g))]
}

// Timeouts is the number of rows of status TIMEOUT.
func (s *Stats) Timeouts() int { return s.Status[4] }
