package tracker

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// A RealSense D435 colour/depth frame size.
const benchW, benchH = 848, 480

// benchFrame is a frame with three solid marker blocks on uniform colour
// noise with random depth, 1/6 of it beyond the bridge range (stress, the
// worst case for tables and branches), or on a grey background (110 ± 12)
// with every depth in range (clean).
func benchFrame(stress bool) (bgr []byte, depth []uint16) {
	rng := rand.New(rand.NewPCG(1234, 5678))
	bgr = make([]byte, 3*benchW*benchH)
	depth = make([]uint16, benchW*benchH)
	for i := range depth {
		if stress {
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = byte(rng.UintN(256)), byte(rng.UintN(256)), byte(rng.UintN(256))
			depth[i] = uint16(rng.UintN(1200))
		} else {
			g := byte(98 + rng.UintN(25))
			bgr[3*i], bgr[3*i+1], bgr[3*i+2] = g, g+byte(rng.UintN(3)), g
			depth[i] = uint16(300 + rng.UintN(200))
		}
	}
	for _, b := range [][4]int{{100, 100, 140, 140}, {400, 200, 432, 232}, {700, 300, 724, 324}} {
		for y := b[1]; y < b[3]; y++ {
			for x := b[0]; x < b[2]; x++ {
				i := y*benchW + x
				bgr[3*i], bgr[3*i+1], bgr[3*i+2] = 40, 200, 40
				depth[i] = 400
			}
		}
	}
	return bgr, depth
}

// scenes runs f on the clean and the stress frame.
func scenes(b *testing.B, f func(b *testing.B, bgr []byte, depth []uint16)) {
	for _, stress := range []bool{false, true} {
		name := "clean"
		if stress {
			name = "stress"
		}
		bgr, depth := benchFrame(stress)
		b.Run(name, func(b *testing.B) { f(b, bgr, depth) })
	}
}

func BenchmarkConvert(b *testing.B) {
	c := NewHSV()
	scenes(b, func(b *testing.B, bgr []byte, _ []uint16) {
		hsv := make([]byte, len(bgr))
		b.SetBytes(int64(len(bgr)))
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Convert(hsv, bgr, benchW, benchH); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkInRangeAndDepth is the mask from an HSV image: InRange, then
// AndDepth.
func BenchmarkInRangeAndDepth(b *testing.B) {
	c := NewHSV()
	scenes(b, func(b *testing.B, bgr []byte, depth []uint16) {
		hsv := make([]byte, len(bgr))
		if err := c.Convert(hsv, bgr, benchW, benchH); err != nil {
			b.Fatal(err)
		}
		mask := make([]byte, benchW*benchH)
		r := DefaultRange()
		b.ReportAllocs()
		for b.Loop() {
			if err := InRange(mask, hsv, benchW, benchH, r); err != nil {
				b.Fatal(err)
			}
			if err := AndDepth(mask, depth, benchW, benchH, BridgeDepthMin, BridgeDepthMax); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkThreshold is the fused BGR + depth → mask pass (the table is
// built once, outside the loop).
func BenchmarkThreshold(b *testing.B) {
	thr := NewThreshold(NewHSV(), DefaultRange())
	scenes(b, func(b *testing.B, bgr []byte, depth []uint16) {
		mask := make([]byte, benchW*benchH)
		b.ReportAllocs()
		for b.Loop() {
			if err := thr.Mask(mask, bgr, depth, benchW, benchH, BridgeDepthMin, BridgeDepthMax); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkNewThreshold(b *testing.B) {
	c := NewHSV()
	b.ReportAllocs()
	for b.Loop() {
		NewThreshold(c, DefaultRange())
	}
}

func BenchmarkOpen(b *testing.B) {
	thr := NewThreshold(NewHSV(), DefaultRange())
	scenes(b, func(b *testing.B, bgr []byte, depth []uint16) {
		mask := make([]byte, benchW*benchH)
		if err := thr.Mask(mask, bgr, depth, benchW, benchH, BridgeDepthMin, BridgeDepthMax); err != nil {
			b.Fatal(err)
		}
		out := make([]byte, len(mask))
		for _, e := range []int{0, 1, 3, 5} {
			m, err := NewMorph(benchW, benchH, e)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("e=%d", e), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := m.Open(out, mask); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

// BenchmarkErodeAny is one erosion of an image that is not a mask (the
// bytewise path).
func BenchmarkErodeAny(b *testing.B) {
	bgr, _ := benchFrame(true)
	src := bgr[:benchW*benchH]
	out := make([]byte, len(src))
	m, err := NewMorph(benchW, benchH, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Erode(out, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipeline is the whole pixel stage at emioapi's erosion size 1:
// the fused mask, then the opening.
func BenchmarkPipeline(b *testing.B) {
	thr := NewThreshold(NewHSV(), DefaultRange())
	m, err := NewMorph(benchW, benchH, 1)
	if err != nil {
		b.Fatal(err)
	}
	scenes(b, func(b *testing.B, bgr []byte, depth []uint16) {
		mask := make([]byte, benchW*benchH)
		b.ReportAllocs()
		for b.Loop() {
			if err := thr.Mask(mask, bgr, depth, benchW, benchH, BridgeDepthMin, BridgeDepthMax); err != nil {
				b.Fatal(err)
			}
			if err := m.Open(mask, mask); err != nil {
				b.Fatal(err)
			}
		}
	})
}
