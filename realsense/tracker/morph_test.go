package tracker

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// refMorph applies a (2e+1)×(2e+1) minimum (erode) or maximum Iterations
// times, literally: each output pixel looks at the window clipped to the
// image, which is what OpenCV's default border value means.
func refMorph(src []byte, w, h, e int, erode bool) []byte {
	cur := append([]byte(nil), src...)
	for range Iterations {
		next := make([]byte, len(cur))
		for y := range h {
			for x := range w {
				var v byte
				if erode {
					v = 255
				}
				for yy := max(0, y-e); yy <= min(h-1, y+e); yy++ {
					for xx := max(0, x-e); xx <= min(w-1, x+e); xx++ {
						if erode {
							v = min(v, cur[yy*w+xx])
						} else {
							v = max(v, cur[yy*w+xx])
						}
					}
				}
				next[y*w+x] = v
			}
		}
		cur = next
	}
	return cur
}

func TestMorphSmall(t *testing.T) {
	// A 3×3 block in a 7×5 image, and a pixel in the corner.
	const w, h = 7, 5
	src := make([]byte, w*h)
	for y := 1; y <= 3; y++ {
		for x := 2; x <= 4; x++ {
			src[y*w+x] = 255
		}
	}
	src[0] = 255
	full := make([]byte, w*h)
	for i := range full {
		full[i] = 255
	}
	for _, tc := range []struct {
		name string
		e    int
		op   string
		src  []byte
		want []byte
	}{
		{"size 0 erode is a copy", 0, "erode", src, src},
		{"size 0 dilate is a copy", 0, "dilate", src, src},
		{"size 0 open is a copy", 0, "open", src, src},
		{"erode removes everything smaller than 7×7", 1, "erode", src, make([]byte, w*h)},
		{"dilate 7×7 covers the image", 1, "dilate", src, full},
		{"the border does not erode", 1, "erode", full, full},
		{"the border does not dilate", 2, "dilate", make([]byte, w*h), make([]byte, w*h)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMorph(w, h, tc.e)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, w*h)
			switch tc.op {
			case "erode":
				err = m.Erode(got, tc.src)
			case "dilate":
				err = m.Dilate(got, tc.src)
			default:
				err = m.Open(got, tc.src)
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if gw, gh, ge := m.Size(); gw != w || gh != h || ge != tc.e {
				t.Errorf("Size() = %d, %d, %d", gw, gh, ge)
			}
		})
	}
}

func TestMorphMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		w, h, e int
		mask    bool // 0 and 255 only: the bit layout
	}{
		{1, 1, 1, false}, {5, 1, 1, false}, {1, 9, 2, false}, {13, 11, 1, false},
		{40, 30, 2, false}, {33, 17, 3, false}, {64, 9, 5, false},
		{1, 1, 1, true}, {5, 1, 1, true}, {1, 9, 2, true}, {13, 11, 1, true},
		{63, 20, 1, true}, {64, 20, 1, true}, {65, 20, 2, true}, {127, 13, 3, true},
		{130, 40, 5, true}, {200, 7, 11, true}, {70, 70, 22, true},
	} {
		src := make([]byte, tc.w*tc.h)
		for i := range src {
			switch rng.UintN(8) {
			case 0:
				if !tc.mask {
					src[i] = byte(rng.UintN(256)) // any byte value
				}
			case 1, 2, 3, 4, 5, 6:
				src[i] = 255
			}
		}
		m, err := NewMorph(tc.w, tc.h, tc.e)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(src))
		for _, erode := range []bool{true, false} {
			if erode {
				err = m.Erode(got, src)
			} else {
				err = m.Dilate(got, src)
			}
			if err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "morphology", got, refMorph(src, tc.w, tc.h, tc.e, erode), tc.w, 1)
		}
		// In place, the opening.
		got = append(got[:0], src...)
		if err := m.Open(got, got); err != nil {
			t.Fatal(err)
		}
		want := refMorph(refMorph(src, tc.w, tc.h, tc.e, true), tc.w, tc.h, tc.e, false)
		sameBytes(t, "opening in place", got, want, tc.w, 1)
	}
}

func TestMorphErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w, h, e int
		mention string
	}{
		{"negative erosion", 4, 4, -1, "erosion size -1"},
		{"huge erosion", 4, 4, MaxErosion + 1, "erosion size 256"},
		{"zero width", 0, 4, 1, "width 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewMorph(tc.w, tc.h, tc.e)
			if !errors.Is(err, ErrSize) || !strings.HasPrefix(err.Error(), "tracker: ") || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %v, want ErrSize naming %q", err, tc.mention)
			}
		})
	}
	m, err := NewMorph(4, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dst, src int
		mention  string
	}{
		{"short source", 16, 15, "source of 15 bytes"},
		{"short destination", 3, 16, "destination of 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Open(make([]byte, tc.dst), make([]byte, tc.src))
			if !errors.Is(err, ErrSize) || !strings.HasPrefix(err.Error(), "tracker: ") || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %v, want ErrSize naming %q", err, tc.mention)
			}
		})
	}
}

func TestMorphAllocs(t *testing.T) {
	const w, h = 64, 48
	src := make([]byte, w*h)
	dst := make([]byte, w*h)
	for _, e := range []int{0, 1, 3} {
		m, err := NewMorph(w, h, e)
		if err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(10, func() { _ = m.Open(dst, src) }); a != 0 {
			t.Errorf("Open at size %d: %v allocations", e, a)
		}
	}
}

// FuzzMorph compares erosion, dilation and the opening with the literal
// reference on arbitrary small images, as any bytes and as masks.
func FuzzMorph(f *testing.F) {
	f.Add(uint8(5), uint8(1), false, []byte{0, 255, 255, 0, 255, 255, 255, 255, 0, 255})
	f.Add(uint8(3), uint8(2), false, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(uint8(70), uint8(1), true, make([]byte, 300))
	f.Fuzz(func(t *testing.T, w, e uint8, mask bool, img []byte) {
		width := int(w)%80 + 1
		size := int(e) % 4
		h := len(img) / width
		if h == 0 || h > 24 {
			return
		}
		src := append([]byte(nil), img[:width*h]...)
		if mask {
			for i, v := range src {
				src[i] = byte(0 - v>>7) // 0 or 255
			}
		}
		m, err := NewMorph(width, h, size)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(src))
		eroded := refMorph(src, width, h, size, true)
		for _, tc := range []struct {
			name string
			f    func(dst, src []byte) error
			want []byte
		}{
			{"erode", m.Erode, eroded},
			{"dilate", m.Dilate, refMorph(src, width, h, size, false)},
			{"open", m.Open, refMorph(eroded, width, h, size, false)},
		} {
			if err := tc.f(got, src); err != nil {
				t.Fatal(err)
			}
			if string(got) != string(tc.want) {
				t.Fatalf("%dx%d size %d %s: %v, reference %v", width, h, size, tc.name, got, tc.want)
			}
		}
	})
}

// TestLess8 compares the bytewise comparison with the byte comparison for
// all pairs of bytes, in every byte lane.
func TestLess8(t *testing.T) {
	for a := range 256 {
		for b := range 256 {
			for lane := range 8 {
				sh := uint(8 * lane)
				// Neighbouring lanes hold values that would borrow.
				x := uint64(a)<<sh | 0x0001000100010001&^(0xFF<<sh)
				y := uint64(b)<<sh | 0x00FF00FF00FF00FF&^(0xFF<<sh)
				got := less8(x, y) >> sh & 0xFF
				want := uint64(0)
				if a < b {
					want = 0xFF
				}
				if got != want {
					t.Fatalf("less8 lane %d: %d < %d gives %#x", lane, a, b, got)
				}
			}
		}
	}
}

func TestBinaryImage(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want bool
	}{
		{nil, true},
		{[]byte{0, 255, 255, 0, 0, 0, 0, 0, 255}, true},
		{[]byte{0, 255, 255, 0, 0, 1, 0, 0, 255}, false},
		{[]byte{0, 255, 255, 0, 0, 0, 0, 0, 254}, false},
		{[]byte{128}, false},
		{[]byte{127, 0, 0, 0, 0, 0, 0, 0}, false},
	} {
		if got := binaryImage(tc.b); got != tc.want {
			t.Errorf("binaryImage(%v) = %v, want %v", tc.b, got, tc.want)
		}
	}
}
