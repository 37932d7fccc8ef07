package dynamixel_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/labbridge/bridge/dynamixel"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
)

// simBus is the driver on four simulated servos over the in-memory port.
func simBus(t *testing.T) (*dynamixel.Bus, *dxlsim.Bus) {
	t.Helper()
	sb, err := dxlsim.NewBus(dxlsim.DefaultBusConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := dynamixel.NewBus(dxlsim.NewPipe(sb), dynamixel.BusConfig{Baud: 1000000, Margin: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return b, sb
}

func TestBroadcastPing(t *testing.T) {
	b, _ := simBus(t)
	found, err := b.BroadcastPing()
	if err != nil || len(found) != 4 {
		t.Fatalf("%v %v", found, err)
	}
	for i, f := range found {
		if f.ID != byte(i) || f.Model != 1030 || f.Firmware != 46 {
			t.Errorf("found %+v", f)
		}
	}
}

func TestRegWriteAction(t *testing.T) {
	b, sb := simBus(t)
	if err := b.Write(1, dynamixel.AddrTorqueEnable, []byte{1}); err != nil {
		t.Fatal(err)
	}
	goal := binary.LittleEndian.AppendUint32(nil, 3000)
	if err := b.RegWrite(1, dynamixel.AddrGoalPosition, goal); err != nil {
		t.Fatal(err)
	}
	if g := sb.Servo(1).Value(dynamixel.ItemGoalPosition); g == 3000 {
		t.Fatal("a staged write applied before Action")
	}
	if r := sb.Servo(1).Value(dynamixel.ItemRegisteredInstruction); r != 1 {
		t.Errorf("registered instruction %d", r)
	}
	if err := b.Action(1); err != nil {
		t.Fatal(err)
	}
	if g := sb.Servo(1).Value(dynamixel.ItemGoalPosition); g != 3000 {
		t.Errorf("goal %d after Action", g)
	}
}

// EEPROM is writable only with torque off: Access Error otherwise.
func TestEEPROMNeedsTorqueOff(t *testing.T) {
	b, _ := simBus(t)
	if err := b.Write(2, dynamixel.AddrTorqueEnable, []byte{1}); err != nil {
		t.Fatal(err)
	}
	err := b.Write(2, dynamixel.AddrOperatingMode, []byte{4})
	var se *dynamixel.StatusError
	if !errors.As(err, &se) || se.Code != 7 || se.ID != 2 {
		t.Fatalf("EEPROM write with torque on: %v", err)
	}
}

func TestRebootClearsOverheat(t *testing.T) {
	b, sb := simBus(t)
	if err := sb.ForceOverheat(3); err != nil {
		t.Fatal(err)
	}
	hw := make([]byte, 1)
	if err := b.Read(3, dynamixel.AddrHardwareErrorStatus, hw); !errors.Is(err, dynamixel.ErrAlert) {
		t.Fatalf("read after overheat: %v", err)
	}
	if h := dynamixel.HardwareError(hw[0]); !h.Has(dynamixel.HWOverheating) {
		t.Fatalf("hardware error %v", h)
	}
	if err := b.Reboot(3); err != nil && !errors.Is(err, dynamixel.ErrAlert) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, _, err := b.Ping(3); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("servo never came back after reboot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b.Read(3, dynamixel.AddrHardwareErrorStatus, hw); err != nil || hw[0] != 0 {
		t.Fatalf("after reboot: %v %v", hw, err)
	}
}

func TestClearMultiTurn(t *testing.T) {
	b, _ := simBus(t)
	if err := b.Clear(0); err != nil {
		t.Fatal(err)
	}
}

func TestBulkRead(t *testing.T) {
	b, _ := simBus(t)
	items := []dynamixel.BulkItem{
		{ID: 0, Addr: dynamixel.AddrModelNumber, Data: make([]byte, 2)},
		{ID: 2, Addr: dynamixel.AddrPresentPosition, Data: make([]byte, 4)},
	}
	n, err := b.BulkRead(items)
	if err != nil || n != 2 {
		t.Fatalf("%d %v", n, err)
	}
	if binary.LittleEndian.Uint16(items[0].Data) != 1030 || int32(binary.LittleEndian.Uint32(items[1].Data)) != 2048 {
		t.Errorf("data % X / % X", items[0].Data, items[1].Data)
	}
	if _, err := b.BulkRead([]dynamixel.BulkItem{{ID: 1, Data: make([]byte, 1)}, {ID: 1, Data: make([]byte, 1)}}); !errors.Is(err, dynamixel.ErrArgument) {
		t.Errorf("duplicate ID: %v", err)
	}
}

// A reply corrupted on the line is dropped; the transaction times out and
// the next one works.
func TestCorruptReply(t *testing.T) {
	b, sb := simBus(t)
	sb.CorruptNext(1)
	if _, _, err := b.Ping(0); !errors.Is(err, dynamixel.ErrTimeout) {
		t.Fatalf("corrupt reply: %v", err)
	}
	if st := b.Stats(); st.Corrupt == 0 {
		t.Errorf("stats %+v", st)
	}
	if _, _, err := b.Ping(0); err != nil {
		t.Fatalf("after a corrupt reply: %v", err)
	}
}

// FindBaud tries each baud until a servo is there, tells each baud's
// replies, and stops at an open that fails.
func TestFindBaud(t *testing.T) {
	open := func(baud int) (*dynamixel.Bus, func(), error) {
		cfg := dxlsim.DefaultBusConfig()
		if baud != 1000000 {
			cfg.IDs = []byte{200} // the servos answer at 1 Mbps only
		}
		sb, err := dxlsim.NewBus(cfg)
		if err != nil {
			return nil, nil, err
		}
		if baud == 4000000 {
			return nil, nil, os.ErrPermission
		}
		b, err := dynamixel.NewBus(dxlsim.NewPipe(sb), dynamixel.BusConfig{Baud: baud, Margin: 20 * time.Millisecond})
		return b, func() {}, err
	}
	var tried []int
	baud, ids, err := dynamixel.FindBaud(context.Background(), open, []int{57600, 1000000, 4000000}, []byte{0, 1, 2, 3}, func(baud int, replies []dynamixel.Found) {
		tried = append(tried, baud, len(replies))
	})
	if err != nil || baud != 1000000 || !slices.Equal(ids, []byte{0, 1, 2, 3}) || !slices.Equal(tried, []int{57600, 0, 1000000, 4}) {
		t.Errorf("FindBaud = %d %v %v, tried %v", baud, ids, err, tried)
	}
	if _, _, err := dynamixel.FindBaud(context.Background(), open, []int{57600, 4000000, 1000000}, []byte{0}, nil); !errors.Is(err, os.ErrPermission) {
		t.Errorf("an open that fails: %v", err)
	}
	if baud, ids, err := dynamixel.FindBaud(context.Background(), open, []int{57600}, []byte{0}, nil); baud != 0 || ids != nil || err != nil {
		t.Errorf("nobody there: %d %v %v", baud, ids, err)
	}
}
