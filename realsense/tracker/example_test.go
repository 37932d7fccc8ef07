package tracker_test

import (
	"fmt"

	"github.com/labbridge/bridge/realsense/tracker"
)

// The tracker's pixel stage on a 4×1 frame: a marker green, a red, a green
// that is too far away and a dark green with zero (invalid) depth, which the
// bridge's 0–1000 mm range lets through.
func Example() {
	const w, h = 4, 1
	bgr := []byte{
		40, 200, 40,
		40, 40, 220,
		40, 200, 40,
		20, 100, 20,
	}
	depth := []uint16{400, 400, 1500, 0}

	conv := tracker.NewHSV()
	hsv := make([]byte, 3*w*h)
	if err := conv.Convert(hsv, bgr, w, h); err != nil {
		fmt.Println(err)
		return
	}
	mask := make([]byte, w*h)
	if err := tracker.InRange(mask, hsv, w, h, tracker.DefaultRange()); err != nil {
		fmt.Println(err)
		return
	}
	if err := tracker.AndDepth(mask, depth, w, h, tracker.BridgeDepthMin, tracker.BridgeDepthMax); err != nil {
		fmt.Println(err)
		return
	}
	open, err := tracker.NewMorph(w, h, 0) // emioapi's default erosion size
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := open.Open(mask, mask); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("hsv:", hsv)
	fmt.Println("mask:", mask)
	// Output:
	// hsv: [60 204 200 0 209 220 60 204 200 60 204 100]
	// mask: [255 0 0 255]
}
