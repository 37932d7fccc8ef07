package dxlsim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// The driver's timeout names the silent servo of a group read, over the
// in-memory port and over the real serial path on a pseudo-terminal, where
// the reply comes in pieces.
func TestDriverNamesTheSilentServo(t *testing.T) {
	ids := []byte{0, 1, 2, 3}
	for _, transport := range []string{"pipe", "pty"} {
		for _, fast := range []bool{true, false} {
			for _, missing := range ids {
				b, _ := newBus(t)
				var port dynamixel.Port = dxlsim.NewPipe(b)
				// The replies over the pipe are ready when the request is
				// written; over the pty the margin keeps the servos before
				// the silent one on time on a busy machine.
				margin := 5 * time.Millisecond
				if transport == "pty" {
					margin = 300 * time.Millisecond
					sp, err := dynamixel.OpenSerial(servePTY(t, b), 1000000)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { sp.Close() })
					port = sp
				}
				drv, err := dynamixel.NewBus(port, dynamixel.BusConfig{Baud: 1000000, Margin: margin})
				if err != nil {
					t.Fatal(err)
				}
				if err := b.SetMissing(missing, true); err != nil {
					t.Fatal(err)
				}
				read, inst := drv.SyncRead, "Sync Read (0x82)"
				if fast {
					read, inst = drv.FastSyncRead, "Fast Sync Read (0x8A)"
				}
				_, err = read(dynamixel.AddrPresentPosition, 4, ids, make([]byte, 16), make([]byte, 4))
				var te *dynamixel.TimeoutError
				if !errors.As(err, &te) {
					t.Fatalf("%s, %s, servo %d silent: %v", transport, inst, missing, err)
				}
				if id, ok := te.Servo(); !ok || id != missing || te.Answered != int(missing) {
					t.Errorf("%s, %s, servo %d silent: servo %d (%v), %d answered: %v", transport, inst, missing, id, ok, te.Answered, err)
				}
			}
		}
	}
}
