package tracker_test

import (
	"fmt"

	"github.com/labbridge/bridge/realsense/tracker"
)

// One green marker (a 9×9 square) on a grey 64×48 frame 400 mm away, seen
// by a camera whose pose is the identity, sent as emioapi's bridge would in
// "top" and "plan" mode.
func ExampleTracker() {
	const w, h = 64, 48
	bgr := make([]byte, 3*w*h)
	depth := make([]uint16, w*h)
	for y := range h {
		for x := range w {
			i := y*w + x
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = 110, 110, 110
			depth[i] = 400
			if x >= 40 && x < 49 && y >= 10 && y < 19 {
				bgr[3*i], bgr[3*i+1], bgr[3*i+2] = 40, 200, 40
			}
		}
	}
	cfg := tracker.Config{
		Width: w, Height: h,
		Params:   tracker.DefaultParams(),
		DepthMin: tracker.BridgeDepthMin, DepthMax: tracker.BridgeDepthMax,
		Intrinsics: tracker.Intrinsics{Width: w, Height: h, PPX: 32, PPY: 24, FX: 50, FY: 50},
		Pose:       tracker.IdentityPose(),
		NbMarkers:  1,
	}
	cfg.Params.Area = 10 // the square's contourArea is 64
	for _, side := range []tracker.Side{tracker.Top, tracker.Plan} {
		cfg.Side = side
		tr, err := tracker.New(cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := tr.Process(bgr, depth)
		if err != nil {
			fmt.Println(err)
			return
		}
		m := res.Markers[0]
		fmt.Printf("%s: marker at (%d, %d), area %.0f, depth %.0f mm, camera %.1f\n", side, m.PX, m.PY, m.Area, m.DepthMM, m.Camera)
		fmt.Printf("%s: vector %.2f held %v\n", side, res.Vector, res.Held)
	}
	// Output:
	// top: marker at (44, 14), area 64, depth 400 mm, camera [96.0 -80.0 400.0]
	// top: vector [96.00 -80.00 400.00] held false
	// plan: marker at (44, 14), area 64, depth 400 mm, camera [96.0 -80.0 400.0]
	// plan: vector [-5.00 4.17 -20.83] held false
}
