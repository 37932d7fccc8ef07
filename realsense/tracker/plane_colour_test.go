package tracker

import (
	"testing"
)

// TestPlaneEveryColour checks Threshold.Plane against HSV.Pixel and
// Range.Contains for every one of the 2^24 BGR colours at each of the eight
// positions of a group (each position reads its colour from other bits of
// the three colour words), with every depth in range.
func TestPlaneEveryColour(t *testing.T) {
	hsv := NewHSV()
	r := DefaultRange()
	thr := NewThreshold(hsv, r)
	const w, h = 1024, 64
	const n = w * h
	c, err := NewContours(w, h, 4*n+4)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, 1<<24/64)
	for col := range 1 << 24 {
		if r.Contains(hsv.Pixel(uint8(col), uint8(col>>8), uint8(col>>16))) {
			want[col>>6] |= 1 << (col & 63)
		}
	}
	bgr := make([]byte, 3*n)
	depth := make([]uint16, n)
	for i := range depth {
		depth[i] = 500
	}
	got := make([]byte, n)
	step := 1
	if raceEnabled {
		step = 61 // a sample: the race detector makes every pass slow
	}
	for s := range 8 {
		for base := 0; base < 1<<24; base += n * step {
			for p := range n {
				col := (base + p + s) & (1<<24 - 1)
				bgr[3*p], bgr[3*p+1], bgr[3*p+2] = byte(col), byte(col>>8), byte(col>>16)
			}
			if err := thr.Plane(c, bgr, depth, BridgeDepthMin, BridgeDepthMax); err != nil {
				t.Fatal(err)
			}
			c.unpack(got)
			for p, m := range got {
				col := (base + p + s) & (1<<24 - 1)
				if (m != 0) != (want[col>>6]>>(col&63)&1 != 0) {
					t.Fatalf("colour %#06x at group position %d: mask %d, want in range %v", col, p%8, m, m == 0)
				}
			}
		}
	}
}
