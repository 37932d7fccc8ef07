package sim

import (
	"context"
	"testing"

	"github.com/labbridge/bridge/camera"
	"github.com/labbridge/bridge/dynamixel/dxlsim"
	"github.com/labbridge/bridge/realtime"
)

// The virtual lab's camera renders a frame from the simulated servos'
// present positions without allocating, at its own pace, and its
// calibration reads back through emioapi's file format.
func TestLabCameraAllocs(t *testing.T) {
	kin, err := NewKinematics([]float64{-5, -150, 30}, []float64{0, 0, 0, 0, 30, 30, -30, -30, 40, -40, 40, -40}, 4)
	if err != nil {
		t.Fatal(err)
	}
	bc := dxlsim.DefaultBusConfig()
	bus, err := dxlsim.NewBus(bc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewLabCamera(LabCameraConfig{Width: 640, Height: 480, FPS: 90, Kinematics: kin, Clock: realtime.NewClock(),
		Angles: func(q []float64) { bus.PresentAngles(bc.IDs, q) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Calibration(); err != nil {
		t.Fatal(err)
	}
	st, err := s.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := &camera.Frame{Color: make([]byte, 3*st.Width*st.Height), Depth: make([]uint16, st.Width*st.Height)}
	if err := s.Read(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10, func() {
		if err := s.Read(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a virtual frame allocates %v times", n)
	}
	if f.Number < 11 || f.Time == 0 {
		t.Fatalf("frame number %d time %d", f.Number, f.Time)
	}
	if _, err := NewLabCamera(LabCameraConfig{Width: 640, Height: 480, FPS: 30, Clock: realtime.NewClock()}); err == nil {
		t.Error("a lab camera without kinematics was accepted")
	}
}
