package tracker

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// sceneNames are the scenes testdata/gen_opencv.py renders.
var sceneNames = []string{"blobs", "noise", "lines", "bounds"}

// erosionSizes are the erosion sizes the scenes hold results for.
var erosionSizes = []int{0, 1, 3, 5}

// scene is one decoded testdata/scene_*.bin.gz file.
type scene struct {
	Name           string `json:"name"`
	Width          int    `json:"width"`
	Height         int    `json:"height"`
	Lower          []int  `json:"lower"`
	Upper          []int  `json:"upper"`
	DepthLo        int    `json:"depth_lo"`
	DepthHi        int    `json:"depth_hi"`
	DepthDefaultLo int    `json:"depth_default_lo"`
	DepthDefaultHi int    `json:"depth_default_hi"`
	Arrays         []struct {
		Name   string `json:"name"`
		DType  string `json:"dtype"`
		Shape  []int  `json:"shape"`
		Offset int    `json:"offset"`
		Size   int    `json:"size"`
	} `json:"arrays"`
	u8  map[string][]byte
	u16 map[string][]uint16
}

// maxSceneBytes bounds a decoded scene.
const maxSceneBytes = 16 << 20

// decodeScene parses the format gen_opencv.py writes: a 4-byte
// little-endian header length, a JSON header, then the arrays.
func decodeScene(r io.Reader) (*scene, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("scene: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxSceneBytes+1))
	if err != nil {
		return nil, fmt.Errorf("scene: %w", err)
	}
	if len(b) > maxSceneBytes {
		return nil, errors.New("scene: larger than 16 MiB")
	}
	if len(b) < 4 {
		return nil, errors.New("scene: no header length")
	}
	hl := binary.LittleEndian.Uint32(b)
	if uint64(hl) > uint64(len(b)-4) {
		return nil, fmt.Errorf("scene: header length %d beyond %d bytes", hl, len(b))
	}
	s := &scene{u8: map[string][]byte{}, u16: map[string][]uint16{}}
	if err := json.Unmarshal(b[4:4+hl], s); err != nil {
		return nil, fmt.Errorf("scene: header: %w", err)
	}
	if _, err := pixels(s.Width, s.Height); err != nil {
		return nil, err
	}
	data := b[4+hl:]
	n := s.Width * s.Height
	for _, a := range s.Arrays {
		if a.Offset < 0 || a.Size < 0 || a.Offset > len(data) || a.Size > len(data)-a.Offset {
			return nil, fmt.Errorf("scene: array %q at %d+%d beyond %d bytes", a.Name, a.Offset, a.Size, len(data))
		}
		raw := data[a.Offset : a.Offset+a.Size]
		switch a.DType {
		case "u8":
			if a.Size != n && a.Size != 3*n {
				return nil, fmt.Errorf("scene: array %q of %d bytes for %d pixels", a.Name, a.Size, n)
			}
			s.u8[a.Name] = raw
		case "u16le":
			if a.Size != 2*n {
				return nil, fmt.Errorf("scene: array %q of %d bytes for %d pixels", a.Name, a.Size, n)
			}
			v := make([]uint16, n)
			for i := range v {
				v[i] = binary.LittleEndian.Uint16(raw[2*i:])
			}
			s.u16[a.Name] = v
		default:
			return nil, fmt.Errorf("scene: array %q of dtype %q", a.Name, a.DType)
		}
	}
	return s, nil
}

func loadScene(t testing.TB, dir, name string) *scene {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "scene_"+name+".bin.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := decodeScene(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func (s *scene) bytes(t testing.TB, name string) []byte {
	t.Helper()
	b, ok := s.u8[name]
	if !ok {
		t.Fatalf("scene %s: no array %q", s.Name, name)
	}
	return b
}

func (s *scene) range_(t testing.TB) Range {
	t.Helper()
	if len(s.Lower) != 3 || len(s.Upper) != 3 {
		t.Fatalf("scene %s: bounds %v %v", s.Name, s.Lower, s.Upper)
	}
	var r Range
	for c := range 3 {
		r.Lower[c], r.Upper[c] = uint8(s.Lower[c]), uint8(s.Upper[c])
	}
	return r
}

// sameBytes reports the first mismatches between got and want, a w-wide image
// of ch channels.
func sameBytes(t *testing.T, what string, got, want []byte, w, ch int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d bytes, OpenCV %d", what, len(got), len(want))
		return
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			if bad < 3 {
				p := i / ch
				t.Errorf("%s: pixel (%d, %d) channel %d = %d, OpenCV %d", what, p%w, p/w, i%ch, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d mismatching bytes", what, bad)
	}
}

// TestScenes compares every stage with OpenCV, bit for bit, on the scenes
// of testdata/gen_opencv.py.
func TestScenes(t *testing.T) {
	c := NewHSV()
	var thr *Threshold
	for _, name := range sceneNames {
		t.Run(name, func(t *testing.T) {
			s := loadScene(t, "testdata", name)
			w, h := s.Width, s.Height
			n := w * h
			r := s.range_(t)
			if r != DefaultRange() {
				t.Fatalf("scene bounds %v, DefaultRange %v", r, DefaultRange())
			}
			if s.DepthLo != BridgeDepthMin || s.DepthHi != BridgeDepthMax {
				t.Fatalf("scene depth range %d–%d, bridge %d–%d", s.DepthLo, s.DepthHi, BridgeDepthMin, BridgeDepthMax)
			}
			bgr := s.bytes(t, "bgr")
			depth, ok := s.u16["depth"]
			if !ok {
				t.Fatal("no depth")
			}

			hsv := make([]byte, 3*n)
			if err := c.Convert(hsv, bgr, w, h); err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "hsv", hsv, s.bytes(t, "hsv"), w, 3)

			mask := make([]byte, n)
			if err := InRange(mask, hsv, w, h, r); err != nil {
				t.Fatal(err)
			}
			sameBytes(t, "mask", mask, s.bytes(t, "mask"), w, 1)

			for _, d := range []struct {
				array  string
				lo, hi int
			}{
				{"dmask", s.DepthLo, s.DepthHi},
				{"dmask_default", s.DepthDefaultLo, s.DepthDefaultHi},
			} {
				dm := append([]byte(nil), mask...)
				if err := AndDepth(dm, depth, w, h, uint16(d.lo), uint16(d.hi)); err != nil {
					t.Fatal(err)
				}
				sameBytes(t, d.array, dm, s.bytes(t, d.array), w, 1)

				if thr == nil {
					thr = NewThreshold(c, r)
				}
				fused := make([]byte, n)
				if err := thr.Mask(fused, bgr, depth, w, h, uint16(d.lo), uint16(d.hi)); err != nil {
					t.Fatal(err)
				}
				sameBytes(t, d.array+" (Threshold)", fused, s.bytes(t, d.array), w, 1)
			}

			dmask := s.bytes(t, "dmask")
			for _, e := range erosionSizes {
				m, err := NewMorph(w, h, e)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]byte, n)
				for _, op := range []struct {
					name string
					f    func(dst, src []byte) error
				}{
					{"erode", m.Erode}, {"dilate", m.Dilate}, {"open", m.Open},
				} {
					if err := op.f(out, dmask); err != nil {
						t.Fatal(err)
					}
					array := fmt.Sprintf("%s_%d", op.name, e)
					sameBytes(t, array, out, s.bytes(t, array), w, 1)
				}
			}
		})
	}
}

// TestGeneratorReproduces reruns testdata/gen_opencv.py with the installed
// OpenCV and checks that it reproduces the committed reference data.
func TestGeneratorReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenCV over all 2^24 colours")
	}
	py := testutil.Python(t, "pip install opencv-python-headless==4.11.0.86 numpy", "cv2", "numpy")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "testdata/gen_opencv.py", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("gen_opencv.py: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "hsv_all.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/hsv_all.sha256")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("hsv_all.sha256: OpenCV now gives %s, committed %s", strings.TrimSpace(string(got)), strings.TrimSpace(string(want)))
	}
	for _, name := range sceneNames {
		a, b := loadScene(t, dir, name), loadScene(t, "testdata", name)
		if len(a.u8) != len(b.u8) || len(a.u16) != len(b.u16) {
			t.Errorf("%s: %d+%d arrays, committed %d+%d", name, len(a.u8), len(a.u16), len(b.u8), len(b.u16))
		}
		for k, v := range b.u8 {
			if !bytes.Equal(a.u8[k], v) {
				t.Errorf("%s: array %q differs from the committed one", name, k)
			}
		}
		for k, v := range b.u16 {
			if !slices.Equal(a.u16[k], v) {
				t.Errorf("%s: array %q differs from the committed one", name, k)
			}
		}
	}
}

// FuzzDecodeScene checks that the reference-data decoder rejects any input
// without panicking.
func FuzzDecodeScene(f *testing.F) {
	for _, name := range sceneNames[:1] {
		b, err := os.ReadFile(filepath.Join("testdata", "scene_"+name+".bin.gz"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	hdr := []byte(`{"name":"x","width":2,"height":1,"arrays":[{"name":"m","dtype":"u8","shape":[1,2],"offset":0,"size":2}]}`)
	_ = binary.Write(zw, binary.LittleEndian, uint32(len(hdr)))
	zw.Write(hdr)
	zw.Write([]byte{0, 255})
	zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeScene(bytes.NewReader(b))
		if err != nil {
			return
		}
		n := s.Width * s.Height
		for k, v := range s.u8 {
			if len(v) != n && len(v) != 3*n {
				t.Fatalf("array %q of %d bytes for %d pixels", k, len(v), n)
			}
		}
	})
}
