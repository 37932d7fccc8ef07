package sim_test

import (
	"fmt"
	"os"

	"github.com/labbridge/bridge/emio/sim"
)

// The virtual lab's vision chain: motor angles through the nonlinear
// kinematics to a marker position, then a rendered camera frame in which the
// marker shows at its projected pixel, and the calibration file emioapi would
// have written for this camera.
func ExampleCamera() {
	emio := sim.DefaultEmio()
	kin, err := sim.NewKinematics(emio.Y0, emio.J, emio.Motors)
	if err != nil {
		fmt.Println(err)
		return
	}
	marker := make([]float64, kin.Len())
	kin.Markers([]float64{0.1, 0, -0.1, 0}, marker)

	cam, err := sim.NewCamera(sim.DefaultCamera(640, 480))
	if err != nil {
		fmt.Println(err)
		return
	}
	bgr, depth := make([]byte, 3*640*480), make([]uint16, 640*480)
	if err := cam.Render(bgr, depth, marker); err != nil {
		fmt.Println(err)
		return
	}
	u, v, z := cam.Project([3]float64{marker[0], marker[1], marker[2]})
	i := 3 * (int(v)*640 + int(u))
	fmt.Printf("marker (%.1f, %.1f, %.1f) mm at pixel (%.1f, %.1f), %.1f mm away\n", marker[0], marker[1], marker[2], u, v, z)
	fmt.Println("green there:", bgr[i+1] > 2*bgr[i] && bgr[i+1] > 2*bgr[i+2])
	if err := cam.CalibrationCSV(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// marker (2.0, -135.0, -6.0) mm at pixel (384.7, 179.0), 265.2 mm away
	// green there: true
	// X,Y,Depth,id
	// 345,233,365.1,672
	// 418,256,344.2,672
	// 392,316,299.3,672
	// 311,286,320.2,672
	// 380,244,354.6,672
	// 406,284,321.8,672
	// 350,301,309.8,672
	// 329,258,342.7,672
	// 366,270,332.2,672
}
