package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/emio"
)

// ServoBenchRow is the Emio's servo cycle at one baud rate (`bridge bench
// servos`): one read of the four present positions and one sync write of
// the goals, through the real serial path on a pseudo-terminal, against the
// bytes' wire time (docs/dynamixel.md §10).
type ServoBenchRow struct {
	Baud     int     `json:"baud"`
	Bytes    int     `json:"bytes_per_cycle"`
	WireUs   float64 `json:"wire_us"`
	MedianUs float64 `json:"median_cycle_us"`
	P99Us    float64 `json:"p99_cycle_us"`
	Ratio    float64 `json:"ratio"`
}

// WriteServoBenchText writes rows, of cycles cycles each, with Fast Sync
// Read or Sync Read, as the table of `bridge bench servos`.
func WriteServoBenchText(w io.Writer, fast bool, cycles int, rows []ServoBenchRow) error {
	fmt.Fprintf(w, "4-servo cycle on a pseudo-terminal (fast sync read %v, %d cycles each)\n", fast, cycles)
	fmt.Fprintf(w, "%9s %7s %10s %12s %10s %7s\n", "baud", "bytes", "wire µs", "median µs", "p99 µs", "ratio")
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%9d %7d %10.1f %12.1f %10.1f %6.2fx\n", r.Baud, r.Bytes, r.WireUs, r.MedianUs, r.P99Us, r.Ratio); err != nil {
			return err
		}
	}
	return nil
}

// BenchServos runs cycles cycles of the Emio plant on four simulated
// XM430-W210 with the byte time of baud modelled, with Fast Sync Read or
// Sync Read.
func BenchServos(ctx context.Context, baud, cycles int, fast bool) (ServoBenchRow, error) {
	if cycles < 10 {
		return ServoBenchRow{}, fmt.Errorf("%w: %d servo bench cycles, want at least 10", ErrConfig, cycles)
	}
	bc := dxlsim.DefaultBusConfig()
	bc.Timing = dxlsim.Timing{Baud: baud}
	sb, err := dxlsim.NewBus(bc)
	if err != nil {
		return ServoBenchRow{}, err
	}
	pt, err := dxlsim.NewPTY(sb, "")
	if err != nil {
		return ServoBenchRow{}, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- pt.Serve(sctx) }()
	defer func() { stop(); <-served }()
	ids := []byte{0, 1, 2, 3}
	m, err := emio.New(emio.Config{IDs: ids, Mode: dynamixel.ModePosition, ProfileVelocity: 1000, Fast: fast,
		Bus:  dynamixel.BusConfig{Baud: baud, Margin: 5 * time.Millisecond},
		Open: func() (dynamixel.Port, error) { return dynamixel.OpenSerial(pt.Path(), baud) }})
	if err != nil {
		return ServoBenchRow{}, err
	}
	if err := m.Open(ctx); err != nil {
		return ServoBenchRow{}, err
	}
	defer m.Close()
	y, u := make([]float64, m.MeasureLen()), make([]float64, m.CommandLen())
	times := make([]time.Duration, 0, cycles)
	for i := 0; i < cycles && ctx.Err() == nil; i++ {
		t0 := time.Now()
		if err := errors.Join(m.Measure(y), m.Command(u)); err != nil {
			return ServoBenchRow{}, err
		}
		times = append(times, time.Since(t0))
	}
	if len(times) == 0 {
		return ServoBenchRow{}, ctx.Err()
	}
	slices.Sort(times)
	bytes := dynamixel.CycleBytes(len(ids), fast)
	wire := dynamixel.WireTime(bytes, baud)
	med := times[len(times)/2]
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return ServoBenchRow{Baud: baud, Bytes: bytes, WireUs: us(wire), MedianUs: us(med),
		P99Us: us(times[len(times)*99/100]), Ratio: float64(med) / float64(wire)}, nil
}
