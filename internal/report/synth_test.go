package report

import (
	"bufio"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A synthetic link's CSV, written the way bridge record writes it
// (docs/tap.md §5): time_s with %g, deadline_unix_s to the µs, NaN where
// nothing was sent or no reply came.

type synthField struct {
	name, unit string
	n          int
}

// synthLink describes a link to write: its rate, its vectors, and what
// goes wrong when.
type synthLink struct {
	name       string
	rateHz     float64
	seconds    float64
	meas, cmd  []synthField
	replyUs    float64 // typical reply latency
	handshakeS float64 // handshaking until then
	// timeout burst: TIMEOUT from timeoutAt for timeoutS, then one
	// RECONNECTED tick.
	timeoutAt, timeoutS float64
	// degraded (stale measurement, nothing applied) from degradedAt for
	// degradedS.
	degradedAt, degradedS float64
	// losses: rows left out, as runs of rtp_seq, at these times (s) of
	// these lengths (ticks).
	lossAt  []float64
	lossLen []int
	// reorderAt: the rows at these times are swapped with the next.
	reorderAt []float64
	noDelay   float64 // fraction of OK_NO_DELAY among the successes
	desyncAt  []float64
	clamp     float64 // applied = received clamped to ±clamp
}

// The columns of docs/tap.md §5 for the fields of l.
func (l synthLink) header() []string {
	cols := []string{"time_s", "deadline_unix_s", "rtp_seq", "tick", "seq", "status", "state",
		"lateness_us", "reply_latency_us", "late", "applied", "stale", "overrun"}
	vec := func(prefix string, fs []synthField) {
		for _, f := range fs {
			for i := range f.n {
				c := prefix + "_" + f.name
				if f.n > 1 {
					c += "_" + strconv.Itoa(i+1)
				}
				if f.unit != "" {
					c += "_" + strings.ReplaceAll(strings.ReplaceAll(f.unit, "/", "_per_"), ",", "_")
				}
				cols = append(cols, c)
			}
		}
	}
	vec("meas", l.meas)
	vec("cmd", l.cmd)
	vec("applied", l.cmd)
	return cols
}

func values(fs []synthField) int {
	n := 0
	for _, f := range fs {
		n += f.n
	}
	return n
}

func within(t float64, at []float64, period float64) bool {
	for _, a := range at {
		if t >= a && t < a+period {
			return true
		}
	}
	return false
}

// write writes the link's CSV to path.
func (l synthLink) write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	w.WriteString(strings.Join(l.header(), ",") + "\n")
	rng := rand.New(rand.NewPCG(uint64(len(l.name)), uint64(l.rateHz)))
	periodNs := int64(math.Round(1e9 / l.rateHz))
	period := float64(periodNs) / 1e9
	start := int64(1767272400)*1e9 + 123456000 // 2026-01-01 13:00:00.123456 UTC
	ticks := int(l.seconds * l.rateHz)
	const seqStart = 40000
	nc := values(l.cmd)
	lost := map[int]bool{}
	for i, at := range l.lossAt {
		for j := range l.lossLen[i] {
			lost[int(math.Round(at*l.rateHz))+j] = true
		}
	}
	var rows []string
	lastCmd := make([]float64, nc)
	var seq int64 = -1
	for k := range ticks {
		t := float64(k) * period
		if lost[k] {
			continue
		}
		deadline := start + int64(k)*periodNs
		status, state := 1, 2
		stale, applied, late, overrun := 0, 1, 0, 0
		reply := l.replyUs * (0.9 + 0.2*rng.Float64())
		if rng.IntN(200) == 0 {
			reply *= 3
		}
		switch {
		case t < l.handshakeS:
			status, state, applied, reply = 0, 1, 0, math.NaN()
		case l.timeoutS > 0 && t >= l.timeoutAt && t < l.timeoutAt+l.timeoutS:
			status, applied, reply = 4, 1, math.NaN()
		case l.timeoutS > 0 && t >= l.timeoutAt+l.timeoutS && t < l.timeoutAt+l.timeoutS+period:
			status = 5
		case within(t, l.desyncAt, period):
			status, reply = 3, math.NaN()
		case rng.Float64() < l.noDelay:
			status = 2
		}
		if l.degradedS > 0 && t >= l.degradedAt && t < l.degradedAt+l.degradedS {
			state, stale, applied = 3, 1, 0
		}
		if status == 1 || status == 2 || status == 5 {
			seq++
		} else if status == 0 {
			seq = -1
		}
		if !math.IsNaN(reply) && reply > 0.8*float64(periodNs)/1e3 {
			late = 1
		}
		latNs := int64(4000 + rng.ExpFloat64()*2500)
		if rng.IntN(1000) == 0 {
			latNs += int64(rng.IntN(200000))
			overrun = 1
		}
		var b strings.Builder
		num := func(v float64) {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
			b.WriteByte(',')
		}
		num(float64(deadline-start) / 1e9)
		b.WriteString(strconv.FormatFloat(float64(deadline)/1e9, 'f', 6, 64))
		b.WriteByte(',')
		num(float64(seqStart + k))
		num(float64(k))
		num(float64(seq))
		num(float64(status))
		num(float64(state))
		num(float64(latNs) / 1e3)
		if math.IsNaN(reply) {
			num(math.NaN())
		} else {
			num(math.Round(reply*1000) / 1000)
		}
		num(float64(late))
		num(float64(applied))
		num(float64(stale))
		num(float64(overrun))
		i := 0
		for _, f := range l.meas {
			amp := map[string]float64{"mm": 12, "rad": 0.8, "deg": 40}[f.unit]
			for range f.n {
				w := 0.2 + 0.07*float64(i)
				v := amp*float64(i%3+1)/2*math.Sin(w*t+float64(i)) + amp/200*rng.NormFloat64()
				if f.unit == "s" {
					v = t + 0.002*rng.Float64()
				}
				num(math.Round(v*1e4) / 1e4)
				i++
			}
		}
		cmd := make([]float64, nc)
		for i := range nc {
			if status == 1 || status == 2 || status == 5 {
				lastCmd[i] = math.Round(1.2*math.Sin(0.5*t+float64(i)*0.8)*1e5) / 1e5
			}
			cmd[i] = lastCmd[i]
			num(cmd[i])
		}
		for i := range nc {
			a := cmd[i]
			if l.clamp > 0 {
				a = max(min(a, l.clamp), -l.clamp)
			}
			if applied == 0 {
				a = math.NaN()
			}
			num(a)
		}
		line := b.String()
		rows = append(rows, line[:len(line)-1]+"\n")
	}
	for _, at := range l.reorderAt {
		for i := range rows {
			if i+1 < len(rows) && rowTime(rows[i]) >= at {
				rows[i], rows[i+1] = rows[i+1], rows[i]
				break
			}
		}
	}
	for _, r := range rows {
		w.WriteString(r)
	}
	return w.Flush()
}

func rowTime(line string) float64 {
	s, _, _ := strings.Cut(line, ",")
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// threeLinks is a 30 s recording: an Emio at 100 Hz with a handshake, a
// timeout burst and a reconnect; a Meca500 at 1 kHz with losses, a
// reordering and a degraded second; a V-REP scene at 20 Hz with desyncs.
var threeLinks = []synthLink{
	{name: "emio", rateHz: 100, seconds: 30, replyUs: 1400, handshakeS: 0.5,
		meas:      []synthField{{"markers", "mm", 3}, {"angles", "rad", 4}},
		cmd:       []synthField{{"angles", "rad", 4}},
		timeoutAt: 12, timeoutS: 0.6, lossAt: []float64{20}, lossLen: []int{5}, clamp: 1.0, noDelay: 0.02},
	{name: "meca500", rateHz: 1000, seconds: 30, replyUs: 180, handshakeS: 0.2,
		meas:       []synthField{{"joints", "deg", 6}, {"age", "s", 1}},
		cmd:        []synthField{{"joint_velocity", "deg/s", 6}},
		degradedAt: 18, degradedS: 1, lossAt: []float64{5, 9.5, 22}, lossLen: []int{1, 7, 40},
		reorderAt: []float64{14}, noDelay: 0.1},
	{name: "vrep", rateHz: 20, seconds: 30, replyUs: 9000, handshakeS: 1,
		meas:     []synthField{{"sim_time", "s", 1}, {"angles", "rad", 2}},
		cmd:      []synthField{{"speeds", "rad/s", 2}},
		desyncAt: []float64{7, 7.05, 16}, timeoutAt: 25, timeoutS: 0.4},
}

// writeRecording writes links as the recording base (dir/base.csv) and
// returns the base name's path.
func writeRecording(t testing.TB, dir, base string, links []synthLink) string {
	t.Helper()
	for _, l := range links {
		if err := l.write(filepath.Join(dir, base+"."+l.name+".csv")); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, base+".csv")
}

// BRIDGE_REPORT_DEMO=DIR writes the three-link recording into DIR (as
// DIR/run.csv), for a look at the page: go run ./cmd/bridge report DIR/run.csv.
func TestWriteDemoRecording(t *testing.T) {
	dir := os.Getenv("BRIDGE_REPORT_DEMO")
	if dir == "" {
		t.Skip("BRIDGE_REPORT_DEMO=DIR writes a demo recording into DIR")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", writeRecording(t, dir, "run", threeLinks))
}
