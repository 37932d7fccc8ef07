package emio_test

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
	"github.com/labbridge/bridge/plant"
)

// manualClock freezes the simulated servos' dynamics, so that a poked
// temperature stays put.
func manualClock(c *dxlsim.BusConfig) { c.Clock = &dxlsim.ManualClock{} }

func statusEvery(n int) func(*emio.Config, *dxlsim.Bus) {
	return func(c *emio.Config, _ *dxlsim.Bus) { c.StatusEvery = n }
}

// lossyPort loses the requests of single-register reads while lose is set:
// the servo never hears them.
type lossyPort struct {
	dynamixel.Port
	lose bool
}

func (p *lossyPort) Write(b []byte) (int, error) {
	if p.lose && len(b) > 7 && b[7] == dynamixel.InstRead {
		return len(b), nil
	}
	return p.Port.Write(b)
}

// tick runs one Measure and returns how many instructions the servos got.
func tick(t *testing.T, m *emio.Motors, sb *dxlsim.Bus, y []float64) uint64 {
	t.Helper()
	before := sb.Stats().Packets
	if err := m.Measure(y); err != nil {
		t.Fatal(err)
	}
	return sb.Stats().Packets - before
}

// stoppedTick is tick while a stop is latched: the Measure reads all the
// same and fails with plant.ErrStopLatched.
func stoppedTick(t *testing.T, m *emio.Motors, sb *dxlsim.Bus, y []float64) uint64 {
	t.Helper()
	before := sb.Stats().Packets
	if err := m.Measure(y); !errors.Is(err, plant.ErrStopLatched) {
		t.Fatalf("measure while stopped: %v, want plant.ErrStopLatched", err)
	}
	return sb.Stats().Packets - before
}

// measureStopped is Measure with a latched stop taken as success.
func measureStopped(m *emio.Motors, y []float64) error {
	if err := m.Measure(y); err != nil && !errors.Is(err, plant.ErrStopLatched) {
		return err
	}
	return nil
}

// Every servo's temperature and limit appear within two rounds of status
// reads, each tick reading at most one register besides the positions.
func TestServoTemperaturesAppear(t *testing.T) {
	m, sb := rigWith(t, manualClock, statusEvery(1))
	for i, s := range sb.Servos() {
		if err := s.Poke(dynamixel.AddrPresentTemperature, []byte{byte(40 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range m.Servos(nil) {
		if !math.IsNaN(s.TemperatureC) || !math.IsNaN(s.LimitC) {
			t.Fatalf("servo %d: %v °C, limit %v °C before any status read", s.ID, s.TemperatureC, s.LimitC)
		}
	}
	y := make([]float64, m.MeasureLen())
	// Limit then temperature of each servo: 8 ticks for 4 servos.
	for i := range 8 {
		if n := tick(t, m, sb, y); n != 2 {
			t.Fatalf("tick %d: %d transactions, want the group read and one status read", i, n)
		}
	}
	for i, s := range m.Servos(nil) {
		if s.ID != byte(i) || s.TemperatureC != float64(40+i) || s.LimitC != 80 || s.HardwareError != 0 || s.Alerting ||
			s.MissedReads != 0 || s.StatusErrors != 0 {
			t.Errorf("servo %d: %+v", i, s)
		}
	}
}

// StatusEvery spaces the status reads: exactly one every n ticks.
func TestStatusEvery(t *testing.T) {
	const every = 3
	m, sb := rigWith(t, nil, statusEvery(every))
	y := make([]float64, m.MeasureLen())
	for i := 1; i <= 30; i++ {
		want := uint64(1)
		if i%every == 0 {
			want = 2
		}
		if n := tick(t, m, sb, y); n != want {
			t.Fatalf("tick %d: %d transactions, want %d", i, n, want)
		}
	}
	// Off: the group read only.
	m, sb = rigWith(t, nil, statusEvery(-1))
	for i := range 10 {
		if n := tick(t, m, sb, y); n != 1 {
			t.Fatalf("tick %d with status reads off: %d transactions", i, n)
		}
	}
	if s := m.Servos(nil)[0]; !math.IsNaN(s.TemperatureC) {
		t.Errorf("temperature %v read with status reads off", s.TemperatureC)
	}
}

// An overheated servo: its hardware error is read in the tick its alert
// begins (which stops the servos), its alerts counted, the others
// untouched, one extra transaction per tick at most; once the error is
// cleared the alert ends, the stop does not.
func TestOverheatedServoStatus(t *testing.T) {
	m, sb := rigWith(t, manualClock, statusEvery(1))
	y := make([]float64, m.MeasureLen())
	if err := sb.ForceOverheat(2); err != nil {
		t.Fatal(err)
	}
	if n := stoppedTick(t, m, sb, y); n != 2 {
		t.Fatalf("%d transactions in the alert's first tick", n)
	}
	s := m.Servos(nil)
	if !s[2].Alerting || s[2].Alerts != 2 || !s[2].HardwareError.Has(dynamixel.HWOverheating) {
		// Two replies with the Alert bit: the positions and the error.
		t.Fatalf("servo 2 after one tick: %+v", s[2])
	}
	for _, i := range []int{0, 1, 3} {
		if s[i].Alerting || s[i].Alerts != 0 || s[i].HardwareError != 0 {
			t.Errorf("servo %d: %+v", i, s[i])
		}
	}
	for i := range 40 {
		if n := stoppedTick(t, m, sb, y); n != 2 {
			t.Fatalf("tick %d: %d transactions", i, n)
		}
	}
	s = m.Servos(nil)
	if !s[2].Alerting || s[2].Alerts < 41 || math.IsNaN(s[2].TemperatureC) || s[2].LimitC != 80 {
		t.Fatalf("servo 2 after 41 ticks: %+v", s[2])
	}
	// A reboot clears the error: the alert ends with the next reply.
	if err := sb.Servo(2).Poke(dynamixel.AddrHardwareErrorStatus, []byte{0}); err != nil {
		t.Fatal(err)
	}
	alerts := s[2].Alerts
	stoppedTick(t, m, sb, y)
	s = m.Servos(nil)
	if s[2].Alerting || s[2].HardwareError != 0 || s[2].Alerts != alerts || !s[2].Stopped {
		t.Errorf("servo 2 after its error cleared: %+v", s[2])
	}
}

// A silenced servo's missed reads are counted against it, not against the
// servos silenced after it, with Fast Sync Read and with Sync Read; a
// corrupt reply, which names no servo, counts for all.
func TestSilencedServoMissedReads(t *testing.T) {
	for _, c := range []struct {
		name     string
		firmware byte
	}{{"fast sync read", 46}, {"sync read", 38}} {
		t.Run(c.name, func(t *testing.T) {
			m, sb := rigWith(t, func(bc *dxlsim.BusConfig) { bc.Servo.Firmware = c.firmware },
				func(cfg *emio.Config, _ *dxlsim.Bus) { cfg.MaxMisses = 100; cfg.StatusEvery = 1 })
			y := make([]float64, m.MeasureLen())
			for _, silent := range []byte{2, 0} {
				if err := sb.SetMissing(silent, true); err != nil {
					t.Fatal(err)
				}
				before := m.Servos(nil)
				for i := range 3 {
					// A tick that misses makes no status read.
					if n := tick(t, m, sb, y); n != 1 {
						t.Fatalf("miss %d: %d transactions", i, n)
					}
				}
				for i, s := range m.Servos(nil) {
					want := before[i].MissedReads
					if s.ID == silent {
						want += 3
					}
					if s.MissedReads != want {
						t.Errorf("servo %d silent: servo %d missed %d reads, want %d", silent, s.ID, s.MissedReads, want)
					}
				}
				if err := sb.SetMissing(silent, false); err != nil {
					t.Fatal(err)
				}
			}
			if m.Missed() != 6 {
				t.Errorf("%d reads missed in all, want 6", m.Missed())
			}
		})
	}
	m, sb := rigWith(t, nil, func(cfg *emio.Config, _ *dxlsim.Bus) { cfg.MaxMisses = 100 })
	before := m.Servos(nil)
	sb.CorruptNext(1)
	if err := m.Measure(make([]float64, m.MeasureLen())); err != nil {
		t.Fatal(err)
	}
	for i, s := range m.Servos(nil) {
		if s.MissedReads != before[i].MissedReads+1 {
			t.Errorf("servo %d: %d missed reads after a corrupt reply, want %d", s.ID, s.MissedReads, before[i].MissedReads+1)
		}
	}
}

// A status read that fails never fails the tick: it is counted, and the
// value read before is kept.
func TestStatusReadFailureKeepsTheValue(t *testing.T) {
	var port *lossyPort
	m, sb := rigWith(t, manualClock, func(c *emio.Config, sb *dxlsim.Bus) {
		c.StatusEvery = 1
		c.Open = func() (dynamixel.Port, error) {
			port = &lossyPort{Port: dxlsim.NewPipe(sb)}
			return port, nil
		}
	})
	y := make([]float64, m.MeasureLen())
	for range 8 {
		tick(t, m, sb, y)
	}
	was := m.Servos(nil)
	if err := sb.Servo(0).Poke(dynamixel.AddrPresentTemperature, []byte{70}); err != nil {
		t.Fatal(err)
	}
	port.lose = true
	for range 4 {
		if err := m.Measure(y); err != nil {
			t.Fatalf("a lost status read failed the tick: %v", err)
		}
	}
	port.lose = false
	st := m.Servos(nil)
	for i, s := range st {
		if s.StatusErrors != 1 || s.TemperatureC != was[i].TemperatureC || s.MissedReads != 0 {
			t.Errorf("servo %d before %+v, after %+v", s.ID, was[i], s)
		}
	}
	// Read again in its turn.
	for range 4 {
		tick(t, m, sb, y)
	}
	if s := m.Servos(nil)[0]; s.TemperatureC != 70 {
		t.Errorf("servo 0 at %v °C, want the 70 °C poked", s.TemperatureC)
	}
}

// The tick allocates nothing, status read included, and while a servo is
// in alert; nor does Servos into a buffer with room.
func TestTickWithStatusReadAllocs(t *testing.T) {
	m, sb := rigWith(t, nil, statusEvery(1))
	tickAllocs(t, m, "with a status read")
	if err := sb.ForceOverheat(1); err != nil {
		t.Fatal(err)
	}
	// A servo in alert stops the servos: the tick fails, without
	// allocating.
	y, u := make([]float64, m.MeasureLen()), []float64{0.1, 0.2, 0.3, 0.4}
	if a := testing.AllocsPerRun(100, func() {
		if err := m.Measure(y); !errors.Is(err, plant.ErrStopLatched) {
			t.Fatal(err)
		}
		if err := m.Command(u); !errors.Is(err, plant.ErrStopLatched) {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per tick with a servo in alert", a)
	}
	if !m.Servos(nil)[1].Alerting {
		t.Fatal("no alert seen")
	}
	dst := make([]emio.ServoStatus, 0, 4)
	if a := testing.AllocsPerRun(100, func() { dst = m.Servos(dst[:0]) }); a != 0 {
		t.Errorf("Servos allocates %v", a)
	}
}

// Servos is safe from another goroutine while the loop ticks (run with
// -race).
func TestServosWhileTicking(t *testing.T) {
	m, sb := rigWith(t, nil, statusEvery(1))
	if err := sb.ForceOverheat(3); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var dst []emio.ServoStatus
		for {
			select {
			case <-done:
				return
			default:
			}
			dst = m.Servos(dst[:0])
		}
	})
	y := make([]float64, m.MeasureLen())
	for range 50 {
		if err := measureStopped(m, y); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
}

// Over the real serial path on a pseudo-terminal: temperatures, an
// overheated servo's error and a silenced servo's missed reads all appear,
// each where it belongs.
func TestServoStatusOverPTY(t *testing.T) {
	sb, link, ctx := servePTY(t, dxlsim.DefaultBusConfig())
	m, err := emio.New(emio.Config{
		IDs: []byte{0, 1, 2, 3}, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Fast: true, StatusEvery: 1, MaxMisses: 1000,
		// A margin a busy machine does not outlast: a late reply would be
		// counted as a miss.
		Bus:  dynamixel.BusConfig{Baud: 1000000, Margin: 200 * time.Millisecond},
		Open: func() (dynamixel.Port, error) { return dynamixel.OpenSerial(link, 1000000) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	y := make([]float64, m.MeasureLen())
	until := func(what string, cond func([]emio.ServoStatus) bool) {
		t.Helper()
		for range 200 {
			if err := measureStopped(m, y); err != nil {
				t.Fatal(err)
			}
			if cond(m.Servos(nil)) {
				return
			}
		}
		t.Fatalf("%s: not after 200 ticks: %+v", what, m.Servos(nil))
	}
	until("every temperature", func(st []emio.ServoStatus) bool {
		for _, s := range st {
			if math.IsNaN(s.TemperatureC) || s.LimitC != 80 {
				return false
			}
		}
		return true
	})
	if err := sb.ForceOverheat(1); err != nil {
		t.Fatal(err)
	}
	until("servo 1's overheating", func(st []emio.ServoStatus) bool {
		return st[1].Alerting && st[1].HardwareError.Has(dynamixel.HWOverheating) && st[1].Alerts > 0
	})
	if err := sb.SetMissing(2, true); err != nil {
		t.Fatal(err)
	}
	until("servo 2's missed reads", func(st []emio.ServoStatus) bool { return st[2].MissedReads >= 3 })
	for _, s := range m.Servos(nil) {
		if s.ID != 2 && s.MissedReads != 0 {
			t.Errorf("servo %d: %d missed reads while servo 2 was silent", s.ID, s.MissedReads)
		}
	}
}

// What "hot" and "alerting" mean for a servo, owned here: overheating by its
// hardware error or by reaching its limit, and any other hardware error.
func TestServoStatusHealth(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		s      emio.ServoStatus
		hot    bool
		faults dynamixel.HardwareError
		temp   string
	}{
		{emio.ServoStatus{TemperatureC: nan, LimitC: nan}, false, 0, "temperature not read yet"},
		{emio.ServoStatus{TemperatureC: 45, LimitC: nan}, false, 0, "45 °C"},
		{emio.ServoStatus{TemperatureC: 79, LimitC: 80}, false, 0, "79 °C, limit 80 °C"},
		{emio.ServoStatus{TemperatureC: 80, LimitC: 80}, true, 0, "80 °C, limit 80 °C"},
		{emio.ServoStatus{TemperatureC: 60, LimitC: 80, HardwareError: dynamixel.HWOverheating}, true, 0, "60 °C, limit 80 °C"},
		{emio.ServoStatus{TemperatureC: 60, LimitC: 80, HardwareError: dynamixel.HWOverheating | dynamixel.HWOverload}, true, dynamixel.HWOverload, "60 °C, limit 80 °C"},
		{emio.ServoStatus{TemperatureC: nan, LimitC: nan, HardwareError: dynamixel.HWInputVoltage}, false, dynamixel.HWInputVoltage, "temperature not read yet"},
	} {
		if c.s.Hot() != c.hot || c.s.Faults() != c.faults || c.s.Temperature() != c.temp {
			t.Errorf("%+v: hot %v faults %v %q, want %v %v %q", c.s, c.s.Hot(), c.s.Faults(), c.s.Temperature(), c.hot, c.faults, c.temp)
		}
	}
}
